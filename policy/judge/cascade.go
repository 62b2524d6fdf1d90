package judge

import (
	"context"
	"errors"
	"time"

	"github.com/aiusage/kit/policy"
)

// Defaults of [Cascade].
const (
	// DefaultMaxCalls is the default of Cascade.MaxCalls: judge calls per
	// Judge call.
	DefaultMaxCalls = 8
	// DefaultCacheSize is the default of Cascade.CacheSize: answered
	// verdicts kept.
	DefaultCacheSize = 4096
	// DefaultConcurrency is the default of Cascade.Concurrency: judge calls
	// in flight at once for one Judge call.
	DefaultConcurrency = 4
)

// Cascade is a [policy.JudgingMatcher]: a cheap matcher (Candidates) picks
// candidate sentences at a high-recall threshold, and only those go to the
// judge. It is safe for concurrent use; use it by pointer.
type Cascade struct {
	// Candidates scores the segments. Default: policy.LexicalMatcher{}.
	Candidates policy.SemanticScorer
	// CandidateThreshold is the score at which a segment is a candidate.
	// Default (0): the RecallThreshold of Candidates when it is a
	// policy.SensitiveScorer, else its MatchThreshold.
	CandidateThreshold float64
	// Client is the judge that decides about each candidate. Required. (It
	// cannot be named Judge: that is the method of policy.JudgingMatcher.)
	Client *Client
	// MaxCalls is the most judge calls per Judge call (cache hits do not
	// count); the candidates beyond it are matches with VerdictUnexamined.
	// Default (0): DefaultMaxCalls (8); negative: none, every candidate is
	// unexamined.
	MaxCalls int
	// CacheSize is the number of answered verdicts kept (least recently used
	// dropped first). Default (0): DefaultCacheSize (4096); negative: no
	// cache.
	CacheSize int
	// Concurrency is the most judge calls in flight for one Judge call.
	// Default (0): DefaultConcurrency (4).
	Concurrency int
}

var _ policy.JudgingMatcher = (*Cascade)(nil)

// Stats are the counters of a [Cascade] since it was created.
type Stats struct {
	// Calls is the number of judge calls made (answered or not, failed or
	// not).
	Calls int64
	// Failures is the number of calls that ended in an error.
	Failures int64
	// NoAnswers is the number of calls whose answer did not parse or quoted
	// what is not in the sentence.
	NoAnswers int64
	// CacheHits is the number of verdicts taken from the cache.
	CacheHits int64
	// Injections is the number of sentences not sent because they address
	// the judge.
	Injections int64
	// TotalLatency is the time of all calls together; MaxLatency that of the
	// longest.
	TotalLatency, MaxLatency time.Duration
}

// Stats returns the counters so far.
func (c *Cascade) Stats() Stats { return Stats{} }

// Match implements [policy.SemanticMatcher]: the segments of Judge's
// judgements, standard sensitivity.
func (c *Cascade) Match(ctx context.Context, segments, queries []string) ([][]int, error) {
	return nil, errors.New("judge: not implemented yet")
}

// Judge implements [policy.JudgingMatcher].
func (c *Cascade) Judge(ctx context.Context, segments, queries []string, sensitivity []string) ([][]policy.Judgement, error) {
	return nil, errors.New("judge: not implemented yet")
}
