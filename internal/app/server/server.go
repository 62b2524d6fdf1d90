// Package server is the composition root of the oversight service: the one
// place that builds its parts and wires them together. It owns
//
//   - the router: the common middleware (metrics first, the client's
//     address behind trusted proxies, the organisation API's security
//     headers, request ids, access log and panic recovery), /healthz,
//     /readyz and /metrics, and the answers to unknown paths and methods of
//     every area (the review-task API's error body under /review-tasks and
//     /webhooks, the organisation API's problem body everywhere else);
//   - the job queue: one River client over the service's database, with
//     every feature's workers, queues and periodic jobs;
//   - the metrics registry, given to the features that count.
//
// Each feature package (orgapi, reviewapi, sources, dashboard, telemetry, sso) does its
// one job and knows none of this. It is built from its Config, which names
// what it uses of the others (the organisation store, the review service) and
// of the root (a [riverjobs.Enqueuer] to queue its jobs, the *ops.Metrics to
// count in). It contributes through two small interfaces:
//
//   - [Feature]: Routes(chi.Router) registers its routes on the service's
//     router, behind the common middleware;
//   - [Background], for a feature with background work: Jobs(*riverjobs.Jobs)
//     registers its workers, its own queues and its periodic jobs.
//
// The features are built before the River client, since its workers are
// theirs; the Enqueuer they are given forwards to the client, which New
// opens once every feature has registered its jobs and before it returns,
// so nothing is wired after construction.
//
// A new feature adds a Config field here, is built in New beside the others,
// and joins the list of features New mounts; its routes and jobs need
// nothing more. See docs/design.md, "The service's composition root".
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/riverqueue/river"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/app/dashboard"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/orgapi"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/app/sso"
	"github.com/aiusage/kit/internal/app/telemetry"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/ops"
	"github.com/aiusage/kit/internal/infra/riverjobs"
	"github.com/aiusage/kit/internal/infra/sqldb"
)

// Feature is a part of the service that serves HTTP: it registers its
// routes on the service's router, behind the common middleware.
type Feature interface {
	Routes(chi.Router)
}

// Background is a feature with background work: it registers its workers,
// the queues of its own and its periodic jobs on the service's job queue.
type Background interface {
	Jobs(*riverjobs.Jobs)
}

// Config configures the service. DB, Orgs and Secrets are required; every
// other field has the default its comment gives.
//
// Review, Sources and Dashboard are the features' own settings. New fills
// in what the features share and the root owns: DB, Orgs, Secrets, People,
// Jobs, Metrics and Concurrency always, Logger where unset.
type Config struct {
	// DB is the service's database, migrated by the features.
	DB *sqldb.DB
	// Orgs is the organisation store on DB (organisations, keys, agents,
	// instructions), which every feature authenticates with.
	Orgs *org.Store
	// Secrets encrypts the secrets the features store.
	Secrets *keyring.Keyring
	// Logger logs requests, jobs and 5xx causes. Default: nothing.
	Logger *slog.Logger
	// People are the users who sign in to the dashboard. Default: a
	// people.Store on DB whose one-time passwords last InviteTTL, whose
	// password sign-ins ask SSO whether the organisation requires single
	// sign-on. A People given here is used as it is: its
	// Config.SSORequired is the caller's to set (Server.SSO is built by
	// New).
	People *people.Store
	// InviteTTL is how long a one-time password lasts, for the default
	// People (0: people's default).
	InviteTTL time.Duration
	// Concurrency bounds the requests in flight per API key and per
	// organisation on every API. Default: nil, no bound.
	Concurrency *httpx.Limiter
	// TrustedProxies name the clients' addresses and TLS. Default: nil,
	// nobody is trusted, every peer is the client.
	TrustedProxies *httpx.TrustedProxies
	// MetricsGuard guards GET /metrics on the service's address: it is
	// given the registry's handler and returns what answers there.
	// Default: nil, /metrics is not routed.
	MetricsGuard func(http.Handler) http.Handler
	// Mounts are more routes on the service's router (the demo's
	// provider), behind the common middleware.
	Mounts []func(chi.Router)
	// Readiness adds migration components to /readyz, beside the
	// features'.
	Readiness map[string]fs.FS
	// PollInterval is how often the job queue looks for jobs it was not
	// notified of: on SQLite, which has no notifications, every job
	// (default 50 ms); on PostgreSQL, which notifies inserts, the jobs that
	// became due (retries, snoozed jobs), when set (default River's, 1 s).
	PollInterval time.Duration
	// Workers is how many jobs of the default queue run at once in this
	// process: the periodic jobs. Default 10.
	Workers int

	// Review configures the review-task API.
	Review reviewapi.Config
	// Sources configures the sources and their collected data.
	Sources sources.Config
	// Dashboard configures the dashboard's pages.
	Dashboard dashboard.Config
	// SSO configures single sign-on through the organisations' identity
	// providers (OpenID Connect); New fills in DB, Orgs, People, Secrets
	// and Logger (where unset), and gives the dashboard the service.
	SSO sso.Config
	// Telemetry configures the telemetry endpoint (OTLP over HTTP at
	// /v1/metrics, /v1/logs and /v1/traces).
	Telemetry telemetry.Config
}

