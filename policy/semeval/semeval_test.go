package semeval_test

import (
	"context"
	"errors"
	"fmt"
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
		{0.5, semeval.Metrics{Threshold: 0.5, TP: 2, FP: 1, FN: 1, TN: 1, Precision: 2.0 / 3, Recall: 2.0 / 3, F1: 2.0 / 3,
			FPR: 0.5, J: 2.0/3 - 0.5}},
		// 0.6: predicted 0 only.
		{0.6, semeval.Metrics{Threshold: 0.6, TP: 1, FP: 0, FN: 2, TN: 2, Precision: 1, Recall: 1.0 / 3, F1: 0.5, J: 1.0 / 3}},
		// 0.95: nothing predicted: precision 0 by convention.
		{0.95, semeval.Metrics{Threshold: 0.95, TP: 0, FP: 0, FN: 3, TN: 2}},
		// 0.0: everything predicted: recall 1, FPR 1, J 0.
		{0, semeval.Metrics{Threshold: 0, TP: 3, FP: 2, FN: 0, TN: 0, Precision: 0.6, Recall: 1, F1: 0.75, FPR: 1, J: 0}},
	}
	for _, tt := range tests {
		got := semeval.Measure(pairs, scores, tt.threshold)
		require.InDelta(t, tt.want.Precision, got.Precision, 1e-12)
		require.InDelta(t, tt.want.Recall, got.Recall, 1e-12)
		require.InDelta(t, tt.want.F1, got.F1, 1e-12)
		require.InDelta(t, tt.want.FPR, got.FPR, 1e-12)
		require.InDelta(t, tt.want.J, got.J, 1e-12)
		got.Precision, got.Recall, got.F1, got.FPR, got.J = tt.want.Precision, tt.want.Recall, tt.want.F1, tt.want.FPR, tt.want.J
		require.Equal(t, tt.want, got)
	}
	ms := semeval.Sweep(pairs, scores, []float64{0.95, 0.5, 0.6, 0.4})
	require.Len(t, ms, 4)
	require.Equal(t, 3, semeval.Best(ms), "0.4 and 0.5 tie on F1; the lower threshold wins")
	require.Equal(t, -1, semeval.Best(nil))
}

func TestMeasureKinds(t *testing.T) {
	t.Parallel()
	pairs := []semeval.Pair{
		{Kind: "exact", Match: true}, {Kind: "exact", Match: true},
		{Kind: "negation", Match: true}, {Kind: "negation", Match: false},
		{Kind: "near-miss", Match: false}, {Kind: "near-miss", Match: false}, {Kind: "near-miss", Match: false},
	}
	scores := []float64{0.9, 0.1, 0.6, 0.7, 0.8, 0.2, 0.1}
	got := semeval.MeasureKinds(pairs, scores, 0.5)
	require.Len(t, got, 3, "kinds without pairs are left out")
	require.Equal(t, []string{"exact", "negation", "near-miss"}, []string{got[0].Kind, got[1].Kind, got[2].Kind})
	// exact: 1 of 2 matches caught, no negative: FPR 0, J = recall.
	require.Equal(t, [4]int{1, 0, 1, 0}, [4]int{got[0].TP, got[0].FP, got[0].FN, got[0].TN})
	require.InDelta(t, 0.5, got[0].Recall, 1e-12)
	require.InDelta(t, 0.5, got[0].J, 1e-12)
	// negation: the match and the non-match both flagged: J 0.
	require.Equal(t, [4]int{1, 1, 0, 0}, [4]int{got[1].TP, got[1].FP, got[1].FN, got[1].TN})
	require.InDelta(t, 0, got[1].J, 1e-12)
	// near-miss: 1 of 3 negatives flagged.
	require.Equal(t, [4]int{0, 1, 0, 2}, [4]int{got[2].TP, got[2].FP, got[2].FN, got[2].TN})
	require.InDelta(t, 1.0/3, got[2].FPR, 1e-12)
	require.InDelta(t, -1.0/3, got[2].J, 1e-12)
}

