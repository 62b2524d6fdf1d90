package docs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The walkthrough convention (docs/contributing.md#runnable-docs): every sh
// (or bash) block of README.md and docs/*.md runs, unless the line before its
// opening fence is <!-- not run: REASON -->. A page's runnable blocks run in
// order as one bash script, from the repository root, in a clean
// environment; a text or json block right after a sh block is its sample
// output, and the real output must have its shape (sampleMismatch).

// pageTimeout bounds the run of one page.
const pageTimeout = 3 * time.Minute

// skipRE is the marker of a block that is not run, and its reason.
var skipRE = regexp.MustCompile(`^<!-- not run: (.*\S) -->$`)

// openFenceRE is the opening fence of a code block, indented or not (a block in
// a list item), and its language.
var openFenceRE = regexp.MustCompile("^( *)```([A-Za-z0-9_-]*)\\s*$")

// A codeBlock is a fenced code block of a Markdown page.
type codeBlock struct {
	Line   int    // the line of its opening fence, from 1
	Lang   string // sh, bash, text, json, ...
	Text   string // its content, the fence's indentation removed, each line ending in "\n"
	Skip   string // the reason of a <!-- not run: REASON --> marker before it
	Sample *codeBlock
}

// Runnable tells whether b is a shell block that runs.
func (b codeBlock) Runnable() bool { return (b.Lang == "sh" || b.Lang == "bash") && b.Skip == "" }

// parseBlocks returns the code blocks of a Markdown page, each sh block with
// the text or json block that follows it (only blank lines between) as its
// sample output. A not-run marker that does not precede a shell block, or
// gives no reason, is an error, as is an unclosed block.
func parseBlocks(src string) ([]codeBlock, error) {
	lines := strings.Split(src, "\n")
	var blocks []codeBlock
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(strings.TrimSpace(l), "<!-- not run") {
			if !skipRE.MatchString(strings.TrimSpace(l)) {
				return nil, fmt.Errorf("line %d: a not-run marker is written <!-- not run: REASON -->", i+1)
			}
			m := openFenceRE.FindStringSubmatch(lineAt(lines, i+1))
			if m == nil || (m[2] != "sh" && m[2] != "bash") {
				return nil, fmt.Errorf("line %d: a not-run marker must be the line just before a sh block's fence", i+1)
			}
			continue
		}
		m := openFenceRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		indent, b := m[1], codeBlock{Line: i + 1, Lang: m[2]}
		if i > 0 {
			if s := skipRE.FindStringSubmatch(strings.TrimSpace(lines[i-1])); s != nil {
				b.Skip = s[1]
			}
		}
		var text strings.Builder
		closed := false
		for i++; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == "```" {
				closed = true
				break
			}
			text.WriteString(strings.TrimPrefix(lines[i], indent) + "\n")
		}
		if !closed {
			return nil, fmt.Errorf("line %d: the code block is not closed", b.Line)
		}
		b.Text = text.String()
		blocks = append(blocks, b)
	}
	for i := range blocks {
		b := &blocks[i]
		if b.Lang != "sh" && b.Lang != "bash" || i+1 == len(blocks) {
			continue
		}
		next := blocks[i+1]
		if next.Lang != "text" && next.Lang != "json" {
			continue
		}
		between := lines[b.Line+strings.Count(b.Text, "\n")+1 : next.Line-1]
		if strings.TrimSpace(strings.Join(between, "")) == "" {
			b.Sample = &blocks[i+1]
		}
	}
	return blocks, nil
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

// blockMark starts the output of each block in a page's script.
const blockMark = "@@walkthrough block "

// script returns the script of a page's runnable blocks and, for each line
// of it, the line of the page it comes from (0 for the lines the runner adds).
func script(blocks []codeBlock) (string, []int) {
	var s strings.Builder
	from := []int{0} // bash numbers lines from 1
	add := func(line string, page int) {
		s.WriteString(line + "\n")
		from = append(from, page)
	}
	// Name the failing command and its line (in a function too: set -E),
	// then let bash -e stop.
	add(`set -E; trap 'printf "\n@@walkthrough failed: line %s: %s (status %s)\n" "$LINENO" "$BASH_COMMAND" "$?"' ERR`, 0)
	for _, b := range blocks {
		if !b.Runnable() {
			continue
		}
		add(fmt.Sprintf("printf '\\n%s%d@@\\n'", blockMark, b.Line), 0)
		for i, l := range strings.Split(strings.TrimSuffix(b.Text, "\n"), "\n") {
			add(l, b.Line+1+i)
		}
	}
	return s.String(), from
}

