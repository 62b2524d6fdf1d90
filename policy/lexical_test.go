package policy_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/policy"
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
