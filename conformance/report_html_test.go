package conformance

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// renderHTML renders r with WriteHTML.
func renderHTML(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, r.WriteHTML(&b))
	return b.String()
}

// sampleHTMLReport is a realistic report of a failing provider: long curl
// lines and long JSON bodies, every status, a baselined failure.
func sampleHTMLReport() *Report {
	r := goldenReport()
	long := strings.Repeat(`{"id":"conv_01HZX3K9Q4M8T2V6B7N5R1P0AB","assistantId":"asst_7f3c2a","userId":"user_42","department":"Research & Development","title":"Quarterly planning <draft>","updatedAt":"2026-02-28T23:59:59.000Z","messages":12},`, 6)
	r.Results = append(r.Results,
		Result{ID: "PAGE-02", Level: LevelMust, Status: StatusFail, Endpoint: "/conversations", Title: "no duplicates, no gaps",
			Rule:    `Pagination is keyset on that pair, so ... no record is skipped or repeated.`,
			Message: "record conv_01HZX3K9Q4M8T2V6B7N5R1P0AB appears on page 3 and again on page 4 of a walk with limit=7",
			Evidence: &Evidence{
				Curl:     `curl -sS -i -H 'Authorization: Bearer $TOKEN' -H 'X-Request-Id: conformance-page-02-walk-limit-7' 'https://api.provider.example.com/v1/conversations?limit=7&updatedSince=2026-01-01T00%3A00%3A00Z&cursor=eyJ1cGRhdGVkQXQiOiIyMDI2LTAyLTI4VDIzOjU5OjU5LjAwMFoiLCJpZCI6ImNvbnZfMDFIWlgzSzlRNE04VDJWNkI3TjVSMVAwQUIifQ'`,
				Request:  "GET https://api.provider.example.com/v1/conversations?limit=7&updatedSince=2026-01-01T00%3A00%3A00Z&cursor=eyJ1cGRhdGVkQXQiOiIyMDI2LTAyLTI4VDIzOjU5OjU5LjAwMFoiLCJpZCI6ImNvbnZfMDFIWlgzSzlRNE04VDJWNkI3TjVSMVAwQUIifQ",
				Response: `200 application/json {"data":[` + strings.TrimSuffix(long, ",") + `],"hasMore":true,"nextCursor":"eyJ1cGRhdGVkQXQiOiIyMDI2LTAyLTI4VDIzOjU5OjU5LjAwMFoiLCJpZCI6ImNvbnZfMDFIWlgzSzlRNE04VDJWNkI3TjVSMVAwQUIifQ"}`,
			}},
		Result{ID: "HTTP-01", Level: LevelMust, Status: StatusError, Endpoint: "/usage", Title: "no 5xx anywhere in the run",
			Rule:    `Kit decision: a 500 never shows internals; nothing a client sends may cause a 5xx.`,
			Message: "GET /usage answered 503 Service Unavailable three times in a row",
			Evidence: &Evidence{
				Curl:     `curl -sS -i -H 'X-Api-Key: $TOKEN' 'https://api.provider.example.com/v1/usage?startAt=2026-02-01T00%3A00%3A00Z&endAt=2026-03-01T00%3A00%3A00Z&granularity=hour&groupBy=model,assistantId,userId,department'`,
				Request:  "GET https://api.provider.example.com/v1/usage?startAt=2026-02-01T00%3A00%3A00Z&endAt=2026-03-01T00%3A00%3A00Z&granularity=hour&groupBy=model,assistantId,userId,department",
				Response: "503 text/html <html><head><title>503 Service Temporarily Unavailable</title></head><body><center><h1>503</h1></center><hr><center>nginx</center></body></html>",
			}},
	)
	r.URL = "https://api.provider.example.com/v1"
	return r
}

// goldenHTMLReport is goldenReport with its rules pinned, so that the HTML
// golden file tests the writer and not the wording of the catalogue.
func goldenHTMLReport() *Report {
	r := goldenReport()
	for i := range r.Results {
		r.Results[i].Rule = "The rule of " + r.Results[i].ID + ` as "quoted" <text> & more.`
	}
	return r
}

func TestReportHTMLGolden(t *testing.T) {
	t.Parallel()
	got := renderHTML(t, goldenHTMLReport())
	path := filepath.Join("testdata", "report.html")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./conformance -run TestReportHTMLGolden -update")
	require.Equal(t, string(want), got, "%s differs; refresh with -update if intended", path)
}

