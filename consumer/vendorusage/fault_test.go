package vendorusage_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/vendorusage"
	"github.com/aiusage/kit/consumer/vendorusage/vendortest"
	"github.com/aiusage/kit/provider"
)

func window() consumer.Query {
	return consumer.Query{StartAt: day0, EndAt: day0.Add(3 * time.Hour)}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	for _, fk := range fakes {
		t.Run(fk.name, func(t *testing.T) {
			t.Parallel()
			f := fk.srv()
			defer f.Close()
			f.FailNext(http.StatusTooManyRequests, "1")
			f.FailNext(http.StatusTooManyRequests, "0")
			cfg := fastConfig(f)
			var mu sync.Mutex
			var retries []consumer.Retry
			cfg.OnRetry = func(r consumer.Retry) { mu.Lock(); retries = append(retries, r); mu.Unlock() }
			src, err := fk.src(cfg)
			require.NoError(t, err)
			start := time.Now()
			_, err = src.Fetch(context.Background(), consumer.Usage, window())
			require.NoError(t, err)
			require.Len(t, retries, 2)
			// retry-after 1s, capped by MaxRetryAfter (50ms): far above the
			// backoff of at most 2ms, so the wait is the header's.
			require.Equal(t, 50*time.Millisecond, retries[0].Wait)
			require.Equal(t, time.Duration(0), retries[1].Wait, "retry-after 0 waits no backoff")
			require.Equal(t, http.StatusTooManyRequests, retries[0].Status)
			require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
			require.Len(t, f.Requests(), 3)
		})
	}
}

func TestServerErrorsBackOffThenSucceedOrGiveUp(t *testing.T) {
	t.Parallel()
	for _, fk := range fakes {
		t.Run(fk.name, func(t *testing.T) {
			t.Parallel()
			f := fk.srv()
			defer f.Close()
			cfg := fastConfig(f)
			cfg.MinBackoff, cfg.MaxBackoff = 10*time.Millisecond, 15*time.Millisecond
			var waits []time.Duration
			cfg.OnRetry = func(r consumer.Retry) { waits = append(waits, r.Wait) }
			src, err := fk.src(cfg)
			require.NoError(t, err)
			f.FailNext(http.StatusInternalServerError, "")
			f.FailNext(http.StatusBadGateway, "")
			f.FailNext(http.StatusServiceUnavailable, "")
			_, err = src.Fetch(context.Background(), consumer.Usage, window())
			require.NoError(t, err)
			require.Len(t, waits, 3)
			for _, w := range waits {
				require.GreaterOrEqual(t, w, 10*time.Millisecond)
				require.LessOrEqual(t, w, 15*time.Millisecond)
			}
			// Five failures in a row: MaxAttempts (5) spent.
			before := len(f.Requests())
			for range 5 {
				f.FailNext(http.StatusInternalServerError, "")
			}
			_, err = src.Fetch(context.Background(), consumer.Usage, window())
			require.ErrorIs(t, err, provider.ErrUnavailable)
			require.ErrorContains(t, err, "injected failure 500")
			require.ErrorContains(t, err, "after 5 attempts")
			require.Equal(t, 5, len(f.Requests())-before)
		})
	}
}

func TestRevokedKey(t *testing.T) {
	t.Parallel()
	for _, fk := range fakes {
		t.Run(fk.name, func(t *testing.T) {
			t.Parallel()
			f := fk.srv()
			defer f.Close()
			src, err := fk.src(fastConfig(f))
			require.NoError(t, err)
			f.Revoke()
			_, err = src.Fetch(context.Background(), consumer.Usage, window())
			require.ErrorIs(t, err, provider.ErrUnauthorized)
			want := "Incorrect API key provided"
			if fk.name == "anthropic" {
				want = "authentication_error: invalid x-api-key"
			}
			require.ErrorContains(t, err, want)
			require.ErrorContains(t, err, "HTTP 401")
			require.NotContains(t, err.Error(), f.Key)
			require.Len(t, f.Requests(), 1, "a 401 is not retried")

			// A wrong key: the vendor's message, not the key.
			cfg := fastConfig(f)
			cfg.Key = "sk-wrong-secret-value"
			f.Restore()
			bad, err := fk.src(cfg)
			require.NoError(t, err)
			_, err = bad.Fetch(context.Background(), consumer.Usage, window())
			require.ErrorIs(t, err, provider.ErrUnauthorized)
			require.NotContains(t, err.Error(), "sk-wrong-secret-value")

			f.FailNext(http.StatusForbidden, "")
			_, err = src.Fetch(context.Background(), consumer.Usage, window())
			require.ErrorIs(t, err, provider.ErrForbidden)
			require.ErrorContains(t, err, "injected failure 403")
		})
	}
}

func TestRedirectToAnotherHostIsRefused(t *testing.T) {
	t.Parallel()
	for _, fk := range fakes {
		t.Run(fk.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var seen []http.Header
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Header.Clone())
				mu.Unlock()
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write([]byte(`{"data":[],"has_more":false,"next_page":null}`))
			}))
			defer other.Close()
			f := fk.srv()
			defer f.Close()
			// The other server on "localhost", the fake on 127.0.0.1: another origin.
			f.RedirectTo(strings.Replace(other.URL, "127.0.0.1", "localhost", 1))
			src, err := fk.src(fastConfig(f))
			require.NoError(t, err)
			_, err = src.Fetch(context.Background(), consumer.Usage, window())
			require.ErrorIs(t, err, consumer.ErrRedirect)
			require.NotContains(t, err.Error(), f.Key)
			require.Len(t, f.Requests(), 1, "a refused redirect is not retried")
			mu.Lock()
			defer mu.Unlock()
			require.Empty(t, seen, "nothing, and so no key, reached the other host")
		})
	}
}

