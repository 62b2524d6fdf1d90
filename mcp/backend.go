package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/provider"
)

// Backend answers GET requests of the AI usage data interface. The MCP tools
// are a thin layer over it: a tool's structured content is exactly the body
// a Backend returns.
type Backend interface {
	// Get requests path ("/conversations", or "/conversations/ID" with ID
	// path-escaped) with query and returns the HTTP status and body: the
	// JSON record or list envelope for a 2xx, an RFC 9457 problem otherwise.
	// err is for failures to get any answer (the provider is unreachable);
	// it must be safe for concurrent use.
	Get(ctx context.Context, path string, query url.Values) (status int, body []byte, err error)
}

// maxBody bounds a body read from a Backend: a page of 1000 conversations
// with their messages stays far below it.
const maxBody = 64 << 20

// inProcessCredential is the credential header of the requests the in-process
// backend makes; the principal itself travels in the context.
const inProcessCredential = "mcp-in-process"

// handlerBackend calls a provider.Handler in memory, with no network.
type handlerBackend struct {
	h http.Handler
}

func (b *handlerBackend) Get(ctx context.Context, path string, query url.Values) (int, []byte, error) {
	target := path
	if q := query.Encode(); q != "" {
		target += "?" + q
	}
	// The inner request gets a context of its own: it keeps the caller's
	// cancellation and principal, but none of the outer request's values (an
	// outer chi route context would make the inner router a sub-router).
	inner := isolated{Context: ctx, p: principalFrom(ctx, nil)}
	r, err := http.NewRequestWithContext(inner, http.MethodGet, target, nil)
	if err != nil {
		return 0, nil, err
	}
	r.Header.Set("X-API-Key", inProcessCredential)
	w := &memoryResponse{header: http.Header{}}
	b.h.ServeHTTP(w, r)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.status, w.body.Bytes(), nil
}

// isolated is a context with the deadline and cancellation of its parent
// and one value: the principal.
type isolated struct {
	context.Context
	p *provider.Principal
}

func (c isolated) Value(key any) any {
	if _, ok := key.(principalKey); ok && c.p != nil {
		return c.p
	}
	return nil
}

// memoryResponse is an http.ResponseWriter that keeps the response in memory.
type memoryResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *memoryResponse) Header() http.Header { return w.header }

func (w *memoryResponse) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
		// A page may be megabytes: grow the body once to its length.
		if n, err := strconv.Atoi(w.header.Get("Content-Length")); err == nil && n > 0 && n <= maxBody {
			w.body.Grow(n)
		}
	}
}

func (w *memoryResponse) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// contextAuthenticator authenticates the in-process requests with the
// principal the MCP layer put in their context.
type contextAuthenticator struct {
	fallback *provider.Principal
}

func (a contextAuthenticator) Authenticate(ctx context.Context, credential string) (*provider.Principal, error) {
	if credential != inProcessCredential {
		return nil, provider.ErrUnauthorized
	}
	if p := principalFrom(ctx, a.fallback); p != nil {
		return p, nil
	}
	return nil, &provider.Error{Kind: provider.ErrUnauthorized,
		Detail: "The MCP server knows no caller: mount its HTTPHandler with provider.WithMount, or give mcp.WithPrincipal for stdio."}
}

type principalKey struct{}

// withPrincipal returns ctx carrying p for the in-process backend.
func withPrincipal(ctx context.Context, p *provider.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// principalFrom returns the caller of ctx: the principal the HTTP transport
// copied into it, else the one provider.Handler authenticated, else
// fallback (nil when there is none).
func principalFrom(ctx context.Context, fallback *provider.Principal) *provider.Principal {
	if p, ok := ctx.Value(principalKey{}).(*provider.Principal); ok && p != nil {
		return p
	}
	if p, ok := provider.PrincipalFrom(ctx); ok && p != nil {
		return p
	}
	return fallback
}

// remoteBackend GETs a REST provider over HTTP.
type remoteBackend struct {
	base   *url.URL
	token  string
	client *http.Client
}

func newRemoteBackend(baseURL, token string, c *http.Client) (*remoteBackend, error) {
	u, err := url.Parse(baseURL)
	switch {
	case err != nil:
		return nil, fmt.Errorf("mcp: NewRemote: base URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return nil, fmt.Errorf("mcp: NewRemote: base URL %q: want http(s)://host[/prefix]", baseURL)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("mcp: NewRemote: base URL %q: no query or fragment", baseURL)
	case token == "":
		return nil, errors.New("mcp: NewRemote: empty token")
	}
	if c == nil {
		c = http.DefaultClient
	}
	// The token goes to the provider's origin only.
	c = consumer.SameOriginRedirects(c)
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = strings.TrimSuffix(u.RawPath, "/")
	return &remoteBackend{base: u, token: token, client: c}, nil
}

func (b *remoteBackend) Get(ctx context.Context, path string, query url.Values) (int, []byte, error) {
	u := *b.base
	u.RawQuery = query.Encode()
	ref, err := url.Parse(u.EscapedPath() + path)
	if err != nil {
		return 0, nil, err
	}
	u.Path, u.RawPath = ref.Path, ref.RawPath
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, nil, err
	}
	r.Header.Set("Authorization", "Bearer "+b.token)
	r.Header.Set("Accept", "application/json, application/problem+json")
	resp, err := b.client.Do(r)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return 0, nil, fmt.Errorf("read the answer of %s: %w", path, err)
	}
	if len(body) > maxBody {
		return 0, nil, fmt.Errorf("the answer of %s is larger than %d bytes", path, maxBody)
	}
	return resp.StatusCode, body, nil
}