// River's timeouts for the whole queue: jobTimeout bounds a job whose
// worker sets no timeout of its own, and a job left running by a process
// that died is worked again after rescueAfter, not after River's default
// hour.
const (
	jobTimeout  = 40 * time.Second
	rescueAfter = 2*time.Minute + 10*time.Second
)

// Server is the whole oversight service over one database: the organisation
// API, the people who sign in to the dashboard, the review-task API, the
// sources and their collected data, health and metrics, and the job queue
// that works for them.
type Server struct {
	people  *people.Store
	sso     *sso.Service
	review  *reviewapi.Service
	sources *sources.Service
	tel     *telemetry.Service
	metrics *ops.Metrics
	jobs    riverjobs.Client
	handler http.Handler
}

// New builds the service: its features (applying their migrations), its
// router and its job queue (applying River's migrations). Call Start to
// work jobs, and Close when done.
func New(ctx context.Context, c Config) (*Server, error) {
	if c.DB == nil || c.Orgs == nil || c.Secrets == nil {
		return nil, errors.New("server: Config.DB, Orgs and Secrets are required")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	metrics := ops.NewMetrics()
	metrics.SetQueueDepth(func(ctx context.Context) (map[string]float64, error) { return riverjobs.Depth(ctx, c.DB) })
	q := &queue{}
	var single *sso.Service // built below, after the people it signs in; People asks it only once serving
	ppl := c.People
	if ppl == nil {
		var err error
		if ppl, err = people.New(ctx, people.Config{DB: c.DB, Orgs: c.Orgs, OneTimePasswordTTL: c.InviteTTL,
			SSORequired: func(ctx context.Context, orgID string) (bool, error) { return single.Required(ctx, orgID) }}); err != nil {
			return nil, err
		}
	}
	ssoc := c.SSO
	ssoc.DB, ssoc.Orgs, ssoc.People, ssoc.Secrets = c.DB, c.Orgs, ppl, c.Secrets
	ssoc.Logger = cmp.Or(ssoc.Logger, c.Logger)
	single, err := sso.New(ctx, ssoc)
	if err != nil {
		return nil, fmt.Errorf("sso: %w", err)
	}
	review, src, err := newFeatures(ctx, c, q, metrics, ppl)
	if err != nil {
		return nil, err
	}
	orgAPI, err := orgapi.NewHandler(c.Orgs, orgapi.WithLogger(c.Logger), orgapi.WithConcurrency(c.Concurrency))
	if err != nil {
		src.Close()
		return nil, err
	}
	dc := c.Dashboard
	dc.People, dc.Orgs, dc.Review, dc.Sources, dc.SSO, dc.AllowPrivateIdP = ppl, c.Orgs, review, src, single, c.SSO.AllowPrivate
	dc.Logger = cmp.Or(dc.Logger, c.Logger)
	var tel *telemetry.Service // built below; the dashboard calls it only once serving
	dc.PricesChanged = func(ctx context.Context, orgID string) error { return tel.Reprice(ctx, orgID) }
	dash, err := dashboard.New(dc)
	if err != nil {
		src.Close()
		return nil, err
	}
	tc := c.Telemetry
	tc.DB, tc.Orgs, tc.Views, tc.Jobs, tc.Metrics, tc.Concurrency = c.DB, c.Orgs, views{src}, q, metrics, c.Concurrency
	tc.Prices = prices{c.Orgs, src}
	tc.Logger = cmp.Or(tc.Logger, c.Logger)
	tel, err = telemetry.New(ctx, tc)
	if err != nil {
		src.Close()
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	features := []Feature{orgAPI, review, src, dash}
	jobs := riverjobs.NewJobs(cmp.Or(c.Workers, 10))
	for _, f := range append(features, tel) {
		if b, ok := f.(Background); ok {
			b.Jobs(jobs)
		}
	}
	if q.client, err = riverjobs.Open(ctx, c.DB, jobs.Config(riverConfig(c))); err != nil {
		src.Close()
		return nil, err
	}
	s := &Server{people: ppl, sso: single, review: review, sources: src, tel: tel, metrics: metrics, jobs: q.client}
	s.handler = s.router(c, orgAPI, tel, features)
	return s, nil
}

// newFeatures builds the features with background work, on the job queue q.
func newFeatures(ctx context.Context, c Config, q *queue, metrics *ops.Metrics, ppl *people.Store) (*reviewapi.Service, *sources.Service, error) {
	sc := c.Sources
	sc.DB, sc.Orgs, sc.Secrets, sc.Concurrency, sc.Jobs, sc.Metrics = c.DB, c.Orgs, c.Secrets, c.Concurrency, q, metrics
	sc.Logger = cmp.Or(sc.Logger, c.Logger)
	src, err := sources.New(ctx, sc)
	if err != nil {
		return nil, nil, fmt.Errorf("sources: %w", err)
	}
	rc := c.Review
	rc.DB, rc.Orgs, rc.Secrets, rc.People, rc.Concurrency, rc.Jobs, rc.Metrics = c.DB, c.Orgs, c.Secrets, ppl, c.Concurrency, q, metrics
	rc.Logger = cmp.Or(rc.Logger, c.Logger)
	review, err := reviewapi.New(ctx, rc)
	if err != nil {
		src.Close()
		return nil, nil, err
	}
	return review, src, nil
}

// router is the service's router: the common middleware, operations, and
// under "/" the features' routes with the 404 and 405 of each area.
func (s *Server) router(c Config, orgAPI *orgapi.Handler, tel *telemetry.Service, features []Feature) http.Handler {
	components := map[string]fs.FS{
		org.Component: org.Migrations(), people.Component: people.Migrations(), reviewapi.Component: reviewapi.Migrations(),
		sources.Component: sources.Migrations(), sqlstore.Component: sqlstore.Migrations(), telemetry.Component: telemetry.Migrations(),
		sso.Component: sso.Migrations(),
	}
	for k, v := range c.Readiness {
		components[k] = v
	}
	r := chi.NewRouter()
	r.Use(s.metrics.Middleware) // first, so that every answer is measured
	// Where each request came from, and whether over TLS: the peer, or
	// what a trusted proxy says.
	r.Use(c.TrustedProxies.Middleware)
	r.Group(ops.Health(ops.DBCheck(c.DB, components)))
	if c.MetricsGuard != nil {
		r.Method(http.MethodGet, "/metrics", c.MetricsGuard(s.metrics.Handler()))
	}
	// The telemetry endpoint authenticates Ingestion keys itself: its
	// routes sit beside the area of the organisation API's middleware,
	// which refuses every key but an API key.
	tel.Routes(r)
	api := chi.NewRouter()
	api.Use(orgAPI.Middleware()...)
	// The dashboard's pages sit at the root of the address, beside the
	// JSON APIs' paths.
	for _, f := range features {
		f.Routes(api)
	}
	for _, m := range c.Mounts {
		m(api)
	}
	api.NotFound(func(w http.ResponseWriter, req *http.Request) {
		if reviewapi.Owns(req.URL.Path) {
			reviewapi.NotFound(w, req)
			return
		}
		orgAPI.ServeHTTP(w, req) // its own 404 problem
	})
	api.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		if reviewapi.Owns(req.URL.Path) {
			reviewapi.MethodNotAllowed(api, w, req)
			return
		}
		orgapi.MethodNotAllowed(api, w, req)
	})
	r.Mount("/", api)
	return r
}

