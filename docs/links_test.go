// Package docs holds only a test: that every relative link of README.md and
// of the Markdown files of docs/ resolves to a file of the repository, and
// every #fragment to a heading of the page it names.
package docs

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// repoRoot is the root of the repository, relative to this directory.
const repoRoot = ".."

// TestLinks checks every Markdown link and image of ../README.md and
// docs/*.md: the target of a relative one must exist (relative to the file
// holding the link, or to the repository root when it starts with /), and
// the #fragment of a link to a Markdown file, or of an in-page link, must be
// the anchor of one of its headings. Every broken link is reported in one
// failure, as FILE:LINE.
func TestLinks(t *testing.T) {
	files, err := filepath.Glob("*.md")
	require.NoError(t, err)
	files = append([]string{filepath.Join(repoRoot, "README.md")}, files...)
	broken, checked, err := checkLinks(repoRoot, files)
	require.NoError(t, err)
	t.Logf("checked %d relative links in %d files", checked, len(files))
	if len(broken) > 0 {
		t.Errorf("%d broken links:\n%s", len(broken), strings.Join(broken, "\n"))
	}
}

// checkLinks checks the links of the Markdown files (paths relative to the
// working directory) of the repository at root. It returns the broken ones,
// in the order of files and then of lines, as "FILE:LINE: (TARGET): REASON" with FILE relative to root, and
// the number of relative links checked.
func checkLinks(root string, files []string) (broken []string, checked int, err error) {
	root, err = filepath.Abs(root)
	if err != nil {
		return nil, 0, err
	}
	anchorCache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchorCache[path]; ok {
			return a, nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := anchors(string(src))
		anchorCache[path] = a
		return a, nil
	}

	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			return nil, 0, err
		}
		abs, err := filepath.Abs(file)
		if err != nil {
			return nil, 0, err
		}
		name, err := filepath.Rel(root, abs)
		if err != nil {
			return nil, 0, err
		}
		name = filepath.ToSlash(name)

		for _, l := range extractLinks(string(src)) {
			fail := func(format string, a ...any) {
				broken = append(broken, fmt.Sprintf("%s:%d: (%s): %s", name, l.Line, l.Target, fmt.Sprintf(format, a...)))
			}
			target := l.Target
			if isAbsoluteURL(target) {
				continue
			}
			checked++
			path, fragment, _ := strings.Cut(target, "#")
			path, _, _ = strings.Cut(path, "?")
			if p, err := url.PathUnescape(path); err == nil {
				path = p
			}
			if f, err := url.PathUnescape(fragment); err == nil {
				fragment = f
			}
			if path == "" && fragment == "" {
				fail("empty link target")
				continue
			}
			resolved := abs // an in-page anchor
			if path != "" {
				if strings.HasPrefix(path, "/") {
					resolved = filepath.Join(root, filepath.FromSlash(path))
				} else {
					resolved = filepath.Join(filepath.Dir(abs), filepath.FromSlash(path))
				}
				if rel, err := filepath.Rel(root, resolved); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					fail("outside the repository")
					continue
				}
				if _, err := os.Stat(resolved); err != nil {
					fail("no such file or directory")
					continue
				}
			}
			if fragment == "" || !strings.EqualFold(filepath.Ext(resolved), ".md") {
				continue
			}
			a, err := anchorsOf(resolved)
			if err != nil {
				fail("%v", err)
				continue
			}
			if !a[fragment] {
				fail("no heading with anchor #%s", fragment)
			}
		}
	}
	return broken, checked, nil
}

var schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// isAbsoluteURL reports whether target is an absolute URL (scheme://...,
// mailto:..., or any other scheme:) or a protocol-relative //host/... one.
func isAbsoluteURL(target string) bool {
	return schemeRE.MatchString(target) || strings.HasPrefix(target, "//")
}

// link is a Markdown link or image.
type link struct {
	Line   int // 1-based line of its opening [ (or of the definition)
	Image  bool
	Text   string // the link text or image alt, as written
	Target string // the destination, without <> and without a title
}

