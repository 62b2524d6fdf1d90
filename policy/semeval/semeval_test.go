package semeval_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/policy/semeval"
)

func TestDefault(t *testing.T) {
	t.Parallel()
	pairs, err := semeval.Default()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(pairs), 300)
	instructions, kinds, langs := map[string]bool{}, map[string]int{}, map[string]int{}
	seen := map[[2]string]bool{}
	matches, tune := 0, 0
	for _, p := range pairs {
		key := [2]string{p.Instruction, p.Message}
		require.False(t, seen[key], "pair repeated: %q", p.Message)
		seen[key] = true
		instructions[p.Instruction] = true
		kinds[p.Kind]++
		langs[p.Lang]++
		if p.Match {
			matches++
		}
		if p.Split() == semeval.SplitTune {
			tune++
		}
	}
	require.GreaterOrEqual(t, len(instructions), 15)
	require.LessOrEqual(t, len(instructions), 25)
	for _, k := range semeval.Kinds {
		require.Positive(t, kinds[k], k)
	}
	for _, l := range []string{"en", "de", "fr", "es"} {
		require.Positive(t, langs[l], l)
	}
	// Both labels and both halves are well represented.
	require.InDelta(t, len(pairs)/2, matches, float64(len(pairs))/5)
	require.InDelta(t, len(pairs)/2, tune, float64(len(pairs))/5)
	require.Len(t, semeval.Filter(pairs, "all"), len(pairs))
	require.Len(t, semeval.Filter(pairs, semeval.SplitTune), tune)
	require.Len(t, semeval.Filter(pairs, semeval.SplitHoldout), len(pairs)-tune)
}

func TestSplitIsStable(t *testing.T) {
	t.Parallel()
	p := semeval.Pair{Instruction: "employee salaries", Message: "How much does Anna earn?"}
	first := p.Split()
	for range 10 {
		require.Equal(t, first, p.Split())
	}
	p.Match, p.Kind, p.Lang = true, "paraphrase", "en"
	require.Equal(t, first, p.Split(), "the labels do not move a pair")
}

