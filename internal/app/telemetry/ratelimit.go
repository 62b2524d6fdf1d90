package telemetry

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

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

// rateLimiter holds a token bucket ([rate.Limiter]) per key: a key holds at
// most burst tokens, gains rate tokens a second, and spends one per
// request. A key without a token is refused with the time until it has one,
// and the refusal spends nothing. Buckets that are full again (idle for
// burst/rate seconds) are dropped, since a full bucket is what a new key
// gets: the state is bounded by the keys active in that window. It is safe
// for concurrent use; a nil *rateLimiter allows everything.
type rateLimiter struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	mu        sync.Mutex
	buckets   map[string]*rate.Limiter
	lastSweep time.Time
}

// newRateLimiter returns a limiter of perSecond requests a second and
// burst, or nil (no limit) when perSecond is negative.
func newRateLimiter(perSecond float64, burst int, now func() time.Time) *rateLimiter {
	if perSecond < 0 {
		return nil
	}
	return &rateLimiter{limit: rate.Limit(perSecond), burst: burst, now: now, buckets: map[string]*rate.Limiter{}}
}

// fill returns how long a bucket takes to fill from empty.
func (l *rateLimiter) fill() time.Duration {
	return time.Duration(float64(l.burst) / float64(l.limit) * float64(time.Second))
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
		b = rate.NewLimiter(l.limit, l.burst)
		l.buckets[key] = b
	}
	if b.AllowN(now, 1) {
		return 0
	}
	r := b.ReserveN(now, 1)
	if !r.OK() { // a burst of 0: never
		return l.fill() + time.Second
	}
	wait := r.DelayFrom(now)
	r.CancelAt(now) // a refused request spends nothing
	return max(wait, time.Nanosecond)
}

// sweep drops the buckets full at now, once per fill time.
func (l *rateLimiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < l.fill() {
		return
	}
	l.lastSweep = now
	for k, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.burst) {
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