var (
	fenceRE     = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")
	blankRE     = regexp.MustCompile(`^\s*$`)
	refDefRE    = regexp.MustCompile(`^ {0,3}\[((?:[^\]\\]|\\.)+)\]:[ \t]*(<[^>\n]*>|\S+)`)
	atxRE       = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	setextRE    = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	htmlIDRE    = regexp.MustCompile(`<[a-zA-Z][^>]*\s(?:id|name)\s*=\s*["']([^"']+)["']`)
	inlineURLRE = regexp.MustCompile(`!?\[((?:[^\]\\]|\\.)*)\]\([^)]*\)`)
	htmlTagRE   = regexp.MustCompile(`<[^>]+>`)
)

// codeLines returns, for each line of lines, whether it belongs to a fenced
// code block (the fences included). An unclosed fence runs to the end.
func codeLines(lines []string) []bool {
	code := make([]bool, len(lines))
	var open string // the opening fence, when in a block
	for i, line := range lines {
		if open == "" {
			if m := fenceRE.FindStringSubmatch(line); m != nil && !(m[1][0] == '`' && strings.Contains(m[2], "`")) {
				open = m[1]
				code[i] = true
			}
			continue
		}
		code[i] = true
		if m := fenceRE.FindStringSubmatch(line); m != nil && m[1][0] == open[0] && len(m[1]) >= len(open) && blankRE.MatchString(m[2]) {
			open = ""
		}
	}
	return code
}

// blankCodeSpans returns s with the content and the backticks of every inline
// code span replaced by spaces, newlines kept, so that offsets are unchanged.
func blankCodeSpans(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); {
		if b[i] == '\\' {
			i += 2
			continue
		}
		if b[i] != '`' {
			i++
			continue
		}
		n := runLen(b, i)
		// Find a closing run of exactly n backticks.
		closeAt := -1
		for j := i + n; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := runLen(b, j)
			if m == n {
				closeAt = j
				break
			}
			j += m
		}
		if closeAt < 0 {
			i += n // literal backticks
			continue
		}
		for k := i; k < closeAt+n; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
		i = closeAt + n
	}
	return string(b)
}

func runLen(b []byte, i int) int {
	n := 0
	for i+n < len(b) && b[i+n] == '`' {
		n++
	}
	return n
}

// extractLinks returns the inline links [text](target) and images
// ![alt](target) of the Markdown src, and its link reference definitions
// [label]: target, in order, leaving out those in fenced code blocks and in
// inline code spans.
func extractLinks(src string) []link {
	lines := strings.Split(src, "\n")
	code := codeLines(lines)
	var links []link
	// Paragraphs: runs of non-blank lines outside code blocks.
	for start := 0; start < len(lines); {
		if code[start] || blankRE.MatchString(lines[start]) {
			start++
			continue
		}
		end := start
		for end < len(lines) && !code[end] && !blankRE.MatchString(lines[end]) {
			end++
		}
		para := blankCodeSpans(strings.Join(lines[start:end], "\n"))
		for i, line := range strings.Split(para, "\n") {
			if m := refDefRE.FindStringSubmatch(line); m != nil {
				links = append(links, link{Line: start + i + 1, Text: m[1], Target: strings.TrimSuffix(strings.TrimPrefix(m[2], "<"), ">")})
			}
		}
		for _, l := range inlineLinks(para) {
			l.Line += start + 1
			links = append(links, l)
		}
		start = end
	}
	sort.SliceStable(links, func(i, j int) bool { return links[i].Line < links[j].Line })
	return links
}

// inlineLinks returns the inline links and images of a paragraph whose code
// spans are blanked, with Line the 0-based line of the opening bracket.
func inlineLinks(s string) []link {
	var links []link
	var opens []int // offsets of the unmatched [
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '[':
			opens = append(opens, i)
		case ']':
			if len(opens) == 0 {
				continue
			}
			open := opens[len(opens)-1]
			opens = opens[:len(opens)-1]
			if i+1 >= len(s) || s[i+1] != '(' {
				continue
			}
			target, end, ok := destination(s, i+2)
			if !ok {
				continue
			}
			image := open > 0 && s[open-1] == '!' && (open < 2 || s[open-2] != '\\')
			links = append(links, link{Line: strings.Count(s[:open], "\n"), Image: image, Text: s[open+1 : i], Target: target})
			i = end - 1
		}
	}
	sort.SliceStable(links, func(i, j int) bool { return links[i].Line < links[j].Line })
	return links
}

