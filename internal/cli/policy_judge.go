package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/policy/judge"
	"github.com/aiusage/kit/policy/semeval"
)

// evalJudgeWorkers is how many pairs "policy eval" judges at once (each
// Judge call has the cascade's own bound on calls in flight).
const evalJudgeWorkers = 4

// evalJudgeReport is the measure of the cascade of --judge-url in the report
// of "policy eval".
type evalJudgeReport struct {
	// Candidates names the matcher that picks the candidates, at
	// CandidateThreshold; MaxCalls is --judge-max-calls.
	Candidates         string  `json:"candidates"`
	CandidateThreshold float64 `json:"candidateThreshold"`
	MaxCalls           int     `json:"maxCalls"`
	// Pairs is the number of pairs judged (at most --judge-max-pairs);
	// FailedPairs those left out of the figures because the judge failed.
	Pairs       int `json:"pairs"`
	FailedPairs int `json:"failedPairs"`
	// Splits are the figures of the judged pairs per half (a pair matches
	// when any of its message's sentences does).
	Splits []evalJudgeSplit `json:"splits"`
	// Kinds are the figures per kind on the judged pairs of the held-out
	// half.
	Kinds []semeval.KindMetrics `json:"kinds"`
	// Verdicts counts the matches by verdict.
	Verdicts map[string]int `json:"verdicts"`
	// Calls, Failures, NoAnswers, CacheHits and Injections are the
	// cascade's counters (judge.Stats).
	Calls      int64 `json:"calls"`
	Failures   int64 `json:"failures"`
	NoAnswers  int64 `json:"noAnswers"`
	CacheHits  int64 `json:"cacheHits"`
	Injections int64 `json:"injections"`
	// Latency is that of the judge's HTTP calls, in milliseconds.
	Latency evalLatency `json:"latencyMs"`
	// PerPair is the time of one pair's evaluation (every call it made), in
	// milliseconds.
	PerPair evalLatency `json:"perPairMs"`
	// Seconds is the time of the whole run.
	Seconds float64 `json:"seconds"`
}

type evalJudgeSplit struct {
	Split   string          `json:"split"`
	Pairs   int             `json:"pairs"`
	Metrics semeval.Metrics `json:"metrics"`
}

// evalLatency summarises durations, in milliseconds.
type evalLatency struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	Max  float64 `json:"max"`
}

