package consumer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/infra/httpclient"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// ClientConfig configures a [Client]. Only URL is required.
type ClientConfig struct {
	// URL is the provider's base address; the resource paths are appended.
	URL string
	// Token is the credential, sent as "Authorization: Bearer TOKEN" (or in
	// X-API-Key with APIKeyHeader).
	Token string
	// APIKeyHeader sends the credential as "X-API-Key: TOKEN" instead.
	APIKeyHeader bool
	// HTTPClient sends the requests. Default: a client of its own with
	// gzip enabled and no overall timeout (Timeout bounds each attempt).
	// Either way, the Client uses a copy that follows redirects only within
	// the origin of URL (see [SameOriginRedirects]).
	HTTPClient *http.Client
	// Timeout bounds each attempt: the request and reading its body.
	// Default 60s.
	Timeout time.Duration
	// MaxRetries bounds the retries of one request after a 429, a 5xx other
	// than 501, a network error or a cut body. Default 8; negative means none.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff with full
	// jitter between retries. Defaults 250ms and 30s. A Retry-After of the
	// provider is honoured up to MaxRetryAfter.
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter caps a provider's Retry-After. Default 5m.
	MaxRetryAfter time.Duration
	// MaxBody bounds a response body. Default 256 MiB.
	MaxBody int64
	// UserAgent is sent with every request. Default "aiusage-consumer".
	UserAgent string
	// OnRetry, when set, is called before each retry with what failed.
	OnRetry func(Retry)
	// Sleep waits between retries. Default: a timer that ends early when ctx
	// ends. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Seed seeds the jitter; 0 picks a random seed.
	Seed uint64
	// Now is the clock against which a Retry-After date is read. Default
	// time.Now.
	Now func() time.Time
}

// Retry describes a failed attempt that the [Client] retries.
type Retry struct {
	Resource Resource
	Attempt  int           // 1 for the first retry
	Wait     time.Duration // before the next attempt
	Status   int           // 0 for a network error or a cut body
	Err      error
}

// Client is the REST transport of the AI usage data interface: a [Source]
// with typed helpers. It sends the credential, asks for gzip, walks
// cursors, maps problem bodies back to the error kinds of the provider
// package, and retries 408, 429, 5xx (but 501), network errors and cut bodies
// with exponential backoff and jitter, honouring Retry-After. It is safe for
// concurrent use.
type Client struct {
	cfg     ClientConfig
	base    *url.URL
	backoff *httpclient.Backoff
}

var _ Source = (*Client)(nil)

// NewClient returns a Client for cfg, or an error naming the bad field.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.URL == "" {
		return nil, errors.New("consumer: ClientConfig.URL is required")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("consumer: ClientConfig.URL %q is not an http(s) URL", cfg.URL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("consumer: ClientConfig.URL %q must not carry a query or fragment", cfg.URL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	if strings.ContainsAny(cfg.Token, "\r\n") {
		return nil, errors.New("consumer: ClientConfig.Token contains a line break")
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"Timeout", int64(cfg.Timeout)}, {"MinBackoff", int64(cfg.MinBackoff)}, {"MaxBackoff", int64(cfg.MaxBackoff)},
		{"MaxRetryAfter", int64(cfg.MaxRetryAfter)}, {"MaxBody", cfg.MaxBody}} {
		if f.v < 0 {
			return nil, fmt.Errorf("consumer: ClientConfig.%s must not be negative", f.name)
		}
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second,
		}}
	}
	// The credential goes to the provider's origin only.
	cfg.HTTPClient = SameOriginRedirects(cfg.HTTPClient)
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = httpclient.DefaultMaxRetries
	} else if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = httpclient.DefaultMinBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = httpclient.DefaultMaxBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		return nil, errors.New("consumer: ClientConfig.MaxBackoff is below MinBackoff")
	}
	if cfg.MaxRetryAfter == 0 {
		cfg.MaxRetryAfter = httpclient.DefaultMaxRetryAfter
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = 256 << 20
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "aiusage-consumer"
	}
	if cfg.Sleep == nil {
		cfg.Sleep = httpclient.Sleep
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Client{cfg: cfg, base: u, backoff: httpclient.NewBackoff(cfg.MinBackoff, cfg.MaxBackoff, cfg.MaxRetryAfter, cfg.Seed)}, nil
}

// Fetch implements [Source]: one page of r as q selects it.
func (c *Client) Fetch(ctx context.Context, r Resource, q Query) (Page, error) {
	v, err := queryValues(r, q)
	if err != nil {
		return Page{}, err
	}
	var p Page
	_, err = c.get(ctx, r, "/"+string(r), v, func(body []byte) error {
		var err error
		if p, err = decodeEnvelope(body); err != nil {
			return fmt.Errorf("consumer: %s: %w", r, err)
		}
		return nil
	})
	return p, err
}

