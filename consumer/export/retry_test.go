package export_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/export"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	pexport "github.com/aiusage/kit/provider/export"
)

// faultServer serves dir, failing the first requests of every path with the
// faults of script in turn: an HTTP status (with "Retry-After: 7" on a 429),
// -1 a reset connection, -2 a body cut after its first bytes.
type faultServer struct {
	mu     sync.Mutex
	seen   map[string]int
	script []int
	faults int
}

func (f *faultServer) handler(dir string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		n := f.seen[r.URL.Path]
		f.seen[r.URL.Path] = n + 1
		fault := 0
		if n < len(f.script) {
			fault = f.script[n]
			f.faults++
		}
		f.mu.Unlock()
		switch {
		case fault == -1:
			conn, _, err := rw.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		case fault == -2:
			rec := httptest.NewRecorder()
			files.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
			rw.WriteHeader(rec.Code)
			_, _ = rw.Write(body[:len(body)/3])
			conn, _, err := rw.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		case fault == http.StatusTooManyRequests:
			rw.Header().Set("Retry-After", "7")
			http.Error(rw, "slow down", fault)
		case fault != 0:
			http.Error(rw, "injected", fault)
		default:
			files.ServeHTTP(rw, r)
		}
	})
}

// TestHTTPRetriesLikeREST: every read of an export over HTTP retries 500,
// 503, 408, 429 (waiting its Retry-After), resets and cut bodies within the
// REST transport's budget, and reports each retry to OnRetry; the sync ends
// equal to the provider.
func TestHTTPRetriesLikeREST(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) { httpRetries(t, openStore(t, db)) })
}

func httpRetries(t *testing.T, store consumer.Store) {
	w := newWorld(t, 41, 60)
	w.publish(pexport.Full)
	w.firstSync = w.now
	// Seven failures of every file: within the default budget (8 retries,
	// the REST transport's), beyond the former one (4).
	fs := &faultServer{seen: map[string]int{}, script: []int{503, 500, -1, 429, 408, -2, 503}}
	srv := httptest.NewServer(fs.handler(w.dir))
	t.Cleanup(srv.Close)

	var mu sync.Mutex
	var retries []consumer.Retry
	var waits []time.Duration
	src, err := export.New(export.Config{URL: srv.URL,
		OnRetry: func(r consumer.Retry) { mu.Lock(); retries = append(retries, r); mu.Unlock() },
		Sleep: func(_ context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return nil
		}})
	require.NoError(t, err)
	p, err := consumer.NewPoller(src, store, &consumer.Config{Source: source, Now: func() time.Time { return w.now }})
	require.NoError(t, err)
	res, err := p.SyncOnce(context.Background())
	require.NoError(t, err)
	for _, rr := range res.Resources {
		require.NoError(t, rr.Err, "%s", rr.Resource)
	}
	w.sameAll("after a sync through faults", store)

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, fs.faults, len(retries), "every fault is retried and reported once")
	require.Len(t, waits, len(retries))
	statuses := map[int]int{}
	for i, r := range retries {
		require.NotEmpty(t, r.Resource, "retry %d names its resource", i)
		require.Error(t, r.Err)
		require.Equal(t, r.Wait, waits[i])
		statuses[r.Status]++
		if r.Status == http.StatusTooManyRequests {
			require.Equal(t, 7*time.Second, r.Wait, "a 429 waits its Retry-After")
		} else {
			require.GreaterOrEqual(t, r.Wait, 250*time.Millisecond)
			require.LessOrEqual(t, r.Wait, 30*time.Second)
		}
	}
	for _, s := range []int{0, 408, 429, 500, 503} {
		require.Positive(t, statuses[s], "status %d retried: %v", s, statuses)
	}
}