// riverConfig is the job queue's River configuration, before the features'
// workers, queues and periodic jobs.
func riverConfig(c Config) *river.Config {
	rc := &river.Config{
		Logger:               slog.New(warnOnly{c.Logger.Handler()}),
		JobTimeout:           jobTimeout,
		RescueStuckJobsAfter: rescueAfter,
	}
	poll := c.PollInterval
	if c.DB.Dialect == sqldb.SQLite {
		// SQLite has no notifications: River finds new jobs by polling.
		// PostgreSQL notifies River of each insert.
		poll = cmp.Or(poll, 50*time.Millisecond)
	}
	if poll > 0 {
		rc.FetchPollInterval = poll
		rc.FetchCooldown = min(poll, river.FetchCooldownDefault)
	}
	return rc
}

// Handler returns the service's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// MetricsHandler serves the metrics registry without a guard, for a
// listener of its own.
func (s *Server) MetricsHandler() http.Handler { return s.metrics.Handler() }

// People returns the users who sign in to the dashboard.
func (s *Server) People() *people.Store { return s.people }

// SSO returns the single sign-on service.
func (s *Server) SSO() *sso.Service { return s.sso }

// Review returns the review-task API's service.
func (s *Server) Review() *reviewapi.Service { return s.review }

// Sources returns the sources' service.
func (s *Server) Sources() *sources.Service { return s.sources }

