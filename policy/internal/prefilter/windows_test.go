package prefilter

import (
	"cmp"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/policy/internal/fold"
)

// occurrences returns the byte spans of the literals in text, found rune by
// rune in the folded text, in order of end offset (longest first at one
// end), as package policy's automaton reports them.
func occurrences(literals []string, text string) [][2]int32 {
	var out [][2]int32
	for i := range text {
		for _, l := range literals {
			want := []rune(l)
			j, k := i, 0
			for ; k < len(want) && j < len(text); k++ {
				r, w := utf8.DecodeRuneInString(text[j:])
				if fold.Rune(r) != want[k] {
					break
				}
				j += w
			}
			if k == len(want) {
				out = append(out, [2]int32{int32(i), int32(j)})
			}
		}
	}
	slices.SortFunc(out, func(a, b [2]int32) int { return cmp.Or(cmp.Compare(a[1], b[1]), cmp.Compare(a[0], b[0])) })
	return slices.Compact(out)
}

// nonEmpty returns the non-empty matches of re in s[from:to], as spans of s.
func nonEmpty(re *regexp.Regexp, s string, from, to int) [][2]int {
	var out [][2]int
	for _, m := range re.FindAllStringIndex(s[from:to], -1) {
		if m[1] > m[0] {
			out = append(out, [2]int{from + m[0], from + m[1]})
		}
	}
	return out
}

// FuzzWindows holds a filter to regexp: with no occurrence of its literals
// the text has no non-empty match, and when it is windowed, running the
// regexp on each window finds exactly the non-empty matches of
// FindAllStringIndex over the whole text. The seeds are in
// testdata/fuzz/FuzzWindows.
func FuzzWindows(f *testing.F) {
	f.Fuzz(func(t *testing.T, pattern, text string, foldCase bool) {
		if len(pattern) > 200 || len(text) > 4096 {
			return
		}
		if foldCase {
			pattern = "(?i)" + pattern
		}
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		tree, err := syntax.Parse(pattern, syntax.Perl)
		require.NoError(t, err)
		filter := Of(tree)
		want := nonEmpty(re, text, 0, len(text))
		if filter.Literals == nil {
			return
		}
		occ := occurrences(filter.Literals, text)
		if len(occ) == 0 {
			require.Empty(t, want, "pattern %q: no literal of %q occurs", pattern, filter.Literals)
			return
		}
		if !filter.Windowed {
			return
		}
		var got [][2]int
		for _, w := range filter.Windows(text, occ, nil) {
			got = append(got, nonEmpty(re, text, w[0], w[1])...)
		}
		require.Equal(t, want, got, "pattern %q, literals %q", pattern, filter.Literals)
	})
}

// BenchmarkWindows searches 10 KB of prose holding a few matches for five
// bounded patterns (an IBAN, a social security number, a customer number,
// an e-mail address, a card number): through their filters (the literal
// occurrences found with strings.Index over the folded text, then the
// regexp on the windows) and with regexp over the whole text, the search it
// shortcuts.
func BenchmarkWindows(b *testing.B) {
	patterns := []string{`\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b`, `\b\d{3}-\d{2}-\d{4}\b`, `\bCUST-\d{6}\b`,
		`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`, `\b(?:\d[ -]?){13,16}\b`}
	prose := strings.Repeat("The quarterly report is due on Friday, please review it carefully. ", 75)
	text := prose + "Pay DE89370400440532013000 to jane@example.com (CUST-123456, 078-05-1120)." + prose
	type compiled struct {
		re     *regexp.Regexp
		filter Filter
	}
	var cs []compiled
	for _, p := range patterns {
		tree, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			b.Fatal(err)
		}
		c := compiled{regexp.MustCompile(p), Of(tree)}
		if !c.filter.Windowed {
			b.Fatalf("%s: not windowed", p)
		}
		cs = append(cs, c)
	}
	b.Run("windows", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		var windows [][2]int
		for b.Loop() {
			folded := fold.String(text, true)
			for _, c := range cs {
				var occ [][2]int32
				for _, l := range c.filter.Literals {
					for at := 0; ; {
						i := strings.Index(folded[at:], l)
						if i < 0 {
							break
						}
						occ = append(occ, [2]int32{int32(at + i), int32(at + i + len(l))})
						at += i + 1
					}
				}
				slices.SortFunc(occ, func(a, b [2]int32) int { return cmp.Compare(a[1], b[1]) })
				windows = c.filter.Windows(text, occ, windows[:0])
				for _, w := range windows {
					c.re.FindAllStringIndex(text[w[0]:w[1]], -1)
				}
			}
		}
	})
	b.Run("regexp", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			for _, c := range cs {
				c.re.FindAllStringIndex(text, -1)
			}
		}
	})
}
