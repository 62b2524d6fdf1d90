package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Source is the consumer's MCP transport: a [consumer.Source] that reads a
// provider through the tools of its MCP binding (streamable HTTP) instead
// of its REST endpoints. Each page is the structured content of one tool
// call, kept byte for byte. It retries a failed call (the network, 429,
// 5xx) a few times with backoff, and maps the HTTP status a tool error names
// back to the error kinds of package provider.
type Source struct {
	c       *client.Client
	retries int
	backoff time.Duration
}

var _ consumer.Source = (*Source)(nil)

// SourceOption configures [NewSource].
type SourceOption func(*sourceConfig)

type sourceConfig struct{ client *http.Client }

// WithHTTPClient makes [NewSource] send its requests with c (for example one
// whose transport refuses some addresses). Default: a client of
// net/http's defaults. Either way, redirects are followed only within the
// endpoint's origin.
func WithHTTPClient(c *http.Client) SourceOption {
	return func(sc *sourceConfig) { sc.client = c }
}

// NewSource connects to the MCP endpoint at url (for the kit's providers,
// the base address followed by /mcp) with token as the bearer credential,
// and initializes the session. Redirects are followed only within url's
// origin (see [consumer.SameOriginRedirects]). Close it when done. An
// endpoint refusing the token is provider.ErrUnauthorized; one that is not
// a streamable HTTP MCP endpoint (a 4xx to initialize) provider.ErrNotFound.
func NewSource(ctx context.Context, url, token string, opts ...SourceOption) (*Source, error) {
	var sc sourceConfig
	for _, o := range opts {
		o(&sc)
	}
	headers := map[string]string{}
	if token != "" {
		headers["Authorization"] = "Bearer " + token
	}
	// The token goes to the endpoint's origin only: mcp-go's default client
	// follows redirects anywhere. No answer is read past maxSourceBody:
	// mcp-go reads an error answer's body whole.
	hc := consumer.SameOriginRedirects(sc.client)
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = limitBodies{base}
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(headers), transport.WithHTTPBasicClient(hc))
	if err != nil {
		return nil, fmt.Errorf("mcp: source %s: %w", url, err)
	}
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("mcp: source %s: %w", url, err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcpgo.Implementation{Name: "aiusage-consumer", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		_ = c.Close()
		var auth *transport.AuthorizationRequiredError
		switch {
		case errors.As(err, &auth):
			err = fmt.Errorf("%w: %w", provider.ErrUnauthorized, err)
		case errors.Is(err, transport.ErrLegacySSEServer):
			err = fmt.Errorf("%w: not a streamable HTTP MCP endpoint: %w", provider.ErrNotFound, err)
		}
		return nil, fmt.Errorf("mcp: source %s: initialize: %w", url, err)
	}
	return &Source{c: c, retries: 5, backoff: 200 * time.Millisecond}, nil
}

// Close ends the session.
func (s *Source) Close() error { return s.c.Close() }

// maxSourceBody bounds one answer a Source reads: the bound of a REST
// page's body (consumer.ClientConfig.MaxBody's default). maxErrorBody
// bounds an error answer (not 2xx), whose body mcp-go reads whole and puts
// in its error.
var maxSourceBody, maxErrorBody int64 = 256 << 20, 4 << 10

// errBodyTooLarge is an answer past its bound.
var errBodyTooLarge = errors.New("the answer is larger than this client reads")

// limitBodies cuts every answer's body at its bound with an error.
type limitBodies struct{ next http.RoundTripper }

func (l limitBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err == nil && resp.Body != nil {
		left := maxSourceBody
		if resp.StatusCode/100 != 2 {
			left = maxErrorBody
		}
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: left}
	}
	return resp, err
}

type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// toolOf names the tool that lists each resource.
var toolOf = map[consumer.Resource]string{
	consumer.Conversations: "list_conversations",
	consumer.Assistants:    "list_assistants",
	consumer.Events:        "list_events",
	consumer.Usage:         "get_usage",
}

// Fetch implements [consumer.Source].
func (s *Source) Fetch(ctx context.Context, r consumer.Resource, q consumer.Query) (consumer.Page, error) {
	name, ok := toolOf[r]
	if !ok {
		return consumer.Page{}, provider.Invalid("resource", "unknown resource %q", r)
	}
	args := map[string]any{}
	ts := func(k string, t time.Time) {
		if !t.IsZero() {
			args[k] = t.UTC().Format("2006-01-02T15:04:05.000Z")
		}
	}
	switch r {
	case consumer.Conversations, consumer.Assistants:
		ts("updatedSince", q.UpdatedSince)
	case consumer.Events:
		ts("occurredAfter", q.OccurredAfter)
	case consumer.Usage:
		ts("startAt", q.StartAt)
		ts("endAt", q.EndAt)
		if q.Granularity != "" {
			args["granularity"] = q.Granularity
		}
		if len(q.GroupBy) > 0 {
			args["groupBy"] = q.GroupBy
		}
	}
	if q.Limit > 0 {
		args["limit"] = q.Limit
	}
	if q.Cursor != "" {
		args["cursor"] = q.Cursor
	}
	var last error
	for attempt := 0; attempt <= s.retries; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(s.backoff << (attempt - 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return consumer.Page{}, ctx.Err()
			case <-t.C:
			}
		}
		page, retry, err := s.call(ctx, name, args)
		if err == nil || !retry || ctx.Err() != nil {
			return page, err
		}
		last = err
	}
	return consumer.Page{}, fmt.Errorf("mcp: %s: after %d attempts: %w", name, s.retries+1, last)
}

var statusInText = regexp.MustCompile(`\(HTTP (\d{3})\)`)

// call makes one tool call. retry reports a failure worth another attempt.
func (s *Source) call(ctx context.Context, name string, args map[string]any) (consumer.Page, bool, error) {
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := s.c.CallTool(ctx, req)
	if err != nil {
		return consumer.Page{}, true, fmt.Errorf("mcp: %s: %w", name, err)
	}
	if res.IsError {
		text := resultText(res)
		status := 0
		if m := statusInText.FindStringSubmatch(text); m != nil {
			status, _ = strconv.Atoi(m[1])
		}
		kind := spec.KindOf(status)
		switch {
		case status == 0 && !strings.Contains(text, "could not be reached"):
			kind = provider.ErrInvalid // an argument the tool refused
		case status == 0, kind == spec.ErrRateLimited:
			kind = provider.ErrUnavailable // unreachable or busy: worth another attempt
		case kind == spec.ErrMethodNotAllowed, kind == spec.ErrTooLarge, kind == spec.ErrUnprocessable:
			kind = provider.ErrInvalid // a refusal the provider interface has no kind for
		}
		e := &provider.Error{Kind: kind, Detail: fmt.Sprintf("%s: %s", name, text)}
		if status == 400 && strings.Contains(strings.ToLower(text), "cursor") {
			e.Field = "cursor"
		}
		retry := kind == provider.ErrUnavailable
		return consumer.Page{}, retry, e
	}
	raw := res.RawStructuredContent
	if len(raw) == 0 {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return consumer.Page{}, false, fmt.Errorf("mcp: %s: structured content: %w", name, err)
		}
		raw = b
	}
	var env struct {
		Data       *[]json.RawMessage `json:"data"`
		HasMore    *bool              `json:"hasMore"`
		NextCursor *string            `json:"nextCursor"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || env.Data == nil {
		return consumer.Page{}, false, errors.New("mcp: " + name + ": the structured content is not a list envelope")
	}
	p := consumer.Page{Records: *env.Data}
	if env.HasMore != nil {
		p.Paginated, p.HasMore = true, *env.HasMore
	}
	if env.NextCursor != nil {
		p.Paginated, p.NextCursor = true, *env.NextCursor
	}
	return p, false, nil
}

func resultText(res *mcpgo.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(mcpgo.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}