// Telemetry returns the telemetry endpoint's service.
func (s *Server) Telemetry() *telemetry.Service { return s.tel }

// Start starts working jobs in the background; it returns at once. Stop or
// cancelling ctx stops it.
func (s *Server) Start(ctx context.Context) error { return s.jobs.Start(ctx) }

// Stop stops working jobs, letting those running finish until ctx ends.
func (s *Server) Stop(ctx context.Context) error { return s.jobs.Stop(ctx) }

// Close releases the job queue's connections and the sources' store. Call
// it after Stop.
func (s *Server) Close() {
	s.jobs.Close()
	s.sources.Close()
}

// views gives the telemetry endpoint the sources' collected views: each
// Ingestion key is a telemetry source.
type views struct{ src *sources.Service }

func (v views) EnsureTelemetry(ctx context.Context, orgID, sourceID, name string) error {
	return v.src.EnsureTelemetry(ctx, orgID, sourceID, name)
}

func (v views) TelemetryReceived(ctx context.Context, sourceID string, at time.Time) error {
	return v.src.TelemetryReceived(ctx, sourceID, at)
}

func (v views) ConsumerStore() consumer.Store { return v.src.Store() }

// prices is the [telemetry.Prices] of the service: the price table of the
// organisation of a telemetry source.
type prices struct {
	orgs *org.Store
	src  *sources.Service
}

func (p prices) SourcePrices(ctx context.Context, sourceID string) (map[string]org.Price, error) {
	orgID, err := p.src.OrganisationOf(ctx, sourceID)
	if err != nil {
		return nil, err
	}
	return p.orgs.ModelPrices(ctx, orgID)
}

// queue is the [riverjobs.Enqueuer] the features are built with: it
// forwards to the River client, which New opens once every feature has
// registered its jobs, before it returns the service.
type queue struct{ client riverjobs.Client }

func (q *queue) Enqueue(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) error {
	if q.client == nil {
		return errors.New("server: the job queue is not open yet")
	}
	return q.client.Enqueue(ctx, args, opts)
}

// warnOnly passes on records of level Warn and above: River reports its
// routine (start, poll mode, leadership) at Info, which is noise in the
// service's log.
type warnOnly struct{ slog.Handler }

func (h warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnOnly) WithAttrs(a []slog.Attr) slog.Handler { return warnOnly{h.Handler.WithAttrs(a)} }
func (h warnOnly) WithGroup(n string) slog.Handler      { return warnOnly{h.Handler.WithGroup(n)} }
