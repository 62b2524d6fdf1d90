package conformance

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"
)

// WriteHTML writes the report as one self-contained HTML document for a
// person, such as a vendor attaching it to a support ticket: a header with
// the provider, the run and the verdict (and what strict mode would say), a
// list of the results that did not pass linking to them, then every result
// in report order with its rule, message and evidence.
//
// The document loads nothing: no scripts, no external style sheets, fonts
// or images, only an inline style sheet; evidence collapses with
// <details>, so it works with JavaScript disabled, and it prints with the
// evidence expanded. Every value is escaped by html/template.
func (r *Report) WriteHTML(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if err := htmlReport.Execute(bw, r.htmlView()); err != nil {
		return fmt.Errorf("conformance: html report: %w", err)
	}
	return bw.Flush()
}

// htmlView is what the HTML template shows of a report.
type htmlView struct {
	URL          string
	Started      string
	Duration     string
	Requests     int
	Failed       bool
	StrictFailed bool
	Total        int
	Counts       []htmlCount
	Stale        []string
	Attention    []htmlResult
	Results      []htmlResult
}

// htmlCount is the number of results of one status.
type htmlCount struct {
	Status Status
	Class  string
	N      int
}

// htmlResult is a result with what the template needs to show it.
type htmlResult struct {
	Result
	// Anchor is the id of the result's element, unique in the document.
	Anchor string
	// Class is the CSS class of the status.
	Class string
	// Open expands the evidence: it is what the reader came for.
	Open bool
}

// htmlStatuses are the statuses in the order the counts are shown.
var htmlStatuses = []Status{StatusPass, StatusFail, StatusWarn, StatusSkip, StatusError}

// htmlView returns what the HTML template shows of r.
func (r *Report) htmlView() htmlView {
	v := htmlView{
		URL:          r.URL,
		Started:      r.Started.UTC().Format(time.RFC3339),
		Duration:     r.Duration.Round(time.Millisecond).String(),
		Requests:     r.Requests,
		Failed:       r.Failed(false),
		StrictFailed: r.Failed(true),
		Total:        len(r.Results),
		Stale:        r.Stale,
	}
	counts := r.Counts()
	for _, s := range htmlStatuses {
		v.Counts = append(v.Counts, htmlCount{Status: s, Class: statusClass(s), N: counts[s]})
	}
	for i, res := range r.Results {
		hr := htmlResult{
			Result: res,
			Anchor: resultAnchor(i, res.ID),
			Class:  statusClass(res.Status),
			Open:   !res.Baselined && res.Status != StatusPass && res.Status != StatusSkip,
		}
		v.Results = append(v.Results, hr)
		if res.Status != StatusPass {
			v.Attention = append(v.Attention, hr)
		}
	}
	return v
}

// resultAnchor returns the element id of the i-th result: unique, and made
// of letters, digits and dashes only so that it is the same in id="..." and
// in href="#...".
func resultAnchor(i int, id string) string {
	clean := strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return -1
	}, id)
	return fmt.Sprintf("r%d-%s", i+1, clean)
}

// statusClass returns the CSS class of a status.
func statusClass(s Status) string {
	return "st-" + strings.ToLower(string(s))
}

var htmlReport = template.Must(template.New("report.html").Parse(htmlTemplate))

