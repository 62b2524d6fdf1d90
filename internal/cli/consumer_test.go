package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// providerWalk reads every record of a list endpoint, as served.
func providerWalk(t *testing.T, base, token, path string) []string {
	t.Helper()
	var out []string
	cursor := ""
	for {
		u := strings.TrimSuffix(base, "/") + path + "?limit=1000"
		if cursor != "" {
			u += "&cursor=" + cursor
		}
		req, err := http.NewRequest(http.MethodGet, u, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		var page struct {
			Data       []json.RawMessage `json:"data"`
			HasMore    bool              `json:"hasMore"`
			NextCursor string            `json:"nextCursor"`
		}
		require.NoError(t, json.Unmarshal(body, &page))
		for _, r := range page.Data {
			out = append(out, string(r))
		}
		if !page.HasMore {
			return out
		}
		cursor = page.NextCursor
	}
}

func TestConsumerSyncStatusExport(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			base, _, _ := startServe(t, "--database-url", "sqlite:"+filepath.Join(t.TempDir(), "p.db"), "--token", "tok", "--demo", "250")
			store := sqldbtest.URL(t, d)
			r := runCLI(t, "", nil, "consumer", "sync", "--database-url", store, "--source", "vendor", "--url", base, "--token", "tok", "--page-size", "100")
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.Contains(t, r.stderr, "conversations: page 1 (full): 100 records")
			require.Regexp(t, `conversations: 250 records in 3 pages, 0 quarantined`, r.stderr)
			require.Contains(t, r.stderr, "sync of vendor:")

			for _, res := range []string{"conversations", "assistants", "events"} {
				r = runCLI(t, "", nil, "consumer", "export", "--database-url", store, "--source", "vendor", "--resource", res)
				require.Equal(t, ExitOK, r.code, r.stderr)
				want := providerWalk(t, base, "tok", "/"+res)
				require.Equal(t, strings.Join(want, "\n")+"\n", r.stdout, res)
			}
			r = runCLI(t, "", nil, "consumer", "export", "--database-url", store, "--source", "vendor", "--resource", "usage", "--output", filepath.Join(t.TempDir(), "u.ndjson"))
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.Empty(t, r.stdout)

			r = runCLI(t, "", nil, "consumer", "status", "--database-url", store)
			require.Equal(t, ExitOK, r.code, r.stderr)
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			require.Len(t, lines, 5, r.stdout)
			require.Regexp(t, `^SOURCE\s+RESOURCE\s+RECORDS\s+MISSING\s+QUARANTINED\s+WATERMARK\s+LAST SUCCESS\s+FULL RE-PULL\s+LAST ERROR$`, lines[0])
			require.Regexp(t, `^vendor\s+conversations\s+250\s+0\s+0\s+\d{4}-\d\d-\d\dT\S+Z\s+\S+Z\s+no\s+-$`, lines[1])
			r = runCLI(t, "", nil, "consumer", "status", "--database-url", store, "--format", "json")
			require.Equal(t, ExitOK, r.code, r.stderr)
			var st []map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
			require.Len(t, st, 4)
			require.Equal(t, "usage", st[3]["resource"])
			require.Equal(t, false, st[0]["needsFullRepull"])

			// The same copy through the provider's MCP binding.
			r = runCLI(t, "", nil, "consumer", "sync", "--database-url", store, "--source", "vendor-mcp", "--url", base+"mcp", "--token", "tok", "--transport", "mcp", "--resources", "conversations,events", "--quiet")
			require.Equal(t, ExitOK, r.code, r.stderr)
			for _, res := range []string{"conversations", "events"} {
				viaREST := runCLI(t, "", nil, "consumer", "export", "--database-url", store, "--source", "vendor", "--resource", res)
				viaMCP := runCLI(t, "", nil, "consumer", "export", "--database-url", store, "--source", "vendor-mcp", "--resource", res)
				require.Equal(t, viaREST.stdout, viaMCP.stdout, res)
			}

			// A second sync is incremental: it reads little.
			r = runCLI(t, "", nil, "consumer", "sync", "--database-url", store, "--source", "vendor", "--url", base, "--token", "tok", "--resources", "conversations,events", "--quiet")
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.NotContains(t, r.stderr, "page 1")
			require.NotContains(t, r.stderr, "full re-pull")

			r = runCLI(t, "", nil, "consumer", "quarantine", "--database-url", store)
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.Empty(t, r.stdout)

			r = runCLI(t, "", nil, "consumer", "export", "--database-url", store, "--source", "nobody", "--resource", "events")
			require.Equal(t, ExitUsage, r.code)
			require.Contains(t, r.stderr, `no source "nobody" in the store (known: vendor, vendor-mcp)`)
		})
	}
}

// TestConsumerReadersCreateNothing: status, export and quarantine on a
// database that holds no store say so (exit 2) and create nothing there.
func TestConsumerReadersCreateNothing(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			url := sqldbtest.URL(t, d)
			if d == sqldb.SQLite {
				url = "sqlite:" + filepath.Join(t.TempDir(), "none.db")
			}
			for _, args := range [][]string{
				{"consumer", "status", "--database-url", url},
				{"consumer", "export", "--database-url", url, "--source", "s", "--resource", "events"},
				{"consumer", "quarantine", "--database-url", url},
			} {
				r := runCLI(t, "", nil, args...)
				require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
				require.Contains(t, r.stderr, "no consumer store there (run 'aiusage consumer sync' first)")
			}
			if d == sqldb.SQLite {
				_, err := os.Stat(strings.TrimPrefix(url, "sqlite:"))
				require.True(t, os.IsNotExist(err), "the SQLite file was created")
			} else {
				db, err := sqldb.Open(t.Context(), url)
				require.NoError(t, err)
				defer db.Close()
				var n int
				require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&n))
				require.Zero(t, n, "tables were created")
			}
		})
	}
}

