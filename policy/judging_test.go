package policy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/spec"
)

// fakeJudging is a JudgingMatcher answering from a function; it records the
// sensitivities it was given.
type fakeJudging struct {
	fn          func(segments, queries []string) [][]policy.Judgement
	err         error
	sensitivity []string
}

func (f *fakeJudging) Match(context.Context, []string, []string) ([][]int, error) {
	panic("Evaluate must ask a JudgingMatcher for judgements")
}

func (f *fakeJudging) Judge(_ context.Context, segments, queries []string, sensitivity []string) ([][]policy.Judgement, error) {
	f.sensitivity = sensitivity
	if f.err != nil {
		return nil, f.err
	}
	return f.fn(segments, queries), nil
}

func semHigh(text string) spec.Trigger {
	t := spec.SemanticTrigger(text)
	t.Sensitivity = spec.SensitivityHigh
	return t
}

func TestJudgingMatcher(t *testing.T) {
	t.Parallel()
	ins := []spec.Instruction{
		block("deal", spec.SemanticTrigger("an acquisition that is not public yet")),
		high(block("pay", semHigh("the salary of an employee"))),
	}
	msg := "Hello there. We will buy Contoso next month, keep it quiet! Anna earns 90k."
	f := &fakeJudging{fn: func(segments, queries []string) [][]policy.Judgement {
		require.Equal(t, []string{"Hello there.", "We will buy Contoso next month, keep it quiet!", "Anna earns 90k."}, segments)
		require.Len(t, queries, 2)
		return [][]policy.Judgement{
			{{Segment: 1, Score: 0.4, Quote: "buy Contoso", Verdict: policy.VerdictJudge}},
			{{Segment: 2, Score: 1.7, Verdict: policy.VerdictUnexamined}, {Segment: 0, Score: 0.1, Verdict: policy.VerdictInjection}},
		}
	}}
	res := evaluate(t, ins, policy.Options{Semantic: f}, msg)
	require.Equal(t, []string{"", spec.SensitivityHigh}, f.sensitivity)
	require.Equal(t, policy.OutcomeRequiresIntervention, res.Outcome)
	got := matches(res)
	require.Equal(t, []spec.MatchSpan{{MessageIndex: 0, Start: 13, End: 59, Text: "We will buy Contoso next month, keep it quiet!",
		Similarity: 0.4, Quote: "buy Contoso", Verdict: spec.VerdictJudge}}, got["deal"])
	// Sorted by span; a score over 1 is clamped to 1.
	require.Equal(t, []spec.MatchSpan{
		{MessageIndex: 0, Start: 0, End: 12, Text: "Hello there.", Similarity: 0.1, Verdict: spec.VerdictInjection},
		{MessageIndex: 0, Start: 60, End: 75, Text: "Anna earns 90k.", Similarity: 1, Verdict: spec.VerdictUnexamined},
	}, got["pay"])

	t.Run("no judgement approves", func(t *testing.T) {
		t.Parallel()
		f := &fakeJudging{fn: func(_, queries []string) [][]policy.Judgement { return make([][]policy.Judgement, len(queries)) }}
		require.Equal(t, policy.OutcomeApproved, evaluate(t, ins, policy.Options{Semantic: f}, msg).Outcome)
	})
	t.Run("an error fails the evaluation", func(t *testing.T) {
		t.Parallel()
		down := errors.New("judge down")
		set, err := policy.Compile(ins, policy.Options{Semantic: &fakeJudging{err: down}})
		require.NoError(t, err)
		_, err = set.Evaluate(context.Background(), []string{msg})
		require.ErrorIs(t, err, down)
	})
	t.Run("bad answers are errors", func(t *testing.T) {
		t.Parallel()
		for name, out := range map[string][][]policy.Judgement{
			"rows":         {{}},
			"range":        {{{Segment: 3, Verdict: policy.VerdictUnexamined}}, {}},
			"negative":     {{{Segment: -1, Verdict: policy.VerdictUnexamined}}, {}},
			"repeated":     {{{Segment: 1, Verdict: policy.VerdictUnexamined}, {Segment: 1, Verdict: policy.VerdictNoAnswer}}, {}},
			"verdict":      {{{Segment: 1, Verdict: "maybe"}}, {}},
			"no verdict":   {{{Segment: 1}}, {}},
			"quote absent": {{{Segment: 1, Quote: "sell Contoso", Verdict: policy.VerdictJudge}}, {}},
		} {
			set, err := policy.Compile(ins, policy.Options{Semantic: &fakeJudging{fn: func(_, _ []string) [][]policy.Judgement { return out }}})
			require.NoError(t, err)
			_, err = set.Evaluate(context.Background(), []string{msg})
			require.ErrorContains(t, err, "judging matcher", name)
		}
	})
}

// sensitiveScorer is a fakeScorer with a recall threshold.
type sensitiveScorer struct {
	fakeScorer
	recall float64
}

func (s *sensitiveScorer) RecallThreshold() float64 { return s.recall }

func TestSensitivity(t *testing.T) {
	t.Parallel()
	msg := "One. Two. Three."
	scores := [][]float64{{0.9, 0.5, 0.2}, {0.9, 0.5, 0.2}}
	ins := []spec.Instruction{
		block("standard", spec.SemanticTrigger("q")),
		block("high", semHigh("q")),
	}
	t.Run("a SensitiveScorer's recall threshold for high", func(t *testing.T) {
		t.Parallel()
		m := &sensitiveScorer{fakeScorer: fakeScorer{scores: scores, threshold: 0.6}, recall: 0.4}
		got := matches(evaluate(t, ins, policy.Options{Semantic: m}, msg))
		require.Equal(t, []spec.MatchSpan{semSp(0, 0, 4, "One.", 0.9)}, got["standard"])
		require.Equal(t, []spec.MatchSpan{semSp(0, 0, 4, "One.", 0.9), semSp(0, 5, 9, "Two.", 0.5)}, got["high"])
	})
	t.Run("another scorer's threshold for both", func(t *testing.T) {
		t.Parallel()
		m := &fakeScorer{scores: scores, threshold: 0.6}
		got := matches(evaluate(t, ins, policy.Options{Semantic: m}, msg))
		require.Equal(t, []spec.MatchSpan{semSp(0, 0, 4, "One.", 0.9)}, got["standard"])
		require.Equal(t, []spec.MatchSpan{semSp(0, 0, 4, "One.", 0.9)}, got["high"])
	})
	t.Run("sensitivity on another trigger type is ignored", func(t *testing.T) {
		t.Parallel()
		tr := rx("One")
		tr.Sensitivity = spec.SensitivityHigh
		require.False(t, tr.HighSensitivity())
	})
}
