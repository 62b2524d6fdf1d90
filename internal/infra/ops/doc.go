// Package ops provides what every server of the kit needs to be operated:
// liveness and readiness probes (/healthz, /readyz, see [Health] and
// [DBCheck]) and Prometheus metrics (/metrics, see [Metrics]).
//
// A server wires it as follows (see [Metrics] for the metric families):
//
//	m := ops.NewMetrics() // given to the features that count, in their Config
//	m.SetQueueDepth(func(ctx context.Context) (map[string]float64, error) { ... })
//
//	r := chi.NewRouter()
//	r.Use(m.Middleware)
//	r.Group(ops.Health(ops.DBCheck(db, map[string]fs.FS{
//		reviewapi.Component: reviewapi.Migrations(),
//	})))
//	r.Method(http.MethodGet, "/metrics", m.Handler())
//	// ... the APIs' routes
//
// Every method of *Metrics is a no-op on a nil receiver, so code that may run
// without metrics (tests, libraries) calls them unconditionally.
package ops
