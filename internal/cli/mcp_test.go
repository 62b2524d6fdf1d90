package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tsClientDir holds the MCP TypeScript SDK client (mcp/tsclient); .ci/run
// installs its node_modules.
var tsClientDir = filepath.Join("..", "..", "mcp", "tsclient")

// needNode skips the test when the TypeScript client is not installed,
// unless AIUSAGE_REQUIRE_NODE=1 (CI), where it fails.
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

// runTSClient runs check.mjs with args and fails the test with its output
// when it fails.
func runTSClient(t *testing.T, node string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"check.mjs"}, args...)...)
	cmd.Dir = tsClientDir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the TypeScript SDK client failed:\n%s", out)
	require.Contains(t, string(out), "all checks passed", string(out))
	t.Logf("%s", out)
}

// TestMCPTypeScriptClient connects the official MCP TypeScript SDK to
// 'aiusage provider serve --demo' over streamable HTTP (/mcp), and over
// stdio through 'aiusage mcp --url --token': it lists the tools, calls
// each, validates the structured content against the output schemas and
// compares it with the REST answers.
func TestMCPTypeScriptClient(t *testing.T) {
	t.Parallel()
	node := needNode(t)
	base, _, _ := startServe(t, "--database-url", "sqlite:"+filepath.Join(t.TempDir(), "p.db"), "--token", "tok", "--demo", "200")
	rest := strings.TrimSuffix(base, "/")

	t.Run("streamable HTTP", func(t *testing.T) {
		runTSClient(t, node, "--rest", rest, "--token", "tok", "--http", rest+"/mcp")
	})
	t.Run("streamable HTTP with sessions", func(t *testing.T) {
		base, _, _ := startServe(t, "--database-url", "sqlite:"+filepath.Join(t.TempDir(), "s.db"), "--token", "tok", "--demo", "20",
			"--mcp-sessions", "--mcp-max-sessions-per-credential", "2")
		rest := strings.TrimSuffix(base, "/")
		runTSClient(t, node, "--rest", rest, "--token", "tok", "--http", rest+"/mcp")
	})
	t.Run("stdio", func(t *testing.T) {
		if testing.Short() {
			t.Skip("builds and runs the binary: make test runs it (the stdio server runs in-process under -race in mcp.TestStdio)")
		}
		bin := filepath.Join(t.TempDir(), "aiusage")
		build := exec.Command("go", "build", "-o", bin, "./cmd/aiusage")
		build.Dir = filepath.Join("..", "..")
		out, err := build.CombinedOutput()
		require.NoError(t, err, "%s", out)
		runTSClient(t, node, "--rest", rest, "--token", "tok", "--stdio", bin, "mcp", "--url", rest, "--token", "tok")
	})
}
