package mcp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/provider"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"loop","version":"1"}}}`

const toolsListBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

// sessionServer mounts an MCP server made with opts behind the REST
// authentication of fullToken and noUsageTok (one tenant, two credentials).
func sessionServer(t *testing.T, opts ...mcp.Option) (*mcp.Server, string) {
	t.Helper()
	ds := demoSource(t)
	srv, err := mcp.NewServer(ds, opts...)
	require.NoError(t, err)
	rest, err := provider.NewHandler(ds,
		provider.WithTokens(provider.Token{Secret: fullToken, Tenant: tenant}, provider.Token{Secret: noUsageTok, Tenant: tenant}),
		provider.WithMount("/mcp", srv.HTTPHandler()))
	require.NoError(t, err)
	ts := httptest.NewServer(rest)
	t.Cleanup(ts.Close)
	return srv, ts.URL + "/mcp"
}

// rpc sends one request to the MCP endpoint at u with token and, when not
// empty, the session id; it returns the status, the session id answered
// and the body.
func rpc(t *testing.T, method, u, token, session, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

func initialize(t *testing.T, u, token string) string {
	t.Helper()
	status, id, body := rpc(t, http.MethodPost, u, token, "", initializeBody)
	require.Equal(t, http.StatusOK, status, body)
	return id
}

// TestStatelessByDefault: initialize in a loop with one token keeps nothing
// in the server (it was 13-16 KB per initialize, never released), and the
// tools answer without any session.
func TestStatelessByDefault(t *testing.T) {
	t.Parallel()
	srv, u := sessionServer(t)
	for range 200 {
		require.Empty(t, initialize(t, u, fullToken), "a stateless server issues no session id")
	}
	require.Zero(t, srv.Registered(), "sessions kept by mcp-go")

	status, _, body := rpc(t, http.MethodPost, u, fullToken, "", toolsListBody)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, "list_conversations")
	// A stale session id from an earlier, stateful server is ignored.
	status, _, body = rpc(t, http.MethodPost, u, fullToken, "mcp-session-4b1d2c1e-0000-4000-8000-000000000000", toolsListBody)
	require.Equal(t, http.StatusOK, status, body)
	// There is nothing to stream.
	status, _, _ = rpc(t, http.MethodGet, u, fullToken, "", "")
	require.Equal(t, http.StatusMethodNotAllowed, status)

	// mcp-go's client works on it.
	c, err := client.NewStreamableHttpClient(u, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + fullToken}))
	require.NoError(t, err)
	structured(t, call(t, startClient(t, c), "list_assistants", map[string]any{"limit": 1}))
}

// TestSessionsBoundedPerCredential: with sessions, one credential looping on
// initialize holds at most WithMaxSessionsPerCredential sessions; the ones
// it used least recently end (404), another credential's are untouched.
func TestSessionsBoundedPerCredential(t *testing.T) {
	t.Parallel()
	const max = 4
	srv, u := sessionServer(t, mcp.WithSessions(true), mcp.WithMaxSessionsPerCredential(max))

	other := initialize(t, u, noUsageTok)
	var ids []string
	for range 50 {
		id := initialize(t, u, fullToken)
		require.NotEmpty(t, id)
		ids = append(ids, id)
	}
	require.EqualValues(t, max+1, srv.Registered(), "sessions kept by mcp-go")
	require.Equal(t, max+1, srv.LiveSessions())

	for i, id := range ids {
		status, _, body := rpc(t, http.MethodPost, u, fullToken, id, toolsListBody)
		if i < len(ids)-max {
			require.Equal(t, http.StatusNotFound, status, "session %d of %d: %s", i, len(ids), body)
		} else {
			require.Equal(t, http.StatusOK, status, "session %d of %d: %s", i, len(ids), body)
		}
	}
	status, _, body := rpc(t, http.MethodPost, u, noUsageTok, other, toolsListBody)
	require.Equal(t, http.StatusOK, status, body)

	// A session belongs to the credential that opened it.
	status, _, _ = rpc(t, http.MethodPost, u, fullToken, other, toolsListBody)
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = rpc(t, http.MethodDelete, u, fullToken, other, "")
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = rpc(t, http.MethodPost, u, noUsageTok, other, toolsListBody)
	require.Equal(t, http.StatusOK, status)

	// The least recently used goes first: use the oldest live one, open one
	// more, and the second oldest has ended instead.
	live := ids[len(ids)-max:]
	status, _, _ = rpc(t, http.MethodPost, u, fullToken, live[0], toolsListBody)
	require.Equal(t, http.StatusOK, status)
	initialize(t, u, fullToken)
	status, _, _ = rpc(t, http.MethodPost, u, fullToken, live[1], toolsListBody)
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = rpc(t, http.MethodPost, u, fullToken, live[0], toolsListBody)
	require.Equal(t, http.StatusOK, status)

	// DELETE ends a session at once.
	status, _, _ = rpc(t, http.MethodDelete, u, noUsageTok, other, "")
	require.Equal(t, http.StatusOK, status)
	status, _, _ = rpc(t, http.MethodPost, u, noUsageTok, other, toolsListBody)
	require.Equal(t, http.StatusNotFound, status)
	require.EqualValues(t, max, srv.Registered())
}