// summarise returns the mean, the nearest-rank percentiles and the maximum
// of ds.
func summarise(ds []time.Duration) evalLatency {
	if len(ds) == 0 {
		return evalLatency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rank := func(p float64) time.Duration {
		i := int(float64(len(s))*p+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return evalLatency{N: len(s), Mean: ms(sum) / float64(len(s)), P50: ms(rank(0.50)), P95: ms(rank(0.95)), Max: ms(s[len(s)-1])}
}

// timedTransport records the time of each HTTP call through it, from the
// request to its body's close.
type timedTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	took []time.Duration
}

func (t *timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	res, err := t.next.RoundTrip(r)
	if err != nil {
		t.record(time.Since(start))
		return nil, err
	}
	res.Body = &timedBody{ReadCloser: res.Body, done: func() { t.record(time.Since(start)) }}
	return res, nil
}

func (t *timedTransport) record(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.took = append(t.took, d)
}

type timedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *timedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

// evalJudge measures the cascade c on pairs (at most maxPairs of them, the
// first of the halves splits names): each pair's message is cut into
// sentences as the service cuts a request, and predicted a match when the
// cascade reports any. A pair whose judging fails is counted and left out;
// when every judge call failed, the first error is returned.
func evalJudge(ctx context.Context, c *judge.Cascade, candidates string, pairs []semeval.Pair, splits []string, maxPairs int) (evalJudgeReport, error) {
	tt := &timedTransport{next: http.DefaultTransport}
	c.Client.HTTPClient = &http.Client{Transport: tt}
	var chosen []semeval.Pair
	for _, p := range pairs {
		if slices.Contains(splits, p.Split()) && (maxPairs <= 0 || len(chosen) < maxPairs) {
			chosen = append(chosen, p)
		}
	}
	rep := evalJudgeReport{Candidates: candidates, CandidateThreshold: c.CandidateThreshold, MaxCalls: c.MaxCalls,
		Pairs: len(chosen), Verdicts: map[string]int{}}
	type result struct {
		done     bool
		match    bool
		err      error
		took     time.Duration
		verdicts []string
	}
	results := make([]result, len(chosen))
	start := time.Now()
	next := make(chan int)
	var wg sync.WaitGroup
	for range evalJudgeWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p := chosen[i]
				t0 := time.Now()
				js, err := c.Judge(ctx, policy.Segments(p.Message), []string{p.Instruction}, []string{""})
				r := result{done: true, err: err, took: time.Since(t0)}
				if err == nil && len(js) == 1 {
					r.match = len(js[0]) > 0
					for _, j := range js[0] {
						r.verdicts = append(r.verdicts, j.Verdict)
					}
				}
				results[i] = r
			}
		}()
	}
	for i := range chosen {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	rep.Seconds = time.Since(start).Seconds()
	var firstErr error
	var judged []semeval.Pair
	var scores []float64
	var perPair []time.Duration
	for i, r := range results {
		if !r.done || r.err != nil {
			rep.FailedPairs++
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		score := 0.0
		if r.match {
			score = 1
		}
		judged, scores = append(judged, chosen[i]), append(scores, score)
		perPair = append(perPair, r.took)
		for _, v := range r.verdicts {
			rep.Verdicts[v]++
		}
	}
	if err := ctx.Err(); err != nil && firstErr == nil {
		firstErr = err
	}
	st := c.Stats()
	// The judge unreachable: every call failed. (A pair without candidates
	// needs no call; it says nothing of the judge.)
	if rep.FailedPairs > 0 && st.Failures == st.Calls {
		if firstErr == nil {
			firstErr = errors.New("no pair was judged")
		}
		return rep, firstErr
	}
	for _, split := range splits {
		ps, sc := semeval.Half(judged, scores, split)
		rep.Splits = append(rep.Splits, evalJudgeSplit{Split: split, Pairs: len(ps), Metrics: semeval.Measure(ps, sc, 1)})
	}
	hold, holdScores := semeval.Half(judged, scores, semeval.SplitHoldout)
	rep.Kinds = semeval.MeasureKinds(hold, holdScores, 1)
	rep.Calls, rep.Failures, rep.NoAnswers, rep.CacheHits, rep.Injections = st.Calls, st.Failures, st.NoAnswers, st.CacheHits, st.Injections
	tt.mu.Lock()
	rep.Latency = summarise(tt.took)
	tt.mu.Unlock()
	rep.PerPair = summarise(perPair)
	return rep, nil
}

// writeJudgeText writes the judge's part of the text report.
func writeJudgeText(w io.Writer, j *evalJudgeReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\njudge over matcher %s (candidates at %.2f, at most %d calls a pair): %d pairs judged, %d failed, in %.1f s\n",
		j.Candidates, j.CandidateThreshold, j.MaxCalls, j.Pairs-j.FailedPairs, j.FailedPairs, j.Seconds)
	fmt.Fprintln(tw, "half\tpairs\tTP\tFP\tFN\tTN\tprecision\trecall\tFPR\tJ\tF1\t")
	for _, s := range j.Splits {
		x := s.Metrics
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", s.Split, s.Pairs, x.TP, x.FP, x.FN, x.TN,
			x.Precision, x.Recall, x.FPR, x.J, x.F1)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(j.Kinds) > 0 {
		fmt.Fprintln(w, "\njudge per kind, holdout half")
		fmt.Fprintln(tw, "kind\tTP\tFP\tFN\tTN\tprecision\trecall\tFPR\tJ\tF1\t")
		for _, k := range j.Kinds {
			x := k.Metrics
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", k.Kind, x.TP, x.FP, x.FN, x.TN,
				x.Precision, x.Recall, x.FPR, x.J, x.F1)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\njudge calls %d (failed %d, no answer %d), cache hits %d, sentences not sent (injection) %d\n",
		j.Calls, j.Failures, j.NoAnswers, j.CacheHits, j.Injections)
	fmt.Fprintf(w, "matches by verdict: judge %d, unexamined %d, no-answer %d, injection %d\n", j.Verdicts[policy.VerdictJudge],
		j.Verdicts[policy.VerdictUnexamined], j.Verdicts[policy.VerdictNoAnswer], j.Verdicts[policy.VerdictInjection])
	fmt.Fprintln(tw, "latency (ms)\tn\tmean\tp50\tp95\tmax\t")
	for _, l := range []struct {
		name string
		l    evalLatency
	}{{"per judge call", j.Latency}, {"per pair", j.PerPair}} {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t\n", l.name, l.l.N, l.l.Mean, l.l.P50, l.l.P95, l.l.Max)
	}
	return tw.Flush()
}
