package ops

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcomes of a webhook delivery attempt, the values of the outcome label of
// aiusage_webhook_deliveries_total.
const (
	DeliveryDelivered = "delivered" // the receiver accepted the event
	DeliveryRetry     = "retry"     // the attempt failed and will be retried
	DeliveryFailed    = "failed"    // the attempt failed and the delivery was given up
)

// Outcomes of a sync run, for [Metrics.ObserveSync]. Callers may use other
// values, but should keep the set small and fixed.
const (
	SyncOK     = "ok"
	SyncFailed = "failed"
)

// RouteUnmatched is the route label of requests that matched no route.
const RouteUnmatched = "unmatched"

// QueueDepthTimeout bounds each call of the queue-depth callback set with
// [Metrics.SetQueueDepth], so a slow database cannot stall a scrape.
const QueueDepthTimeout = 2 * time.Second

// Metrics holds the Prometheus metrics of one process, in a registry of its
// own (not prometheus.DefaultRegisterer), which also holds the Go runtime and
// process collectors. Build it with [NewMetrics]; serve it with
// [Metrics.Handler]. A Metrics is safe for concurrent use.
//
// Every method is safe on a nil *Metrics and then does nothing, so a
// feature given no Metrics (a test, an admin command) reports
// unconditionally:
//
//	cfg.Metrics.ObserveDelivery(ops.DeliveryDelivered)
//
// The families are:
//
//	aiusage_http_requests_total{route,method,status}       counter
//	aiusage_http_request_duration_seconds{route,method}    histogram
//	aiusage_sync_runs_total{resource,outcome}              counter
//	aiusage_sync_records_total{resource}                   counter
//	aiusage_sync_retries_total                             counter
//	aiusage_webhook_deliveries_total{outcome}              counter (delivered, retry, failed)
//	aiusage_telemetry_records_total{signal,result}         counter (mapped, or why a record maps to nothing)
//	aiusage_queue_jobs{state}                              gauge, from [Metrics.SetQueueDepth]
//
// The route label is the chi route pattern ("/organisations/{organisationId}/agents"),
// never the raw path, so its cardinality is bounded by the number of routes.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	syncRuns     *prometheus.CounterVec
	syncRecords  *prometheus.CounterVec
	syncRetries  prometheus.Counter
	deliveries   *prometheus.CounterVec
	telemetry    *prometheus.CounterVec
	queue        *queueCollector
}

// NewMetrics returns a Metrics with a fresh registry holding every family
// listed on [Metrics] plus the Go runtime (go_*) and process (process_*)
// collectors. Each call returns an independent set, so tests can build as
// many as they like.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aiusage_http_requests_total",
			Help: "HTTP requests served, by route pattern, method and status code.",
		}, []string{"route", "method", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "aiusage_http_request_duration_seconds",
			Help:    "Time to serve HTTP requests, by route pattern and method.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method"}),
		syncRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aiusage_sync_runs_total",
			Help: "Sync runs completed, by resource and outcome.",
		}, []string{"resource", "outcome"}),
		syncRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aiusage_sync_records_total",
			Help: "Records synced, by resource.",
		}, []string{"resource"}),
		syncRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "aiusage_sync_retries_total",
			Help: "Sync requests retried after a transient failure.",
		}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aiusage_webhook_deliveries_total",
			Help: "Webhook delivery attempts, by outcome: delivered, retry (failed, will be retried) or failed (given up).",
		}, []string{"outcome"}),
		telemetry: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aiusage_telemetry_records_total",
			Help: "OTLP records accepted by the telemetry endpoint (log records, data points, spans), by signal and result: mapped, or why they map to nothing.",
		}, []string{"signal", "result"}),
		queue: &queueCollector{desc: prometheus.NewDesc("aiusage_queue_jobs",
			"Jobs in the job queue, by state, read at scrape time.", []string{"state"}, nil)},
	}
	// Export every delivery outcome from the start, so rate() and alerts
	// work before the first failure.
	for _, o := range []string{DeliveryDelivered, DeliveryRetry, DeliveryFailed} {
		m.deliveries.WithLabelValues(o)
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.httpRequests, m.httpDuration,
		m.syncRuns, m.syncRecords, m.syncRetries,
		m.deliveries, m.telemetry, m.queue,
	)
	return m
}

