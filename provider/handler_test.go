package provider_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// stubSource is a DataSource whose every method does what its fields say.
type stubSource struct {
	*memsource.Source
	panicOn      string
	err          error
	extraRecords int // return this many records beyond the limit
	emptyHasMore bool
}

func (s *stubSource) ListConversations(ctx context.Context, q provider.ConversationQuery) (provider.Page[spec.Conversation], error) {
	switch {
	case s.panicOn == "conversations":
		panic("database exploded at /var/lib/secret.db")
	case s.err != nil:
		return provider.Page[spec.Conversation]{}, s.err
	case s.emptyHasMore:
		return provider.Page[spec.Conversation]{HasMore: true}, nil
	}
	q.Limit += s.extraRecords
	return s.Source.ListConversations(ctx, q)
}

func newServer(t *testing.T, ds provider.DataSource, opts ...provider.Option) *httptest.Server {
	t.Helper()
	opts = append([]provider.Option{provider.WithTokens(
		provider.Token{Secret: "full", Tenant: "t1"},
		provider.Token{Secret: "usage-only", Tenant: "t1", Scopes: []string{provider.ScopeUsage}},
	)}, opts...)
	h, err := provider.NewHandler(ds, opts...)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, method, u string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DisableCompression: true}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

var auth = map[string]string{"Authorization": "Bearer full"}

func seeded(t *testing.T, n int) *memsource.Source {
	t.Helper()
	src := memsource.New()
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		require.NoError(t, src.UpsertConversation(context.Background(), "t1", spec.Conversation{
			ID: string(rune('a'+i%26)) + strings.Repeat("x", i/26), StartedAt: spec.NewTime(at), UpdatedAt: spec.NewTime(at.Add(time.Duration(i) * time.Second)),
			Messages: []spec.Message{{Role: "user", Content: "<hello & bye>"}},
		}))
	}
	return src
}

func problemOf(t *testing.T, resp *http.Response, body []byte, status int) spec.Problem {
	t.Helper()
	require.Equal(t, status, resp.StatusCode, "%s", body)
	require.Equal(t, spec.ProblemContentType, resp.Header.Get("Content-Type"))
	var p spec.Problem
	require.NoError(t, json.Unmarshal(body, &p))
	f, err := spec.Validate("problem", body)
	require.NoError(t, err)
	require.Empty(t, f)
	require.Equal(t, status, p.Status)
	return p
}

func TestPanicBecomesProblemWithoutInternals(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	srv := newServer(t, &stubSource{Source: memsource.New(), panicOn: "conversations"},
		provider.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	resp, body := do(t, http.MethodGet, srv.URL+"/conversations", auth)
	p := problemOf(t, resp, body, http.StatusInternalServerError)
	require.NotContains(t, string(body), "secret.db")
	require.NotContains(t, string(body), "exploded")
	require.Equal(t, resp.Header.Get("X-Request-Id"), p.Extensions["requestId"])
	// The cause is logged once, with the request id.
	require.Contains(t, logs.String(), "exploded")
	require.Contains(t, logs.String(), resp.Header.Get("X-Request-Id"))
}

func TestErrorKindsMapToStatuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    error
		status int
	}{
		{provider.ErrUnsupported, http.StatusNotImplemented},
		{provider.ErrUnavailable, http.StatusServiceUnavailable},
		{provider.Invalid("limit", "too big"), http.StatusBadRequest},
		{errors.New("pq: connection refused to 10.0.0.3"), http.StatusInternalServerError},
	}
	for _, tc := range cases {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := newServer(t, &stubSource{Source: memsource.New(), err: tc.err})
			resp, body := do(t, http.MethodGet, srv.URL+"/conversations", auth)
			problemOf(t, resp, body, tc.status)
			require.NotContains(t, string(body), "10.0.0.3")
			if tc.status == http.StatusServiceUnavailable {
				require.NotEmpty(t, resp.Header.Get("Retry-After"))
			}
		})
	}
}

func TestContractGuards(t *testing.T) {
	t.Parallel()
	// A source returning more than asked: the page is cut to the limit.
	srv := newServer(t, &stubSource{Source: seeded(t, 10), extraRecords: 3})
	resp, body := do(t, http.MethodGet, srv.URL+"/conversations?limit=4", auth)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var page spec.List[json.RawMessage]
	require.NoError(t, json.Unmarshal(body, &page))
	require.Len(t, page.Data, 4)
	require.True(t, page.HasMore)
	// An empty page claiming more would loop a client forever: 500.
	srv = newServer(t, &stubSource{Source: memsource.New(), emptyHasMore: true})
	resp, body = do(t, http.MethodGet, srv.URL+"/conversations", auth)
	problemOf(t, resp, body, http.StatusInternalServerError)
}

