package tools

import (
	"sync"
	"time"
)

// Accumulator turns the running totals of cumulative metric points into
// deltas, in memory. It defines the semantics a store applies durably:
//
//   - A series is identified by [Usage.Series] and runs from [Usage.Start].
//     A new start time is a new run (the sender restarted): its first point
//     counts in full, from zero.
//   - Within a run, a point counts its value minus the last value counted.
//     A point whose value is lower than the last one (in any token count, or
//     the cost) is a reset and counts in full, from zero.
//   - A point no later than the last point of its run counts nothing: it is
//     a duplicate, or arrived out of order and is included in the later
//     running total already.
//   - A delta point (Cumulative false) passes through unchanged.
//
// It keeps the last point of every run it has seen. It is safe for
// concurrent use.
type Accumulator struct {
	mu   sync.Mutex
	runs map[runKey]*runState
}

type runKey struct {
	series string
	start  int64
}

type runState struct {
	at   time.Time
	tok  Tokens
	cost float64
}

// NewAccumulator returns an empty Accumulator.
func NewAccumulator() *Accumulator { return &Accumulator{runs: map[runKey]*runState{}} }

// Add returns what u adds to the totals: u itself for a delta point; for a
// cumulative point, u with Tokens and CostEstimate replaced by the delta
// since the last point of its run and Cumulative false. The second result
// is false when u adds nothing (a duplicate, a stale point, an unchanged
// total).
func (a *Accumulator) Add(u Usage) (Usage, bool) {
	if !u.Cumulative {
		return u, true
	}
	var cost float64
	if u.CostEstimate != nil {
		cost = *u.CostEstimate
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := runKey{u.Series, u.Start.UnixNano()}
	st, ok := a.runs[k]
	dTok, dCost := u.Tokens, cost
	switch {
	case !ok:
		a.runs[k] = &runState{at: u.Time, tok: u.Tokens, cost: cost}
	case !u.Time.After(st.at):
		return Usage{}, false
	case lower(u.Tokens, st.tok) || cost < st.cost:
		*st = runState{at: u.Time, tok: u.Tokens, cost: cost}
	default:
		dTok, dCost = u.Tokens.Sub(st.tok), cost-st.cost
		*st = runState{at: u.Time, tok: u.Tokens, cost: cost}
	}
	if dTok.IsZero() && dCost == 0 {
		return Usage{}, false
	}
	u.Tokens, u.Cumulative = dTok, false
	if u.CostEstimate != nil {
		u.CostEstimate = &dCost
	}
	return u, true
}

// Apply returns what each usage of us adds to the totals, in order,
// leaving out those that add nothing.
func (a *Accumulator) Apply(us []Usage) []Usage {
	out := make([]Usage, 0, len(us))
	for _, u := range us {
		if d, ok := a.Add(u); ok {
			out = append(out, d)
		}
	}
	return out
}

// lower reports whether any count of t is smaller in size than that of
// last. Sizes are compared because one series keeps one sign (Gemini CLI's
// cache series counts Input negatively).
func lower(t, last Tokens) bool {
	return abs(t.Input) < abs(last.Input) || abs(t.CacheRead) < abs(last.CacheRead) ||
		abs(t.CacheWrite) < abs(last.CacheWrite) || abs(t.Output) < abs(last.Output)
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