func TestWithinFPRAndBestRecall(t *testing.T) {
	t.Parallel()
	ms := []semeval.Metrics{
		{Threshold: 0.2, Recall: 0.9, FPR: 0.5},
		{Threshold: 0.3, Recall: 0.7, FPR: 0.1},
		{Threshold: 0.4, Recall: 0.7, FPR: 0.05},
		{Threshold: 0.5, Recall: 0.4, FPR: 0},
	}
	require.Equal(t, 2, semeval.WithinFPR(ms, 0.1), "highest recall within the bound, then the lowest FPR")
	require.Equal(t, 2, semeval.WithinFPR(ms, 0.05))
	require.Equal(t, 3, semeval.WithinFPR(ms, 0.01))
	require.Equal(t, 0, semeval.WithinFPR(ms, 1))
	require.Equal(t, -1, semeval.WithinFPR(ms[:2], 0.01), "none within the bound")
	require.Equal(t, -1, semeval.WithinFPR(nil, 0.1))
	tie := []semeval.Metrics{{Threshold: 0.6, Recall: 0.5}, {Threshold: 0.5, Recall: 0.5}}
	require.Equal(t, 1, semeval.WithinFPR(tie, 0.1), "the lower threshold among equals")

	require.Equal(t, 2, semeval.BestRecall(ms, 0.7), "the highest threshold keeping the recall")
	require.Equal(t, 0, semeval.BestRecall(ms, 0.8))
	require.Equal(t, -1, semeval.BestRecall(ms, 0.95))
}

func TestChooseOperatingPoint(t *testing.T) {
	t.Parallel()
	// Pairs in both halves, scored so that the held-out half is known: a
	// match scores 0.2 + 0.1*(i%7), a non-match 0.1*(i%5).
	var pairs []semeval.Pair
	var scores []float64
	for i := range 200 {
		p := semeval.Pair{Instruction: "q", Message: fmt.Sprintf("message %d", i), Match: i%2 == 0, Kind: "exact", Lang: "en"}
		if !p.Match {
			p.Kind = "unrelated"
		}
		pairs = append(pairs, p)
		if p.Match {
			scores = append(scores, 0.2+0.1*float64(i%7))
		} else {
			scores = append(scores, 0.1*float64(i%5))
		}
	}
	thresholds := []float64{0.1, 0.2, 0.3, 0.4, 0.5}
	op, ok := semeval.ChooseOperatingPoint(pairs, scores, thresholds, 0.25)
	require.True(t, ok)
	require.Equal(t, 0.25, op.MaxFPR)
	tune, tuneScores := semeval.Half(pairs, scores, semeval.SplitTune)
	hold, holdScores := semeval.Half(pairs, scores, semeval.SplitHoldout)
	require.Len(t, tune, len(tuneScores))
	require.Equal(t, len(pairs), len(tune)+len(hold))
	for _, p := range tune {
		require.Equal(t, semeval.SplitTune, p.Split())
	}
	sweep := semeval.Sweep(tune, tuneScores, thresholds)
	want := sweep[semeval.WithinFPR(sweep, 0.25)]
	require.Equal(t, want, op.Tune)
	require.LessOrEqual(t, op.Tune.FPR, 0.25)
	for _, m := range sweep {
		if m.Threshold < op.Tune.Threshold {
			require.Greater(t, m.FPR, 0.25, "a lower threshold breaks the bound")
		}
	}
	require.Equal(t, semeval.Measure(hold, holdScores, op.Tune.Threshold), op.Holdout)
	require.Equal(t, semeval.MeasureKinds(hold, holdScores, op.Tune.Threshold), op.HoldoutKinds)
	require.Len(t, op.HoldoutKinds, 2)

	_, ok = semeval.ChooseOperatingPoint(pairs, scores, []float64{0.1}, 0.01)
	require.False(t, ok, "no threshold within the bound")
	all, allScores := semeval.Half(pairs, scores, "all")
	require.Equal(t, pairs, all)
	require.Equal(t, scores, allScores)
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
