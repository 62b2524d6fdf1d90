package policy_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/spec"
)

func TestCacheRecompilesOnChange(t *testing.T) {
	t.Parallel()
	c := policy.NewCache(policy.Options{}, 10)
	at := spec.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	ins := []spec.Instruction{block("w", terms("falcon"))}
	ins[0].UpdatedAt = at

	s1, err := c.Get("agent", ins)
	require.NoError(t, err)
	s2, err := c.Get("agent", ins)
	require.NoError(t, err)
	require.Same(t, s1, s2)

	// A copy with equal content is the same set.
	same := []spec.Instruction{ins[0]}
	same[0].Trigger.Values = []string{"falcon"}
	s3, err := c.Get("agent", same)
	require.NoError(t, err)
	require.Same(t, s1, s3)

	changes := map[string]func(in *spec.Instruction){
		"updatedAt":      func(in *spec.Instruction) { in.UpdatedAt = spec.NewTime(at.Add(time.Second)) },
		"values":         func(in *spec.Instruction) { in.Trigger.Values = []string{"eagle"} },
		"case":           func(in *spec.Instruction) { in.Trigger = termsi("falcon") },
		"action":         func(in *spec.Instruction) { in.Action = spec.ActionAllow },
		"criticality":    func(in *spec.Instruction) { in.Criticality = spec.CriticalityHigh },
		"allowRedaction": func(in *spec.Instruction) { in.AllowRedaction = true },
		"id":             func(in *spec.Instruction) { in.ID = "other" },
		"title":          func(in *spec.Instruction) { in.Title = "renamed" },
		"type":           func(in *spec.Instruction) { in.Trigger = rx("falcon") },
	}
	for name, change := range changes {
		changed := []spec.Instruction{ins[0]}
		change(&changed[0])
		s, err := c.Get("agent", changed)
		require.NoError(t, err, name)
		require.NotSame(t, s1, s, name)
		// And back: recompiled again, since only the latest is kept per key.
		back, err := c.Get("agent", ins)
		require.NoError(t, err)
		require.NotSame(t, s, back, name)
		s1 = back
	}
	// A Semantic trigger's sensitivity chooses its threshold: another set.
	sem := block("s", spec.Trigger{Type: spec.TriggerSemantic, Text: "falcon"})
	sem.UpdatedAt = at
	high := sem
	high.Trigger.Sensitivity = spec.SensitivityHigh
	standard, err := c.Get("sem", []spec.Instruction{sem})
	require.NoError(t, err)
	recall, err := c.Get("sem", []spec.Instruction{high})
	require.NoError(t, err)
	require.NotSame(t, standard, recall, "sensitivity")
	// Values split differently are different content.
	a, err := c.Get("k", []spec.Instruction{block("x", terms("ab", "c"))})
	require.NoError(t, err)
	b, err := c.Get("k", []spec.Instruction{block("x", terms("a", "bc"))})
	require.NoError(t, err)
	require.NotSame(t, a, b)
	// A new instruction.
	more, err := c.Get("agent", append(ins, block("y", terms("x"))))
	require.NoError(t, err)
	require.NotSame(t, s1, more)
	res, err := more.Evaluate(context.Background(), []string{"x"})
	require.NoError(t, err)
	require.Equal(t, policy.OutcomeChangeRequested, res.Outcome)
}

func TestCacheInvalidateAndEvict(t *testing.T) {
	t.Parallel()
	c := policy.NewCache(policy.Options{}, 2)
	ins := []spec.Instruction{block("w", terms("falcon"))}
	a1, _ := c.Get("a", ins)
	c.Invalidate("a")
	c.Invalidate("unknown")
	require.Zero(t, c.Len())
	a2, _ := c.Get("a", ins)
	require.NotSame(t, a1, a2)

	b1, _ := c.Get("b", ins)
	a3, _ := c.Get("a", ins) // a is now the most recently used
	require.Same(t, a2, a3)
	_, _ = c.Get("c", ins) // evicts b
	require.Equal(t, 2, c.Len())
	a4, _ := c.Get("a", ins)
	require.Same(t, a2, a4)
	b2, _ := c.Get("b", ins)
	require.NotSame(t, b1, b2)
	require.Equal(t, 2, c.Len())
}

func TestCacheCompileError(t *testing.T) {
	t.Parallel()
	c := policy.NewCache(policy.Options{}, 0)
	bad := []spec.Instruction{block("bad", rx(`(`))}
	_, err := c.Get("a", bad)
	var ce *policy.CompileError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "bad", ce.InstructionID)
	_, err2 := c.Get("a", bad)
	require.Same(t, err, err2) // cached
	s, err := c.Get("a", []spec.Instruction{block("good", rx(`\(`))})
	require.NoError(t, err)
	require.NotNil(t, s)
}

// TestCacheConcurrent runs Gets, Evaluates and Invalidates from many
// goroutines (run with -race): concurrent Gets of the same instructions share
// one compilation, and every set answers for the instructions it was asked
// with.
func TestCacheConcurrent(t *testing.T) {
	t.Parallel()
	c := policy.NewCache(policy.Options{}, 3)
	versions := [][]spec.Instruction{
		{block("w", terms("falcon"))},
		{high(block("w", terms("falcon")))},
		{redact(block("w", terms("falcon")))},
	}
	want := []policy.Outcome{policy.OutcomeChangeRequested, policy.OutcomeRequiresIntervention, policy.OutcomeRedacted}

	// Same key and instructions from many goroutines at once: one set.
	start := make(chan struct{})
	sets := make([]*policy.Set, 16)
	var wg sync.WaitGroup
	for i := range sets {
		wg.Go(func() {
			<-start
			s, err := c.Get("shared", versions[0])
			if err == nil {
				sets[i] = s
			}
		})
	}
	close(start)
	wg.Wait()
	for _, s := range sets {
		require.Same(t, sets[0], s)
	}

	errs := make(chan error, 1)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				v := (g + i) % len(versions)
				key := fmt.Sprintf("agent-%d", (g*7+i)%5)
				if i%50 == 0 {
					c.Invalidate(key)
				}
				s, err := c.Get(key, versions[v])
				if err == nil {
					var res policy.Result
					res, err = s.Evaluate(context.Background(), []string{"the falcon"})
					if err == nil && res.Outcome != want[v] {
						err = fmt.Errorf("version %d: outcome %s, want %s", v, res.Outcome, want[v])
					}
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
	require.LessOrEqual(t, c.Len(), 3)
}
