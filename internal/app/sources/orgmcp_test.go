package sources_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
)

// tsClientDir holds the MCP TypeScript SDK client (mcp/tsclient); .ci/run
// installs its node_modules.
var tsClientDir = filepath.Join("..", "..", "..", "mcp", "tsclient")

// needNode returns the node binary, and skips the test when the TypeScript
// client is not installed, unless AIUSAGE_REQUIRE_NODE=1 (CI), where it
// fails.
func needNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	_, statErr := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk"))
	if err != nil || statErr != nil {
		msg := "the MCP TypeScript client is not installed: run (cd mcp/tsclient && npm ci)"
		if os.Getenv("AIUSAGE_REQUIRE_NODE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node
}

// newRecentProvider serves, for tenant acme over REST, the demo dataset of
// seed whose activity ends now, so that the default week of get_usage
// holds usage.
func newRecentProvider(t *testing.T, conversations int, seed uint64) string {
	t.Helper()
	src := memsource.New()
	require.NoError(t, demodata.Fill(t.Context(), demodata.Config{Conversations: conversations, Seed: seed, End: time.Now()}, "acme", src))
	h, err := provider.NewHandler(src, provider.WithTokens(provider.Token{Secret: providerToken, Tenant: "acme"}))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestOrganisationMCPTypeScriptClient connects the official MCP TypeScript
// SDK to the organisation's one view over MCP (/organisations/{id}/mcp),
// with an API key of the organisation, over two synced sources: it lists
// the tools, calls each, validates the structured content against the
// output schemas and compares it with the REST answers of the
// organisation's view; single records are tool errors, as they are 404
// over REST. Another organisation's key, and none, are refused.
func TestOrganisationMCPTypeScriptClient(t *testing.T) {
	t.Parallel()
	node := needNode(t)
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		for i, n := range []int{30, 20} {
			s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: fmt.Sprint("demo ", i), URL: newRecentProvider(t, n, uint64(i+1)), Token: providerToken})
			require.NoError(t, err)
			_, err = e.src.SyncNow(ctx, s.ID)
			require.NoError(t, err)
		}
		base := e.url + "/organisations/" + e.org.ID

		for _, key := range []string{"", e.otherKy, "aiu_not_a_key"} {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			want := http.StatusUnauthorized
			if key == e.otherKy {
				want = http.StatusNotFound // another organisation's path
			}
			require.Equal(t, want, resp.StatusCode, "key %q", key)
		}

		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(cctx, node, "check.mjs", "--rest", base, "--token", e.key, "--http", base+"/mcp", "--merged")
		cmd.Dir = tsClientDir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the TypeScript SDK client failed:\n%s", out)
		require.Contains(t, string(out), "all checks passed", string(out))
		t.Logf("%s", out)
	})
}
