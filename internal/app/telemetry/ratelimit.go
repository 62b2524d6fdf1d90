package telemetry

import (
	"errors"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aiusage/kit/internal/infra/ops"
	"github.com/aiusage/kit/spec"
)

// Defaults of the rate limit per Ingestion key ([Config.RatePerKey],
// [Config.RateBurst]). A tool exports about 0.4 requests a second (Claude
// Code: logs and traces every 5 s, metrics every 60 s), so a key shared by
// a thousand running tools stays under 500 a second; a client re-sending
// in a loop does not.
const (
	DefaultRatePerKey = 500.0
	DefaultRateBurst  = 1000
)

// msgRate is the message of a request refused by the rate limit.
const msgRate = "This Ingestion key sends more requests a second than the service accepts; retry after the delay given."

// rateLimiter is a token bucket per key: a key holds at most burst tokens,
// gains rate tokens a second, and spends one per request. A key without
// tokens is refused with the time until it has one. Buckets that are full
// again (idle for burst/rate seconds) are dropped, since a full bucket is
// what a new key gets: the state is bounded by the keys active in that
// window. It is safe for concurrent use; a nil *rateLimiter allows
// everything.
type rateLimiter struct {
	rate  float64 // tokens a second
	burst float64
	now   func() time.Time

	mu        sync.Mutex
	buckets   map[string]*tokenBucket
	lastSweep time.Time
}

type tokenBucket struct {
	tokens float64
	at     time.Time // when tokens was computed
}

// newRateLimiter returns a limiter of rate requests a second and burst,
// or nil (no limit) when rate is negative.
func newRateLimiter(rate float64, burst int, now func() time.Time) *rateLimiter {
	if rate < 0 {
		return nil
	}
	return &rateLimiter{rate: rate, burst: float64(burst), now: now, buckets: map[string]*tokenBucket{}}
}

// fill returns how long a bucket takes to fill from empty.
func (l *rateLimiter) fill() time.Duration {
	return time.Duration(l.burst / l.rate * float64(time.Second))
}

// allow spends a token of key. It returns 0 when the request may go on,
// else how long until key has a token (never 0).
func (l *rateLimiter) allow(key string) time.Duration {
	if l == nil {
		return 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b := l.buckets[key]
	if b == nil {
		b = &tokenBucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(l.burst, b.tokens+d.Seconds()*l.rate)
		b.at = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	wait := time.Duration(math.Ceil((1 - b.tokens) / l.rate * float64(time.Second)))
	return max(wait, time.Nanosecond)
}

// sweep drops the buckets full at now, once per fill time.
func (l *rateLimiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < l.fill() {
		return
	}
	l.lastSweep = now
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}

// size returns the number of buckets held.
func (l *rateLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// throttled is the error of a request refused by the rate limit: a 429 over
// HTTP with Retry-After, Unavailable with RetryInfo over gRPC.
type throttled struct {
	err   *spec.Error
	after time.Duration
}

func errThrottled(after time.Duration) error {
	return &throttled{err: &spec.Error{Kind: spec.ErrRateLimited, Detail: msgRate}, after: after}
}

func (e *throttled) Error() string { return e.err.Error() }

// RetryAfter is when the key has a token again.
func (e *throttled) RetryAfter() time.Duration { return e.after }

func (e *throttled) Unwrap() error { return e.err }

// What a request was refused for, the reason label of
// aiusage_telemetry_throttled_total.
const (
	throttleRate     = "rate"
	throttleInFlight = "in_flight"
)

// throttleCounter returns the counter of the requests refused before they
// were read, aiusage_telemetry_throttled_total{transport,reason}, registered
// in m's registry (the one there when already registered), or nil for a nil
// m.
func throttleCounter(m *ops.Metrics) (*prometheus.CounterVec, error) {
	if m == nil {
		return nil, nil
	}
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aiusage_telemetry_throttled_total",
		Help: "OTLP requests refused before they were read, by transport (http, grpc) and reason: rate (the key's rate limit) or in_flight (its bound of requests in flight).",
	}, []string{"transport", "reason"})
	err := m.Registry().Register(c)
	var are prometheus.AlreadyRegisteredError
	switch {
	case errors.As(err, &are):
		if prev, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
			return prev, nil
		}
		return nil, err
	case err != nil:
		return nil, err
	}
	for _, t := range []string{"http", "grpc"} {
		for _, r := range []string{throttleRate, throttleInFlight} {
			c.WithLabelValues(t, r)
		}
	}
	return c, nil
}

// throttle counts a request of transport refused for reason.
func (s *Service) throttle(transport, reason string) {
	if s.throttled != nil {
		s.throttled.WithLabelValues(transport, reason).Inc()
	}
}
