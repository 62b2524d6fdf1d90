package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

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
	set.folded.Scan(text, make([]int32, set.ringLen), func(id int32, start, end int) {
		occ = append(occ, [2]int32{int32(start), int32(end)})
	})
	windows := ri.filter.Windows(text, occ, nil)
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