// TestReportHTMLSample renders the sample report, and writes it to the file
// named by CONFORMANCE_HTML_SAMPLE when set, to look at it in a browser.
func TestReportHTMLSample(t *testing.T) {
	t.Parallel()
	got := renderHTML(t, sampleHTMLReport())
	requireWellFormedHTML(t, got)
	requireSelfContainedHTML(t, got)
	if p := os.Getenv("CONFORMANCE_HTML_SAMPLE"); p != "" {
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
	}
}

func TestReportHTMLWellFormed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		r    *Report
	}{
		{"golden", goldenReport()},
		{"sample", sampleHTMLReport()},
		{"hostile", hostileReport()},
		{"empty", &Report{URL: "http://x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireWellFormedHTML(t, renderHTML(t, tc.r))
		})
	}
}

func TestReportHTMLSelfContained(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		r    *Report
	}{
		{"golden", goldenReport()},
		{"sample", sampleHTMLReport()},
		{"hostile", hostileReport()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireSelfContainedHTML(t, renderHTML(t, tc.r))
		})
	}
}

// hostileReport is a report whose every value tries to break out of the
// document.
func hostileReport() *Report {
	return &Report{
		URL:     `http://evil.example/"><script>alert(0)</script>`,
		Started: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Results: []Result{{
			ID: `X"><script>alert(2)</script>`, Level: LevelMust, Status: StatusFail,
			Endpoint: `/conversations<img src=x onerror=alert(3)>`,
			Title:    `<b>bold</b>`,
			Rule:     `<style>body{display:none}</style>`,
			Message:  `<script>alert(1)</script>`,
			Evidence: &Evidence{
				Curl:     `curl 'http://h/</pre><script>alert(4)</script>'`,
				Request:  `GET http://h/?q=<link rel=stylesheet href=https://evil.example/x.css>`,
				Response: `200 application/json {"a":"</pre><iframe src=https://evil.example></iframe>"}`,
				Pointer:  `/data/0/</code><script>`,
			},
		}},
		Stale: []string{`<script>alert(5)</script>`},
	}
}

func TestReportHTMLEscapes(t *testing.T) {
	t.Parallel()
	got := renderHTML(t, hostileReport())
	for _, bad := range []string{"<script", "<img", "<iframe", "<link", "<b>", "<style>body", "</pre><"} {
		require.NotContains(t, got, bad)
	}
	require.Contains(t, got, "&lt;script&gt;alert(1)&lt;/script&gt;", "the message is shown, escaped")
	require.Contains(t, got, "&lt;/pre&gt;&lt;iframe", "the response is shown, escaped")
	require.Contains(t, got, "&lt;/pre&gt;&lt;script&gt;alert(4)", "the curl line is shown, escaped")
	require.Equal(t, 1, strings.Count(got, "<style>"), "only the report's own style sheet")
	requireWellFormedHTML(t, got)
	requireSelfContainedHTML(t, got)
}

func TestReportHTMLContent(t *testing.T) {
	t.Parallel()
	r := sampleHTMLReport()
	r.Started = time.Date(2026, 3, 1, 13, 0, 0, 0, time.FixedZone("CET", 3600))
	got := renderHTML(t, r)
	require.Contains(t, got, "<code>https://api.provider.example.com/v1</code>")
	require.Contains(t, got, `<time datetime="2026-03-01T12:00:00Z">2026-03-01T12:00:00Z</time>`, "started, in UTC")
	require.Contains(t, got, "<dd>1.234s</dd>")
	require.Contains(t, got, "<dd>321</dd>")
	require.Contains(t, got, "Verdict: &#x2717; failed")
	require.Contains(t, got, "strict mode, where a failed SHOULD check fails the run too: failed")
	for s, n := range r.Counts() {
		require.Contains(t, got, fmt.Sprintf(`<span class="badge %s">%s</span><strong>%d</strong>`, statusClass(s), s, n))
	}
	require.Contains(t, got, `<span class="id">TIME-02</span>`, "the stale baseline entry")
	require.Contains(t, got, "baselined: expected, does not fail the run")

	// Every result is shown, in report order, with an anchor; the list of
	// results not passed links to each of them and to nothing else.
	last := 0
	var notPassed []string
	for i, res := range r.Results {
		anchor := fmt.Sprintf("r%d-%s", i+1, res.ID)
		at := strings.Index(got, `id="`+anchor+`"`)
		require.Greater(t, at, last, "%s is shown, in report order", anchor)
		last = at
		block := got[at:]
		block = block[:strings.Index(block, "</article>")]
		for _, want := range []string{res.ID, string(res.Level), string(res.Status), res.Endpoint, res.Title} {
			require.Contains(t, block, want, anchor)
		}
		if res.Status != StatusPass {
			notPassed = append(notPassed, "#"+anchor)
		}
		if res.Evidence != nil {
			require.Contains(t, block, "<details", anchor)
			require.Equal(t, !res.Baselined && (res.Status == StatusFail || res.Status == StatusWarn || res.Status == StatusError),
				strings.Contains(block, "<details open>"), "%s: the evidence of a failure is expanded", anchor)
		}
	}
	var links []string
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(got, -1) {
		if m[1] != "#attention" {
			links = append(links, m[1])
		}
	}
	require.Equal(t, notPassed, links)
}