// TestSessionsBoundedUnderConcurrentInitialize: initializes racing past the
// bound leave mcp-go holding no more than the bound once they are answered.
func TestSessionsBoundedUnderConcurrentInitialize(t *testing.T) {
	t.Parallel()
	const max = 3
	srv, u := sessionServer(t, mcp.WithSessions(true), mcp.WithMaxSessionsPerCredential(max))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 40 {
				status, _, body := rpc(t, http.MethodPost, u, fullToken, "", initializeBody)
				if status != http.StatusOK {
					t.Errorf("initialize: %d %s", status, body)
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, max, srv.LiveSessions())
	// A session registered after the table ended it is released after the
	// next request at the latest.
	initialize(t, u, fullToken)
	require.EqualValues(t, max, srv.Registered())
}

// clock is a settable clock for the sessions' idle timeout.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestSessionIdleTimeout: a session unused for the idle timeout ends, its
// next request is answered 404, mcp-go releases it, and the client starts
// again with initialize.
func TestSessionIdleTimeout(t *testing.T) {
	t.Parallel()
	clk := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	srv, u := sessionServer(t, mcp.WithSessions(true), mcp.WithSessionIdleTimeout(10*time.Minute), mcp.WithNow(clk.Now))

	id := initialize(t, u, fullToken)
	idle := initialize(t, u, fullToken)
	require.EqualValues(t, 2, srv.Registered())
	// A request keeps a session alive.
	clk.Advance(9 * time.Minute)
	status, _, body := rpc(t, http.MethodPost, u, fullToken, id, toolsListBody)
	require.Equal(t, http.StatusOK, status, body)
	clk.Advance(9 * time.Minute)
	status, _, body = rpc(t, http.MethodPost, u, fullToken, id, toolsListBody)
	require.Equal(t, http.StatusOK, status, body)
	// The other one was idle for 18 minutes: it ended and mcp-go let it go.
	require.EqualValues(t, 1, srv.Registered())
	status, _, _ = rpc(t, http.MethodPost, u, fullToken, idle, toolsListBody)
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = rpc(t, http.MethodGet, u, fullToken, idle, "")
	require.Equal(t, http.StatusNotFound, status)

	clk.Advance(10 * time.Minute)
	status, _, _ = rpc(t, http.MethodPost, u, fullToken, id, toolsListBody)
	require.Equal(t, http.StatusNotFound, status)
	require.Zero(t, srv.Registered())
	require.Zero(t, srv.LiveSessions())

	// mcp-go's client sees the 404 as the end of its session and starts a
	// new one.
	c, err := client.NewStreamableHttpClient(u, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + fullToken}))
	require.NoError(t, err)
	c = startLegacyClient(t, c)
	structured(t, call(t, c, "list_assistants", map[string]any{"limit": 1}))
	require.EqualValues(t, 1, srv.Registered())
	clk.Advance(11 * time.Minute)
	_, err = c.ListTools(context.Background(), mcpgo.ListToolsRequest{})
	require.ErrorIs(t, err, transport.ErrSessionTerminated)
	_, err = c.Initialize(context.Background(), legacyInit())
	require.NoError(t, err)
	structured(t, call(t, c, "list_assistants", map[string]any{"limit": 1}))
	require.EqualValues(t, 1, srv.Registered())
}

// legacyInit initializes with protocol version 2025-06-18, which has
// sessions (2026-07-28 has none).
func legacyInit() mcpgo.InitializeRequest {
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcpgo.Implementation{Name: "kit-test", Version: "1"}
	return init
}

func startLegacyClient(t *testing.T, c *client.Client) *client.Client {
	t.Helper()
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() { _ = c.Close() })
	_, err := c.Initialize(context.Background(), legacyInit())
	require.NoError(t, err)
	return c
}

func TestSessionOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []mcp.Option{mcp.WithSessionIdleTimeout(0), mcp.WithMaxSessionsPerCredential(0)} {
		_, err := mcp.NewServer(demoSource(t), o)
		require.ErrorContains(t, err, "is not positive")
	}
}
