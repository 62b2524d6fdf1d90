package ahocorasick

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/policy/internal/fold"
)

// occurrence is a pattern's id and byte span in a text.
type occurrence struct{ id, start, end int }

// plainSearch is the search the automaton shortcuts: every pattern compared
// with the text at every rune, rune by rune, both decoded as a range loop
// does (an invalid byte is U+FFFD) and folded when fold is set.
func plainSearch(patterns []string, text string, folding bool) []occurrence {
	var out []occurrence
	for i := range text {
		for id, p := range patterns {
			want := []rune(fold.String(p, folding))
			j, k := i, 0
			for ; k < len(want) && j < len(text); k++ {
				r, w := utf8.DecodeRuneInString(text[j:])
				if folding {
					r = fold.Rune(r)
				}
				if r != want[k] {
					break
				}
				j += w
			}
			if k == len(want) {
				out = append(out, occurrence{id, i, j})
			}
		}
	}
	return out
}

func sorted(o []occurrence) []occurrence {
	slices.SortFunc(o, func(a, b occurrence) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end), cmp.Compare(a.id, b.id))
	})
	return o
}

// scan builds the automaton of patterns (distinct, non-empty) with a dense
// table of dense entries and returns the occurrences Scan finds in text.
func scan(t testing.TB, patterns []string, text string, folding bool, dense int) []occurrence {
	t.Helper()
	b := NewBuilder(folding)
	for i, p := range patterns {
		require.Equal(t, int32(i), b.Add(p), "pattern %q", p)
	}
	a := b.Build(dense)
	var got []occurrence
	prevEnd := 0
	a.Scan(text, make([]int32, a.RingLen()), func(id int32, start, end int) {
		require.GreaterOrEqual(t, end, prevEnd, "in order of end offset")
		prevEnd = end
		got = append(got, occurrence{int(id), start, end})
	})
	return got
}

// FuzzScan holds the automaton to plainSearch, with dense tables of every
// size from the root's row alone to every state. The patterns are the
// fields of a string split at "|"; the seeds are in testdata/fuzz/FuzzScan.
func FuzzScan(f *testing.F) {
	f.Fuzz(func(t *testing.T, list, text string, folding bool, dense uint16) {
		var patterns []string
		seen := map[string]bool{}
		for _, p := range strings.Split(list, "|") {
			if k := fold.String(p, folding); p != "" && len(p) <= 16 && !seen[k] && len(patterns) < 32 {
				seen[k] = true
				patterns = append(patterns, p)
			}
		}
		if len(patterns) == 0 || len(text) > 4096 {
			return
		}
		want := sorted(plainSearch(patterns, text, folding))
		require.Equal(t, want, sorted(scan(t, patterns, text, folding, int(dense))), "patterns %q, fold %v, dense %d", patterns, folding, dense)
	})
}

func TestAddDeduplicates(t *testing.T) {
	t.Parallel()
	b := NewBuilder(true)
	require.Equal(t, int32(-1), b.Add(""))
	require.Equal(t, int32(0), b.Add("Straße"))
	require.Equal(t, int32(0), b.Add("sTRAẞE"))
	require.Equal(t, int32(1), b.Add("strasse"))
	require.Nil(t, NewBuilder(false).Build(0), "no patterns, no automaton")
}

// BenchmarkScan finds 1,000 terms in 10 KB of text: with the automaton, and
// term by term with strings.Index over the folded text, the search it
// shortcuts.
func BenchmarkScan(b *testing.B) {
	words := strings.Fields("ka lo mi ra tu ne so vi da pe ko zu ha ri fa me no be la xi")
	var terms []string
	for i := range 1000 {
		terms = append(terms, words[i%len(words)]+words[(i/len(words))%len(words)]+words[(i*7)%len(words)])
	}
	var sb strings.Builder
	for sb.Len() < 10_000 {
		sb.WriteString("The quarterly report is due on Friday; ")
		sb.WriteString(strings.ToUpper(terms[sb.Len()%len(terms)]) + " ")
	}
	text := sb.String()
	bld := NewBuilder(true)
	for _, t := range terms {
		bld.Add(t)
	}
	a := bld.Build(0)
	b.Run("automaton", func(b *testing.B) {
		ring := make([]int32, a.RingLen())
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			a.Scan(text, ring, func(int32, int, int) { n++ })
		}
	})
	b.Run("strings-index", func(b *testing.B) {
		folded := make([]string, len(terms))
		for i, t := range terms {
			folded[i] = fold.String(t, true)
		}
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			ft := fold.String(text, true)
			n := 0
			for _, t := range folded {
				for at := 0; ; {
					i := strings.Index(ft[at:], t)
					if i < 0 {
						break
					}
					n++
					at += i + 1
				}
			}
		}
	})
}
