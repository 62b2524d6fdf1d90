package httpclient

// The retry policy every HTTP transport of the consumer shares (the REST
// client, the export reader over HTTP, the vendors' usage APIs): which
// failures are transient, exponential back-off with full jitter, a server's
// Retry-After honoured up to a cap, and the defaults of the budget.

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// The defaults of the retry budget of every transport.
const (
	// DefaultMaxRetries bounds the retries of one request: 8.
	DefaultMaxRetries = 8
	// DefaultMinBackoff is the shortest wait between attempts: 250ms.
	DefaultMinBackoff = 250 * time.Millisecond
	// DefaultMaxBackoff is the longest back-off between attempts: 30s.
	DefaultMaxBackoff = 30 * time.Second
	// DefaultMaxRetryAfter caps a server's Retry-After: 5m.
	DefaultMaxRetryAfter = 5 * time.Minute
)

// Transient reports whether a failed attempt is worth another: an error
// without an answer (a refused or reset connection, a timeout, a cut body)
// unless it is one of permanent (errors.Is), or an answer 408, 429 or 5xx
// other than 501. status is 0 when there was no answer.
func Transient(status int, err error, permanent ...error) bool {
	if err != nil {
		for _, p := range permanent {
			if errors.Is(err, p) {
				return false
			}
		}
		return true
	}
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests ||
		(status >= 500 && status != http.StatusNotImplemented)
}

// Backoff computes the waits between attempts. It is safe for concurrent
// use.
type Backoff struct {
	min, max, maxRetryAfter time.Duration

	mu  sync.Mutex
	rng *rand.Rand
}

// NewBackoff returns the back-off between min and max (max >= min > 0),
// honouring a Retry-After up to maxRetryAfter, its jitter seeded by seed (0:
// a random seed).
func NewBackoff(min, max, maxRetryAfter time.Duration, seed uint64) *Backoff {
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &Backoff{min: min, max: max, maxRetryAfter: maxRetryAfter, rng: rand.New(rand.NewPCG(seed, seed>>1|1))}
}

// Wait returns the wait before retry n (0 for the first): the server's
// retryAfter when it gave one (>= 0), capped at the maximum Retry-After;
// otherwise exponential with full jitter, a random wait in
// [min, min(max, min·2^n)].
func (b *Backoff) Wait(n int, retryAfter time.Duration) time.Duration {
	if retryAfter >= 0 {
		return min(retryAfter, b.maxRetryAfter)
	}
	ceil := b.min << min(max(n, 0), 30)
	if ceil <= 0 || ceil > b.max {
		ceil = b.max
	}
	span := ceil - b.min
	if span <= 0 {
		return b.min
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.min + time.Duration(b.rng.Int64N(int64(span)+1))
}

// Sleep waits d, or returns ctx's error when ctx ends first.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