func TestGzipRequestIDAndHead(t *testing.T) {
	t.Parallel()
	srv := newServer(t, seeded(t, 30))
	resp, body := do(t, http.MethodGet, srv.URL+"/conversations", map[string]string{"Authorization": "Bearer full", "Accept-Encoding": "gzip", "X-Request-Id": "abc-123"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
	require.Equal(t, "abc-123", resp.Header.Get("X-Request-Id"))
	zr, err := gzip.NewReader(bytes.NewReader(body))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	f, err := spec.Validate("conversation-list", plain)
	require.NoError(t, err)
	require.Empty(t, f)

	// A hostile request id is replaced.
	resp, _ = do(t, http.MethodGet, srv.URL+"/conversations", map[string]string{"Authorization": "Bearer full", "X-Request-Id": "bad id <script>"})
	require.Regexp(t, `^[0-9a-f]{16}$`, resp.Header.Get("X-Request-Id"))

	resp, body = do(t, http.MethodHead, srv.URL+"/conversations", auth)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, body)
}

func TestMethodsAndUnknownPaths(t *testing.T) {
	t.Parallel()
	srv := newServer(t, seeded(t, 1))
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		for _, p := range []string{"/conversations", "/conversations/a", "/usage"} {
			resp, body := do(t, m, srv.URL+p, auth)
			problemOf(t, resp, body, http.StatusMethodNotAllowed)
			require.Contains(t, resp.Header.Get("Allow"), "GET")
		}
	}
	resp, body := do(t, http.MethodGet, srv.URL+"/nope", auth)
	problemOf(t, resp, body, http.StatusNotFound)
}

func TestHostileIDs(t *testing.T) {
	t.Parallel()
	srv := newServer(t, seeded(t, 3))
	for _, id := range []string{"%2F", "..", "%2E%2E", strings.Repeat("x", 4096), "%E2%82%AC", "%22quoted%22", "%27", "%00", "%FF%FE", "a%2Fb"} {
		resp, body := do(t, http.MethodGet, srv.URL+"/conversations/"+id, auth)
		require.Contains(t, []int{400, 404}, resp.StatusCode, "id %q: %s", id, body)
		problemOf(t, resp, body, resp.StatusCode)
	}
	resp, body := do(t, http.MethodGet, srv.URL+"/conversations/a", auth)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.Contains(t, string(body), `\u003chello \u0026 bye\u003e`)
}

