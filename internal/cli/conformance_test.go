package cli

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/sqldb"
)

func TestConformanceCommand(t *testing.T) {
	t.Parallel()
	base, _, _ := startServe(t, "--database-url", "sqlite:"+filepath.Join(t.TempDir(), "p.db"), "--token", "full",
		"--token", "nousage=read:conversations,read:assistants,read:events", "--tenant-token", "other:o", "--demo", "200")
	args := []string{"conformance", "--url", base, "--token", "full", "--usage-less-token", "nousage", "--other-tenant-token", "o", "--rate", "2000", "--quiet"}

	r := runCLI(t, "", nil, args...)
	require.Equal(t, ExitOK, r.code, "%s\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "0 failed")
	require.NotContains(t, r.stdout, "\x1b[", "no colour when not on a terminal")

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
	b, err := os.ReadFile(out)
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
		{[]string{"conformance", "--url", "http://127.0.0.1:1", "--token", "t"}, "unreachable"},
		{[]string{"conformance", "--url", "http://127.0.0.1:1", "--token", "t", "--baseline", "/nonexistent"}, "--baseline"},
	}
	for _, tc := range cases {
		r := runCLI(t, "", nil, tc.args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.want)
	}
}
