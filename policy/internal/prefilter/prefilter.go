// Package prefilter analyses a regular expression once for what lets
// package policy skip most of a message: a small set of literals every match
// contains (found, case-folded, in the same automaton pass as the
// StringMatch terms), and, when a match is bounded in length or cannot
// contain some ASCII byte, the windows around their occurrences outside
// which no match lies. Go's regexp scans a few tens of MB/s on a pattern
// without a literal prefix; a message in which no literal occurs is not
// searched at all, and one in which some occur is searched on the windows
// only.
//
// The result is exactly regexp's FindAllStringIndex over the whole text
// (without its empty matches): FuzzWindows checks it, over a seed corpus in
// testdata.
package prefilter

import (
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// Limits of the literal analysis.
const (
	maxLiteralSet   = 256   // strings in one literal set
	maxLiteralRunes = 24    // runes in one literal
	maxClassRunes   = 64    // runes of a character class turned into literals
	maxWindowLen    = 4096  // longer bounded matches are treated as unbounded
	maxLiteralCost  = 0.025 // expected occurrences per byte above which a set is useless
	windowGap       = 32    // windows closer than this are run as one
)

// Filter is what the matches of a regular expression must hold and where
// they can lie.
type Filter struct {
	// Literals, folded by fold.Rune, are strings one of which occurs in
	// every match; nil when no useful set is known (then the whole text is
	// searched).
	Literals []string
	// Windowed is set when the regexp may run on [Filter.Windows] only.
	Windowed bool
	// MaxLen bounds the bytes of a match (0: unbounded) and Allowed tells
	// the bytes a match may contain.
	MaxLen  int
	Allowed [256]bool
}

// Of analyses re, the parsed form (syntax.Perl) of the pattern the regexp
// was compiled from, flags such as (?i) included.
func Of(re *syntax.Regexp) Filter {
	var f Filter
	lits, ok := requiredLiterals(re)
	if !ok {
		return f
	}
	f.Literals = lits
	if hasLineOrTextAnchor(re) {
		return f
	}
	n, bounded := maxMatchLen(re)
	if !bounded || n > maxWindowLen {
		n = 0
	}
	markAllowed(re, &f.Allowed)
	restricted := false
	for c := range utf8.RuneSelf {
		if !f.Allowed[c] {
			restricted = true
			break
		}
	}
	if n > 0 || restricted {
		f.Windowed, f.MaxLen = true, n
	}
	return f
}

// hasLineOrTextAnchor reports whether re uses ^, $, \A or \z, which see the
// ends of the text and so cannot run on a window.
func hasLineOrTextAnchor(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return true
	}
	return slices.ContainsFunc(re.Sub, hasLineOrTextAnchor)
}

// maxMatchLen returns the most bytes a match of re can span, or false when
// unbounded. An invalid byte of the text counts as U+FFFD of width 1.
func maxMatchLen(re *syntax.Regexp) (int, bool) {
	const limit = 1 << 20
	switch re.Op {
	case syntax.OpNoMatch, syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0, true
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			w := runeLen(r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					w = max(w, runeLen(f))
				}
			}
			n += w
		}
		return n, true
	case syntax.OpCharClass:
		w := 0
		for i := 1; i < len(re.Rune); i += 2 {
			w = max(w, runeLen(re.Rune[i]))
		}
		return w, true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax, true
	case syntax.OpCapture, syntax.OpQuest:
		return maxMatchLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return 0, false
	case syntax.OpRepeat:
		if re.Max < 0 {
			return 0, false
		}
		n, ok := maxMatchLen(re.Sub[0])
		if !ok || n*re.Max > limit {
			return 0, false
		}
		return n * re.Max, true
	case syntax.OpConcat:
		total := 0
		for _, sub := range re.Sub {
			n, ok := maxMatchLen(sub)
			if !ok || total+n > limit {
				return 0, false
			}
			total += n
		}
		return total, true
	case syntax.OpAlternate:
		m := 0
		for _, sub := range re.Sub {
			n, ok := maxMatchLen(sub)
			if !ok {
				return 0, false
			}
			m = max(m, n)
		}
		return m, true
	}
	return 0, false
}

// runeLen is the UTF-8 length of r, counting surrogates and invalid runes
// (which match as U+FFFD or not at all) by the length of their range.
func runeLen(r rune) int {
	switch {
	case r < 0x80:
		return 1
	case r < 0x800:
		return 2
	case r < 0x10000:
		return 3
	}
	return 4
}

// markAllowed marks in allowed every byte that can occur in a match of re: the
// ASCII characters it can match, and all bytes from 0x80 when it can match a
// non-ASCII rune (or U+FFFD, an invalid byte).
func markAllowed(re *syntax.Regexp, allowed *[256]bool) {
	markRune := func(r rune) {
		if r >= 0 && r < utf8.RuneSelf {
			allowed[r] = true
			return
		}
		for c := 0x80; c < 256; c++ {
			allowed[c] = true
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			markRune(r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					markRune(f)
				}
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && r < utf8.RuneSelf; r++ {
				allowed[r] = true
			}
			if re.Rune[i+1] >= utf8.RuneSelf {
				markRune(utf8.RuneSelf)
			}
		}
	case syntax.OpAnyChar:
		for c := range allowed {
			allowed[c] = true
		}
	case syntax.OpAnyCharNotNL:
		for c := range allowed {
			if c != '\n' {
				allowed[c] = true
			}
		}
	}
	for _, sub := range re.Sub {
		markAllowed(sub, allowed)
	}
}