func TestAuthAndScopes(t *testing.T) {
	t.Parallel()
	srv := newServer(t, seeded(t, 3))
	for _, p := range []string{"/conversations", "/conversations/a", "/assistants", "/assistants/x", "/events", "/usage"} {
		resp, body := do(t, http.MethodGet, srv.URL+p, nil)
		problemOf(t, resp, body, http.StatusUnauthorized)
		require.True(t, strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer"))
		resp, body = do(t, http.MethodGet, srv.URL+p, map[string]string{"Authorization": "Bearer nope"})
		problemOf(t, resp, body, http.StatusUnauthorized)
		resp, body = do(t, http.MethodGet, srv.URL+p, map[string]string{"Authorization": "Basic ZnVsbDo="})
		problemOf(t, resp, body, http.StatusUnauthorized)
		resp, body = do(t, http.MethodGet, srv.URL+p, map[string]string{"X-API-Key": "usage-only"})
		if p == "/usage" {
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		} else {
			problemOf(t, resp, body, http.StatusForbidden)
		}
	}
	// X-API-Key wins over Authorization.
	resp, body := do(t, http.MethodGet, srv.URL+"/conversations", map[string]string{"X-API-Key": "usage-only", "Authorization": "Bearer full"})
	problemOf(t, resp, body, http.StatusForbidden)
	resp, _ = do(t, http.MethodGet, srv.URL+"/conversations", map[string]string{"X-API-Key": "full", "Authorization": "Bearer usage-only"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// Credentials in the query string are not credentials.
	resp, body = do(t, http.MethodGet, srv.URL+"/conversations?access_token=full&api_key=full", nil)
	problemOf(t, resp, body, http.StatusUnauthorized)
}

func TestRawAndStructPagesAgree(t *testing.T) {
	t.Parallel()
	// memsource has no raw capability; wrap it in one that encodes records
	// itself, and compare the two handlers' bytes.
	src := seeded(t, 40)
	plain := newServer(t, src, provider.WithCursorKey(bytes.Repeat([]byte{7}, 32)))
	raw := newServer(t, rawWrapper{src}, provider.WithCursorKey(bytes.Repeat([]byte{7}, 32)))
	_, a := do(t, http.MethodGet, plain.URL+"/conversations?limit=1000", auth)
	_, b := do(t, http.MethodGet, raw.URL+"/conversations?limit=1000", auth)
	require.JSONEq(t, string(a), string(b))
	var page spec.List[spec.Conversation]
	require.NoError(t, json.Unmarshal(b, &page))
	require.Len(t, page.Data, 40)
}

type rawWrapper struct{ *memsource.Source }

func (r rawWrapper) ListConversationsRaw(ctx context.Context, q provider.ConversationQuery) (provider.Page[provider.RawRecord], error) {
	p, err := r.ListConversations(ctx, q)
	out := provider.Page[provider.RawRecord]{HasMore: p.HasMore}
	for i := range p.Items {
		b, _ := json.Marshal(p.Items[i])
		out.Items = append(out.Items, provider.RawRecord{Key: provider.ConversationKey(&p.Items[i]), JSON: b})
	}
	return out, err
}

func (r rawWrapper) ListAssistantsRaw(context.Context, provider.AssistantQuery) (provider.Page[provider.RawRecord], error) {
	return provider.Page[provider.RawRecord]{}, provider.ErrUnsupported
}

func (r rawWrapper) ListEventsRaw(context.Context, provider.EventQuery) (provider.Page[provider.RawRecord], error) {
	return provider.Page[provider.RawRecord]{}, provider.ErrUnsupported
}

func TestCursorIsBoundAndOpaque(t *testing.T) {
	t.Parallel()
	srv := newServer(t, seeded(t, 5))
	_, body := do(t, http.MethodGet, srv.URL+"/conversations?limit=2", auth)
	var page spec.List[json.RawMessage]
	require.NoError(t, json.Unmarshal(body, &page))
	require.NotNil(t, page.NextCursor)
	c := url.QueryEscape(*page.NextCursor)
	for _, u := range []string{
		"/conversations?limit=2&updatedSince=2026-01-01T00:00:00Z&cursor=" + c,
		"/events?cursor=" + c,
		"/usage?cursor=" + c,
	} {
		resp, body := do(t, http.MethodGet, srv.URL+u, auth)
		p := problemOf(t, resp, body, http.StatusBadRequest)
		require.Equal(t, "cursor", p.Errors[0].Field)
	}
	// limit may change between pages.
	resp, _ := do(t, http.MethodGet, srv.URL+"/conversations?limit=3&cursor="+c, auth)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestNewHandlerValidates(t *testing.T) {
	t.Parallel()
	_, err := provider.NewHandler(nil, provider.WithTokens(provider.Token{Secret: "x"}))
	require.Error(t, err)
	_, err = provider.NewHandler(memsource.New())
	require.ErrorContains(t, err, "no credentials")
	_, err = provider.NewHandler(memsource.New(), provider.WithTokens(provider.Token{Secret: "a"}, provider.Token{Secret: "a"}))
	require.ErrorContains(t, err, "repeats")
	_, err = provider.NewHandler(memsource.New(), provider.WithTokens(provider.Token{Secret: "a", Scopes: []string{"write:all"}}))
	require.ErrorContains(t, err, "scope")
	_, err = provider.NewHandler(memsource.New(), provider.WithTokens(provider.Token{Secret: "a"}), provider.WithCursorKey([]byte("short")))
	require.ErrorContains(t, err, "32")
	tok, err := provider.ParseToken("s=read:usage,read:events")
	require.NoError(t, err)
	require.Equal(t, provider.Token{Secret: "s", Scopes: []string{"read:usage", "read:events"}}, tok)
	_, err = provider.ParseToken("s=read:everything")
	require.Error(t, err)
}

func TestIDsAreDecodedOnce(t *testing.T) {
	t.Parallel()
	src := memsource.New()
	at := spec.NewTime(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	long := strings.Repeat("l", provider.MaxIDLength)
	for _, id := range []string{"a%20b", "a b", "100%", "a/b", "é", long, long[:len(long)-1] + "m"} {
		require.NoError(t, src.UpsertConversation(context.Background(), "t1", spec.Conversation{ID: id, StartedAt: at, UpdatedAt: at}))
	}
	srv := newServer(t, src)
	for _, id := range []string{"a%20b", "a b", "100%", "a/b", "é", long} {
		resp, body := do(t, http.MethodGet, srv.URL+"/conversations/"+url.PathEscape(id), auth)
		require.Equal(t, http.StatusOK, resp.StatusCode, "id %q: %s", id, body)
		var c spec.Conversation
		require.NoError(t, json.Unmarshal(body, &c))
		require.Equal(t, id, c.ID)
	}
	// Walking one record at a time works with the longest ids: every
	// cursor the provider issues, it accepts.
	seen := 0
	next := ""
	for {
		u := srv.URL + "/conversations?limit=1"
		if next != "" {
			u += "&cursor=" + url.QueryEscape(next)
		}
		resp, body := do(t, http.MethodGet, u, auth)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		var page spec.List[json.RawMessage]
		require.NoError(t, json.Unmarshal(body, &page))
		seen += len(page.Data)
		if !page.HasMore {
			break
		}
		next = *page.NextCursor
	}
	require.Equal(t, 7, seen)
	// The writers refuse ids the handler could not serve.
	err := src.UpsertConversation(context.Background(), "t1", spec.Conversation{ID: long + "x", StartedAt: at})
	require.ErrorIs(t, err, provider.ErrInvalid)
}

func TestTombstoneUpdatedAtMovesForward(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 1, 0, 0, 0, time.UTC)
	c := spec.Conversation{ID: "c", StartedAt: spec.NewTime(at), UpdatedAt: spec.NewTime(at),
		Messages: []spec.Message{{Content: "secret"}}}
	// Deleted "before" its last update (clock skew, a vendor's own log time).
	ts := provider.TombstoneOf(c, at.Add(-time.Hour))
	require.Equal(t, at.Add(-time.Hour), ts.DeletedAt.Time)
	require.Equal(t, at.Add(time.Millisecond), ts.UpdatedAt.Time)
	require.Nil(t, ts.Messages)
	ts = provider.TombstoneOf(c, at.Add(time.Hour))
	require.Equal(t, at.Add(time.Hour), ts.UpdatedAt.Time)

	src := memsource.New()
	require.NoError(t, src.UpsertConversation(context.Background(), "t1", c))
	require.NoError(t, src.DeleteConversation(context.Background(), "t1", "c", at.Add(-time.Minute)))
	got, err := src.GetConversation(context.Background(), "t1", "c")
	require.NoError(t, err)
	require.True(t, got.UpdatedAt.After(at), "an incremental reader must see the deletion")
}

func TestRoundCost(t *testing.T) {
	t.Parallel()
	require.Equal(t, 0.255354, provider.RoundCost(0.25535399999999997))
	a, b := 0.1, 0.2
	require.NotEqual(t, 0.3, a+b, "float noise")
	require.Equal(t, 0.3, provider.RoundCost(a+b))
	require.Equal(t, 1234.56789, provider.RoundCost(1234.56789))
	require.Equal(t, 0.0, provider.RoundCost(0))
}

// rawGetter serves single records as stored JSON with a member the spec
// types do not know, which only the raw path can keep.
type rawGetter struct {
	*memsource.Source
	bad bool // answer bytes that are not JSON
}

func (r rawGetter) GetConversationRaw(ctx context.Context, tenant, id string) (json.RawMessage, error) {
	c, err := r.GetConversation(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	if r.bad {
		return json.RawMessage(`{"id":`), nil
	}
	b, _ := json.Marshal(c)
	return append(b[:len(b)-1], `,"vendorExtra":{"kept":true}}`...), nil
}

func (r rawGetter) GetAssistantRaw(ctx context.Context, tenant, id string) (json.RawMessage, error) {
	a, err := r.GetAssistant(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(a)
	return append(b[:len(b)-1], `,"vendorExtra":1}`...), nil
}

func TestRawGetterServesStoredBytes(t *testing.T) {
	t.Parallel()
	src := seeded(t, 5)
	srv := newServer(t, rawGetter{Source: src})
	_, list := do(t, http.MethodGet, srv.URL+"/conversations", auth)
	var page spec.List[spec.Conversation]
	require.NoError(t, json.Unmarshal(list, &page))
	id := page.Data[0].ID
	resp, body := do(t, http.MethodGet, srv.URL+"/conversations/"+id, auth)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), `"vendorExtra":{"kept":true}`)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	resp, body = do(t, http.MethodGet, srv.URL+"/conversations/nope", auth)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(body))
	require.Contains(t, string(body), `No conversation with id \"nope\"`)

	bad := newServer(t, rawGetter{Source: src, bad: true})
	resp, body = do(t, http.MethodGet, bad.URL+"/conversations/"+id, auth)
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.NotContains(t, string(body), `{"id":`)
}

func TestMountIsBehindAuthentication(t *testing.T) {
	t.Parallel()
	var seen *provider.Principal
	mounted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = provider.PrincipalFrom(r.Context())
		_, _ = w.Write([]byte("mounted " + r.Method + " " + r.URL.Path))
	})
	srv := newServer(t, memsource.New(), provider.WithMount("/mcp", mounted))
	resp, body := do(t, http.MethodPost, srv.URL+"/mcp", nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "Bearer", resp.Header.Get("WWW-Authenticate")[:6])
	require.Contains(t, string(body), "No credential")
	require.Nil(t, seen)
	resp, body = do(t, http.MethodPost, srv.URL+"/mcp", map[string]string{"Authorization": "Bearer usage-only"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "mounted POST /mcp", string(body))
	require.Equal(t, "t1", seen.Tenant)
	require.Equal(t, []string{provider.ScopeUsage}, seen.Scopes)
	_, body = do(t, http.MethodGet, srv.URL+"/mcp/x", auth)
	require.Equal(t, "mounted GET /mcp/x", string(body))

	for _, bad := range []string{"mcp", "/", "/mcp/", "/conversations", "/usage/x", "/a/{id}"} {
		_, err := provider.NewHandler(memsource.New(), provider.WithTokens(provider.Token{Secret: "a"}), provider.WithMount(bad, mounted))
		require.Error(t, err, bad)
	}
}

// TestSecurityHeaders: every answer, data or error, is marked nosniff and
// no-store: it is a customer's data for one credential.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	srv := newServer(t, seeded(t, 2))
	for _, c := range []struct {
		method, path string
		hdr          map[string]string
		status       int
	}{
		{http.MethodGet, "/conversations", auth, http.StatusOK},
		{http.MethodGet, "/usage", auth, http.StatusOK},
		{http.MethodGet, "/conversations/nope", auth, http.StatusNotFound},
		{http.MethodGet, "/conversations", nil, http.StatusUnauthorized},
		{http.MethodGet, "/conversations?limit=0", auth, http.StatusBadRequest},
		{http.MethodPost, "/conversations", auth, http.StatusMethodNotAllowed},
		{http.MethodGet, "/nope", auth, http.StatusNotFound},
	} {
		resp, body := do(t, c.method, srv.URL+c.path, c.hdr)
		require.Equal(t, c.status, resp.StatusCode, "%s %s: %s", c.method, c.path, body)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), "%s %s", c.method, c.path)
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), "%s %s", c.method, c.path)
	}
}

