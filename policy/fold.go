package policy

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// asciiFold maps each ASCII byte to its case-folded form (see [foldRune]).
var asciiFold = func() (t [utf8.RuneSelf]byte) {
	for i := range t {
		t[i] = byte(foldSlow(rune(i)))
	}
	return t
}()

// foldRune returns the canonical case-folded form of r: the smallest rune of
// its [unicode.SimpleFold] orbit. Two runes are equal ignoring case exactly
// when their foldRune are equal, which is the equivalence Go's regexp uses for
// (?i). The fold is per rune (simple folding, no expansion such as ß to ss), so
// a folded text has as many runes as the original and positions map 1:1 in
// runes. ASCII letters fold to upper case; the Kelvin sign K folds to K, the
// long s ſ to S.
func foldRune(r rune) rune {
	switch {
	case r >= 0 && r < utf8.RuneSelf:
		return rune(asciiFold[r])
	case r >= 0 && r < foldTableSize:
		return rune(foldTable()[r])
	}
	return foldSlow(r)
}

// foldTableSize covers the two-byte runes (Latin, Greek, Cyrillic, Hebrew,
// Arabic, ...), where walking the SimpleFold orbit would cost more than a
// lookup.
const foldTableSize = 0x800

var foldTable = sync.OnceValue(func() *[foldTableSize]uint16 {
	var t [foldTableSize]uint16
	for r := range t {
		t[r] = uint16(foldSlow(rune(r)))
	}
	return &t
})

func foldSlow(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < m {
			m = f
		}
	}
	return m
}

// asciiWord reports the ASCII bytes that are word characters for StringMatch
// boundaries: letters, digits and underscore.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for i := range t {
		c := byte(i)
		t[i] = c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	return t
}()

// isWordRune reports whether r continues a word for StringMatch boundaries: a
// letter, a decimal digit, an underscore, or a combining mark (a mark belongs
// to the letter it follows, so "é" written as e + U+0301 is one word
// character followed by another).
func isWordRune(r rune) bool {
	if r >= 0 && r < utf8.RuneSelf {
		return asciiWord[r]
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// wordBefore reports whether the rune ending at byte offset i of s is a word
// rune; false at the start of s.
func wordBefore(s string, i int) bool {
	if i <= 0 {
		return false
	}
	if c := s[i-1]; c < utf8.RuneSelf {
		return asciiWord[c]
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return isWordRune(r)
}

// wordAt reports whether the rune starting at byte offset i of s is a word
// rune; false at the end of s.
func wordAt(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	if c := s[i]; c < utf8.RuneSelf {
		return asciiWord[c]
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return isWordRune(r)
}

// foldString returns s with every rune folded by [foldRune] (when fold is
// true) and every invalid byte replaced by U+FFFD, the runes a matcher sees.
func foldString(s string, fold bool) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if fold {
			r = foldRune(r)
		}
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}
