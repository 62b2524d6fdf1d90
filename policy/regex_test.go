package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

func TestRegexPrefilter(t *testing.T) {
	t.Parallel()
	digitPairs := func(suffix string) []string {
		var out []string
		for i := range 100 {
			out = append(out, string(rune('0'+i/10))+string(rune('0'+i%10))+suffix)
		}
		return out
	}
	tests := []struct {
		pattern  string
		lits     []string // nil: no prefilter
		windowed bool
		maxLen   int
	}{
		{`\bCUST-\d{6}\b`, []string{"CUST-"}, true, 11},
		{`(?i)\bproj-[a-z]{3}-\d{4}\b`, []string{"PROJ-"}, true, 19},     // (?i)[a-z] holds the Kelvin sign, 3 bytes
		{`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`, nil, true, 0}, // "@" followed by a class: checked below
		{`\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b`, digitPairs(""), true, 34},
		{`\b\d{3}-\d{2}-\d{4}\b`, digitPairs("-"), true, 11},
		{`\b(?:\d[ -]?){13,16}\b`, strings.Split("0 1 2 3 4 5 6 7 8 9", " "), true, 32},
		{`\b(?:EMP|ACC)-\d{5}\b`, []string{"ACC-", "EMP-"}, true, 9},
		{`(?m)^id-\d+$`, strings.Split("ID-0 ID-1 ID-2 ID-3 ID-4 ID-5 ID-6 ID-7 ID-8 ID-9", " "), false, 0},
		{`secret|password`, []string{"PASSWORD", "SECRET"}, true, 8},
		{`é\pL{0,3}`, []string{"É"}, true, 14},
		{`(a+)+$`, nil, false, 0},
		{`x*`, nil, false, 0},
		{`.*`, nil, false, 0},
		{`\w+`, nil, false, 0},
		{`(?i)e`, nil, false, 0}, // too frequent to help
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			t.Parallel()
			ri, err := compileRegex(tt.pattern, true)
			require.NoError(t, err)
			if strings.Contains(tt.pattern, "@") {
				require.True(t, ri.prefilter)
				for _, l := range ri.lits {
					require.True(t, strings.HasPrefix(l, "@"), l)
				}
			} else {
				require.Equal(t, tt.lits != nil, ri.prefilter)
				require.Equal(t, tt.lits, ri.lits)
			}
			require.Equal(t, tt.windowed, ri.windowed)
			require.Equal(t, tt.maxLen, ri.maxLen)
		})
	}
	t.Run("anchored pattern is prefiltered, not windowed", func(t *testing.T) {
		t.Parallel()
		ri, err := compileRegex(`^\d+ CUST`, true)
		require.NoError(t, err)
		require.True(t, ri.prefilter)
		require.False(t, ri.windowed)
	})
}

// TestRegexWindows checks that a bounded pattern runs on small windows of a
// long message, with the same matches as the whole message.
func TestRegexWindows(t *testing.T) {
	t.Parallel()
	prose := strings.Repeat("The quarterly report is due on Friday, please review it carefully. ", 150)
	text := prose + "Pay DE89370400440532013000 today (order 12345)." + prose + "Or GB29NWBK60161331926819."
	ri, err := compileRegex(`\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b`, true)
	require.NoError(t, err)
	set, err := Compile([]spec.Instruction{{ID: "iban", Action: spec.ActionBlock, Trigger: spec.RegexTrigger(ri.re.String(), true)}}, Options{})
	require.NoError(t, err)
	var occ [][2]int32
	set.folded.scan(text, make([]int32, set.ringLen), func(id int32, start, end int) {
		occ = append(occ, [2]int32{int32(start), int32(end)})
	})
	windows := ri.windows(text, occ, nil)
	covered := 0
	for _, w := range windows {
		covered += w[1] - w[0]
	}
	require.Len(t, windows, 2) // the IBAN and the nearby order number are one window
	require.Less(t, covered, 200, "of %d bytes", len(text))
	res, err := set.Evaluate(context.Background(), []string{text})
	require.NoError(t, err)
	want := ri.re.FindAllStringIndex(text, -1)
	require.Len(t, want, 2)
	require.Equal(t, []spec.MatchSpan{
		{Start: want[0][0], End: want[0][1]}, {Start: want[1][0], End: want[1][1]},
	}, res.Reasons[0].Matches)
}

func TestFoldRune(t *testing.T) {
	t.Parallel()
	for _, group := range []string{"aA", "kK\u212A", "sSſ", "ßẞ", "σςΣ", "Ǆǅǆ", "1", "東", "\ufffd"} {
		rs := []rune(group)
		for _, r := range rs {
			require.Equal(t, foldRune(rs[0]), foldRune(r), "%q", group)
			require.Equal(t, foldRune(r), foldRune(foldRune(r)))
		}
	}
	require.NotEqual(t, foldRune('a'), foldRune('b'))
	require.NotEqual(t, foldRune('ß'), foldRune('s'))
}

// TestAutomatonDenseAndSparse compares automata of many terms with dense
// tables of every size, from the root's row only to all states, with the
// reference StringMatch.
func TestAutomatonDenseAndSparse(t *testing.T) {
	t.Parallel()
	words := strings.Fields("ka lo mi ra tu ne so vi da pe ko zu ha ri fa me no be la xi é ß Ω 東")
	var values []string
	for i := range 300 {
		w := words[i%len(words)] + words[(i*7)%len(words)]
		if i%3 == 0 {
			w += " " + words[(i*13)%len(words)]
		}
		values = append(values, w)
	}
	var b strings.Builder
	for i := range 1500 {
		v := values[(i*37)%len(values)]
		if i%5 == 0 {
			v = strings.ToUpper(v)
		}
		b.WriteString(v)
		switch i % 7 {
		case 0: // glued to the next: no boundary
		case 1:
			b.WriteString(", ")
		default:
			b.WriteByte(' ')
		}
	}
	text := b.String()
	for _, fold := range []bool{false, true} {
		want := refStringMatch(0, text, values, !fold)
		require.NotEmpty(t, want)
		for _, dense := range []int{1, 100, 1000, 10000, 0} {
			set, err := Compile([]spec.Instruction{{ID: "s", Action: spec.ActionBlock,
				Trigger: spec.StringMatchTrigger(values, !fold)}}, Options{denseEntries: dense})
			require.NoError(t, err)
			res, err := set.Evaluate(context.Background(), []string{text})
			require.NoError(t, err)
			require.Equal(t, want, res.Reasons[0].Matches, "fold %v, dense %d", fold, dense)
		}
	}
}