func TestRead(t *testing.T) {
	t.Parallel()
	ok := `{"instruction":"a","message":"b","match":true,"kind":"exact","lang":"en"}`
	pairs, err := semeval.Read(strings.NewReader("\n" + ok + "\n\n" + strings.Replace(ok, "true", "false", 1) + "\n"))
	require.NoError(t, err)
	require.Equal(t, []semeval.Pair{
		{Instruction: "a", Message: "b", Match: true, Kind: "exact", Lang: "en"},
		{Instruction: "a", Message: "b", Match: false, Kind: "exact", Lang: "en"},
	}, pairs)

	tests := []struct {
		name, input, want string
	}{
		{"empty", "", "no pair"},
		{"not JSON", ok + "\nnot json", "line 2"},
		{"unknown field", `{"instruction":"a","message":"b","match":true,"kind":"exact","lang":"en","x":1}`, `unknown field "x"`},
		{"missing match", `{"instruction":"a","message":"b","kind":"exact","lang":"en"}`, `"match" is missing`},
		{"blank instruction", `{"instruction":" ","message":"b","match":true,"kind":"exact","lang":"en"}`, `"instruction"`},
		{"blank message", `{"instruction":"a","message":"","match":true,"kind":"exact","lang":"en"}`, `"message"`},
		{"unknown kind", `{"instruction":"a","message":"b","match":true,"kind":"odd","lang":"en"}`, `"kind" "odd"`},
		{"missing lang", `{"instruction":"a","message":"b","match":true,"kind":"exact"}`, `"lang"`},
		{"two values", ok + ok, "more than one"},
		{"too long", strings.Repeat("x", semeval.MaxLine+1), "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := semeval.Read(strings.NewReader(tt.input))
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// fixedScorer scores a segment by a table of its text; unknown segments
// score 0.
type fixedScorer map[string]float64

func (f fixedScorer) Match(context.Context, []string, []string) ([][]int, error) { return nil, nil }
func (f fixedScorer) MatchThreshold() float64                                    { return 0.5 }
func (f fixedScorer) Scores(_ context.Context, segs, queries []string) ([][]float64, error) {
	out := make([][]float64, len(queries))
	for i := range queries {
		out[i] = make([]float64, len(segs))
		for j, s := range segs {
			out[i][j] = f[s]
		}
	}
	return out, nil
}

func TestScoresAndMetrics(t *testing.T) {
	t.Parallel()
	pairs := []semeval.Pair{
		{Instruction: "q", Message: "Low. High one!", Match: true}, // 0.9 by its second sentence
		{Instruction: "q", Message: "Mid.", Match: true},           // 0.5
		{Instruction: "r", Message: "Mid. Low.", Match: false},     // 0.5
		{Instruction: "r", Message: "Nothing here.", Match: false}, // 0
		{Instruction: "r", Message: "...", Match: true},            // no segment: 0
	}
	s := fixedScorer{"Low.": 0.1, "High one!": 0.9, "Mid.": 0.5}
	scores, err := semeval.Scores(context.Background(), s, pairs)
	require.NoError(t, err)
	require.Equal(t, []float64{0.9, 0.5, 0.5, 0, 0}, scores)

	tests := []struct {
		threshold float64
		want      semeval.Metrics
	}{
		// 0.5: predicted 0, 1, 2; TP 2, FP 1, FN 1 (the message without a
		// segment), TN 1.
		{0.5, semeval.Metrics{Threshold: 0.5, TP: 2, FP: 1, FN: 1, TN: 1, Precision: 2.0 / 3, Recall: 2.0 / 3, F1: 2.0 / 3}},
		// 0.6: predicted 0 only.
		{0.6, semeval.Metrics{Threshold: 0.6, TP: 1, FP: 0, FN: 2, TN: 2, Precision: 1, Recall: 1.0 / 3, F1: 0.5}},
		// 0.95: nothing predicted: precision 0 by convention.
		{0.95, semeval.Metrics{Threshold: 0.95, TP: 0, FP: 0, FN: 3, TN: 2}},
	}
	for _, tt := range tests {
		got := semeval.Measure(pairs, scores, tt.threshold)
		require.InDelta(t, tt.want.Precision, got.Precision, 1e-12)
		require.InDelta(t, tt.want.Recall, got.Recall, 1e-12)
		require.InDelta(t, tt.want.F1, got.F1, 1e-12)
		got.Precision, got.Recall, got.F1 = tt.want.Precision, tt.want.Recall, tt.want.F1
		require.Equal(t, tt.want, got)
	}
	ms := semeval.Sweep(pairs, scores, []float64{0.95, 0.5, 0.6, 0.4})
	require.Len(t, ms, 4)
	require.Equal(t, 3, semeval.Best(ms), "0.4 and 0.5 tie on F1; the lower threshold wins")
	require.Equal(t, -1, semeval.Best(nil))
}

// failingScorer fails.
type failingScorer struct{ fixedScorer }

func (failingScorer) Scores(context.Context, []string, []string) ([][]float64, error) {
	return nil, errors.New("down")
}

func TestScoresError(t *testing.T) {
	t.Parallel()
	_, err := semeval.Scores(context.Background(), failingScorer{}, []semeval.Pair{{Instruction: "q", Message: "Text."}})
	require.ErrorContains(t, err, "down")
}

func FuzzRead(f *testing.F) {
	f.Add(`{"instruction":"a","message":"b","match":true,"kind":"exact","lang":"en"}`)
	f.Add(`{"instruction":"a","message":"b","match":false,"kind":"near-miss","lang":"de"}` + "\n\n")
	f.Add(`{"instruction":"","message":"b","match":true,"kind":"exact","lang":"en"}`)
	f.Add(`{"match":null}`)
	f.Add("[1,2]\n{}")
	f.Fuzz(func(t *testing.T, input string) {
		pairs, err := semeval.Read(strings.NewReader(input))
		if err != nil {
			require.Nil(t, pairs)
			return
		}
		require.NotEmpty(t, pairs)
		for _, p := range pairs {
			require.NotEmpty(t, strings.TrimSpace(p.Instruction))
			require.NotEmpty(t, strings.TrimSpace(p.Message))
			require.Contains(t, semeval.Kinds, p.Kind)
			require.NotEmpty(t, p.Lang)
			require.Contains(t, []string{semeval.SplitTune, semeval.SplitHoldout}, p.Split())
		}
	})
}
