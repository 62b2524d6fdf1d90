package conformance

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenReport is a fixed report with every status, a baselined failure and
// a stale baseline entry.
func goldenReport() *Report {
	ev := &Evidence{
		Curl:     `curl -sS -i -H 'Authorization: Bearer $TOKEN' 'http://127.0.0.1:8080/conversations?updatedSince=2026-03-01T00%3A00%3A00Z'`,
		Request:  "GET http://127.0.0.1:8080/conversations?updatedSince=2026-03-01T00%3A00%3A00Z",
		Response: `200 application/json {"data":[{"id":"c1","updatedAt":"2026-02-28T23:59:59.000Z"}],"hasMore":false,"nextCursor":null}`,
		Pointer:  "/data/0/updatedAt",
	}
	res := func(id string, st Status, ep, msg string, ev *Evidence) Result {
		c, _ := checkByID(id)
		return Result{ID: id, Level: c.Level, Status: st, Endpoint: ep, Title: c.Title, Rule: c.Rule, Message: msg, Evidence: ev}
	}
	base := res("PAGE-10", StatusWarn, "/events", "a cursor decodes to readable JSON", nil)
	base.Baselined = true
	return &Report{
		URL:      "http://127.0.0.1:8080",
		Started:  time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Duration: 1234 * time.Millisecond,
		Requests: 321,
		Results: []Result{
			res("ENV-01", StatusPass, "/conversations", "42 pages valid", nil),
			res("FILT-01", StatusFail, "/conversations", "a record with updatedAt before updatedSince was returned", ev),
			res("ENV-06", StatusWarn, "/events", `"Archived" is not a value known to this version`, &Evidence{Pointer: "/data/3/action"}),
			base,
			res("AUTH-03", StatusSkip, "/usage", "no token without read:usage (--token-without-usage)", nil),
			res("HTTP-01", StatusPass, "*", "no 5xx in 321 requests", nil),
		},
		Stale: []string{"TIME-02"},
	}
}

func TestReportGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		write func(*Report, *bytes.Buffer) error
	}{
		{"report.txt", func(r *Report, b *bytes.Buffer) error { return r.WriteText(b, false) }},
		{"report-color.txt", func(r *Report, b *bytes.Buffer) error { return r.WriteText(b, true) }},
		{"report.json", func(r *Report, b *bytes.Buffer) error { return r.WriteJSON(b) }},
		{"report.junit.xml", func(r *Report, b *bytes.Buffer) error { return r.WriteJUnit(b) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, tc.write(goldenReport(), &b))
			path := filepath.Join("testdata", tc.name)
			if *update {
				require.NoError(t, os.MkdirAll("testdata", 0o755))
				require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./conformance -run TestReportGolden -update")
			require.Equal(t, string(want), b.String(), "%s differs; refresh with -update if intended", path)
		})
	}
}

func TestReportFailed(t *testing.T) {
	t.Parallel()
	r := goldenReport()
	require.True(t, r.Failed(false), "a MUST FAIL fails the run")
	r.Results[1].Baselined = true
	require.False(t, r.Failed(false), "a baselined FAIL does not")
	require.True(t, r.Failed(true), "strict: an unbaselined SHOULD WARN fails the run")
	r.Results[2].Baselined = true
	require.False(t, r.Failed(true))
}

func TestReadBaseline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "baseline")
	require.NoError(t, os.WriteFile(p, []byte("# expected\nPAGE-10 cursors are base64 JSON, fix planned\n\nTIME-02\n"), 0o644))
	ids, err := ReadBaseline(p)
	require.NoError(t, err)
	require.Equal(t, []string{"PAGE-10", "TIME-02"}, ids)
	require.NoError(t, os.WriteFile(p, []byte("NOPE-1\n"), 0o644))
	_, err = ReadBaseline(p)
	require.ErrorContains(t, err, "NOPE-1")
}
