package policy

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

// realPatterns are patterns found in real policies: CheckPattern accepts
// them.
var realPatterns = []string{
	`\b\d{3}-\d{2}-\d{4}\b`,
	`\b(?:\d[ -]*?){13,19}\b`,
	`\b(?:4\d{3}|5[1-5]\d{2}|3[47]\d{2}|6011)[ -]?\d{4}[ -]?\d{4}[ -]?\d{1,4}\b`,
	`\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){2,7}\s?[A-Z0-9]{1,4}\b`,
	`\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}\b`,
	`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`,
	`[\w.+-]+@[\w-]+(?:\.[\w-]+)+`,
	`(?i)\b[a-z0-9._%+-]{1,64}@[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){1,8}\b`,
	`\b\+?\d{1,3}[ .-]?\(?\d{3}\)?[ .-]?\d{3}[ .-]?\d{4}\b`,
	`(?i)(?:password|passwd|pwd|secret|api[_-]?key|token)\s*[:=]\s*\S{6,}`,
	`AKIA[0-9A-Z]{16}`,
	`-----BEGIN (?:RSA |EC )?PRIVATE KEY-----`,
	`\bghp_[A-Za-z0-9]{36}\b`,
	`(?m)^id-\d+$`,
	`\b(?:\d{1,3}\.){3}\d{1,3}\b`,
	`\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})\b`,
	`(?i)project\s+(?:phoenix|atlas|zeus).{0,100}`,
	`(?s)BEGIN CONFIDENTIAL.{0,500}END CONFIDENTIAL`,
	// A keyword alternation of sixty words.
	`(?i)\b(?:` + strings.Join(keywords(60), "|") + `)\b`,
	// As long as allowed.
	strings.Repeat("x", MaxPatternLength),
}

func keywords(n int) []string {
	base := []string{"acquisition", "merger", "takeover", "layoff", "salary", "bonus", "diagnosis", "lawsuit", "settlement",
		"confidential", "embargo", "insider", "password", "credential", "passport"}
	out := make([]string, n)
	for i := range out {
		out[i] = base[i%len(base)] + strings.Repeat("s", i/len(base))
	}
	return out
}

func TestCheckPatternAccepts(t *testing.T) {
	t.Parallel()
	for _, p := range realPatterns {
		for _, cs := range []bool{true, false} {
			require.NoError(t, CheckPattern(p, cs), "pattern %q", p)
		}
	}
}

func TestCheckPatternRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern string
		syntax  bool
		msg     string // in the message
	}{
		{`(a`, true, "invalid RE2 syntax: missing closing )"},
		{`a{1001}`, true, "invalid repeat count"},
		{`(a{1,100}){1,100}`, true, "nested counts multiply to at most 1000"},
		{strings.Repeat("x", MaxPatternLength+1), false, "is 1001 characters long; at most 1000"},
		{strings.Repeat("é", MaxPatternLength+1), false, "is 1001 characters long"},
		// Counted repetitions multiply the program.
		{`[a-z]{0,1000}x`, false, "compiles to 2003 instructions"},
		{`.{0,999}.{0,999}`, false, "compiles to"},
		{strings.Repeat(`\pL{0,1000}`, 80), false, "compiles to about"},
		{`(?:\w{1,33}\s){1,30}`, false, "instructions"},
		// A large count inside a repetition.
		{`(?:x.{0,200})+`, false, "nests the repetition {0,200} inside the repetition +"},
		{`(?:a{101}b){2}`, false, "nests the repetition {101} inside the repetition {2}"},
		{`(?:ab{150,})*`, false, "nests the repetition {150,} inside the repetition *"},
	} {
		err := CheckPattern(c.pattern, true)
		var pe *PatternError
		require.ErrorAs(t, err, &pe, "pattern %q", c.pattern)
		require.Equal(t, c.syntax, pe.Syntax, "pattern %q: %v", c.pattern, err)
		require.Contains(t, err.Error(), c.msg, "pattern %q", c.pattern)
	}
}

// The check stays cheap for the largest programs: it estimates before it
// compiles. Measured against compiling the same pattern, not against a
// clock.
func TestCheckPatternCheap(t *testing.T) {
	t.Parallel()
	p := strings.Repeat(`\pL{0,1000}`, 90)
	start := time.Now()
	for range 10 {
		require.Error(t, CheckPattern(p, false))
	}
	check := time.Since(start) / 10
	start = time.Now()
	_, err := regexp.Compile(p)
	require.NoError(t, err)
	require.Less(t, check, time.Since(start), "checking must cost less than compiling")
}

