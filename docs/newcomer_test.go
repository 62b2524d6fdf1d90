package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// section returns the Markdown section of src under the heading heading (a
// line "## heading" or "### heading"), up to the next heading of any level.
func section(t *testing.T, src, heading string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^#{1,6} ` + regexp.QuoteMeta(heading) + `\n((?:.*\n)*?)(?:#{1,6} |\z)`).FindStringSubmatch(src)
	require.NotNil(t, m, "no heading %q", heading)
	return m[1]
}

// TestReadmeQuickStart checks that the README's front page says what the kit
// does, not how it is being made, and that its quick start leads to the
// dashboard and the sign-in the demo prints.
func TestReadmeQuickStart(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	readme := string(src)
	for _, s := range []string{"issue by issue", "being built"} {
		require.NotContains(t, readme, s, "the README says what the kit does, not how it is being made")
	}
	quick := section(t, readme, "Quick start")
	require.Contains(t, quick, "[dashboard](docs/dashboard.md) at <http://127.0.0.1:8080/>")
	require.Contains(t, quick, "the dashboard's sign-in")
}

// demoLabels are the labels of the lines the demo prints in its block, in
// order (printDemo in internal/cli/demo.go; the telemetry line, printed when
// the OTLP endpoint serves, as by default).
var demoLabels = []string{"organisation", "agent", "API key", "provider", "source", "export source", "push source",
	"telemetry", "one view", "dashboard", "operations", "access log"}

// TestDemoSample checks that the sample output of docs/demo.md has every
// line the demo prints, in its order, the dashboard's sign-in among them,
// and that the page says where the dashboard is.
func TestDemoSample(t *testing.T) {
	src, err := os.ReadFile("demo.md")
	require.NoError(t, err)
	page := string(src)
	m := regexp.MustCompile("(?s)```text\n(aiusage demo is ready at .*?)```").FindStringSubmatch(page)
	require.NotNil(t, m, "demo.md has no sample output")
	var got []string
	for _, l := range strings.Split(m[1], "\n") {
		if lm := regexp.MustCompile(`^  ([A-Za-z][A-Za-z ]*?)  +\S`).FindStringSubmatch(l); lm != nil && !strings.HasPrefix(l, "  #") {
			got = append(got, lm[1])
		}
	}
	require.Equal(t, demoLabels, got, "the labels of the sample's lines")
	require.Regexp(t, `(?m)^  dashboard      http://127\.0\.0\.1:8080/  \(sign in as admin@demo\.example with password \S+; reviewer: reviewer@demo\.example / \S+\)$`, m[1])
	require.Contains(t, page, "[dashboard](dashboard.md) at <http://127.0.0.1:8080/>")
}
