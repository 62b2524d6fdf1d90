package policy

import (
	"context"
	"errors"
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
