package policy

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of a Regex pattern, checked by [CheckPattern]. Go's regexp (RE2)
// never backtracks: a search takes time linear in the length of the text
// times the size of the pattern's compiled program, the number of states the
// engine may have to follow at each byte. These limits bound that size.
const (
	// MaxPatternLength is the most characters (Unicode code points) a
	// pattern may hold.
	MaxPatternLength = 1000
	// MaxPatternProgram is the most instructions a pattern may compile to:
	// Go's regexp/syntax program after Simplify, where a counted repetition
	// x{n,m} is m copies of x. A pattern of this size may search 1 MiB of
	// the worst text for tens of seconds of CPU (BenchmarkBudget); the
	// evaluation budget ([Options.Budget]) stops it well before.
	MaxPatternProgram = 2000
	// MaxNestedRepeat is the largest maximum of a counted repetition that
	// may sit inside another repetition (x{0,200} inside (...)+ or
	// (...){2,5} is refused): nested counts multiply the program.
	MaxNestedRepeat = 100
)

// PatternError is a Regex pattern that [CheckPattern] refuses. Its message is
// meant for the person who wrote the pattern.
type PatternError struct {
	// Syntax is true when the pattern is not valid RE2 syntax; false when
	// it is valid but over a limit.
	Syntax bool
	// Msg says what is wrong, without the pattern.
	Msg string
}

// Error returns Msg.
func (e *PatternError) Error() string { return e.Msg }

// CheckPattern checks a Regex trigger's pattern as [Compile] will run it
// ((?i) prepended when caseSensitive is false): valid RE2 syntax, at most
// MaxPatternLength characters, a compiled program of at most
// MaxPatternProgram instructions, and no counted repetition of more than
// MaxNestedRepeat inside another repetition. The error is a [*PatternError].
// Checking costs at most a few milliseconds whatever the pattern.
func CheckPattern(pattern string, caseSensitive bool) error {
	if err := checkPatternCost(pattern, caseSensitive); err != nil {
		return err
	}
	// The regexp package has limits of its own; meet them as Compile will.
	p := pattern
	if !caseSensitive {
		p = "(?i)" + p
	}
	if _, err := regexp.Compile(p); err != nil {
		return &PatternError{Syntax: true, Msg: "invalid RE2 syntax: " + strings.TrimPrefix(err.Error(), "error parsing regexp: ")}
	}
	return nil
}

// checkPatternCost is CheckPattern without the final regexp.Compile.
func checkPatternCost(pattern string, caseSensitive bool) error {
	if n := utf8.RuneCountInString(pattern); n > MaxPatternLength {
		return &PatternError{Msg: fmt.Sprintf("is %d characters long; at most %d are allowed", n, MaxPatternLength)}
	}
	flags := syntax.Perl
	if !caseSensitive {
		flags |= syntax.FoldCase
	}
	tree, err := syntax.Parse(pattern, flags)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		var se *syntax.Error
		if errors.As(err, &se) && se.Code == syntax.ErrInvalidRepeatSize {
			msg += " (a count is at most 1000, and nested counts multiply to at most 1000)"
		}
		return &PatternError{Syntax: true, Msg: "invalid RE2 syntax: " + msg}
	}
	if outer, inner := nestedRepeat(tree, nil); inner != nil {
		return &PatternError{Msg: fmt.Sprintf("nests the repetition %s inside the repetition %s: a counted repetition of more than %d "+
			"must not be repeated again (it multiplies the work of every search); repeat a shorter count or drop the outer repetition",
			repeatString(inner), repeatString(outer), MaxNestedRepeat)}
	}
	// Estimate first: simplifying and compiling a pattern of many large
	// counts takes time and memory the check must not spend.
	if est := programEstimate(tree); est > 4*MaxPatternProgram {
		return programError(fmt.Sprintf("about %d", est))
	}
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return &PatternError{Syntax: true, Msg: "invalid RE2 syntax: " + err.Error()}
	}
	if n := len(prog.Inst); n > MaxPatternProgram {
		return programError(fmt.Sprint(n))
	}
	return nil
}

func programError(size string) error {
	return &PatternError{Msg: fmt.Sprintf("compiles to %s instructions of the regular expression engine; at most %d are allowed, "+
		"as the time of every search grows with it: lower the counts of {n,m} repetitions or split the pattern in several instructions",
		size, MaxPatternProgram)}
}

// isRepeat reports whether re repeats its sub-expression more than once.
func isRepeat(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpStar, syntax.OpPlus:
		return true
	case syntax.OpRepeat:
		return re.Max == -1 || re.Max > 1
	}
	return false
}