func TestReportHTMLPassed(t *testing.T) {
	t.Parallel()
	r := goldenReport()
	r.Results[1].Baselined = true // the MUST FAIL
	got := renderHTML(t, r)
	require.Contains(t, got, "Verdict: &#x2713; passed")
	require.Contains(t, got, "fails the run too: failed", "the unbaselined SHOULD WARN fails a strict run")
	r.Results = r.Results[:1]
	got = renderHTML(t, r)
	require.Contains(t, got, "fails the run too: passed")
	require.Contains(t, got, "Every check passed.")
}

var (
	htmlTag  = regexp.MustCompile(`^<(/?)([a-zA-Z][a-zA-Z0-9]*)((?:\s+[a-zA-Z-]+(?:="[^"<>]*")?)*)\s*>`)
	htmlAttr = regexp.MustCompile(`([a-zA-Z-]+)(?:="([^"]*)")?`)
	htmlVoid = []string{"meta", "link", "br", "hr", "img", "input", "wbr", "source"}
)

// requireWellFormedHTML checks, without an HTML parser, that doc is one
// document whose elements nest and close properly and whose text holds no
// raw "<": every "<" opens a tag with quoted attributes.
func requireWellFormedHTML(t *testing.T, doc string) {
	t.Helper()
	rest, ok := strings.CutPrefix(doc, "<!DOCTYPE html>\n")
	require.True(t, ok, "starts with the doctype")
	var stack []string
	seen := map[string]int{}
	for {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			break
		}
		rest = rest[i:]
		m := htmlTag.FindStringSubmatch(rest)
		require.NotNil(t, m, "a raw < in the text: %.60q", rest)
		rest = rest[len(m[0]):]
		name := strings.ToLower(m[2])
		switch {
		case m[1] == "/":
			require.NotEmpty(t, stack, "</%s> closes nothing", name)
			require.Equal(t, stack[len(stack)-1], name, "</%s> closes <%s>", name, stack[len(stack)-1])
			stack = stack[:len(stack)-1]
		case !slices.Contains(htmlVoid, name):
			stack = append(stack, name)
			seen[name]++
		}
	}
	require.Empty(t, stack, "elements left open")
	for _, name := range []string{"html", "head", "title", "style", "body", "main"} {
		require.Equal(t, 1, seen[name], "one <%s>", name)
	}
}

// requireSelfContainedHTML checks that doc loads and runs nothing: no
// scripts, frames, images or external style sheets, no attribute that loads
// or runs anything, links only to anchors of the page, and a style sheet
// that imports nothing and has no url().
func requireSelfContainedHTML(t *testing.T, doc string) {
	t.Helper()
	for _, tag := range regexp.MustCompile(`<[a-zA-Z][^>]*>`).FindAllString(doc, -1) {
		m := htmlTag.FindStringSubmatch(tag)
		require.NotNil(t, m, tag)
		require.NotContains(t, []string{"script", "link", "img", "iframe", "object", "embed", "base", "svg", "audio", "video", "source", "form"},
			strings.ToLower(m[2]), tag)
		for _, a := range htmlAttr.FindAllStringSubmatch(m[3], -1) {
			name := strings.ToLower(a[1])
			require.False(t, strings.HasPrefix(name, "on"), "an event handler: %s", tag)
			require.NotContains(t, []string{"src", "srcset", "poster", "data", "action", "formaction", "background", "style"}, name, tag)
			if name == "href" {
				anchor, ok := strings.CutPrefix(a[2], "#")
				require.True(t, ok, "a link out of the page: %s", tag)
				require.Contains(t, doc, ` id="`+anchor+`"`, "a link to a missing anchor: %s", tag)
			}
		}
	}
	_, css, ok := strings.Cut(doc, "<style>")
	require.True(t, ok)
	css, _, ok = strings.Cut(css, "</style>")
	require.True(t, ok)
	for _, bad := range []string{"@import", "url(", "@font-face", "http:", "https:", "//"} {
		require.NotContains(t, strings.ToLower(css), bad)
	}
}