func TestConsumerSyncFailures(t *testing.T) {
	t.Parallel()
	base, _, _ := startServe(t, "--database-url", "sqlite:"+filepath.Join(t.TempDir(), "p.db"), "--token", "tok", "--token", "usage-only=read:usage", "--demo", "20")
	store := "sqlite:" + filepath.Join(t.TempDir(), "c.db")
	// A token without read:conversations: those fail (exit 1), usage syncs.
	r := runCLI(t, "", nil, "consumer", "sync", "--database-url", store, "--source", "v", "--url", base, "--token", "usage-only", "--resources", "conversations,usage")
	require.Equal(t, ExitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, "conversations: 0 records in 0 pages, 0 quarantined")
	require.Contains(t, r.stderr, "FAILED: ")
	require.Contains(t, r.stderr, "forbidden")
	require.Regexp(t, `usage: \d+ records`, r.stderr)
	r = runCLI(t, "", nil, "consumer", "status", "--database-url", store)
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Regexp(t, `v\s+conversations\s+0\s+0\s+0\s+-\s+-\s+no\s+\S+Z forbidden`, r.stdout)

	// An unreachable provider: retries exhausted, exit 1.
	r = runCLI(t, "", nil, "consumer", "sync", "--database-url", store, "--source", "v", "--url", "http://127.0.0.1:1", "--resources", "events", "--max-retries", "1", "--timeout", "2s")
	require.Equal(t, ExitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, "events: retry 1")

	// A URL where no provider is: every resource answers 404.
	r = runCLI(t, "", nil, "consumer", "sync", "--database-url", store, "--source", "v", "--url", base+"nope/")
	require.Equal(t, ExitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, "offers none of the resources synced: is --url its base address?")
	// A store that cannot be reached is a failure, not a usage error.
	r = runCLI(t, "", nil, "consumer", "sync", "--database-url", "postgres://nobody@127.0.0.1:1/x?connect_timeout=2", "--source", "v", "--url", base)
	require.Equal(t, ExitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, "consumer sync: the store at postgres://nobody@127.0.0.1:1/x")

	usage := [][]string{
		{"consumer", "sync", "--url", base},
		{"consumer", "sync", "--source", "v"},
		{"consumer", "sync", "--source", "v", "--url", "ftp://x"},
		{"consumer", "sync", "--source", "v", "--url", base, "--resources", "chats"},
		{"consumer", "sync", "--source", "v", "--url", base, "--usage-granularity", "week"},
		{"consumer", "sync", "--source", "v", "--url", base, "--usage-group-by", "colour"},
		{"consumer", "sync", "--source", "v", "--url", base, "--page-size", "5000"},
		{"consumer", "sync", "--source", "v", "--url", base, "--database-url", "mysql://x"},
		{"consumer", "sync", "extra"},
		{"consumer", "status", "--database-url", "sqlite:" + filepath.Join(t.TempDir(), "none.db")},
		{"consumer", "status", "--format", "xml"},
		{"consumer", "export", "--source", "v"},
		{"consumer", "export", "--source", "v", "--resource", "chats"},
		{"consumer", "sync", "--source", "v", "--url", base, "--full-every", "-1h"},
		{"consumer", "sync", "--source", "v", "--url", base, "--transport", "grpc"},
		{"consumer", "sync", "--source", "v", "--url", base, "--transport", "mcp", "--api-key-header"},
		{"consumer", "sync", "--source", "v", "--transport", "openai", "--token", "k", "--vendor-rate", "0"},
		{"consumer", "sync", "--source", "v", "--transport", "anthropic", "--token", "k", "--vendor-rate", "NaN"},
		{"consumer", "sync", "--source", "v", "--url", base, "--vendor-rate", "2"},
		{"consumer", "export", "--source", "v", "--resource", "events", "--database-url", "sqlite::memory:"},
	}
	for _, args := range usage {
		if !slices.Contains(args, "--database-url") {
			args = append(args, "--database-url", store)
		}
		r := runCLI(t, "", nil, args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.NotEmpty(t, r.stderr, args)
	}
}

// TestConsumerSyncEvery runs the loop and stops it as SIGINT would.
func TestConsumerSyncEvery(t *testing.T) {
	t.Parallel()
	base, _, _ := startServe(t, "--database-url", "sqlite:"+filepath.Join(t.TempDir(), "p.db"), "--token", "tok", "--demo", "30")
	store := "sqlite:" + filepath.Join(t.TempDir(), "c.db")
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: logs, getenv: testGetenv(nil)}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, e, []string{"consumer", "sync", "--database-url", store, "--source", "v", "--url", base, "--token", "tok", "--every", "50ms", "--quiet", "--resources", "events"})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(logs.String(), "sync of v:") < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		require.Equal(t, ExitOK, code, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("consumer sync --every did not stop")
	}
	require.GreaterOrEqual(t, strings.Count(logs.String(), "sync of v:"), 3, logs.String())
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		require.NotContains(t, sc.Text(), "FAILED")
	}
}
