package policy_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/policy/semeval"
)

func TestLexicalSimilarity(t *testing.T) {
	t.Parallel()
	m := policy.LexicalMatcher{}
	tests := []struct {
		name     string
		a, b     string
		min, max float64
	}{
		{"same text", "Employee salaries are confidential.", "Employee salaries are confidential.", 0.999, 1.001},
		{"case, accents and punctuation", "Übernahme der FIRMA!", "ubernahme der firma", 0.999, 1.001},
		{"inflections", "the salaries of the employees", "an employee's salary", 0.85, 1},
		{"stop words only", "the and of to", "und oder le la", 0, 0},
		{"synonyms", "a secret takeover", "a confidential acquisition", 0.69, 1},
		{"across languages", "the salary of an employee", "le salaire d'un employé", 0.69, 1},
		{"unrelated", "Write a haiku about autumn.", "employee salaries", 0, 0.1},
		{"one shared word", "the customer wants a refund", "customer addresses and phone numbers", 0, 0.4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := m.Similarity(tt.a, tt.b)
			require.GreaterOrEqual(t, got, tt.min)
			require.LessOrEqual(t, got, tt.max)
			require.InDelta(t, got, m.Similarity(tt.b, tt.a), 1e-12, "symmetric")
		})
	}
}

func TestLexicalMatch(t *testing.T) {
	t.Parallel()
	segs := []string{"Tell me every employee's salary.", "What is the weather?", "Wie hoch ist das Gehalt der Mitarbeiter?"}
	queries := []string{"employee salaries", "weather forecast"}
	scores, err := policy.LexicalMatcher{}.Scores(context.Background(), segs, queries)
	require.NoError(t, err)
	require.Len(t, scores, 2)
	for i := range scores {
		require.Len(t, scores[i], 3)
	}
	for _, th := range []float64{0.2, 0.5, 0.9} {
		m := policy.LexicalMatcher{Threshold: th}
		require.Equal(t, th, m.MatchThreshold())
		out, err := m.Match(context.Background(), segs, queries)
		require.NoError(t, err)
		for i := range queries {
			var want []int
			for j := range segs {
				if scores[i][j] >= th {
					want = append(want, j)
				}
			}
			require.Equal(t, want, out[i], "threshold %v query %d", th, i)
		}
	}
	out, err := policy.LexicalMatcher{}.Match(context.Background(), segs, queries)
	require.NoError(t, err)
	require.Equal(t, [][]int{{0, 2}, {1}}, out)
	require.Equal(t, policy.DefaultLexicalThreshold, policy.LexicalMatcher{}.MatchThreshold())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = policy.LexicalMatcher{}.Match(ctx, segs, queries)
	require.ErrorIs(t, err, context.Canceled)
}

func TestSegments(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"First.", "Second?", "Third"}, policy.Segments("  First. Second?\nThird "))
	require.Empty(t, policy.Segments(" ... "))
}

// hundredths returns the thresholds 0.05, 0.06, ... 0.95, among which the
// operating points of LexicalMatcher were chosen.
func hundredths() []float64 {
	var out []float64
	for i := 5; i <= 95; i++ {
		out = append(out, float64(i)/100)
	}
	return out
}

// TestLexicalOperatingPoints measures LexicalMatcher on the kit's
// evaluation set: its default threshold is the one of highest recall whose
// false-positive rate on the tuning half is at most 0.10, and it keeps that
// bound on the held-out half; its recall threshold is the one of best F1 on
// the tuning half. The figures are those of the constants' doc comments and
// docs/policy.md.
func TestLexicalOperatingPoints(t *testing.T) {
	t.Parallel()
	pairs, err := semeval.Default()
	require.NoError(t, err)
	scores, err := semeval.Scores(context.Background(), policy.LexicalMatcher{}, pairs)
	require.NoError(t, err)

	op, ok := semeval.ChooseOperatingPoint(pairs, scores, hundredths(), semeval.DefaultMaxFPR)
	require.True(t, ok)
	require.InDelta(t, op.Tune.Threshold, policy.DefaultLexicalThreshold, 1e-9, "the default is the threshold chosen under the bound")
	require.LessOrEqual(t, op.Tune.FPR, semeval.DefaultMaxFPR)
	require.LessOrEqual(t, op.Holdout.FPR, semeval.DefaultMaxFPR, "held-out false-positive rate at the default")
	require.InDelta(t, 0.80, op.Holdout.Precision, 0.005)
	require.InDelta(t, 0.40, op.Holdout.Recall, 0.005)
	require.InDelta(t, 0.09, op.Holdout.FPR, 0.005)
	require.InDelta(t, 0.31, op.Holdout.J, 0.005)
	require.InDelta(t, 0.53, op.Holdout.F1, 0.005)

	tune, tuneScores := semeval.Half(pairs, scores, semeval.SplitTune)
	sweep := semeval.Sweep(tune, tuneScores, hundredths())
	best := sweep[semeval.Best(sweep)]
	m := policy.LexicalMatcher{}
	require.InDelta(t, best.Threshold, m.RecallThreshold(), 1e-9, "the recall threshold is the one of best F1 on the tuning half")
	require.InDelta(t, policy.LexicalRecallThreshold, m.RecallThreshold(), 1e-9)
	require.Less(t, m.RecallThreshold(), m.MatchThreshold())
	hold, holdScores := semeval.Half(pairs, scores, semeval.SplitHoldout)
	high := semeval.Measure(hold, holdScores, m.RecallThreshold())
	require.Greater(t, high.Recall, op.Holdout.Recall, "high sensitivity catches more")
	require.InDelta(t, 0.63, high.Precision, 0.005)
	require.InDelta(t, 0.83, high.Recall, 0.005)
	require.InDelta(t, 0.43, high.FPR, 0.005)
	require.InDelta(t, 0.39, high.J, 0.005)
	require.InDelta(t, 0.72, high.F1, 0.005)

	// A custom threshold below the recall threshold is kept at high
	// sensitivity: high never matches less than standard.
	require.InDelta(t, 0.1, policy.LexicalMatcher{Threshold: 0.1}.RecallThreshold(), 1e-9)
	require.InDelta(t, policy.LexicalRecallThreshold, policy.LexicalMatcher{Threshold: 0.9}.RecallThreshold(), 1e-9)
}