func TestRateLimitIsRespected(t *testing.T) {
	t.Parallel()
	f := fakes[0].srv()
	defer f.Close()
	cfg := fastConfig(f)
	cfg.Rate, cfg.Burst = 20, 1
	src, err := vendorusage.NewOpenAI(cfg)
	require.NoError(t, err)
	start := time.Now()
	for range 6 {
		_, err := src.Fetch(context.Background(), consumer.Usage, consumer.Query{StartAt: day0, EndAt: day0.Add(time.Hour)})
		require.NoError(t, err)
	}
	// Six requests at 20 a second with a burst of 1: at least 5 gaps of 50ms.
	require.GreaterOrEqual(t, time.Since(start), 240*time.Millisecond)
	reqs := f.Requests()
	require.Len(t, reqs, 6)
	// The limiter lets request i go no earlier than i × 50ms after the
	// first token; it arrives after it is sent. (Gaps between arrivals
	// jitter with scheduling, so each is bounded from the start instead.)
	for i := 1; i < len(reqs); i++ {
		require.GreaterOrEqual(t, reqs[i].At.Sub(start), time.Duration(i)*50*time.Millisecond-5*time.Millisecond, "request %d", i)
	}
}

func TestContextEndsTheWait(t *testing.T) {
	t.Parallel()
	f := fakes[1].srv()
	defer f.Close()
	cfg := fastConfig(f)
	cfg.MaxRetryAfter = time.Hour
	src, err := vendorusage.NewAnthropic(cfg)
	require.NoError(t, err)
	f.FailNext(http.StatusTooManyRequests, "3600")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = src.Fetch(ctx, consumer.Usage, window())
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestAnswersOutOfShapeAreNamed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		status int
		body   string
		kind   error
		want   string
	}{
		{200, `not json`, provider.ErrUnavailable, "unexpected shape"},
		{200, `{"data":[],"has_more":true,"next_page":null}`, provider.ErrUnavailable, "has_more without next_page"},
		{200, `{"data":[]}`, provider.ErrUnavailable, "no has_more"},
		{200, `{"data":[{"start_time":1772323200,"end_time":1772409600,"results":[]}],"has_more":false}`, provider.ErrUnavailable, "is not one UTC 1h0m0s"},
		{200, `{"data":[{"start_time":1772323260,"end_time":1772326800,"results":[]}],"has_more":false}`, provider.ErrUnavailable, "is not one UTC 1h0m0s"},
		{200, `{"data":[{"start_time":1772323200,"end_time":1772326800,"results":[{"input_tokens":1,"input_cached_tokens":2}]}],"has_more":false}`, provider.ErrUnavailable, "input_cached_tokens 2 exceed input_tokens 1"},
		{200, `{"data":[{"start_time":1772323200,"end_time":1772326800,"results":[{"output_tokens":-5}]}],"has_more":false}`, provider.ErrUnavailable, "outside 0..2^50"},
		{200, `{"data":[],"has_more":false} {}`, provider.ErrUnavailable, "trailing data"},
		{400, `{"error":{"message":"Invalid value for group_by","type":"invalid_request_error"}}`, provider.ErrInvalid, "HTTP 400: invalid_request_error: Invalid value for group_by"},
		{404, `<html>`, provider.ErrInvalid, "HTTP 404: no message (is http://127.0.0.1"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tt.status)
			_, _ = w.Write([]byte(tt.body))
		}))
		src, err := vendorusage.NewOpenAI(vendorusage.Config{BaseURL: srv.URL, Key: "sk-admin-x", Rate: 1000})
		require.NoError(t, err)
		_, err = src.Fetch(context.Background(), consumer.Usage, consumer.Query{StartAt: day0, EndAt: day0.Add(time.Hour)})
		srv.Close()
		require.ErrorIs(t, err, tt.kind, tt.body)
		require.ErrorContains(t, err, tt.want)
		require.NotContains(t, err.Error(), "sk-admin-x")
	}
}

func TestKeyNeverLoggedAndConcurrentFetches(t *testing.T) {
	t.Parallel()
	f := fakes[0].srv()
	defer f.Close()
	f.AddUser("u1", "a@example.com")
	for h := range 48 {
		f.AddUsage(vendortestUsage(h))
	}
	var logs strings.Builder
	var mu sync.Mutex
	cfg := fastConfig(f)
	cfg.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	src, err := vendorusage.NewOpenAI(cfg)
	require.NoError(t, err)
	for range 3 {
		f.FailNext(http.StatusServiceUnavailable, "")
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			start := day0.Add(time.Duration(i*6) * time.Hour)
			_, errs[i] = src.Fetch(context.Background(), consumer.Usage, consumer.Query{StartAt: start, EndAt: start.Add(6 * time.Hour)})
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, logs.String(), "vendor usage retry")
	require.NotContains(t, logs.String(), f.Key)
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func vendortestUsage(h int) vendortest.Usage {
	return vendortest.Usage{Hour: day0.Add(time.Duration(h) * time.Hour), Model: "m", User: "u1", Uncached: int64(h), Output: 1}
}