// htmlTemplate is the HTML report. Its style sheet must not contain "<" so
// that the tests can check the document's structure with a simple scanner.
const htmlTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="referrer" content="no-referrer">
<meta name="generator" content="aiusage conformance">
<title>Conformance of {{.URL}}: {{if .Failed}}failed{{else}}passed{{end}}</title>
<style>
*, *::before, *::after { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; text-size-adjust: 100%; }
body { margin: 0; background: #f6f7f9; color: #1d2433; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 62rem; margin: 0 auto; padding: 1rem; overflow-wrap: anywhere; }
h1 { font-size: 1.5rem; line-height: 1.25; margin: 0.5rem 0 1rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 0.75rem; }
nav h2 { margin-top: 0; }
h3 { font-size: 1.05rem; margin: 0.4rem 0 0.5rem; }
p { margin: 0.4rem 0; }
a { color: #1a56b8; }
code, pre, .id { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 0.875rem; }
code { overflow-wrap: anywhere; }
pre { margin: 0.25rem 0 0.75rem; padding: 0.5rem 0.75rem; background: #f1f3f6; border: 1px solid #d5d9e0; border-radius: 6px; white-space: pre-wrap; overflow-wrap: anywhere; word-break: break-word; max-height: 24rem; overflow: auto; line-height: 1.45; }
.card { background: #fff; border: 1px solid #d5d9e0; border-radius: 8px; padding: 0.75rem 1rem; margin: 0 0 0.75rem; min-width: 0; }
.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 0.25rem 1rem; margin: 0; }
.facts dt { color: #4a5466; }
.facts dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
.verdict { font-size: 1.15rem; font-weight: 600; padding: 0.6rem 0.9rem; border-radius: 8px; border: 2px solid; margin: 0 0 0.75rem; }
.verdict small { display: block; font-size: 0.9rem; font-weight: 400; }
.verdict.bad { background: #fdecea; border-color: #c4321d; color: #8a1c0f; }
.verdict.good { background: #e7f6ec; border-color: #1c7c44; color: #11552e; }
.counts { display: flex; flex-wrap: wrap; gap: 0.5rem; list-style: none; padding: 0; margin: 0.75rem 0 0; }
.counts li { padding: 0.2rem 0.6rem; border-radius: 6px; border: 1px solid #d5d9e0; background: #fff; }
.counts li.zero { opacity: 0.6; }
.counts strong { font-size: 1.1rem; margin-left: 0.3rem; }
.badge { display: inline-block; min-width: 3.4rem; text-align: center; padding: 0.05rem 0.4rem; border-radius: 4px; font-weight: 700; font-size: 0.8rem; letter-spacing: 0.03em; color: #fff; }
.st-pass .badge, .badge.st-pass { background: #1c7c44; }
.st-fail .badge, .badge.st-fail { background: #b42318; }
.st-warn .badge, .badge.st-warn { background: #a04a00; }
.st-skip .badge, .badge.st-skip { background: #5b6474; }
.st-error .badge, .badge.st-error { background: #6b3fc0; }
.tag { display: inline-block; padding: 0.05rem 0.4rem; border-radius: 4px; font-size: 0.8rem; border: 1px solid #b8bfcc; color: #3a4354; background: #fff; }
.tag.baselined { border-style: dashed; border-color: #7a8293; }
.stale { background: #fff8e6; border-color: #e0b54a; }
.attention { list-style: none; padding: 0; margin: 0; }
.attention li { padding: 0.35rem 0; border-top: 1px solid #e6e9ee; }
.attention li:first-child { border-top: 0; }
.attention a { text-decoration: none; color: inherit; display: block; }
.attention a:hover .t, .attention a:focus .t { text-decoration: underline; }
.attention .t { color: #1a56b8; }
.result { border-left-width: 6px; scroll-margin-top: 0.5rem; }
.result.st-pass { border-left-color: #1c7c44; }
.result.st-fail { border-left-color: #b42318; background: #fff6f5; }
.result.st-warn { border-left-color: #d97706; background: #fffaf0; }
.result.st-skip { border-left-color: #8a93a3; }
.result.st-error { border-left-color: #6b3fc0; background: #f8f5ff; }
.result.baselined { border-left-style: dashed; background: #fff; }
.result:target { outline: 3px solid #1a56b8; outline-offset: 2px; }
.head { display: flex; flex-wrap: wrap; align-items: center; gap: 0.35rem 0.6rem; }
.head .id { font-weight: 700; font-size: 0.95rem; }
.head code { color: #3a4354; }
.rule { color: #3a4354; font-size: 0.9rem; border-left: 3px solid #d5d9e0; padding-left: 0.6rem; margin: 0.5rem 0; }
.label { font-weight: 600; color: #4a5466; font-size: 0.85rem; margin: 0.5rem 0 0; }
details { margin-top: 0.5rem; }
summary { cursor: pointer; font-weight: 600; color: #1a56b8; padding: 0.2rem 0; }
.top { font-size: 0.85rem; }
footer { color: #5b6474; font-size: 0.85rem; margin: 2rem 0 1rem; }
@media (max-width: 30rem) {
  main { padding: 0.6rem; }
  h1 { font-size: 1.3rem; }
  .card { padding: 0.6rem 0.7rem; }
  .facts { grid-template-columns: minmax(0, 1fr); gap: 0; }
  .facts dd { margin-bottom: 0.35rem; }
}
@media print {
  body { background: #fff; font-size: 11pt; }
  main { max-width: none; padding: 0; }
  .card, .result { break-inside: avoid-page; background: #fff; }
  pre { max-height: none; overflow: visible; }
  details::details-content { content-visibility: visible; display: contents; }
  details:not([open]) > :not(summary) { display: block; }
  summary { list-style: none; color: inherit; }
  .top { display: none; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
</style>
</head>
<body>
<main>
<h1>Conformance report</h1>
<div class="verdict {{if .Failed}}bad{{else}}good{{end}}">Verdict: {{if .Failed}}&#x2717; failed{{else}}&#x2713; passed{{end}}
<small>In strict mode, where a failed SHOULD check fails the run too: {{if .StrictFailed}}failed{{else}}passed{{end}}.</small>
</div>
<section class="card" aria-label="Run">
<dl class="facts">
<dt>Provider</dt><dd><code>{{.URL}}</code></dd>
<dt>Started</dt><dd><time datetime="{{.Started}}">{{.Started}}</time></dd>
<dt>Duration</dt><dd>{{.Duration}}</dd>
<dt>Requests</dt><dd>{{.Requests}}</dd>
<dt>Results</dt><dd>{{.Total}}</dd>
</dl>
<ul class="counts">
{{- range .Counts}}
<li class="{{.Class}}{{if not .N}} zero{{end}}"><span class="badge {{.Class}}">{{.Status}}</span><strong>{{.N}}</strong></li>
{{- end}}
</ul>
</section>
{{- if .Stale}}
<section class="card stale" aria-label="Stale baseline entries">
<p><strong>Stale baseline entries:</strong> these checks are listed in the baseline but no longer fail; remove them from the baseline.</p>
<ul>
{{- range .Stale}}
<li><span class="id">{{.}}</span></li>
{{- end}}
</ul>
</section>
{{- end}}
<nav class="card" aria-labelledby="attention">
<h2 id="attention">Not passed ({{len .Attention}})</h2>
{{- if .Attention}}
<ol class="attention">
{{- range .Attention}}
<li><a href="#{{.Anchor}}"><span class="badge {{.Class}}">{{.Status}}</span> <span class="id">{{.ID}}</span> <span class="t">{{.Title}}</span> <code>{{.Endpoint}}</code>{{if .Baselined}} <span class="tag baselined">baselined</span>{{end}}</a></li>
{{- end}}
</ol>
{{- else}}
<p>Every check passed.</p>
{{- end}}
</nav>
<h2>Results</h2>
{{- range .Results}}
<article class="card result {{.Class}}{{if .Baselined}} baselined{{end}}" id="{{.Anchor}}">
<div class="head"><span class="badge">{{.Status}}</span> <span class="id">{{.ID}}</span> <span class="tag">{{.Level}}</span> <code>{{.Endpoint}}</code>
{{- if .Baselined}} <span class="tag baselined">baselined: expected, does not fail the run</span>{{end}}</div>
<h3>{{.Title}}</h3>
{{- if .Message}}
<p>{{.Message}}</p>
{{- end}}
<p class="rule"><strong>Rule:</strong> {{.Rule}}</p>
{{- if .Evidence}}
<details{{if .Open}} open{{end}}>
<summary>Evidence</summary>
{{- with .Evidence}}
{{- if .Request}}
<p class="label">Request</p>
<pre>{{.Request}}</pre>
{{- end}}
{{- if .Curl}}
<p class="label">Reproduce (credentials masked)</p>
<pre class="curl">{{.Curl}}</pre>
{{- end}}
{{- if .Pointer}}
<p class="label">At JSON pointer</p>
<p><code>{{.Pointer}}</code></p>
{{- end}}
{{- if .Response}}
<p class="label">Response (status, content type, start of the body)</p>
<pre>{{.Response}}</pre>
{{- end}}
{{- end}}
</details>
{{- end}}
{{- if ne .Status "PASS"}}
<p class="top"><a href="#attention">Back to the list of results not passed</a></p>
{{- end}}
</article>
{{- end}}
<footer>Generated by the aiusage conformance suite. Credentials in the evidence are masked as $TOKEN.</footer>
</main>
</body>
</html>
`