// splitOutput returns the output of each block of a run, by the line of its
// opening fence.
func splitOutput(out string) map[int]string {
	parts := map[int]string{}
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(blockMark) + `([0-9]+)@@\n`)
	idx := re.FindAllStringSubmatchIndex(out, -1)
	for i, m := range idx {
		line, _ := strconv.Atoi(out[m[2]:m[3]])
		end := len(out)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		parts[line] = out[m[1]:end]
	}
	return parts
}

// statusRE is a line that is an HTTP status: curl's %{http_code} (any
// three-digit number alone on a line), a status line of curl -D -, or an
// exit status the docs print.
var statusRE = regexp.MustCompile(`^(?:[1-5][0-9][0-9]|HTTP/[0-9.]+ [1-5][0-9][0-9]\b.*|exit [0-9]+)$`)

// memberRE is a JSON member name.
var memberRE = regexp.MustCompile(`"([A-Za-z_][A-Za-z0-9_]*)"\s*:`)

// elided tells whether a sample leaves out some of the output.
func elided(sample string) bool {
	return strings.Contains(sample, "…") || strings.Contains(sample, "...")
}

// statuses returns the status lines of an output, trimmed of the carriage
// returns of HTTP headers.
func statuses(out string) []string {
	var s []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if statusRE.MatchString(l) {
			if strings.HasPrefix(l, "HTTP/") {
				l = strings.Join(strings.Fields(l)[:2], " ")
			}
			s = append(s, l)
		}
	}
	return s
}

// sampleMismatch compares the output of a block with its sample and says how
// they differ, or returns "". The shape compared, what stays the same from
// run to run:
//   - the status lines (an HTTP status curl prints alone on a line or as a
//     header's status line, "exit N"): the same, in the same order; a sample
//     with elided text ("…") may leave some out, but the ones it shows come
//     in that order;
//   - every JSON member name of the sample appears as a member name of the
//     output;
//   - of a text sample, each line that is not JSON is a line of the output,
//     in the same order (the output may have more), once both are
//     normalised: temporary directories, ids, secrets, durations and numbers
//     replaced (normalise), white space collapsed, "…" matching any text.
func sampleMismatch(sample codeBlock, out string) string {
	want, got := statuses(sample.Text), statuses(out)
	if elided(sample.Text) {
		if !isSubsequence(want, got) {
			return fmt.Sprintf("the status lines %q of the sample are not among those of the output, in order: %q", want, got)
		}
	} else if !slices.Equal(want, got) {
		return fmt.Sprintf("the status lines of the sample are %q, those of the output %q", want, got)
	}
	have := map[string]bool{}
	for _, m := range memberRE.FindAllStringSubmatch(out, -1) {
		have[m[1]] = true
	}
	for _, m := range memberRE.FindAllStringSubmatch(sample.Text, -1) {
		if !have[m[1]] {
			return fmt.Sprintf("the sample has the JSON member %q, the output has none", m[1])
		}
	}
	if sample.Lang == "text" {
		var got []string
		for _, l := range strings.Split(out, "\n") {
			got = append(got, normalise(l))
		}
		i := 0
		for _, l := range strings.Split(sample.Text, "\n") {
			if strings.Contains(l, "{") || strings.Trim(l, " ….") == "" {
				continue // JSON, compared by its member names; or nothing but elision
			}
			re := lineRE(l)
			for i < len(got) && !re.MatchString(got[i]) {
				i++
			}
			if i == len(got) {
				return fmt.Sprintf("the sample's line %q is not a line of the output (after the lines matched before it; normalised: %q)", l, normalise(l))
			}
			i++
		}
	}
	return ""
}