// destination parses the destination and optional title of an inline link
// from s[i:], just after its "(", and returns the destination and the offset
// just after the closing ")".
func destination(s string, i int) (target string, end int, ok bool) {
	skipSpace := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
			i++
		}
	}
	skipSpace()
	if i < len(s) && s[i] == '<' {
		j := strings.IndexAny(s[i+1:], ">\n")
		if j < 0 || s[i+1+j] != '>' {
			return "", 0, false
		}
		target, i = s[i+1:i+1+j], i+2+j
	} else {
		start, depth := i, 0
	loop:
		for ; i < len(s); i++ {
			switch c := s[i]; {
			case c == '\\':
				i++
			case c == '(':
				depth++
			case c == ')':
				if depth == 0 {
					break loop
				}
				depth--
			case c == ' ' || c == '\t' || c == '\n' || c < 0x20:
				break loop
			}
		}
		target = s[start:min(i, len(s))]
	}
	skipSpace()
	if i < len(s) && (s[i] == '"' || s[i] == '\'' || s[i] == '(') {
		closer := s[i]
		if closer == '(' {
			closer = ')'
		}
		j := strings.IndexByte(s[i+1:], closer)
		if j < 0 {
			return "", 0, false
		}
		i += j + 2
		skipSpace()
	}
	if i >= len(s) || s[i] != ')' {
		return "", 0, false
	}
	return target, i + 1, true
}

// slug returns the anchor GitHub gives a heading of text (already rendered:
// without Markdown markup): lower case, each space a dash, punctuation and
// symbols dropped except dashes and underscores.
func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_':
			b.WriteRune(r)
		case unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// headingText renders the Markdown of a heading to plain text, roughly: links
// and images become their text, HTML tags and code-span backticks go.
func headingText(md string) string {
	md = inlineURLRE.ReplaceAllString(md, "$1")
	md = htmlTagRE.ReplaceAllString(md, "")
	md = strings.ReplaceAll(md, "`", "")
	md = strings.ReplaceAll(md, `\`, "")
	return strings.TrimSpace(md)
}

// anchors returns the anchors of the Markdown src: the slugs of its headings
// (ATX and setext, outside code blocks), numbered -1, -2... when repeated as
// GitHub does, and the id and name attributes of its HTML elements.
func anchors(src string) map[string]bool {
	lines := strings.Split(src, "\n")
	code := codeLines(lines)
	var headings []string
	for i, line := range lines {
		if code[i] {
			continue
		}
		if m := atxRE.FindStringSubmatch(line); m != nil {
			headings = append(headings, m[2])
			continue
		}
		if i > 0 && setextRE.MatchString(line) && !code[i-1] && !blankRE.MatchString(lines[i-1]) && !atxRE.MatchString(lines[i-1]) {
			headings = append(headings, lines[i-1])
		}
	}
	a := map[string]bool{}
	occurrences := map[string]int{}
	for _, h := range headings {
		s := slug(headingText(h))
		base := s
		for {
			if _, seen := occurrences[s]; !seen {
				break
			}
			occurrences[base]++
			s = fmt.Sprintf("%s-%d", base, occurrences[base])
		}
		occurrences[s] = 0
		a[s] = true
	}
	for _, m := range htmlIDRE.FindAllStringSubmatch(src, -1) {
		a[m[1]] = true
	}
	return a
}

func TestExtractLinks(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []link
	}{
		{"link", "see [the docs](docs/a.md) here", []link{{Line: 1, Text: "the docs", Target: "docs/a.md"}}},
		{"image", "![logo](img/logo.png \"Logo\")", []link{{Line: 1, Image: true, Text: "logo", Target: "img/logo.png"}}},
		{"anchor and title", "x\n[a](#b 'title') [c](<d e.md>)", []link{{Line: 2, Text: "a", Target: "#b"}, {Line: 2, Text: "c", Target: "d e.md"}}},
		{"image in link", "[![badge](b.svg)](https://x.test)", []link{{Line: 1, Image: true, Text: "badge", Target: "b.svg"}, {Line: 1, Text: "![badge](b.svg)", Target: "https://x.test"}}},
		{"wrapped text", "a [long\ntext](x.md) b", []link{{Line: 1, Text: "long\ntext", Target: "x.md"}}},
		{"parentheses", "[f](a_(b).md)", []link{{Line: 1, Text: "f", Target: "a_(b).md"}}},
		{"code span", "`[a](b.md)` and ``x ` [c](d.md)`` but [e](f.md)", []link{{Line: 1, Text: "e", Target: "f.md"}}},
		{"fenced block", "```sh\n[a](b.md)\n```\n~~~\n[c](d.md)\n~~~\n[e](f.md)", []link{{Line: 7, Text: "e", Target: "f.md"}}},
		{"unclosed fence", "````\n[a](b.md)\n```\n[c](d.md)", nil},
		{"escaped", `\[a](b.md) and \![c](d.md)`, []link{{Line: 1, Text: "c", Target: "d.md"}}},
		{"not links", "[x] done, [y] (z), a](b)", nil},
		{"reference definition", "[ref]\n\n[ref]: ../x.md \"t\"", []link{{Line: 3, Text: "ref", Target: "../x.md"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, extractLinks(tc.src))
		})
	}
}

func TestSlug(t *testing.T) {
	cases := []struct{ heading, want string }{
		{"Running it", "running-it"},
		{"ENV-01", "env-01"},
		{"ENV: Envelopes and schemas", "env-envelopes-and-schemas"},
		{"aiusage admin key create", "aiusage-admin-key-create"},
		{"What's `new`? (v1.2)", "whats-new-v12"},
		{"snake_case & more", "snake_case--more"},
		{"[Link](x.md) text", "link-text"},
		{"Émigré café", "émigré-café"},
		{"C++ / Go!", "c--go"},
	}
	for _, tc := range cases {
		t.Run(tc.heading, func(t *testing.T) {
			require.Equal(t, tc.want, slug(headingText(tc.heading)))
		})
	}
	t.Run("repeated headings", func(t *testing.T) {
		a := anchors("# A\n## A\n```\n# A\n```\nA\n---\n# A-1\n<a id=\"custom\"></a>\n")
		require.Equal(t, map[string]bool{"a": true, "a-1": true, "a-2": true, "a-1-1": true, "custom": true}, a)
	})
}

func TestLinksFindBroken(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		path := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	write("README.md", "# Kit\n\n## Get started\n\n"+
		"[ok](docs/a.md) [ok](docs/a.md#part-two) [ok](#get-started) [ok](docs/) [ok](/docs/a.md?plain=1)\n"+
		"[ok](https://example.com/x.md) [ok](mailto:a@example.com) `[ok](nope.md)`\n"+
		"[missing](docs/nope.md)\n"+
		"![missing image](img/logo.png)\n"+
		"[bad anchor](docs/a.md#part-three) [bad in-page](#getting-started)\n"+
		"[outside](../elsewhere.md)\n")
	write("docs/a.md", "# A\n\n## Part two\n\n[ok](../README.md#kit) [missing](b.md)\n")

	broken, checked, err := checkLinks(root, []string{filepath.Join(root, "README.md"), filepath.Join(root, "docs", "a.md")})
	require.NoError(t, err)
	require.Equal(t, 12, checked)
	require.Equal(t, []string{
		"README.md:7: (docs/nope.md): no such file or directory",
		"README.md:8: (img/logo.png): no such file or directory",
		"README.md:9: (docs/a.md#part-three): no heading with anchor #part-three",
		"README.md:9: (#getting-started): no heading with anchor #getting-started",
		"README.md:10: (../elsewhere.md): outside the repository",
		"docs/a.md:5: (b.md): no such file or directory",
	}, broken)
}
