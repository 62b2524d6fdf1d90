package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/provider/export"
	"github.com/aiusage/kit/provider/sqlsource"
	"github.com/aiusage/kit/spec"
)

func TestProviderExportWritesSets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "provider.db")
	db, err := sqldb.Open(ctx, dbURL)
	require.NoError(t, err)
	src, err := sqlsource.New(ctx, db.DB, sqlsource.Dialect(db.Dialect))
	require.NoError(t, err)
	require.NoError(t, demodata.Fill(ctx, demodata.Config{Seed: 3, Conversations: 30, Tenant: "acme"}, "acme", src))
	require.NoError(t, db.Close())

	out := filepath.Join(t.TempDir(), "export")
	line := regexp.MustCompile(`^set (\S+) \((full|increment)\): (\d+) conversations, (\d+) assistants, (\d+) events, (\d+) usage\n$`)
	res := runCLI(t, "", nil, "provider", "export", "--database-url", dbURL, "--out", out, "--tenant", "acme")
	require.Equal(t, 0, res.code, res.stderr)
	m := line.FindStringSubmatch(res.stdout)
	require.NotNil(t, m, res.stdout)
	require.Equal(t, "full", m[2])
	require.Equal(t, "30", m[3])

	res = runCLI(t, "", map[string]string{"AIUSAGE_DATABASE_URL": dbURL}, "provider", "export", "--out", out, "--tenant", "acme")
	require.Equal(t, 0, res.code, res.stderr)
	m2 := line.FindStringSubmatch(res.stdout)
	require.NotNil(t, m2, res.stdout)
	require.Equal(t, "increment", m2[2])
	require.Equal(t, "0", m2[3], "nothing changed since the full set")

	sets, err := export.Sets(out)
	require.NoError(t, err)
	require.Len(t, sets, 2)
	require.Equal(t, m[1], sets[0].ID)
	require.Equal(t, sets[0].ID, sets[1].Previous)
	_, err = os.Stat(filepath.Join(out, spec.ExportIndexName))
	require.NoError(t, err)

	// --kind full and --keep: a new full set, the older ones pruned.
	res = runCLI(t, "", nil, "provider", "export", "--database-url", dbURL, "--out", out, "--tenant", "acme", "--kind", "full", "--keep", "1ns")
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, "(full)")
	require.Contains(t, res.stdout, "pruned 2 set(s): "+m[1])
	sets, err = export.Sets(out)
	require.NoError(t, err)
	require.Len(t, sets, 1)
}

func TestProviderExportUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--out is required"},
		{[]string{"--out", "x", "--kind", "partial"}, "--kind must be auto, full or increment"},
		{[]string{"--out", "x", "--every", "-1s"}, "--every must not be negative"},
		{[]string{"--out", "x", "--keep", "-1s"}, "--keep must not be negative"},
		{[]string{"--out", "x", "--full-every", "0"}, "--full-every must be positive"},
		{[]string{"--out", "x", "--every", "1h", "--kind", "full"}, "with --every the kind is auto"},
		{[]string{"--out", "x", "--tenant", ""}, "--tenant must not be empty"},
		{[]string{"--out", "x", "--database-url", "mysql://x"}, "--database-url"},
	} {
		res := runCLI(t, "", nil, append([]string{"provider", "export"}, tc.args...)...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", tc.args, res.stderr)
		require.Contains(t, res.stderr, tc.want, "%v", tc.args)
	}
}

// exportedProvider fills a provider's tables (SQLite) with conversations
// generated from seed for tenant acme, exports them with 'aiusage provider
// export', and returns the export's directory.
func exportedProvider(t *testing.T, seed uint64, conversations int) string {
	t.Helper()
	ctx := context.Background()
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "provider.db")
	db, err := sqldb.Open(ctx, dbURL)
	require.NoError(t, err)
	src, err := sqlsource.New(ctx, db.DB, sqlsource.Dialect(db.Dialect))
	require.NoError(t, err)
	require.NoError(t, demodata.Fill(ctx, demodata.Config{Seed: seed, Conversations: conversations, Tenant: "acme"}, "acme", src))
	require.NoError(t, db.Close())
	out := filepath.Join(t.TempDir(), "export")
	res := runCLI(t, "", nil, "provider", "export", "--database-url", dbURL, "--out", out, "--tenant", "acme")
	require.Equal(t, 0, res.code, res.stderr)
	return out
}

func TestConsumerSyncFromExport(t *testing.T) {
	t.Parallel()
	out := exportedProvider(t, 5, 25)

	store := "sqlite:" + filepath.Join(t.TempDir(), "consumer.db")
	res := runCLI(t, "", nil, "consumer", "sync", "--database-url", store, "--source", "vendor", "--transport", "export", "--url", out)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stderr, "conversations: 25 records")
	require.Contains(t, res.stderr, "1 full walk(s)")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--url", "relative/dir"}, "relative"},
		{[]string{"--url", out, "--token", "t"}, "takes no token"},
		{[]string{"--url", out, "--api-key-header"}, "--api-key-header applies to --transport rest only"},
		{[]string{"--url", out, "--export-max-file-mib", "0"}, "--export-max-file-mib must be 1 to 1048576"},
	} {
		args := append([]string{"consumer", "sync", "--database-url", store, "--source", "vendor", "--transport", "export"}, tc.args...)
		res := runCLI(t, "", nil, args...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", args, res.stderr)
		require.Contains(t, res.stderr, tc.want, "%v", args)
	}
}

