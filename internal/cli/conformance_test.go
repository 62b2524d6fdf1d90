package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/conformance"
	"github.com/aiusage/kit/internal/infra/sqldb"
)

func TestConformanceCommand(t *testing.T) {
	t.Parallel()
	base, _, _ := startServe(t, "--database-url", "sqlite:"+filepath.Join(t.TempDir(), "p.db"), "--token", "full",
		"--token", "nousage=read:conversations,read:assistants,read:events", "--tenant-token", "other:o", "--demo", "200")
	args := []string{"conformance", "--url", base, "--token", "full", "--token-without-usage", "nousage", "--other-tenant-token", "o", "--rate", "2000", "--quiet"}

	r := runCLI(t, "", nil, args...)
	require.Equal(t, ExitOK, r.code, "%s\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "0 failed")
	require.NotContains(t, r.stdout, "\x1b[", "no colour when not on a terminal")
	require.Regexp(t, `PASS\s+AUTH-03`, r.stdout)

	// The old name of --token-without-usage, and its environment
	// variable, still work; the new name wins over the old one.
	for _, extra := range [][]string{
		{"--usage-less-token", "nousage"},
		{"--token-without-usage", "nousage", "--usage-less-token", "wrong"},
	} {
		r = runCLI(t, "", nil, "conformance", "--url", base, "--token", "full", "--rate", "2000", "--quiet", "--only", "AUTH-03", extra[0], extra[1], extra[len(extra)-2], extra[len(extra)-1])
		require.Equal(t, ExitOK, r.code, "%v: %s\n%s", extra, r.stdout, r.stderr)
		require.Regexp(t, `PASS\s+AUTH-03`, r.stdout, extra)
	}
	r = runCLI(t, "", map[string]string{"AIUSAGE_USAGE_LESS_TOKEN": "nousage"}, "conformance", "--url", base, "--token", "full", "--rate", "2000", "--quiet", "--only", "AUTH-03")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Regexp(t, `PASS\s+AUTH-03`, r.stdout)

	// One self-contained HTML file.
	html := filepath.Join(t.TempDir(), "report.html")
	r = runCLI(t, "", nil, append(args, "--format", "html", "--output", html, "--only", "ENV")...)
	require.Equal(t, ExitOK, r.code, r.stderr)
	b, err := os.ReadFile(html)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(strings.ToLower(string(b)), "<!doctype html>"), "%.100s", b)
	require.Contains(t, string(b), "ENV-01")
	require.NotContains(t, string(b), "<script")
	require.NotContains(t, string(b), "Bearer full")

	r = runCLI(t, "", nil, append(args, "--format", "json", "--only", "PAGE")...)
	require.Equal(t, ExitOK, r.code, r.stderr)
	var rep struct {
		Results []struct{ ID, Status string }
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.NotEmpty(t, rep.Results)
	for _, res := range rep.Results {
		require.Regexp(t, `^PAGE-`, res.ID)
	}

	out := filepath.Join(t.TempDir(), "report.xml")
	r = runCLI(t, "", nil, append(args, "--format", "junit", "--output", out, "--only", "AUTH")...)
	require.Equal(t, ExitOK, r.code, r.stderr)
	b, err = os.ReadFile(out)
	require.NoError(t, err)
	var suites struct {
		Suites []struct {
			Tests int `xml:"tests,attr"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(b, &suites))
	require.NotEmpty(t, suites.Suites)
	require.Contains(t, r.stderr, "checks:")

	// A baseline entry that no longer fails is reported as stale.
	bl := filepath.Join(t.TempDir(), "baseline")
	require.NoError(t, os.WriteFile(bl, []byte("PAGE-10 # opaque cursors\n"), 0o644))
	r = runCLI(t, "", nil, append(args, "--only", "PAGE-10", "--baseline", bl)...)
	require.Equal(t, ExitOK, r.code)
	require.Contains(t, r.stdout, "stale baseline entry: PAGE-10")
}

func TestConformanceList(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "", nil, "conformance", "--list")
	require.Equal(t, ExitOK, r.code, r.stderr)
	for _, c := range conformance.Catalogue {
		require.Contains(t, r.stdout, c.ID)
	}
	var want bytes.Buffer
	require.NoError(t, conformance.WriteCatalogueText(&want))
	require.Equal(t, want.String(), r.stdout)
}

// TestConformanceWaits starts the suite before the provider: it waits,
// says so, and runs once the provider answers.
func TestConformanceWaits(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	done := make(chan result, 1)
	go func() {
		done <- runCLI(t, "", nil, "conformance", "--url", "http://"+addr, "--token", "full", "--rate", "2000", "--wait", "60s", "--only", "ENV-04")
	}()
	time.Sleep(700 * time.Millisecond)
	startServe(t, "--addr", addr, "--database-url", "sqlite:"+filepath.Join(t.TempDir(), "p.db"), "--token", "full", "--demo", "20")
	r := <-done
	require.Equal(t, ExitOK, r.code, "%s\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stderr, "waiting up to 1m0s for http://"+addr)
	require.Contains(t, r.stdout, "ENV-04")

	// Without --wait, or when the wait runs out, it gives up with exit 2.
	r = runCLI(t, "", nil, "conformance", "--url", "http://127.0.0.1:1", "--token", "t", "--wait", "300ms")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "unreachable")
	require.Contains(t, r.stderr, "waited 300ms")
}

func TestConformanceFailsABrokenProvider(t *testing.T) {
	t.Parallel()
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "p.db")
	base, _, _ := startServe(t, "--database-url", dbURL, "--token", "full", "--demo", "50")
	db, err := sqldb.Open(t.Context(), dbURL)
	require.NoError(t, err)
	defer db.Close()
	// A tombstone that still carries its messages breaks REC-04.
	_, err = db.ExecContext(t.Context(), `UPDATE conversations SET body = replace(body, '"deletedAt"', '"messages":[{"role":"user","content":"secret"}],"deletedAt"') WHERE deleted = 1`)
	require.NoError(t, err)
	r := runCLI(t, "", nil, "conformance", "--url", base, "--token", "full", "--rate", "2000", "--quiet", "--only", "REC-04")
	require.Equal(t, ExitFailure, r.code, "%s\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "FAIL  REC-04")
	require.Contains(t, r.stdout, "$ curl ")
	require.NotContains(t, r.stdout, "Bearer full")
}

func TestConformanceUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"conformance"}, "--url and --token are required"},
		{[]string{"conformance", "--url", "http://127.0.0.1:1", "--token", "t", "--format", "yaml"}, "--format"},
		{[]string{"conformance", "--url", "http://127.0.0.1:1", "--token", "t", "--only", "NOPE-1"}, "NOPE-1"},
		{[]string{"conformance", "--url", "ftp://x", "--token", "t"}, "http or https"},
		{[]string{"conformance", "--url", "http://127.0.0.1:1", "--token", "t", "--wait", "0"}, "unreachable"},
		{[]string{"conformance", "--url", "http://127.0.0.1:1", "--token", "t", "--wait", "-1s"}, "--wait"},
		{[]string{"conformance", "--url", "http://127.0.0.1:1", "--token", "t", "--baseline", "/nonexistent"}, "--baseline"},
	}
	for _, tc := range cases {
		r := runCLI(t, "", nil, tc.args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.want)
	}
}