// The parts of a line that change from run to run, and what normalise
// writes for them, in this order.
var variable = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`/tmp/tmp\.[A-Za-z0-9]+`), "TMPDIR"},
	{regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`), "ID"},
	{regexp.MustCompile(`\b(?:aiu|whsec|sk)_[A-Za-z0-9_+/=-]+`), "SECRET"},
	{regexp.MustCompile(`\b[a-z]+_[0-9A-HJKMNP-TV-Z]{26}\b`), "ID"},
	{regexp.MustCompile(`\b[0-9a-f]{16,}\b`), "HEX"},
	{regexp.MustCompile(`\b[0-9]+(?:\.[0-9]+)?(?:ns|µs|us|ms|s|m|h)\b`), "DURATION"},
	{regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?`), "0"},
}

// normalise returns a line with what changes from run to run (temporary
// directories, ids, secrets, durations, numbers, times) replaced by a
// placeholder, and its runs of white space by one space.
func normalise(l string) string {
	for _, v := range variable {
		l = v.re.ReplaceAllString(l, v.with)
	}
	return strings.Join(strings.Fields(l), " ")
}

// lineRE matches a normalised line of output against a line of a sample,
// "…" (or "...") in it standing for any text.
func lineRE(l string) *regexp.Regexp {
	var parts []string
	for _, p := range regexp.MustCompile(`…|\.\.\.`).Split(l, -1) {
		parts = append(parts, regexp.QuoteMeta(normalise(p)))
	}
	return regexp.MustCompile(`^\s*` + strings.Join(parts, `.*`) + `\s*$`)
}

func isSubsequence(sub, seq []string) bool {
	i := 0
	for _, s := range seq {
		if i < len(sub) && sub[i] == s {
			i++
		}
	}
	return i == len(sub)
}

// walkEnv is the environment of a page's script: only what Go needs to
// build, nothing of the test's own (no AIUSAGE_* variable).
func walkEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "GOCACHE", "GOPATH", "GOFLAGS", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// runPage runs the runnable blocks of a page as one bash script in root and
// returns its output (stdout and stderr together). It fails the test, naming
// the page, the block and its line, when a command fails, the page takes
// longer than timeout, it leaves a process running, or it leaves a new file
// in the repository.
func runPage(t runT, root, name string, blocks []codeBlock, timeout time.Duration) string {
	t.Helper()
	src, from := script(blocks)
	before := untracked(t, root)
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", src, name)
	cmd.Dir = root
	cmd.Env = walkEnv()
	// A session of its own: what the script starts stays in it even when
	// it makes a process group of its own (go test, a shell's job control).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// A file, not a pipe: the script's end is not held up by a background
	// process that keeps its output open.
	out, err := os.CreateTemp("", "walkthrough-*.out")
	require.NoError(t, err)
	defer os.Remove(out.Name())
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	// On the timeout, end the whole session: the page's background
	// processes with the script.
	cmd.Cancel = func() error { killSession(cmd.Process.Pid); return nil }
	require.NoError(t, cmd.Start())
	sid := cmd.Process.Pid
	err = cmd.Wait()
	timedOut := ctx.Err() != nil
	left := sessionAlive(sid, 5*time.Second)
	killSession(sid)
	b, rerr := os.ReadFile(out.Name())
	require.NoError(t, rerr)
	text := string(b)
	where := func() string { return lastBlock(text) }
	if timedOut {
		t.Fatalf("%s: did not finish within %s; it was running the block at line %s; its output so far:\n%s", name, timeout, where(), text)
	}
	if err != nil {
		failed := ""
		if m := regexp.MustCompile(`@@walkthrough failed: line ([0-9]+): (.*)`).FindStringSubmatch(text); m != nil {
			n, _ := strconv.Atoi(m[1])
			if n < len(from) && from[n] > 0 {
				failed = fmt.Sprintf(", at line %d: %s", from[n], m[2])
			}
		}
		t.Fatalf("%s: the block at line %s failed%s: %v; its output:\n%s", name, where(), failed, err, text)
	}
	if left {
		t.Fatalf("%s: the script left processes running (a page kills what it starts); its output:\n%s", name, text)
	}
	if after := untracked(t, root); !slices.Equal(before, after) {
		t.Fatalf("%s: the script left files in the repository (a page works in a directory of its own, mktemp -d): before %q, after %q", name, before, after)
	}
	return text
}