// TestMaxPageBytes: a page stops at its byte budget (holding at least one
// record) with hasMore and a cursor after its last record, from stored JSON
// and from structs alike, and walking the cursors yields every record once.
func TestMaxPageBytes(t *testing.T) {
	t.Parallel()
	src := seeded(t, 40)
	_, one := do(t, http.MethodGet, newServer(t, src).URL+"/conversations?limit=1", auth)
	var first spec.List[json.RawMessage]
	require.NoError(t, json.Unmarshal(one, &first))
	record := len(first.Data[0])
	budget := 5*record + record/2 // five records and a half
	for name, ds := range map[string]provider.DataSource{"struct": src, "raw": rawWrapper{src}} {
		srv := newServer(t, ds, provider.WithMaxPageBytes(budget))
		seen := map[string]bool{}
		pages := 0
		for q := "/conversations?limit=1000"; ; pages++ {
			resp, body := do(t, http.MethodGet, srv.URL+q, auth)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", name, body)
			var page spec.List[spec.Conversation]
			require.NoError(t, json.Unmarshal(body, &page))
			require.NotEmpty(t, page.Data, name)
			require.LessOrEqual(t, len(page.Data), 6, "%s: a page stops at the budget", name)
			for _, c := range page.Data {
				require.False(t, seen[c.ID], "%s: %s twice", name, c.ID)
				seen[c.ID] = true
			}
			if !page.HasMore {
				break
			}
			q = "/conversations?limit=1000&cursor=" + *page.NextCursor
		}
		require.Len(t, seen, 40, name)
		require.GreaterOrEqual(t, pages, 6, name)
	}
	// A budget below one record still serves one record a page.
	srv := newServer(t, src, provider.WithMaxPageBytes(1))
	_, body := do(t, http.MethodGet, srv.URL+"/conversations?limit=1000", auth)
	var page spec.List[spec.Conversation]
	require.NoError(t, json.Unmarshal(body, &page))
	require.Len(t, page.Data, 1)
	require.True(t, page.HasMore)
	_, err := provider.NewHandler(src, provider.WithTokens(provider.Token{Secret: "x"}), provider.WithMaxPageBytes(0))
	require.ErrorContains(t, err, "WithMaxPageBytes")
}

