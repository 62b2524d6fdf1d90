package riverjobs

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestKeyLimiterBoundsEachKey(t *testing.T) {
	t.Parallel()
	l := NewKeyLimiter(2)
	ctx := t.Context()
	r1, ok := l.Acquire(ctx, "a", 0)
	require.True(t, ok)
	r2, ok := l.Acquire(ctx, "a", 0)
	require.True(t, ok)
	_, ok = l.Acquire(ctx, "a", 0)
	require.False(t, ok, "a third slot of key a")
	rb, ok := l.Acquire(ctx, "b", 0)
	require.True(t, ok, "key b is not held back by key a")
	require.Equal(t, 2, l.Held("a"))

	r1()
	r1() // a second release gives nothing back
	require.Equal(t, 1, l.Held("a"))
	r3, ok := l.Acquire(ctx, "a", 0)
	require.True(t, ok)
	for _, r := range []func(){r2, r3, rb} {
		r()
	}
	require.Zero(t, l.Held("a"))
	require.Empty(t, l.keys, "keys nobody holds are forgotten")

	unlimited := NewKeyLimiter(0)
	for range 100 {
		_, ok := unlimited.Acquire(ctx, "a", 0)
		require.True(t, ok)
	}
}

func TestKeyLimiterWaitsForARelease(t *testing.T) {
	t.Parallel()
	l := NewKeyLimiter(1)
	ctx := t.Context()
	release, ok := l.Acquire(ctx, "a", 0)
	require.True(t, ok)

	got := make(chan bool)
	go func() {
		// Far longer than the test takes: the release ends the wait.
		r, ok := l.Acquire(ctx, "a", time.Minute)
		if ok {
			r()
		}
		got <- ok
	}()
	waitFor(t, func() bool { return waiting(l, "a") == 1 })

	// Only limit jobs of a key wait: a second one gives up at once.
	_, ok = l.Acquire(ctx, "a", time.Minute)
	require.False(t, ok, "a second waiter with limit 1")

	release()
	select {
	case ok := <-got:
		require.True(t, ok, "the waiter takes the released slot")
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter did not get the released slot")
	}
	require.Empty(t, l.keys)
}

func TestKeyLimiterWaitEnds(t *testing.T) {
	t.Parallel()
	l := NewKeyLimiter(1)
	release, ok := l.Acquire(t.Context(), "a", 0)
	require.True(t, ok)
	defer release()

	_, ok = l.Acquire(t.Context(), "a", time.Millisecond)
	require.False(t, ok, "no slot freed within the wait")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, ok = l.Acquire(ctx, "a", time.Minute)
	require.False(t, ok, "ctx ended")
	require.Zero(t, waiting(l, "a"))
	require.Equal(t, 1, l.Held("a"))
}

func TestSnoozeFor(t *testing.T) {
	t.Parallel()
	const base, maxWait = 100 * time.Millisecond, 5 * time.Second
	for _, c := range []struct {
		name     string
		metadata string
		lo, hi   time.Duration
	}{
		{"never snoozed", `{}`, base / 2, base},
		{"no metadata", ``, base / 2, base},
		{"malformed metadata", `{"snoozes": "x"}`, base / 2, base},
		{"snoozed 3 times", `{"snoozes": 3}`, 4 * base, 8 * base},
		{"snoozed often", `{"snoozes": 12}`, maxWait / 2, maxWait},
		{"snoozed more than a shift holds", `{"snoozes": 200}`, maxWait / 2, maxWait},
	} {
		t.Run(c.name, func(t *testing.T) {
			for range 50 {
				d := SnoozeFor([]byte(c.metadata), base, maxWait)
				require.GreaterOrEqual(t, d, c.lo)
				require.LessOrEqual(t, d, c.hi)
			}
		})
	}
}

func waiting(l *KeyLimiter, key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k := l.keys[key]; k != nil {
		return k.waiting
	}
	return 0
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}