// runT is what runPage needs of a test.
type runT interface {
	Helper()
	Context() context.Context
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	FailNow()
}

// fakeT is a test whose failure is recorded, to check that the runner fails.
type fakeT struct {
	*testing.T
	failed bool
	msg    string
}

func (f *fakeT) Errorf(format string, args ...any) {
	f.failed = true
	f.msg += fmt.Sprintf(format, args...)
}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

func (f *fakeT) FailNow() { f.failed = true; runtime.Goexit() }

// lastBlock returns the line of the last block that began in an output.
func lastBlock(out string) string {
	i := strings.LastIndex(out, blockMark)
	if i < 0 {
		return "?"
	}
	n, _, _ := strings.Cut(out[i+len(blockMark):], "@@")
	return n
}

// sessionAlive tells whether a process of the session sid is still there
// after wait (a process killed just before the script ended gets that long
// to go).
func sessionAlive(sid int, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		if len(session(sid)) == 0 {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killSession kills every process of the session sid.
func killSession(sid int) {
	_ = syscall.Kill(-sid, syscall.SIGKILL) // the script's own process group
	for _, pid := range session(sid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// session returns the processes of the session sid: from /proc where there
// is one (they may be in process groups of their own), else those of the
// process group sid.
func session(sid int) []int {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		if syscall.Kill(-sid, 0) == nil {
			return []int{-sid}
		}
		return nil
	}
	var pids []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid pgrp session ...: comm may hold spaces and
		// parentheses, the fields after its last ')' do not.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 4 || fields[0] == "Z" {
			continue // a zombie is gone already, its parent not yet told
		}
		if s, err := strconv.Atoi(fields[3]); err == nil && s == sid {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// untracked lists the files and directories at the root of the repository
// at root that git does not track and does not ignore (where a page's
// script, run from the root, would leave one; the tests of other packages,
// running meanwhile, write below their own directories); nil when git is
// not there.
func untracked(t runT, root string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "--others", "--exclude-standard", "--directory").Output()
	if err != nil {
		return nil
	}
	var top []string
	for _, f := range strings.Split(string(out), "\n") {
		if f != "" && !strings.Contains(strings.TrimSuffix(f, "/"), "/") {
			top = append(top, f)
		}
	}
	return top
}

// pages returns README.md and docs/*.md, paths relative to this directory.
func pages(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.md")
	require.NoError(t, err)
	return append([]string{filepath.Join(repoRoot, "README.md")}, files...)
}

// TestWalkthroughs runs each page's shell blocks as pasted, as the
// convention above says, and checks each block's output against its sample.
// Pages run one at a time: the docs use fixed ports.
func TestWalkthroughs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary, page by page")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("the walkthroughs are bash")
	}
	root, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	// Build the binary once, with a bound of its own: on a cold build cache
	// it takes minutes, which are no page's. The pages' make build is then a
	// cache hit.
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "make", "build")
	build.Dir, build.Env = root, walkEnv()
	out, err := build.CombinedOutput()
	require.NoError(t, err, "make build: %s", out)
	for _, f := range pages(t) {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		blocks, err := parseBlocks(string(src))
		require.NoError(t, err, f)
		if !slices.ContainsFunc(blocks, codeBlock.Runnable) {
			continue
		}
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			out := runPage(t, root, name, blocks, pageTimeout)
			t.Logf("%s ran in %s", name, time.Since(start).Round(time.Second))
			parts := splitOutput(out)
			for _, b := range blocks {
				if !b.Runnable() || b.Sample == nil {
					continue
				}
				if msg := sampleMismatch(*b.Sample, parts[b.Line]); msg != "" {
					t.Errorf("%s: the block at line %d and its sample at line %d: %s; the output:\n%s", name, b.Line, b.Sample.Line, msg, parts[b.Line])
				}
			}
		})
	}
}

