package sources_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/mcp"
)

// mcpPost sends one JSON-RPC request to the MCP endpoint u with key and,
// when not empty, the session id; it returns the status and the session id
// answered.
func mcpPost(t *testing.T, u, key, session, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

// TestCollectedViewMCPSessions: the collected view's MCP endpoint takes
// Config.MCPOptions: stateless by default; with sessions, bounded per API
// key, an ended or another key's session answered 404.
func TestCollectedViewMCPSessions(t *testing.T) {
	t.Parallel()
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"loop","version":"1"}}}`
	const toolsList = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		orgs, err := org.NewStore(ctx, db)
		require.NoError(t, err)
		actor := org.Actor{Type: org.ActorAdmin, Name: "test"}
		o, err := orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Acme"}, actor)
		require.NoError(t, err)
		var keys, keyIDs []string
		for _, name := range []string{"a", "b"} {
			k, err := orgs.CreateKey(ctx, org.KeyCreate{OrganisationID: o.ID, Name: name, Type: org.KeyTypeAPI}, actor)
			require.NoError(t, err)
			keys, keyIDs = append(keys, k.Secret), append(keyIDs, k.ID)
		}
		var sourceID string
		serve := func(opts ...mcp.Option) string {
			src, err := sources.New(ctx, sources.Config{DB: db, Orgs: orgs, Secrets: testRing, MCPOptions: opts})
			require.NoError(t, err)
			t.Cleanup(func() { _ = src.Close() })
			if sourceID == "" {
				s, err := src.Add(ctx, o.ID, sources.SourceCreate{Name: "pushed", Transport: sources.TransportPush})
				require.NoError(t, err)
				sourceID = s.ID
			}
			r := chi.NewRouter()
			src.Routes(r)
			srv := httptest.NewServer(r)
			t.Cleanup(srv.Close)
			return srv.URL + "/organisations/" + o.ID + "/sources/" + sourceID + "/mcp"
		}

		u := serve()
		for range 20 {
			status, id := mcpPost(t, u, keys[0], "", initialize)
			require.Equal(t, http.StatusOK, status)
			require.Empty(t, id, "the default endpoint is stateless")
		}
		// The key's last use names MCP.
		used, err := orgs.KeysLastUsed(ctx, o.ID)
		require.NoError(t, err)
		require.Equal(t, org.UseMCP, used[keyIDs[0]].API)

		u = serve(mcp.WithSessions(true), mcp.WithMaxSessionsPerCredential(2))
		var ids []string
		for range 3 {
			status, id := mcpPost(t, u, keys[0], "", initialize)
			require.Equal(t, http.StatusOK, status)
			require.NotEmpty(t, id)
			ids = append(ids, id)
		}
		status, _ := mcpPost(t, u, keys[0], ids[0], toolsList)
		require.Equal(t, http.StatusNotFound, status, "the key's oldest session past the bound")
		for _, id := range ids[1:] {
			status, _ = mcpPost(t, u, keys[0], id, toolsList)
			require.Equal(t, http.StatusOK, status)
		}
		status, _ = mcpPost(t, u, keys[1], ids[2], toolsList)
		require.Equal(t, http.StatusNotFound, status, "another key's session")
	})
}
