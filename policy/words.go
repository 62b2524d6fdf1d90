package policy

import (
	"unicode"
	"unicode/utf8"
)

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