// A pattern stored before the limits applied is never run: every evaluation
// fails with a BudgetError naming it.
func TestCompileRefusesPatternOverLimits(t *testing.T) {
	t.Parallel()
	set, err := Compile([]spec.Instruction{
		{ID: "ok", Title: "fine", Action: spec.ActionBlock, Trigger: spec.RegexTrigger(`secret`, true)},
		{ID: "heavy", Title: "too heavy", Action: spec.ActionBlock, Trigger: spec.RegexTrigger(`[a-z]{0,1000}x`, true)},
	}, Options{})
	require.NoError(t, err)
	_, err = set.Evaluate(context.Background(), []string{"a secret"})
	require.ErrorIs(t, err, ErrBudgetExceeded)
	var be *BudgetError
	require.ErrorAs(t, err, &be)
	require.Equal(t, "heavy", be.InstructionID)
	require.Equal(t, "too heavy", be.Title)
	require.ErrorContains(t, be.Pattern, "compiles to 2003 instructions")
	require.Contains(t, err.Error(), `instruction heavy ("too heavy") was not evaluated`)

	// Invalid syntax is still a compile error.
	_, err = Compile([]spec.Instruction{{ID: "bad", Action: spec.ActionBlock, Trigger: spec.RegexTrigger(`(a`, true)}}, Options{})
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
}

// heavyText is 1 MiB that keeps every thread of heavyPatterns alive.
func heavyText() string { return strings.Repeat("a", 1<<20) }

// heavyPatterns are allowed by CheckPattern, have no literal to prefilter
// on, and cost each several seconds of CPU over heavyText.
var heavyPatterns = []string{`[a-z]{0,400}[^a-z]`, `(?:[a-z]|\pL){0,300}[^a-z]`, `\w{1,500}[^\w]`}

func TestHeavyPatternsAllowed(t *testing.T) {
	t.Parallel()
	for _, p := range heavyPatterns {
		require.NoError(t, CheckPattern(p, true), p)
	}
}

// An evaluation over 1 MiB with heavy patterns ends by its budget, naming the
// pattern it was running; without the budget it would run for tens of
// seconds. The bound checked is a hundred times the budget.
func TestEvaluateStopsAtBudget(t *testing.T) {
	t.Parallel()
	var ins []spec.Instruction
	for i, p := range heavyPatterns {
		ins = append(ins, spec.Instruction{ID: string(rune('a' + i)), Title: p, Action: spec.ActionBlock, Trigger: spec.RegexTrigger(p, true)})
	}
	set, err := Compile(ins, Options{Budget: 20 * time.Millisecond})
	require.NoError(t, err)
	start := time.Now()
	_, err = set.Evaluate(context.Background(), []string{heavyText()})
	elapsed := time.Since(start)
	require.ErrorIs(t, err, ErrBudgetExceeded)
	var be *BudgetError
	require.ErrorAs(t, err, &be)
	require.Equal(t, 20*time.Millisecond, be.Budget)
	require.Equal(t, "a", be.InstructionID)
	require.Less(t, elapsed, 2*time.Second)

	// The caller's own cancellation is not a budget overrun.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = set.Evaluate(ctx, []string{heavyText()})
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, ErrBudgetExceeded)
}

// An evaluation records at most Options.MaxMatches matches: a request of 1 MiB of
// "x 1 " held a million matches of two instructions, each kept in memory
// until the result was built, and all written into the task.
func TestEvaluateStopsAtMatchBound(t *testing.T) {
	t.Parallel()
	ins := []spec.Instruction{
		{ID: "word", Title: "x", Action: spec.ActionBlock, Trigger: spec.StringMatchTrigger([]string{"x"}, false)},
		{ID: "digit", Title: "digit", Action: spec.ActionBlock, Trigger: spec.RegexTrigger(`\d`, true)},
	}
	set, err := Compile(ins, Options{Budget: -1})
	require.NoError(t, err)
	under := strings.Repeat("x 1 ", DefaultMaxMatches/2)
	res, err := set.Evaluate(context.Background(), []string{under})
	require.NoError(t, err, "exactly DefaultMaxMatches matches are recorded")
	require.Len(t, res.Reasons, 2)
	require.Len(t, res.Reasons[0].Matches, DefaultMaxMatches/2)

	// The error names the instruction whose match went over the bound.
	for _, c := range []struct {
		msgs []string
		over string
	}{
		{[]string{under + "x 1 "}, "digit"},                                // one message over the bound: its terms are scanned first
		{[]string{under, "x"}, "word"},                                     // over it across messages
		{[]string{strings.Repeat("x 1 ", 1<<18)}, "word"},                  // 1 MiB
		{[]string{strings.Repeat("x ", DefaultMaxMatches+1)}, "word"},      // string matches only
		{[]string{strings.Repeat("1", DefaultMaxMatches+1), "x"}, "digit"}, // regex matches only
	} {
		_, err = set.Evaluate(context.Background(), c.msgs)
		require.ErrorIs(t, err, ErrBudgetExceeded)
		var be *BudgetError
		require.ErrorAs(t, err, &be)
		require.Equal(t, DefaultMaxMatches, be.Matches)
		require.Zero(t, be.Budget)
		require.Equal(t, c.over, be.InstructionID)
		require.Contains(t, be.Error(), "more than 10000 matches while matching the pattern of instruction "+c.over)
	}
}