// blockingSource holds every ListConversations until release is closed,
// telling entered of each.
type blockingSource struct {
	*memsource.Source
	entered chan struct{}
	release chan struct{}
}

func (s blockingSource) ListConversations(ctx context.Context, q provider.ConversationQuery) (provider.Page[spec.Conversation], error) {
	s.entered <- struct{}{}
	select {
	case <-s.release:
	case <-ctx.Done():
		return provider.Page[spec.Conversation]{}, ctx.Err()
	}
	return s.Source.ListConversations(ctx, q)
}

// TestMaxConcurrent: requests in flight of one credential, and of one
// tenant's credentials together, are bounded; the next is 429 with
// Retry-After before the DataSource is asked, another tenant is served, and
// the slots come back when the requests end.
func TestMaxConcurrent(t *testing.T) {
	t.Parallel()
	src := blockingSource{Source: seeded(t, 3), entered: make(chan struct{}, 10), release: make(chan struct{})}
	h, err := provider.NewHandler(src, provider.WithTokens(
		provider.Token{Secret: "a", Tenant: "t1"}, provider.Token{Secret: "b", Tenant: "t1"}, provider.Token{Secret: "c", Tenant: "t2"},
	), provider.WithMaxConcurrent(2, 3),
		// A mounted protocol's requests have bodies (MCP's JSON-RPC).
		provider.WithMount("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(w, r.Body) })))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(src.release) }) }
	t.Cleanup(releaseAll) // first, should the test fail holding requests
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	held := make(chan int, 3)
	hold := func(tok string) {
		go func() {
			resp, _ := do(t, http.MethodGet, srv.URL+"/conversations", bearer(tok))
			held <- resp.StatusCode
		}()
		<-src.entered // the request is in the DataSource: it holds its slot
	}
	hold("a")
	hold("a")
	// /usage does not block in this source: a probe never hangs.
	resp, body := do(t, http.MethodGet, srv.URL+"/usage", bearer("a"))
	problemOf(t, resp, body, http.StatusTooManyRequests)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	// A refused request with a body (MCP) is answered at once, its body
	// unread, and its connection closed: a client sending its body slowly
	// does not wait for it to arrive (net/http would first read up to
	// 256 KiB of it).
	cn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer cn.Close()
	_, err = fmt.Fprintf(cn, "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer a\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"jsonrpc\"")
	require.NoError(t, err)
	// A guard against hanging, not a measure: the answer comes at once.
	require.NoError(t, cn.SetReadDeadline(time.Now().Add(20*time.Second)))
	slow, err := http.ReadResponse(bufio.NewReader(cn), nil)
	require.NoError(t, err, "the refusal must not wait for the body")
	require.Equal(t, http.StatusTooManyRequests, slow.StatusCode)
	require.True(t, slow.Close, "the connection of a refused request with an unread body is closed")
	_ = slow.Body.Close()
	hold("b") // the tenant's third
	resp, body = do(t, http.MethodGet, srv.URL+"/usage", bearer("b"))
	problemOf(t, resp, body, http.StatusTooManyRequests)
	resp, body = do(t, http.MethodGet, srv.URL+"/usage", bearer("c"))
	require.Equal(t, http.StatusOK, resp.StatusCode, "another tenant: %s", body)
	releaseAll()
	for range 3 {
		require.Equal(t, http.StatusOK, <-held)
	}
	resp, body = do(t, http.MethodGet, srv.URL+"/conversations", bearer("a"))
	require.Equal(t, http.StatusOK, resp.StatusCode, "the slots are back: %s", body)
	require.Len(t, src.entered, 1, "the last request reached the DataSource")
}
