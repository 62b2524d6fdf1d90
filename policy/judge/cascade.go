package judge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
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
// judge. It is safe for concurrent use; use it by pointer and do not copy it
// after first use. Answered verdicts are cached in memory, keyed by the
// instruction, the sentence and the judge's model.
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

	mu    sync.Mutex
	stats Stats
	cache *lru
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
func (c *Cascade) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Match implements [policy.SemanticMatcher]: the segments of Judge's
// judgements, all queries of standard sensitivity.
func (c *Cascade) Match(ctx context.Context, segments, queries []string) ([][]int, error) {
	js, err := c.Judge(ctx, segments, queries, make([]string, len(queries)))
	if err != nil {
		return nil, err
	}
	out := make([][]int, len(js))
	for i, row := range js {
		for _, j := range row {
			out[i] = append(out[i], j.Segment)
		}
	}
	return out, nil
}

// candidate is a segment picked for a query.
type candidate struct {
	query, segment int
	score          float64
}

// Judge implements [policy.JudgingMatcher]. Candidates scores every segment
// against every query; a segment scoring at least the candidate threshold (for
// a query of high sensitivity, the lower of it and the RecallThreshold of a
// policy.SensitiveScorer) is a candidate. Candidates are taken highest score
// first (ties by query, then segment):
//
//   - a segment that addresses the judge (see the package doc) is a match
//     with VerdictInjection, and is not sent;
//   - an answered verdict in the cache is used as it is;
//   - else, while fewer than MaxCalls calls are planned, the judge is asked
//     (at most Concurrency calls at a time; a question asked twice in one
//     Judge call is asked once);
//   - else the candidate is a match with VerdictUnexamined.
//
// A judge that said match gives a match with VerdictJudge and its quote, one
// that gave no answer a match with VerdictNoAnswer, one that said no no
// match. Each judgement's Score is the candidate's score. Any error of
// Candidates or of the judge fails Judge (the first one; the calls in flight
// are then cancelled): an evaluation that cannot ask is not an approval.
func (c *Cascade) Judge(ctx context.Context, segments, queries []string, sensitivity []string) ([][]policy.Judgement, error) {
	if c.Client == nil {
		return nil, errors.New("judge: Cascade.Client is required")
	}
	if len(sensitivity) != len(queries) {
		return nil, fmt.Errorf("judge: %d sensitivities for %d queries", len(sensitivity), len(queries))
	}
	out := make([][]policy.Judgement, len(queries))
	if len(segments) == 0 || len(queries) == 0 {
		return out, nil
	}
	cands, err := c.candidates(ctx, segments, queries, sensitivity)
	if err != nil {
		return nil, err
	}
	maxCalls := c.MaxCalls
	if maxCalls == 0 {
		maxCalls = DefaultMaxCalls
	}
	// Plan: a verdict per candidate, or the question that will give it.
	type plan struct {
		verdict string // set when decided without a call
		known   *Verdict
		ask     int // index into asks, when verdict == "" and known == nil
	}
	plans := make([]plan, len(cands))
	var asks []question
	asked := map[cacheKey]int{}
	injection := map[int]bool{}
	for k, cd := range cands {
		inj, seen := injection[cd.segment]
		if !seen {
			inj = addressesJudge(segments[cd.segment])
			injection[cd.segment] = inj
			if inj {
				c.count(func(s *Stats) { s.Injections++ })
			}
		}
		if inj {
			plans[k].verdict = policy.VerdictInjection
			continue
		}
		key := c.key(queries[cd.query], segments[cd.segment])
		if v, ok := c.cached(key); ok {
			plans[k].known = &v
			continue
		}
		if a, ok := asked[key]; ok {
			plans[k].ask = a
			continue
		}
		if len(asks) >= maxCalls {
			plans[k].verdict = policy.VerdictUnexamined
			continue
		}
		asked[key] = len(asks)
		plans[k].ask = len(asks)
		asks = append(asks, question{key: key, instruction: queries[cd.query], sentence: segments[cd.segment]})
	}
	if err := c.ask(ctx, asks); err != nil {
		return nil, err
	}
	for k, cd := range cands {
		p := plans[k]
		j := policy.Judgement{Segment: cd.segment, Score: cd.score, Verdict: p.verdict}
		if j.Verdict == "" {
			v := p.known
			if v == nil {
				v = &asks[p.ask].verdict
			}
			switch {
			case !v.Answered:
				j.Verdict = policy.VerdictNoAnswer
			case v.Match:
				j.Verdict, j.Quote = policy.VerdictJudge, v.Quote
			default:
				continue
			}
		}
		out[cd.query] = append(out[cd.query], j)
	}
	for _, row := range out {
		slices.SortFunc(row, func(a, b policy.Judgement) int { return cmp.Compare(a.Segment, b.Segment) })
	}
	return out, nil
}

// candidates scores the segments and returns those at the threshold, highest
// score first.
func (c *Cascade) candidates(ctx context.Context, segments, queries, sensitivity []string) ([]candidate, error) {
	var scorer policy.SemanticScorer = policy.LexicalMatcher{}
	if c.Candidates != nil {
		scorer = c.Candidates
	}
	recall, sensitive := scorer.(policy.SensitiveScorer)
	threshold := c.CandidateThreshold
	if threshold == 0 {
		threshold = scorer.MatchThreshold()
		if sensitive {
			threshold = recall.RecallThreshold()
		}
	}
	high := threshold
	if sensitive {
		high = min(threshold, recall.RecallThreshold())
	}
	scores, err := scorer.Scores(ctx, segments, queries)
	if err != nil {
		return nil, fmt.Errorf("judge: candidate matcher: %w", err)
	}
	if len(scores) != len(queries) {
		return nil, fmt.Errorf("judge: candidate matcher returned %d results for %d queries", len(scores), len(queries))
	}
	var out []candidate
	for i, row := range scores {
		if len(row) != len(segments) {
			return nil, fmt.Errorf("judge: candidate matcher returned %d scores for %d segments", len(row), len(segments))
		}
		t := threshold
		if sensitivity[i] == policy.SensitivityHigh {
			t = high
		}
		for j, s := range row {
			if math.IsNaN(s) {
				return nil, errors.New("judge: candidate matcher returned NaN")
			}
			if s >= t {
				out = append(out, candidate{query: i, segment: j, score: s})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b candidate) int { return cmp.Compare(b.score, a.score) })
	return out, nil
}

// question is one judge call of a Judge call.
type question struct {
	key                   cacheKey
	instruction, sentence string
	verdict               Verdict
}

// ask asks the questions, at most Concurrency at a time, and caches the
// answered verdicts. It returns the first error, cancelling the calls in
// flight.
func (c *Cascade) ask(ctx context.Context, qs []question) error {
	if len(qs) == 0 {
		return nil
	}
	conc := c.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := range qs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(q *question) {
			defer func() { <-sem; wg.Done() }()
			start := time.Now()
			v, err := c.Client.Decide(ctx, q.instruction, q.sentence)
			took := time.Since(start)
			c.count(func(s *Stats) {
				s.Calls++
				s.TotalLatency += took
				s.MaxLatency = max(s.MaxLatency, took)
				if err != nil {
					s.Failures++
				} else if !v.Answered {
					s.NoAnswers++
				}
			})
			if err != nil {
				once.Do(func() { first = err; cancel(err) })
				return
			}
			q.verdict = v
			if v.Answered {
				c.store(q.key, v)
			}
		}(&qs[i])
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

func (c *Cascade) count(f func(*Stats)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.stats)
}