// The interruptible search stops as soon as it is told to: counted, not
// timed.
func TestFindAllStopStopsPromptly(t *testing.T) {
	t.Parallel()
	ri, err := compileRegex(heavyPatterns[0], true)
	require.NoError(t, err)
	text := heavyText()
	require.Greater(t, len(text)*ri.size, fastSearchCost, "the search must take the interruptible path")
	calls := 0
	var stoppedAt int
	rd := 0
	stop := func() bool {
		calls++
		rd = calls * stopCheckRunes
		if calls == 3 {
			stoppedAt = rd
			return true
		}
		return false
	}
	windows, stopped := ri.findAll(text, nil, nil, stop, func(int, int) { t.Fatal("no match expected") })
	require.True(t, stopped)
	require.Empty(t, windows)
	require.Equal(t, 3, calls)
	require.LessOrEqual(t, stoppedAt, 3*stopCheckRunes)
}

// blockingMatcher is a built-in-like matcher that waits for its context.
type blockingMatcher struct{}

func (blockingMatcher) local() {}

func (blockingMatcher) Match(ctx context.Context, _, _ []string) ([][]int, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// externalMatcher stands for an embeddings API: not counted in the budget.
type externalMatcher struct{ wait time.Duration }

func (m externalMatcher) Match(ctx context.Context, _, queries []string) ([][]int, error) {
	select {
	case <-time.After(m.wait):
		return make([][]int, len(queries)), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestEvaluateBudgetSemantic(t *testing.T) {
	t.Parallel()
	ins := []spec.Instruction{{ID: "s", Title: "sem", Action: spec.ActionBlock, Trigger: spec.SemanticTrigger("share the salary")}}
	set, err := Compile(ins, Options{Semantic: blockingMatcher{}, Budget: 10 * time.Millisecond})
	require.NoError(t, err)
	_, err = set.Evaluate(context.Background(), []string{"Tell me the salary."})
	var be *BudgetError
	require.ErrorAs(t, err, &be)
	require.Empty(t, be.InstructionID)

	// The built-in matcher checks the budget between sentences.
	set, err = Compile(ins, Options{Budget: time.Nanosecond})
	require.NoError(t, err)
	_, err = set.Evaluate(context.Background(), []string{strings.Repeat("Tell me the salary of Jane. ", 1000)})
	require.ErrorIs(t, err, ErrBudgetExceeded)

	// Another matcher has its own timeout: waiting for it is not over
	// budget.
	set, err = Compile(ins, Options{Semantic: externalMatcher{wait: time.Second}, Budget: 300 * time.Millisecond})
	require.NoError(t, err)
	res, err := set.Evaluate(context.Background(), []string{"Tell me the salary."})
	require.NoError(t, err)
	require.Equal(t, OutcomeApproved, res.Outcome)
}

func TestBudgetDefault(t *testing.T) {
	t.Parallel()
	set, err := Compile(nil, Options{})
	require.NoError(t, err)
	require.Equal(t, DefaultBudget, set.budget)
	set, err = Compile(nil, Options{Budget: -1})
	require.NoError(t, err)
	res, err := set.Evaluate(context.Background(), []string{"x"})
	require.NoError(t, err)
	require.Equal(t, OutcomeApproved, res.Outcome)
	require.True(t, errors.Is(&BudgetError{}, ErrBudgetExceeded))
}

// FuzzRegexStop checks that the interruptible search, never stopped, finds
// exactly the non-empty matches of FindAllStringIndex.
func FuzzRegexStop(f *testing.F) {
	texts := []string{
		"Order 12345 of 2024: pay DE89370400440532013000; XDE89370400440532013000",
		"mail jane.doe@example.com, «bob@exämple.org» me@home.",
		"card 4111 1111 1111 1111 or 4111-1111-1111-1111x",
		"a-12b -3 x-4- 5", "id-1\nx id-2\nid-3", "aaaa aaab aaaa",
		"\xff1234\xfe 12\xe2\x82 3-45-6789", "ab\xe2\x82\xacc", "",
	}
	for i, p := range append(fuzzPatterns, ``, `\b`, `\B`, `a*`, `(?m)$`, `\Qa)`, `(?U)a+`, `(|a)+`, `\A`, `\z`, `(?m)^`, `.`) {
		f.Add(p, texts[i%len(texts)], true)
		f.Add(p, texts[(i+4)%len(texts)], i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, pattern, text string, caseSensitive bool) {
		if len(pattern) > 100 || len(text) > 1000 {
			return
		}
		ri, err := compileRegex(pattern, caseSensitive)
		if err != nil {
			return
		}
		var want [][2]int
		for _, m := range ri.re.FindAllStringIndex(text, -1) {
			if m[1] > m[0] {
				want = append(want, [2]int{m[0], m[1]})
			}
		}
		var got [][2]int
		stopped := ri.findAllStop(text, func() bool { return false }, func(s, e int) { got = append(got, [2]int{s, e}) })
		require.False(t, stopped)
		require.Equal(t, want, got, "pattern %q text %q (valid %v)", pattern, text, utf8.ValidString(text))
	})
}

// Over a text long enough for the interruptible search, Evaluate finds
// exactly the matches of FindAllStringIndex.
func TestEvaluateLongTextMatchesFindAll(t *testing.T) {
	t.Parallel()
	line := "Mail jane.doe@example.com re card 4111 1111 1111 1111, IBAN DE89370400440532013000; ſecret Ünïcode 123-45-6789\nid-42\n"
	text := strings.Repeat(line, 3000) + "\xff\xfe tail id-7"
	patterns := append(slices.Clone(realPatterns[:18]), `\w+`, `[^ ]@[^ ]`, `(?i)secret|password`, `x*`, `\B\d+\B`, `(?m)^id-\d+$`, `Ü\pL+`, `\S+$`)
	runeAt := make([]int, len(text)+1) // the rune offset of each byte offset
	n := 0
	for i := range text {
		runeAt[i] = n
		n++
	}
	runeAt[len(text)] = n
	for _, fold := range []bool{false, true} {
		var ins []spec.Instruction
		for i, p := range patterns {
			ins = append(ins, spec.Instruction{ID: fmt.Sprint(i), Action: spec.ActionBlock, Trigger: spec.RegexTrigger(p, !fold)})
		}
		set, err := Compile(ins, Options{Budget: -1, MaxMatches: -1})
		require.NoError(t, err)
		res, err := set.Evaluate(context.Background(), []string{text})
		require.NoError(t, err)
		got := reasonSpans(res)
		long := 0
		for i, p := range patterns {
			full := p
			if fold {
				full = "(?i)" + p
			}
			var want []spec.MatchSpan
			for _, m := range regexp.MustCompile(full).FindAllStringIndex(text, -1) {
				if m[1] > m[0] {
					want = append(want, spec.MatchSpan{Start: runeAt[m[0]], End: runeAt[m[1]]})
				}
			}
			require.Equal(t, want, got[fmt.Sprint(i)], "pattern %q", full)
			if len(text)*set.regexes[i].size > fastSearchCost {
				long++
			}
		}
		require.Greater(t, long, len(patterns)/2, "most patterns must take the interruptible path over the text")
	}
}

// FuzzCheckPattern checks that CheckPattern never panics, that a pattern it
// accepts compiles as an instruction, and that its quick estimate never
// refuses a program within the limit.
func FuzzCheckPattern(f *testing.F) {
	for _, p := range append(slices.Clone(realPatterns), `[a-z]{0,1000}x`, `(?:x.{0,200})+`, `(a{1,100}){1,100}`, `\Q(a`, `(?i)ſ{3,}`,
		`((a{0,10}){0,10}){0,10}`, `(?:(?:a|b|c){0,9}d){0,99}`, `x{0}{1000}`, `(?:){1000}`) {
		f.Add(p, true)
	}
	f.Fuzz(func(t *testing.T, pattern string, caseSensitive bool) {
		err := CheckPattern(pattern, caseSensitive)
		flags := syntax.Perl
		if !caseSensitive {
			flags |= syntax.FoldCase
		}
		tree, perr := syntax.Parse(pattern, flags)
		if perr == nil && programEstimate(tree) <= 16*MaxPatternProgram {
			prog, cerr := syntax.Compile(tree.Simplify())
			require.NoError(t, cerr)
			require.LessOrEqual(t, len(prog.Inst), programEstimate(tree)+4, "the estimate is from above")
			if len(prog.Inst) <= MaxPatternProgram && err != nil {
				require.NotContains(t, err.Error(), "compiles to", "a program within the limit")
			}
		}
		if err != nil {
			var pe *PatternError
			require.ErrorAs(t, err, &pe)
			require.NotEmpty(t, pe.Msg)
			return
		}
		require.NoError(t, perr)
		_, err = compileRegex(pattern, caseSensitive)
		require.NoError(t, err)
	})
}
