package ops_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/ops"
)

// scrape returns the body of GET /metrics served by m.
func scrape(t *testing.T, m *ops.Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	return resp
}

// newServer serves a chi router with the metrics middleware, the probes,
// /metrics and a few routes.
func newServer(t *testing.T, m *ops.Metrics) *httptest.Server {
	t.Helper()
	r := chi.NewRouter()
	r.Use(m.Middleware)
	r.Group(ops.Health())
	r.Method(http.MethodGet, "/metrics", m.Handler())
	r.Get("/things/{id}", func(w http.ResponseWriter, r *http.Request) {
		if chi.URLParam(r, "id") == "missing" {
			http.Error(w, "no such thing", http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte("thing"))
	})
	r.Route("/api", func(r chi.Router) {
		r.Post("/items/{itemId}/notes", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
		})
	})
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}

func TestMetricsExposition(t *testing.T) {
	t.Parallel()
	m := ops.NewMetrics()
	srv := newServer(t, m)

	for _, id := range []string{"1", "2", "3", "missing"} {
		get(t, srv.URL+"/things/"+id)
	}
	resp, err := http.Post(srv.URL+"/api/items/42/notes", "text/plain", nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, http.StatusNotFound, get(t, srv.URL+"/no/such/path/123").StatusCode)
	require.Equal(t, http.StatusOK, get(t, srv.URL+"/healthz").StatusCode)

	m.ObserveSync("usage", ops.SyncOK, 120)
	m.ObserveSync("usage", ops.SyncOK, 30)
	m.ObserveSync("users", ops.SyncFailed, 0)
	m.ObserveSync("users", ops.SyncFailed, -5) // ignored count
	m.ObserveSyncRetry()
	m.ObserveSyncRetry()
	m.ObserveDelivery(ops.DeliveryDelivered)
	m.ObserveDelivery(ops.DeliveryOutcome("pending"))
	m.ObserveDelivery(ops.DeliveryOutcome("failed"))
	m.ObserveDelivery(ops.DeliveryOutcome("failed"))

	resp, err = http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	body := string(b)

	for _, want := range []string{
		"# TYPE aiusage_http_requests_total counter",
		"# TYPE aiusage_http_request_duration_seconds histogram",
		"# TYPE aiusage_sync_runs_total counter",
		"# TYPE aiusage_sync_records_total counter",
		"# TYPE aiusage_sync_retries_total counter",
		"# TYPE aiusage_webhook_deliveries_total counter",
		"# TYPE go_goroutines gauge",
		`aiusage_http_requests_total{method="GET",route="/things/{id}",status="200"} 3`,
		`aiusage_http_requests_total{method="GET",route="/things/{id}",status="404"} 1`,
		`aiusage_http_requests_total{method="POST",route="/api/items/{itemId}/notes",status="201"} 1`,
		`aiusage_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`aiusage_http_requests_total{method="GET",route="/healthz",status="200"} 1`,
		`aiusage_http_request_duration_seconds_count{method="GET",route="/things/{id}"} 4`,
		`aiusage_sync_runs_total{outcome="ok",resource="usage"} 2`,
		`aiusage_sync_runs_total{outcome="failed",resource="users"} 2`,
		`aiusage_sync_records_total{resource="usage"} 150`,
		`aiusage_sync_records_total{resource="users"} 0`,
		"aiusage_sync_retries_total 2",
		`aiusage_webhook_deliveries_total{outcome="delivered"} 1`,
		`aiusage_webhook_deliveries_total{outcome="retry"} 1`,
		`aiusage_webhook_deliveries_total{outcome="failed"} 2`,
	} {
		require.Contains(t, body, want)
	}
	// No raw paths: the route label is bounded by the routes.
	for _, raw := range []string{`route="/things/1"`, `route="/api/items/42/notes"`, `route="/no/such/path/123"`, `route="/api/*"`} {
		require.NotContains(t, body, raw)
	}
	if runtime.GOOS == "linux" { // the process collector exports where procfs exists
		require.Contains(t, body, "# TYPE process_cpu_seconds_total counter")
	}
	require.NotContains(t, body, "aiusage_queue_jobs{", "no queue-depth callback set")
}

func TestDeliveryOutcomesExportedFromStart(t *testing.T) {
	t.Parallel()
	body := scrape(t, ops.NewMetrics())
	for _, o := range []string{"delivered", "retry", "failed"} {
		require.Contains(t, body, `aiusage_webhook_deliveries_total{outcome="`+o+`"} 0`)
	}
}

func TestMiddlewareAroundRouter(t *testing.T) {
	t.Parallel()
	m := ops.NewMetrics()
	r := chi.NewRouter()
	r.Get("/orgs/{orgId}", func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "o1", chi.URLParam(r, "orgId"))
		w.WriteHeader(http.StatusNoContent)
	})
	h := m.Middleware(r)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/orgs/o1", nil))
	require.Equal(t, http.StatusNoContent, rec.Code)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/orgs/o1", nil))
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("BREW", "/coffee", nil))

	body := scrape(t, m)
	require.Contains(t, body, `aiusage_http_requests_total{method="GET",route="/orgs/{orgId}",status="204"} 1`)
	require.Contains(t, body, `aiusage_http_requests_total{method="OTHER",route="unmatched",status="405"} 1`)
	require.NotContains(t, body, "BREW")
	require.NotContains(t, body, "/orgs/o1")
}

func TestMiddlewareStatuses(t *testing.T) {
	t.Parallel()
	m := ops.NewMetrics()
	r := chi.NewRouter()
	r.Use(m.Middleware)
	r.Get("/silent", func(http.ResponseWriter, *http.Request) {})
	r.Get("/panic", func(http.ResponseWriter, *http.Request) { panic("boom") })

	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/silent", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Panics(t, func() {
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/panic", nil))
	})

	body := scrape(t, m)
	require.Contains(t, body, `aiusage_http_requests_total{method="GET",route="/silent",status="200"} 1`)
	require.Contains(t, body, `aiusage_http_requests_total{method="GET",route="/panic",status="500"} 1`)
}

func TestQueueDepth(t *testing.T) {
	t.Parallel()
	m := ops.NewMetrics()
	var deadline time.Duration
	m.SetQueueDepth(func(ctx context.Context) (map[string]float64, error) {
		d, ok := ctx.Deadline()
		require.True(t, ok, "the callback gets a deadline")
		deadline = time.Until(d)
		return map[string]float64{"available": 3, "running": 1, "retryable": 0}, nil
	})
	body := scrape(t, m)
	require.Contains(t, body, "# TYPE aiusage_queue_jobs gauge")
	require.Contains(t, body, `aiusage_queue_jobs{state="available"} 3`)
	require.Contains(t, body, `aiusage_queue_jobs{state="running"} 1`)
	require.Contains(t, body, `aiusage_queue_jobs{state="retryable"} 0`)
	require.Positive(t, deadline)
	require.LessOrEqual(t, deadline, ops.QueueDepthTimeout)

	// The values are read at every scrape.
	m.SetQueueDepth(func(context.Context) (map[string]float64, error) {
		return map[string]float64{"available": 7}, nil
	})
	body = scrape(t, m)
	require.Contains(t, body, `aiusage_queue_jobs{state="available"} 7`)
	require.NotContains(t, body, `state="running"`)

	// A failing callback leaves the family out; the rest is still served.
	m.SetQueueDepth(func(context.Context) (map[string]float64, error) {
		return nil, errors.New("database is down")
	})
	body = scrape(t, m)
	require.NotContains(t, body, "aiusage_queue_jobs{")
	require.Contains(t, body, "aiusage_webhook_deliveries_total")
	// The handler counts the error after answering: the next scrape shows it.
	require.Contains(t, scrape(t, m), `promhttp_metric_handler_errors_total{cause="gathering"} 1`)

	// nil turns it off.
	m.SetQueueDepth(nil)
	require.NotContains(t, scrape(t, m), "aiusage_queue_jobs{")
}

func TestNilMetrics(t *testing.T) {
	t.Parallel()
	var m *ops.Metrics
	require.NotPanics(t, func() {
		m.ObserveSync("usage", ops.SyncOK, 3)
		m.ObserveSyncRetry()
		m.ObserveDelivery(ops.DeliveryDelivered)
		m.SetQueueDepth(func(context.Context) (map[string]float64, error) { return nil, nil })
		require.Nil(t, m.Registry())
	})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	rec := httptest.NewRecorder()
	m.Middleware(next).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	require.Equal(t, http.StatusTeapot, rec.Code)
	rec = httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusNotFound, rec.Code)
}

func TestIndependentRegistries(t *testing.T) {
	t.Parallel()
	a, b := ops.NewMetrics(), ops.NewMetrics()
	a.ObserveSyncRetry()
	require.Contains(t, scrape(t, a), "aiusage_sync_retries_total 1")
	require.Contains(t, scrape(t, b), "aiusage_sync_retries_total 0")
	require.NotSame(t, a.Registry(), b.Registry())
}

func TestObserveTelemetry(t *testing.T) {
	t.Parallel()
	m := ops.NewMetrics()
	m.ObserveTelemetry("logs", 3, map[string]int{"unknown event": 2, "not counted": 0})
	m.ObserveTelemetry("logs", 0, nil)
	var nilM *ops.Metrics
	nilM.ObserveTelemetry("logs", 1, nil)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	require.Contains(t, body, `aiusage_telemetry_records_total{result="mapped",signal="logs"} 3`)
	require.Contains(t, body, `aiusage_telemetry_records_total{result="unknown event",signal="logs"} 2`)
	require.NotContains(t, body, `not counted`)
}
