// Package fold is the case folding policy matches with: per rune, to the
// smallest rune of its [unicode.SimpleFold] orbit, the equivalence Go's
// regexp uses for (?i). Package policy, its automaton and its regex
// prefilter fold alike through it.
package fold

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// asciiFold maps each ASCII byte to its folded form.
var asciiFold = func() (t [utf8.RuneSelf]byte) {
	for i := range t {
		t[i] = byte(slow(rune(i)))
	}
	return t
}()

// ASCII returns the folded form of ASCII byte c (below utf8.RuneSelf).
func ASCII(c byte) byte { return asciiFold[c] }

// Rune returns the canonical case-folded form of r: the smallest rune of
// its [unicode.SimpleFold] orbit. Two runes are equal ignoring case exactly
// when their Rune are equal, which is the equivalence Go's regexp uses for
// (?i). The fold is per rune (simple folding, no expansion such as ß to ss),
// so a folded text has as many runes as the original and positions map 1:1
// in runes. ASCII letters fold to upper case; the Kelvin sign K folds to K,
// the long s ſ to S.
func Rune(r rune) rune {
	switch {
	case r >= 0 && r < utf8.RuneSelf:
		return rune(asciiFold[r])
	case r >= 0 && r < tableSize:
		return rune(table()[r])
	}
	return slow(r)
}

// tableSize covers the two-byte runes (Latin, Greek, Cyrillic, Hebrew,
// Arabic, ...), where walking the SimpleFold orbit would cost more than a
// lookup.
const tableSize = 0x800

var table = sync.OnceValue(func() *[tableSize]uint16 {
	var t [tableSize]uint16
	for r := range t {
		t[r] = uint16(slow(rune(r)))
	}
	return &t
})

func slow(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < m {
			m = f
		}
	}
	return m
}

// String returns s with every rune folded by [Rune] (when fold is true) and
// every invalid byte replaced by U+FFFD, the runes a matcher sees.
func String(s string, fold bool) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if fold {
			r = Rune(r)
		}
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}

// Runes returns the runes rs folded by [Rune], as a string.
func Runes(rs []rune) string {
	b := make([]byte, 0, len(rs))
	for _, r := range rs {
		b = utf8.AppendRune(b, Rune(r))
	}
	return string(b)
}