// Get returns one record of r (conversations or assistants) by id, as
// received.
func (c *Client) Get(ctx context.Context, r Resource, id string) (json.RawMessage, error) {
	if r != Conversations && r != Assistants {
		return nil, provider.Invalid("resource", "only conversations and assistants are read by id")
	}
	return c.get(ctx, r, "/"+string(r)+"/"+url.PathEscape(id), nil, func(body []byte) error {
		if !json.Valid(body) {
			return errCutBody
		}
		return nil
	})
}

// List is one page of typed records.
type List[T any] struct {
	Items      []T
	HasMore    bool
	NextCursor string
}

// ListConversations fetches one page of conversations.
func (c *Client) ListConversations(ctx context.Context, q Query) (List[spec.Conversation], error) {
	return typedList[spec.Conversation](ctx, c, Conversations, q)
}

// ListAssistants fetches one page of assistants.
func (c *Client) ListAssistants(ctx context.Context, q Query) (List[spec.Assistant], error) {
	return typedList[spec.Assistant](ctx, c, Assistants, q)
}

// ListEvents fetches one page of events.
func (c *Client) ListEvents(ctx context.Context, q Query) (List[spec.Event], error) {
	return typedList[spec.Event](ctx, c, Events, q)
}

// ListUsage fetches one page of usage buckets.
func (c *Client) ListUsage(ctx context.Context, q Query) (List[spec.UsageBucket], error) {
	return typedList[spec.UsageBucket](ctx, c, Usage, q)
}

// GetConversation fetches one conversation (or tombstone) by id.
func (c *Client) GetConversation(ctx context.Context, id string) (spec.Conversation, error) {
	return typedGet[spec.Conversation](ctx, c, Conversations, id)
}

// GetAssistant fetches one assistant by id.
func (c *Client) GetAssistant(ctx context.Context, id string) (spec.Assistant, error) {
	return typedGet[spec.Assistant](ctx, c, Assistants, id)
}

func typedList[T any](ctx context.Context, c *Client, r Resource, q Query) (List[T], error) {
	p, err := c.Fetch(ctx, r, q)
	if err != nil {
		return List[T]{}, err
	}
	out := List[T]{Items: make([]T, len(p.Records)), HasMore: p.HasMore, NextCursor: p.NextCursor}
	for i, raw := range p.Records {
		if err := json.Unmarshal(raw, &out.Items[i]); err != nil {
			return List[T]{}, fmt.Errorf("consumer: %s: record %d: %w", r, i, err)
		}
	}
	return out, nil
}

func typedGet[T any](ctx context.Context, c *Client, r Resource, id string) (T, error) {
	var v T
	raw, err := c.Get(ctx, r, id)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("consumer: %s/%s: %w", r, id, err)
	}
	return v, nil
}

// queryValues turns q into the query parameters of r.
func queryValues(r Resource, q Query) (url.Values, error) {
	v := url.Values{}
	ts := func(name string, t time.Time) {
		if !t.IsZero() {
			v.Set(name, t.UTC().Format("2006-01-02T15:04:05.000Z"))
		}
	}
	switch r {
	case Conversations, Assistants:
		ts("updatedSince", q.UpdatedSince)
	case Events:
		ts("occurredAfter", q.OccurredAfter)
	case Usage:
		ts("startAt", q.StartAt)
		ts("endAt", q.EndAt)
		if q.Granularity != "" {
			v.Set("granularity", q.Granularity)
		}
		if len(q.GroupBy) > 0 {
			v.Set("groupBy", strings.Join(q.GroupBy, ","))
		}
	default:
		return nil, provider.Invalid("resource", "unknown resource %q", r)
	}
	if q.Limit < 0 {
		return nil, provider.Invalid("limit", "must not be negative")
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	return v, nil
}

// envelope is the list envelope as received; pointers tell absent members.
type envelope struct {
	Data       *[]rawRef `json:"data"`
	HasMore    *bool     `json:"hasMore"`
	NextCursor *string   `json:"nextCursor"`
}

// rawRef is a json.RawMessage that keeps a reference into the document
// json.Unmarshal decodes instead of a copy: json.Unmarshal hands
// UnmarshalJSON a slice of its input, which decodeEnvelope's caller owns and
// never changes, so the records of a page share the body's memory.
type rawRef []byte

// UnmarshalJSON implements [json.Unmarshaler].
func (r *rawRef) UnmarshalJSON(b []byte) error {
	*r = b[:len(b):len(b)]
	return nil
}

// decodeEnvelope reads a list answer. A bare JSON array is accepted as the
// whole list of a provider without pagination.
func decodeEnvelope(body []byte) (Page, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var data []json.RawMessage
		if err := json.Unmarshal(body, &data); err != nil {
			return Page{}, fmt.Errorf("%w: %v", errCutBody, err)
		}
		return Page{Records: data}, nil
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return Page{}, fmt.Errorf("%w: %v", errCutBody, err)
	}
	if env.Data == nil {
		return Page{}, errors.New(`the list answer has no "data" array`)
	}
	p := Page{Records: make([]json.RawMessage, len(*env.Data))}
	for i, r := range *env.Data {
		p.Records[i] = json.RawMessage(r)
	}
	if env.HasMore != nil {
		p.Paginated = true
		p.HasMore = *env.HasMore
	}
	if env.NextCursor != nil {
		p.Paginated = true
		p.NextCursor = *env.NextCursor
		if env.HasMore == nil && p.NextCursor != "" && len(p.Records) > 0 {
			// A cursor without hasMore: follow it, until a page comes
			// back empty (such providers end their lists that way).
			p.HasMore = true
		}
	}
	// An element that is not an object is the record parser's to
	// quarantine: the others of the page are kept.
	return p, nil
}

// errCutBody marks a 2xx body that is not JSON: most often a body cut by
// the network, so the request is retried.
var errCutBody = errors.New("the body is not complete JSON")

// errBodyTooLarge is an answer whose body is past ClientConfig.MaxBody.
var errBodyTooLarge = errors.New("the body is too large")

// maxDetail bounds the provider's problem detail an error carries.
const maxDetail = 1024

// get sends a GET of path (escaped, below the base) and returns the body of
// its 2xx answer once decode accepts it, retrying what is worth retrying: a
// decode error wrapping errCutBody (a body cut by the network) is retried,
// any other is returned.
func (c *Client) get(ctx context.Context, r Resource, path string, q url.Values, decode func([]byte) error) ([]byte, error) {
	u := *c.base
	unescaped, err := url.PathUnescape(path)
	if err != nil {
		return nil, err
	}
	u.Path = c.base.Path + unescaped
	u.RawPath = c.base.EscapedPath() + path
	u.RawQuery = q.Encode()
	target := u.String()
	for attempt := 0; ; attempt++ {
		body, status, retryAfter, err := c.attempt(ctx, target)
		if err == nil && status/100 == 2 {
			err = decode(body)
			if err == nil {
				return body, nil
			}
			if !errors.Is(err, errCutBody) {
				return nil, err
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// A body past MaxBody would be as large again: not retried.
		if !httpclient.Transient(status, err, ErrRedirect, errBodyTooLarge) || attempt >= c.cfg.MaxRetries {
			if err != nil {
				return nil, fmt.Errorf("consumer: GET %s: %w (after %d attempts)", path, err, attempt+1)
			}
			return nil, problemError(path, status, body)
		}
		wait := c.backoff.Wait(attempt, retryAfter)
		if c.cfg.OnRetry != nil {
			rs := status
			if err != nil {
				rs = 0
			}
			c.cfg.OnRetry(Retry{Resource: r, Attempt: attempt + 1, Wait: wait, Status: rs, Err: cmpErr(err, status)})
		}
		if err := c.cfg.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

func cmpErr(err error, status int) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("HTTP %d", status)
}

// attempt sends one request. retryAfter is -1 when the answer named none.
func (c *Client) attempt(ctx context.Context, target string) (body []byte, status int, retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, 0, -1, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	if c.cfg.Token != "" {
		if c.cfg.APIKeyHeader {
			req.Header.Set("X-API-Key", c.cfg.Token)
		} else {
			req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
		}
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, 0, -1, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxBody+1))
	if err != nil {
		return nil, resp.StatusCode, -1, fmt.Errorf("reading the body: %w", err)
	}
	if int64(len(body)) > c.cfg.MaxBody {
		return nil, resp.StatusCode, -1, fmt.Errorf("%w: more than %d bytes", errBodyTooLarge, c.cfg.MaxBody)
	}
	return body, resp.StatusCode, parseRetryAfter(resp.Header.Get("Retry-After"), c.cfg.Now()), nil
}

// parseRetryAfter reads a Retry-After value ([httpclient.RetryAfter]); -1
// when absent or malformed.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if d, ok := httpclient.RetryAfter(v, now); ok {
		return d
	}
	return -1
}

// problemError maps an error answer back to an error kind of the provider
// package, with the problem's detail.
func problemError(path string, status int, body []byte) error {
	kind := spec.KindOf(status)
	switch kind {
	case nil, spec.ErrMethodNotAllowed, spec.ErrTooLarge, spec.ErrUnprocessable:
		kind = provider.ErrInvalid // a refusal the provider interface has no kind for
	case spec.ErrRateLimited:
		kind = provider.ErrUnavailable // retried as a busy provider is
	}
	e := &provider.Error{Kind: kind, Detail: fmt.Sprintf("GET %s: HTTP %d", path, status)}
	var p spec.Problem
	if json.Unmarshal(body, &p) == nil && (p.Detail != "" || p.Title != "") {
		msg := p.Detail
		if msg == "" {
			msg = p.Title
		}
		if len(msg) > maxDetail {
			msg = strings.ToValidUTF8(msg[:maxDetail], "") + "…"
		}
		e.Detail += ": " + msg
		if len(p.Errors) > 0 {
			e.Field = p.Errors[0].Field
		}
	}
	return e
}