// nestedRepeat returns a counted repetition of more than MaxNestedRepeat
// inside a repetition, with that outer repetition; outer is the nearest
// repetition enclosing re, if any.
func nestedRepeat(re, outer *syntax.Regexp) (*syntax.Regexp, *syntax.Regexp) {
	if outer != nil && re.Op == syntax.OpRepeat && (re.Max > MaxNestedRepeat || re.Max == -1 && re.Min > MaxNestedRepeat) {
		return outer, re
	}
	if isRepeat(re) {
		outer = re
	}
	for _, sub := range re.Sub {
		if o, in := nestedRepeat(sub, outer); in != nil {
			return o, in
		}
	}
	return nil, nil
}

// repeatString shows the repetition operator of re.
func repeatString(re *syntax.Regexp) string {
	switch {
	case re.Op == syntax.OpStar:
		return "*"
	case re.Op == syntax.OpPlus:
		return "+"
	case re.Max == -1:
		return fmt.Sprintf("{%d,}", re.Min)
	case re.Min == re.Max:
		return fmt.Sprintf("{%d}", re.Min)
	}
	return fmt.Sprintf("{%d,%d}", re.Min, re.Max)
}

// programEstimate estimates, from above and quickly, the instructions re
// compiles to after Simplify; it saturates at 1<<30.
func programEstimate(re *syntax.Regexp) int {
	const ceiling = 1 << 30
	sat := func(n int) int { return min(n, ceiling) }
	switch re.Op {
	case syntax.OpLiteral:
		return max(1, len(re.Rune))
	case syntax.OpCapture:
		return sat(programEstimate(re.Sub[0]) + 2)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return sat(programEstimate(re.Sub[0]) + 2)
	case syntax.OpRepeat:
		// Simplify makes x{n,m} n copies of x and m-n nested (x...)?, and
		// x{n,} n-1 copies and x+; x{0} an empty match.
		sub := programEstimate(re.Sub[0])
		n := re.Max
		if n == -1 {
			n = re.Min + 1
		}
		return sat((sub+1)*max(n, 1) + 1)
	case syntax.OpConcat, syntax.OpAlternate:
		n := len(re.Sub)
		for _, sub := range re.Sub {
			n = sat(n + programEstimate(sub))
		}
		return n
	}
	return 1
}

// DefaultBudget is the default of [Options.Budget].
const DefaultBudget = 2 * time.Second

// ErrBudgetExceeded is matched (errors.Is) by the error of [Set.Evaluate]
// when the evaluation did not finish within its time budget
// ([Options.Budget]), or when an instruction's pattern is over the limits of
// [CheckPattern] (one stored before they applied) and so is not run at all,
// or when it found more than [Options.MaxMatches] matches. Each is a property of the request and the instructions, not an outage:
// evaluating again gives the same answer, so the review-task API sends such a
// task to a person instead of retrying it.
var ErrBudgetExceeded = errors.New("policy: evaluation exceeded its time budget")

// BudgetError is the error of [Set.Evaluate] that matches
// [ErrBudgetExceeded].
type BudgetError struct {
	// Budget is the budget that ran out (0 when Pattern or Matches is set).
	Budget time.Duration
	// Matches, when set, is the bound on the matches of one evaluation
	// ([Options.MaxMatches]) that the request went over: it was stopped there.
	Matches int
	// InstructionID and Title name the Regex instruction that was running
	// when the budget ran out, or whose pattern is over the limits; empty
	// when the budget ran out elsewhere (the literal scan, the semantic
	// matcher).
	InstructionID, Title string
	// Pattern, when set, is why the instruction's pattern is over the
	// limits (a [*PatternError]): the instruction was not run.
	Pattern error
}

// Error says what ran out and where.
func (e *BudgetError) Error() string {
	var b strings.Builder
	if e.Pattern != nil {
		fmt.Fprintf(&b, "policy: instruction %s (%q) was not evaluated: its pattern %v", e.InstructionID, e.Title, e.Pattern)
		return b.String()
	}
	if e.Matches > 0 {
		fmt.Fprintf(&b, "policy: evaluation stopped after more than %d matches", e.Matches)
	} else {
		fmt.Fprintf(&b, "policy: evaluation exceeded its time budget of %s", e.Budget)
	}
	if e.InstructionID != "" {
		fmt.Fprintf(&b, " while matching the pattern of instruction %s (%q)", e.InstructionID, e.Title)
	}
	return b.String()
}

// Is reports whether target is ErrBudgetExceeded.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExceeded }
