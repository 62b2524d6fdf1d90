package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aiusage/kit/spec"
)

// Judgement is one Semantic match of a [JudgingMatcher]: a segment it
// reports for a query, and how that was decided.
type Judgement struct {
	// Segment is the index of the matching segment.
	Segment int
	// Score is the candidate matcher's score of the segment, in (0, 1]; it
	// becomes the match's Similarity.
	Score float64
	// Quote is, with VerdictJudge, the words the judge quoted: found in the
	// segment.
	Quote string
	// Verdict is VerdictJudge, VerdictUnexamined, VerdictNoAnswer or
	// VerdictInjection.
	Verdict string
}

// Verdicts of a [Judgement] (and of a [spec.MatchSpan]).
const (
	// VerdictJudge: the judge said the segment says what the query
	// describes, quoting the words that do.
	VerdictJudge = spec.VerdictJudge
	// VerdictUnexamined: a candidate beyond the judge calls allowed for one
	// evaluation, counted as a match so that nothing is waved through
	// unexamined.
	VerdictUnexamined = spec.VerdictUnexamined
	// VerdictNoAnswer: the judge's answer did not parse or quoted words that
	// are not in the segment.
	VerdictNoAnswer = spec.VerdictNoAnswer
	// VerdictInjection: the segment addresses the judge; it was not sent,
	// and is a match for a person to see.
	VerdictInjection = spec.VerdictInjection
)

// Sensitivities of a Semantic instruction, as [JudgingMatcher.Judge]
// receives them (see [spec.Trigger] Sensitivity).
const (
	// SensitivityStandard is the default: the matcher's threshold, chosen
	// for few false alarms.
	SensitivityStandard = spec.SensitivityStandard
	// SensitivityHigh asks for a threshold chosen for recall.
	SensitivityHigh = spec.SensitivityHigh
)

// JudgingMatcher is a [SemanticMatcher] that says how each match was
// decided, typically by asking a judge (a language model) about candidate
// segments. [Set.Evaluate] prefers Judge to Match and Scores when the matcher
// is one. Implementations must be safe for concurrent use.
type JudgingMatcher interface {
	SemanticMatcher
	// Judge returns, for each query i, its matches among the segments
	// (out[i]), so len(out) == len(queries); each Segment is in range and
	// appears at most once per query. sensitivity[i] is the Sensitivity of
	// query i ("" or SensitivityStandard, or SensitivityHigh); it has
	// len(queries) entries. An error means evaluation cannot run (the judge
	// or the candidate matcher is unavailable): the caller evaluates again
	// later, it never approves.
	Judge(ctx context.Context, segments, queries []string, sensitivity []string) ([][]Judgement, error)
}

// SensitiveScorer is a [SemanticScorer] with a second, recall-oriented
// operating point, used for the Semantic instructions whose Sensitivity is
// SensitivityHigh. A scorer that is not one uses MatchThreshold for them too.
type SensitiveScorer interface {
	SemanticScorer
	// RecallThreshold is the score at which a segment matches a query of
	// high sensitivity; at most MatchThreshold.
	RecallThreshold() float64
}

// Backoff is an error of a [SemanticMatcher] whose endpoint asked not to be
// called again for a while (an HTTP 429 or 503 with Retry-After): the
// judge's *judge.UnavailableError is one. The error of [Set.Evaluate] wraps
// it, and a caller that evaluates again later (the review service) waits at
// least that long.
type Backoff interface {
	error
	// Backoff is the wait the endpoint asked for; 0 when it named none.
	Backoff() time.Duration
}

// BackoffOf returns the longest wait a [Backoff] in err's chain asks for,
// or 0.
func BackoffOf(err error) time.Duration {
	var longest time.Duration
	for err != nil {
		var b Backoff
		if !errors.As(err, &b) {
			break
		}
		longest = max(longest, b.Backoff())
		err = errors.Unwrap(b) // a Backoff deeper in the chain
	}
	return longest
}

// matchSemantic asks the SemanticMatcher about the messages' segments. When
// the matcher is a JudgingMatcher, it asks for its judgements; else, when it
// is a SemanticScorer, for the scores, each query at its own threshold
// (RecallThreshold for one of high sensitivity when the scorer is a
// SensitiveScorer). It keeps the scores, quotes and verdicts of the matches
// for describeSemantic.
func (s *Set) matchSemantic(ctx context.Context, st *evalState, messages []string) error {
	if len(s.queries) == 0 {
		return nil
	}
	var segs []segment
	for mi, msg := range messages {
		segs = segmentMessage(mi, msg, segs)
	}
	if len(segs) == 0 {
		return nil
	}
	texts := make([]string, len(segs))
	for i, sg := range segs {
		texts[i] = messages[sg.msg][sg.start:sg.end]
	}
	keep := func(in int, sp span, info semanticInfo) {
		st.add(in, sp)
		if st.similarity == nil {
			st.similarity = map[semanticHit]semanticInfo{}
		}
		info.similarity = min(1, max(0, info.similarity))
		st.similarity[semanticHit{in, sp}] = info
	}
	switch m := s.matcher.(type) {
	case JudgingMatcher:
		out, err := m.Judge(ctx, texts, s.queries, slices.Clone(s.sens))
		if err != nil {
			return fmt.Errorf("policy: semantic matcher: %w", err)
		}
		if err := checkJudgements(out, texts, len(s.queries)); err != nil {
			return err
		}
		for qi, js := range out {
			in := s.semantic[qi]
			for _, j := range js {
				keep(in, span(segs[j.Segment]), semanticInfo{similarity: j.Score, quote: j.Quote, verdict: j.Verdict})
			}
		}
	case SemanticScorer:
		scores, err := m.Scores(ctx, texts, s.queries)
		if err != nil {
			return fmt.Errorf("policy: semantic matcher: %w", err)
		}
		if err := checkScores(scores, len(segs), len(s.queries)); err != nil {
			return err
		}
		standard, recall := m.MatchThreshold(), m.MatchThreshold()
		if ss, ok := m.(SensitiveScorer); ok {
			recall = ss.RecallThreshold()
		}
		for qi, row := range scores {
			threshold := standard
			if s.sens[qi] == SensitivityHigh {
				threshold = recall
			}
			in := s.semantic[qi]
			for j, score := range row {
				if score >= threshold {
					keep(in, span(segs[j]), semanticInfo{similarity: score})
				}
			}
		}
	default:
		out, err := m.Match(ctx, texts, s.queries)
		if err != nil {
			return fmt.Errorf("policy: semantic matcher: %w", err)
		}
		if err := checkSemantic(out, len(segs), len(s.queries)); err != nil {
			return err
		}
		for qi, idx := range out {
			in := s.semantic[qi]
			for _, j := range idx {
				st.add(in, span(segs[j]))
			}
		}
	}
	return nil
}

// semanticHit is a Semantic match of instruction inst.
type semanticHit struct {
	inst int
	sp   span
}

// semanticInfo is what a scorer or a judge said of a Semantic match.
type semanticInfo struct {
	similarity     float64
	quote, verdict string
}

// describeSemantic fills the Text of the Semantic matches of res, and their
// Similarity, Quote and Verdict when the matcher gave them. The reasons of
// res are those of the instructions with hits, in instruction order, each
// match that of the hit at the same index; a reason that does not line up so
// is left as it is.
func (s *Set) describeSemantic(st *evalState, messages []string, res *Result) {
	if len(s.semantic) == 0 || len(res.Reasons) == 0 {
		return
	}
	r := 0
	for i, in := range s.instrs {
		h := st.hits[i]
		if len(h) == 0 {
			continue
		}
		if r == len(res.Reasons) {
			return
		}
		reason := &res.Reasons[r]
		r++
		if _, semantic := slices.BinarySearch(s.semantic, i); !semantic || reason.InstructionID != in.id || len(reason.Matches) != len(h) {
			continue
		}
		for k, sp := range h {
			m := &reason.Matches[k]
			info := st.similarity[semanticHit{i, sp}]
			m.Text = messages[sp.msg][sp.start:sp.end]
			m.Similarity, m.Quote, m.Verdict = info.similarity, info.quote, info.verdict
		}
	}
}