// TestConsumerSyncExportBound: --export-max-file-mib (or its variable)
// bounds what one file of the export may decompress to.
func TestConsumerSyncExportBound(t *testing.T) {
	t.Parallel()
	out := exportedProvider(t, 7, 1000)
	store := "sqlite:" + filepath.Join(t.TempDir(), "consumer.db")
	args := []string{"consumer", "sync", "--database-url", store, "--source", "vendor", "--transport", "export", "--url", out, "--resources", "conversations"}
	res := runCLI(t, "", nil, append(args, "--export-max-file-mib", "1")...)
	require.Equal(t, ExitFailure, res.code, res.stderr)
	require.Contains(t, res.stderr, "export file too large")
	res = runCLI(t, "", map[string]string{"AIUSAGE_EXPORT_MAX_FILE_MIB": "64"}, args...)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stderr, "conversations: 1000 records")
}

func TestConformanceExport(t *testing.T) {
	t.Parallel()
	out := exportedProvider(t, 6, 40)

	res := runCLI(t, "", nil, "conformance", "export", out, "--format", "json", "--quiet")
	require.Equal(t, 0, res.code, res.stderr+res.stdout)
	var rep struct {
		Results []struct{ ID, Status string }
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rep))
	ids := map[string]bool{}
	for _, r := range rep.Results {
		ids[r.ID] = true
		require.Contains(t, []string{"PASS", "SKIP"}, r.Status, r.ID)
	}
	require.True(t, ids["EXP-01"] && ids["EXP-09"], "%v", ids)

	// A corrupt file: exit 1, the file named.
	sets, err := export.Sets(out)
	require.NoError(t, err)
	name := filepath.Join(out, sets[0].ID, "events.ndjson.gz")
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	b[len(b)/2] ^= 1
	require.NoError(t, os.WriteFile(name, b, 0o644))
	res = runCLI(t, "", nil, "conformance", "export", out)
	require.Equal(t, ExitFailure, res.code, res.stderr)
	require.Contains(t, res.stdout, "EXP-03")
	require.Contains(t, res.stdout, sets[0].ID+"/events.ndjson.gz")
	res = runCLI(t, "", nil, "conformance", "export", out, "--skip", "EXP-03,EXP-04")
	require.Equal(t, 0, res.code, res.stdout)

	res = runCLI(t, "", nil, "conformance", "export", "--list")
	require.Equal(t, 0, res.code)
	require.Contains(t, res.stdout, "EXP-09")
	require.NotContains(t, res.stdout, "PAGE-01")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"conformance", "export"}, "want one DIR or URL"},
		{[]string{"conformance", "exports", out}, "the only one is 'export DIR|URL'"},
		{[]string{"conformance", "export", out, "--rate", "3"}, "--rate do(es) not apply"},
		{[]string{"conformance", "export", filepath.Join(out, "nope")}, "export unreadable"},
		{[]string{"conformance", "export", out, "--only", "PAGE-01"}, "unknown export check id"},
	} {
		res := runCLI(t, "", nil, tc.args...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", tc.args, res.stderr)
		require.Contains(t, res.stderr, tc.want, "%v", tc.args)
	}
}

// TestConsumerSyncExportHTTPRetries: a sync of an export over HTTP retries
// what the REST transport retries (here a 503, then a 408, on every file)
// and its summary counts the retries.
func TestConsumerSyncExportHTTPRetries(t *testing.T) {
	t.Parallel()
	out := exportedProvider(t, 8, 20)
	files := http.FileServer(http.Dir(out))
	var mu sync.Mutex
	seen := map[string]int{}
	faults := 0
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n := seen[r.URL.Path]
		seen[r.URL.Path]++
		if n < 2 {
			faults++
		}
		mu.Unlock()
		switch n {
		case 0:
			http.Error(rw, "injected", http.StatusServiceUnavailable)
		case 1:
			http.Error(rw, "injected", http.StatusRequestTimeout)
		default:
			files.ServeHTTP(rw, r)
		}
	}))
	t.Cleanup(srv.Close)
	store := "sqlite:" + filepath.Join(t.TempDir(), "consumer.db")
	res := runCLI(t, "", nil, "consumer", "sync", "--database-url", store, "--source", "vendor", "--transport", "export",
		"--url", srv.URL+"/", "--resources", "conversations")
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stderr, "conversations: 20 records")
	mu.Lock()
	defer mu.Unlock()
	require.Positive(t, faults)
	require.Contains(t, res.stderr, fmt.Sprintf("sync of vendor: 20 records, %d retries", faults))
	require.Contains(t, res.stderr, "conversations: retry 1 in ")
}
