package telemetry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRateLimiter: a key spends its burst, then gets one request per
// 1/rate seconds with the exact wait in between; another key is not
// touched; idle keys are dropped.
func TestRateLimiter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	l := newRateLimiter(4, 2, func() time.Time { return now }) // one token every 250 ms
	require.Zero(t, l.allow("a"))
	require.Zero(t, l.allow("a"))
	require.Equal(t, 250*time.Millisecond, l.allow("a"))
	require.Zero(t, l.allow("b"), "another key has its own bucket")
	now = now.Add(100 * time.Millisecond)
	require.Equal(t, 150*time.Millisecond, l.allow("a"), "a refused request spends nothing")
	now = now.Add(150 * time.Millisecond)
	require.Zero(t, l.allow("a"))
	require.Equal(t, 250*time.Millisecond, l.allow("a"))

	// After a fill time (500 ms) without requests the buckets are full and
	// dropped on the next request: only that request's key is held.
	require.Equal(t, 2, l.size())
	now = now.Add(time.Second)
	require.Zero(t, l.allow("c"))
	require.Equal(t, 1, l.size())
	for range 2 { // a dropped key gets a full bucket back
		require.Zero(t, l.allow("a"))
	}
	require.NotZero(t, l.allow("a"))

	var off *rateLimiter = newRateLimiter(-1, 0, time.Now)
	require.Nil(t, off)
	require.Zero(t, off.allow("a"))
}

// TestRateLimiterBounded: however many keys pass, the buckets held are those
// of the keys seen within one fill time.
func TestRateLimiterBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	l := newRateLimiter(10, 10, func() time.Time { return now }) // fill time 1 s
	for i := range 10_000 {
		now = now.Add(10 * time.Millisecond) // 100 keys a second, each once
		l.allow(string(rune('a'+i%26)) + time.Duration(i).String())
		require.LessOrEqual(t, l.size(), 201)
	}
}
