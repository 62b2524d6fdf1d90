package policy

import (
	"io"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/aiusage/kit/policy/internal/prefilter"
)

// A Regex instruction runs on Go's regexp (RE2: linear in the text, no
// backtracking), after its prefilter (package policy/internal/prefilter):
// a message in which none of the pattern's required literals occurs is not
// searched, and a bounded pattern runs on the windows around them only.

// regexInstr is a compiled Regex instruction.
type regexInstr struct {
	inst int // index of the instruction in the set
	re   *regexp.Regexp
	// size estimates the compiled program's instructions: a search costs
	// up to that much per byte of text.
	size int
	// resume finds the first match of re after the first rune its reader
	// gives (the context of the search); compiled when first needed.
	resume func() *regexp.Regexp
	// filter's literals are registered in the set's folded automaton:
	// with no occurrence, there is no match.
	filter prefilter.Filter
}

// compileRegex compiles pattern as a Regex trigger and analyses it.
func compileRegex(pattern string, caseSensitive bool) (*regexInstr, error) {
	if !caseSensitive {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	ri := &regexInstr{re: re, size: MaxPatternProgram}
	tree, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ri, nil // cannot happen after regexp.Compile; run without prefilter
	}
	ri.size = programEstimate(tree)
	// \A, then one rune of any kind (the context), then the shortest run
	// of runes before the earliest match of the pattern, captured: the
	// construction of an unanchored search, so the match is the one
	// FindStringIndex would give from the second rune on.
	ri.resume = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\A(?s:.)(?s:.)*?(` + tree.String() + `)`)
	})
	ri.filter = prefilter.Of(tree)
	return ri, nil
}

// findAll returns the non-empty matches of the regexp in s as byte spans,
// exactly as FindAllStringIndex(s, -1) without its empty matches. occ holds
// the byte spans of the required literals found in s when the instruction has
// a prefilter (possibly none: then there is no match).
//
// stop, when not nil, is asked now and then whether to stop: between
// windows, and every stopCheckRunes runes of a search that could cost more
// than fastSearchCost. findAll then returns true, having emitted only some of
// the matches.
func (ri *regexInstr) findAll(s string, occ [][2]int32, windows [][2]int, stop func() bool, emit func(start, end int)) ([][2]int, bool) {
	if ri.filter.Literals != nil && len(occ) == 0 {
		return windows, false
	}
	if !ri.filter.Windowed {
		return windows, ri.run(s, 0, len(s), stop, emit)
	}
	windows = ri.filter.Windows(s, occ, windows[:0])
	covered := 0
	for _, w := range windows {
		covered += w[1] - w[0]
	}
	if covered > len(s)/2 {
		return windows, ri.run(s, 0, len(s), stop, emit)
	}
	for _, w := range windows {
		if stop != nil && stop() || ri.run(s, w[0], w[1], stop, emit) {
			return windows, true
		}
	}
	return windows, false
}

// Interruptible searches.
const (
	// fastSearchCost is the most text bytes times program size searched
	// in one uninterrupted call: about 50 ms at worst.
	fastSearchCost = 1 << 22
	// stopCheckRunes is how many runes an interruptible search reads
	// between two calls of its stop function.
	stopCheckRunes = 256
)

// run emits the non-empty matches in s[from:to], as FindAllStringIndex
// would find them in s[from:to]. A search that could cost more than
// fastSearchCost reads the text through a stopReader, so that it stops
// soon after stop says so; run then returns true.
func (ri *regexInstr) run(s string, from, to int, stop func() bool, emit func(start, end int)) bool {
	if stop == nil || (to-from)*ri.size <= fastSearchCost {
		for _, m := range ri.re.FindAllStringIndex(s[from:to], -1) {
			if m[1] > m[0] {
				emit(from+m[0], from+m[1])
			}
		}
		return false
	}
	return ri.findAllStop(s[from:to], stop, func(start, end int) { emit(from+start, from+end) })
}

// findAllStop emits the non-empty matches of FindAllStringIndex(s, -1),
// searching through a stopReader; it returns true, having emitted only some
// of them, when stop said to stop. It follows FindAllStringIndex step by
// step: the first match at or after pos, where an empty match right after
// the previous match is skipped and moves pos one rune on. A search from pos
// > 0 sees the rune before pos as its context (for \b, ^ in (?m) ...): the
// reader gives that rune first and the resume expression skips it.
//
// When every match starts with a literal prefix, each search starts at the
// prefix's next occurrence (found by strings.Index, as regexp does for a
// string): no match starts before it.
func (ri *regexInstr) findAllStop(s string, stop func() bool, emit func(start, end int)) bool {
	rd := &stopReader{stop: stop}
	prefix, _ := ri.re.LiteralPrefix()
	prevEnd := -1
	for pos := 0; pos <= len(s); {
		if prefix != "" {
			i := strings.Index(s[pos:], prefix)
			if i < 0 {
				return false
			}
			pos += i
		}
		var start, end int
		if pos == 0 {
			rd.reset(s, 0, 0, 0)
			m := ri.re.FindReaderIndex(rd)
			if rd.stopped {
				return true
			}
			if m == nil {
				return false
			}
			start, end = m[0], m[1]
		} else {
			r, w := utf8.DecodeLastRuneInString(s[:pos])
			base := pos - w
			rd.reset(s, pos, r, w)
			m := ri.resume().FindReaderSubmatchIndex(rd)
			if rd.stopped {
				return true
			}
			if m == nil {
				return false
			}
			start, end = base+m[2], base+m[3]
		}
		accept := true
		if end == pos {
			if start == prevEnd {
				accept = false
			}
			if pos < len(s) {
				_, w := utf8.DecodeRuneInString(s[pos:])
				pos += w
			} else {
				pos++
			}
		} else {
			pos = end
		}
		prevEnd = end
		if accept && end > start {
			emit(start, end)
		}
	}
	return false
}

// stopReader reads s from pos as regexp reads a string (an invalid byte is
// U+FFFD of width 1), after a first rune given to it, and ends early (io.EOF)
// when stop says so.
type stopReader struct {
	s       string
	pos     int
	first   rune
	firstW  int // width of first; 0: none pending
	left    int // runes until stop is asked again
	stop    func() bool
	stopped bool
}

func (r *stopReader) reset(s string, pos int, first rune, firstW int) {
	r.s, r.pos, r.first, r.firstW, r.left, r.stopped = s, pos, first, firstW, stopCheckRunes, false
}

// ReadRune implements io.RuneReader.
func (r *stopReader) ReadRune() (rune, int, error) {
	if r.firstW > 0 {
		w := r.firstW
		r.firstW = 0
		return r.first, w, nil
	}
	if r.stopped || r.pos >= len(r.s) {
		return 0, 0, io.EOF
	}
	if r.left--; r.left <= 0 {
		r.left = stopCheckRunes
		if r.stop() {
			r.stopped = true
			return 0, 0, io.EOF
		}
	}
	if c := r.s[r.pos]; c < utf8.RuneSelf {
		r.pos++
		return rune(c), 1, nil
	}
	c, w := utf8.DecodeRuneInString(r.s[r.pos:])
	r.pos += w
	return c, w, nil
}