// TestParseBlocks checks the extractor: markers, samples, indented blocks.
func TestParseBlocks(t *testing.T) {
	src := "# Page\n\n```sh\necho one\n```\n\n```text\none\n```\n\n" +
		"<!-- not run: runs until Ctrl-C -->\n```sh\nsleep infinity\n```\n\n" +
		"Prose between.\n\n```sh\necho two\n```\n\nThe output:\n\n```text\ntwo\n```\n\n" +
		"- an item:\n\n  ```bash\n  echo three\n  ```\n\n  ```json\n  {\"a\": 1}\n  ```\n"
	blocks, err := parseBlocks(src)
	require.NoError(t, err)
	require.Len(t, blocks, 7)
	require.Equal(t, codeBlock{Line: 3, Lang: "sh", Text: "echo one\n", Sample: &blocks[1]}, blocks[0])
	require.Equal(t, "one\n", blocks[0].Sample.Text)
	require.Equal(t, "runs until Ctrl-C", blocks[2].Skip)
	require.False(t, blocks[2].Runnable())
	require.True(t, blocks[3].Runnable())
	require.Nil(t, blocks[3].Sample, "prose between a block and a text block: not its sample")
	require.Equal(t, "echo three\n", blocks[5].Text, "the indentation of a block in a list item is removed")
	require.Equal(t, &blocks[6], blocks[5].Sample)

	s, from := script(blocks)
	require.Contains(t, s, "echo one\n")
	require.NotContains(t, s, "sleep infinity")
	require.Equal(t, 4, from[slices.Index(strings.Split(s, "\n"), "echo one")+1], "a script line maps to its page line")

	for _, bad := range []string{
		"<!-- not run -->\n```sh\nx\n```\n",
		"<!-- not run:  -->\n```sh\nx\n```\n",
		"<!-- not run: a reason -->\n\n```sh\nx\n```\n",
		"<!-- not run: a reason -->\n```text\nx\n```\n",
		"```sh\nx\n",
	} {
		_, err := parseBlocks(bad)
		require.Error(t, err, "%q", bad)
	}
}

// TestSampleMismatch checks that a wrong sample is caught, and that what
// changes from run to run (ids, times, secrets, counts) is not compared.
func TestSampleMismatch(t *testing.T) {
	text := func(s string) codeBlock { return codeBlock{Lang: "text", Text: s} }
	jsonS := func(s string) codeBlock { return codeBlock{Lang: "json", Text: s} }
	out := "{\"id\":\"0198f0b2-aa\",\"name\":\"Acme\",\"createdAt\":\"2026-11-28T14:00:00Z\"}\n" +
		"HTTP/1.1 201 Created\r\nX: y\r\n\r\n204\n{\"title\":\"not found\"}\n404\nthe service stopped\nexit 0\n"
	for _, tc := range []struct {
		name   string
		sample codeBlock
		want   string // "" or a part of the message
	}{
		{"the same shape", text("{\"id\":\"0197-bb\",\"name\":\"Acme\",\"createdAt\":\"2026-01-01T00:00:00Z\"}\nHTTP/1.1 201 Created\n204\n{\"title\":\"not found\"}\n404\nthe service stopped\nexit 0\n"), ""},
		{"elided", text("HTTP/1.1 201 Created\n…\n404\n…\n"), ""},
		{"json members", jsonS("{\"id\": \"…\", \"name\": \"Acme\"}"), ""},
		{"a wrong status", text("HTTP/1.1 201 Created\n204\n{\"title\":\"not found\"}\n200\nthe service stopped\nexit 0\n"), "status lines"},
		{"a missing status", text("HTTP/1.1 201 Created\n404\nexit 0\n"), "status lines"},
		{"an elided sample, out of order", text("404\n…\n204\n"), "status lines"},
		{"a wrong exit status", text("HTTP/1.1 201 Created\n204\n404\nexit 1\n"), "status lines"},
		{"a wrong member", jsonS("{\"id\": \"…\", \"organisationName\": \"Acme\"}"), `"organisationName"`},
		{"a wrong message", text("HTTP/1.1 201 Created\n204\n404\nthe service is ready\nexit 0\n"), `"the service is ready"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := sampleMismatch(tc.sample, out)
			if tc.want == "" {
				require.Empty(t, msg)
			} else {
				require.Contains(t, msg, tc.want)
			}
		})
	}

	// Lines of text: numbers, durations, times, ids, secrets and scratch
	// directories differ from run to run; words and their order do not.
	out = "time=2026-11-28T14:39:00.358Z level=INFO msg=\"service serving\" url=http://127.0.0.1:8080/ database=sqlite:/tmp/tmp.40FgcncTeZ/service.db max_connections=16384\n" +
		"usage: 106 records in 5 pages, 0 quarantined, 10ms, 5 full walk(s)\n" +
		"sync of acme: 392 records, 0 retries\n" +
		"secret whsec_JGhHqEaGVpflsAr6VtH767puj9TvWA102FhZLB0VJ7A= for 0198f0b2-aa4c-4e0b-811a-1ade78acd889\n"
	for _, tc := range []struct {
		name   string
		sample codeBlock
		want   string
	}{
		{"other numbers", text("time=2026-11-21T18:54:14.644Z level=INFO msg=\"service serving\" url=http://127.0.0.1:8080/ database=sqlite:/tmp/tmp.KnwZAyTvHM/service.db …\n" +
			"usage: 8 records in 1 pages, 0 quarantined, 1.2s, 1 full walk(s)\nsync of acme: 13 records, 2 retries\n" +
			"secret whsec_b3RoZXI= for 634841e9-cbef-4a43-b68a-ab5c75bde82b\n"), ""},
		{"elided lines", text("…\nsync of acme: 13 records, 0 retries\n"), ""},
		{"a line cut short without …", text("time=2026-11-21T18:54:14.644Z level=INFO msg=\"service serving\" url=http://127.0.0.1:8080/ database=sqlite:/tmp/tmp.KnwZAyTvHM/service.db\n"), "service serving"},
		{"another word", text("sync of acme: 392 records, 0 failures\n"), `"sync of acme: 392 records, 0 failures"`},
		{"out of order", text("sync of acme: 392 records, 0 retries\nusage: 106 records in 5 pages, 0 quarantined, 10ms, 5 full walk(s)\n"), "usage: 106"},
		{"a line the output lacks", text("sync of acme: 392 records, 0 retries\nevery delivery acknowledged\n"), "every delivery acknowledged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := sampleMismatch(tc.sample, out)
			if tc.want == "" {
				require.Empty(t, msg)
			} else {
				require.Contains(t, msg, tc.want)
			}
		})
	}
}

// TestRunPage checks the runner: blocks run in order in one shell from the
// root, with a clean environment; a failing command is named with its page
// line; a process left running, and a file left in the root, are failures.
func TestRunPage(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("the walkthroughs are bash")
	}
	t.Setenv("AIUSAGE_DATABASE_URL", "sqlite:leaked.db")
	root := t.TempDir()
	parse := func(src string) []codeBlock {
		b, err := parseBlocks(src)
		require.NoError(t, err)
		return b
	}
	out := runPage(t, root, "ok.md", parse("```sh\nX=1\necho \"[$AIUSAGE_DATABASE_URL]\"\n```\n\n```sh\necho x=$X; pwd\n```\n"), time.Minute)
	require.Contains(t, out, "[]\n", "no AIUSAGE_* variable leaks in")
	require.Contains(t, out, "x=1\n"+root+"\n", "one shell, from the root")

	for _, tc := range []struct{ name, page, want string }{
		{"fails", "text\n\n```sh\necho before\nfalse\necho after\n```\n", "at line 5: false (status 1)"},
		{"fails in a pipe", "```sh\nfalse | cat\n```\n", "at line 2"},
		{"leaves a process", "```sh\nsleep 60 &\n```\n", "left processes running"},
		// In a process group of its own (job control, as go test gives the
		// processes it starts): still the page's.
		{"leaves a process in a group of its own", "```sh\nset -m; sleep 61 &\n```\n", "left processes running"},
		{"leaves a file", "```sh\ntouch " + root + "/left.txt\n```\n", "left files"},
		{"too slow", "```sh\nsleep 60\n```\n", "did not finish within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "leaves a file" {
				require.NoError(t, exec.Command("git", "init", "-q", root).Run())
			}
			ft := &fakeT{T: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				runPage(ft, root, "bad.md", parse(tc.page), 3*time.Second)
			}()
			<-done
			require.True(t, ft.failed, "the runner fails the page")
			require.Contains(t, ft.msg, tc.want)
			require.Contains(t, ft.msg, "bad.md")
		})
	}
}