// Registry returns the registry behind m, to register further collectors
// (nil for a nil m).
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// Handler serves the metrics in the Prometheus exposition format, for
// GET /metrics. A collector that fails (the queue-depth callback, say) is
// left out of the answer, which is still 200 with the other families; the
// failures are counted in promhttp_metric_handler_errors_total. On a nil m it
// answers 404.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:      m.reg,
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// ObserveSync counts one completed sync run of resource (a small, fixed set
// such as "usage", "users") with outcome ([SyncOK], [SyncFailed]) and the
// records it synced (negative counts are ignored).
func (m *Metrics) ObserveSync(resource, outcome string, records int) {
	if m == nil {
		return
	}
	m.syncRuns.WithLabelValues(resource, outcome).Inc()
	c := m.syncRecords.WithLabelValues(resource)
	if records > 0 {
		c.Add(float64(records))
	}
}

// ObserveSyncRetry counts one retried sync request.
func (m *Metrics) ObserveSyncRetry() {
	if m == nil {
		return
	}
	m.syncRetries.Inc()
}

// TelemetryMapped is the result label of the telemetry records that mapped
// to something stored.
const TelemetryMapped = "mapped"

// ObserveTelemetry counts one accepted export request of signal
// ("metrics", "logs" or "traces"): under [TelemetryMapped] what it mapped
// to (usage, events and prompts), and under each reason (a small, fixed set)
// the records that map to nothing. Counts of zero or less are ignored.
func (m *Metrics) ObserveTelemetry(signal string, mapped int, unmapped map[string]int) {
	if m == nil {
		return
	}
	if mapped > 0 {
		m.telemetry.WithLabelValues(signal, TelemetryMapped).Add(float64(mapped))
	}
	for reason, n := range unmapped {
		if n > 0 {
			m.telemetry.WithLabelValues(signal, reason).Add(float64(n))
		}
	}
}

// ObserveDelivery counts one webhook delivery attempt by outcome:
// [DeliveryDelivered], [DeliveryRetry] or [DeliveryFailed]. Use
// [DeliveryOutcome] to map a delivery state to an outcome.
func (m *Metrics) ObserveDelivery(outcome string) {
	if m == nil {
		return
	}
	m.deliveries.WithLabelValues(outcome).Inc()
}

// DeliveryOutcome maps the state a delivery is left in after an attempt to
// the outcome label: "pending" (to be retried) is [DeliveryRetry];
// "delivered" and "failed" are themselves; anything else is returned as is.
func DeliveryOutcome(state string) string {
	if state == "pending" {
		return DeliveryRetry
	}
	return state
}

// SetQueueDepth sets the callback that reports the number of jobs by state
// (for River: available, scheduled, running, retryable, ...) as
// aiusage_queue_jobs{state}. It is called at every scrape with a context
// bounded by [QueueDepthTimeout]; when it fails, the family is left out of
// that scrape. A nil f (the default) exports no queue depth. Replacing the
// callback is safe at any time.
func (m *Metrics) SetQueueDepth(f func(ctx context.Context) (map[string]float64, error)) {
	if m == nil {
		return
	}
	m.queue.f.Store(&f)
}

// queueCollector exports aiusage_queue_jobs from a callback at scrape time.
type queueCollector struct {
	desc *prometheus.Desc
	f    atomic.Pointer[func(ctx context.Context) (map[string]float64, error)]
	mu   sync.Mutex // one callback at a time: concurrent scrapes do not pile up queries
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.f.Load()
	if p == nil || *p == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), QueueDepthTimeout)
	defer cancel()
	depth, err := (*p)(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for state, n := range depth {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, n, state)
	}
}

// Middleware records every request in aiusage_http_requests_total and
// aiusage_http_request_duration_seconds, labelled with the chi route pattern
// that served it (read after the handler ran; [RouteUnmatched] when none),
// the method (standard methods only, others as "OTHER") and the status code
// (500 when the handler panicked before writing one).
//
// Use it either inside a chi router, first or near the top (r.Use(m.Middleware)),
// or around a chi router (m.Middleware(router)): in the latter case it
// creates the chi route context the router then fills in. On a nil m it
// returns next unchanged.
func (m *Metrics) Middleware(next http.Handler) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rctx := chi.RouteContext(r.Context())
		if rctx == nil {
			rctx = chi.NewRouteContext()
			r = r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, rctx))
		}
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		completed := false
		defer func() {
			status := ww.Status()
			switch {
			case !completed && status == 0:
				status = http.StatusInternalServerError
			case status == 0:
				status = http.StatusOK // nothing written: net/http sends 200
			}
			route := rctx.RoutePattern()
			if route == "" {
				route = RouteUnmatched
			}
			method := methodLabel(r.Method)
			m.httpRequests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
			m.httpDuration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(ww, r)
		completed = true
	})
}

// methodLabel bounds the method label to the standard methods.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}
