package cli

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMCPSessionFlags: provider serve's MCP endpoint is stateless unless
// --mcp-sessions (or AIUSAGE_MCP_SESSIONS), whose bounds come from their
// flags or environment variables; bad bounds are usage errors on both
// serving commands.
func TestMCPSessionFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	initialize := func(base, session, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(base, "/")+"/mcp", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tok")
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
	const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	const listBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

	base, _, _ := startServe(t, "--database-url", "sqlite:"+filepath.Join(dir, "a.db"), "--token", "tok")
	status, id := initialize(base, "", initBody)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, id, "stateless by default")

	base, _, _ = startServeEnv(t, map[string]string{"AIUSAGE_MCP_SESSIONS": "true", "AIUSAGE_MCP_MAX_SESSIONS_PER_CREDENTIAL": "1"},
		"--database-url", "sqlite:"+filepath.Join(dir, "b.db"), "--token", "tok")
	_, first := initialize(base, "", initBody)
	require.NotEmpty(t, first)
	_, second := initialize(base, "", initBody)
	status, _ = initialize(base, first, listBody)
	require.Equal(t, http.StatusNotFound, status, "past AIUSAGE_MCP_MAX_SESSIONS_PER_CREDENTIAL=1")
	status, _ = initialize(base, second, listBody)
	require.Equal(t, http.StatusOK, status)

	for _, cmd := range [][]string{
		{"provider", "serve", "--token", "x", "--database-url", "sqlite:" + filepath.Join(dir, "c.db")},
		{"service", "serve", "--database-url", "sqlite:" + filepath.Join(dir, "d.db")},
	} {
		for _, tc := range []struct {
			env  map[string]string
			args []string
			want string
		}{
			{nil, []string{"--mcp-session-idle-timeout", "0s"}, "--mcp-session-idle-timeout must be positive"},
			{nil, []string{"--mcp-max-sessions-per-credential", "0"}, "--mcp-max-sessions-per-credential must be at least 1"},
			{map[string]string{"AIUSAGE_MCP_MAX_SESSIONS_PER_CREDENTIAL": "-3"}, nil, "--mcp-max-sessions-per-credential must be at least 1"},
		} {
			r := runCLI(t, "", tc.env, append(cmd, tc.args...)...)
			require.Equal(t, ExitUsage, r.code, "%v %v: %s", cmd, tc.args, r.stderr)
			require.Contains(t, r.stderr, tc.want)
		}
	}
}
