package telemetry

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/telemetry/otlpwire"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/ops"
	"github.com/aiusage/kit/internal/infra/riverjobs"
	"github.com/aiusage/kit/internal/infra/sqldb"
)

// Component is the name under which the migrations of this package are
// recorded in schema_migrations.
const Component = "telemetry"

//go:embed migrations
var migrationFS embed.FS

// Migrations returns the embedded migrations of this package (one directory
// per dialect).
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err) // the directory is embedded
	}
	return sub
}

// DefaultMaxBytes is the default body limit of one export request, before
// and after decompression.
const DefaultMaxBytes = otlpwire.DefaultMaxBytes

// Views is what the service writes into: the collected views of the
// organisations' sources. The composition root implements it with the
// sources service.
type Views interface {
	// EnsureTelemetry makes sure organisation orgID has the telemetry
	// source sourceID named name; nil when it exists already. It is safe
	// for concurrent use, also by several processes.
	EnsureTelemetry(ctx context.Context, orgID, sourceID, name string) error
	// TelemetryReceived records that the telemetry source sourceID
	// accepted a request at time at (its "last received"), once a
	// request; it never moves the time back.
	TelemetryReceived(ctx context.Context, sourceID string, at time.Time) error
	// ConsumerStore returns the consumer store of the collected views,
	// whose source names are the source ids.
	ConsumerStore() consumer.Store
}

// Prices are the organisations' price tables. The composition root
// implements it with the organisation store.
type Prices interface {
	// SourcePrices returns the prices, by exact model string, of the
	// organisation of telemetry source sourceID; empty when it has none.
	SourcePrices(ctx context.Context, sourceID string) (map[string]org.Price, error)
}

// Config configures a [Service].
type Config struct {
	// DB is the service's database. Required.
	DB *sqldb.DB
	// Orgs authenticates the Ingestion keys. Required.
	Orgs *org.Store
	// Views are the collected views telemetry becomes records of. Required.
	Views Views
	// Prices are the price tables by which a rollup computes the cost of
	// a bucket from its tokens, where its organisation has a price for the
	// bucket's model. Default: nil; every cost is the tools' estimate.
	// A price applies to the hours rolled up after it changed.
	Prices Prices
	// Jobs queues the rollups of usage into buckets on the service's job
	// queue, whose River client works them with the workers of
	// [Service.Jobs]. Default: nil; nothing is queued, and the buckets are
	// computed only by [Service.RollupAll] (tests).
	Jobs riverjobs.Enqueuer
	// Metrics counts what is accepted and what maps to nothing. Default:
	// nil, nothing counted.
	Metrics *ops.Metrics
	// Logger logs failures. Default: nothing.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// MaxBytes is the largest export request accepted, before and after
	// decompression. Default [DefaultMaxBytes] (20 MiB).
	MaxBytes int64
	// Concurrency bounds the requests in flight per key and per
	// organisation; share it with the other APIs of the service. Default:
	// nil, no bound.
	Concurrency *httpx.Limiter
	// RatePerKey is the rate limit of each Ingestion key, in requests a
	// second, a token bucket of RateBurst requests: a key past it is
	// answered 429 with Retry-After (Unavailable with RetryInfo over gRPC)
	// before its body is read, and the other keys are not slowed. Each
	// process counts its own requests. Default [DefaultRatePerKey]; a
	// negative rate turns the limit off.
	RatePerKey float64
	// RateBurst is the most requests a key may send at once after a quiet
	// spell. Default [DefaultRateBurst].
	RateBurst int
	// RollupInterval is how often the leader of the job queue looks for
	// hours left to compute (a change that arrived while a rollup of its
	// source ran). Default 10 s.
	RollupInterval time.Duration
}

// Service is the telemetry endpoint: OTLP over HTTP, authenticated by
// Ingestion keys, into each key's telemetry source.
type Service struct {
	cfg      Config
	db       *sqldb.DB
	log      *slog.Logger
	handlers map[string]http.Handler // by path
	// ensured holds the telemetry sources known to exist, by source id.
	ensured sync.Map
	// rollups serialises the rollups of one source in this process.
	rollups keyMutex
	// rate is the rate limit per key; nil when off.
	rate *rateLimiter
	// throttled counts the requests refused by rate and Concurrency; nil
	// without Metrics.
	throttled *prometheus.CounterVec
}

// New returns the Service, applying its migrations to cfg.DB. It returns an
// error naming the field when cfg is invalid.
func New(ctx context.Context, cfg Config) (*Service, error) {
	switch {
	case cfg.DB == nil:
		return nil, errors.New("telemetry: Config.DB is required")
	case cfg.Orgs == nil:
		return nil, errors.New("telemetry: Config.Orgs is required")
	case cfg.Views == nil:
		return nil, errors.New("telemetry: Config.Views is required")
	case cfg.MaxBytes < 0:
		return nil, fmt.Errorf("telemetry: Config.MaxBytes: %d is negative", cfg.MaxBytes)
	case cfg.RollupInterval < 0:
		return nil, fmt.Errorf("telemetry: Config.RollupInterval: %v is negative", cfg.RollupInterval)
	case math.IsNaN(cfg.RatePerKey) || math.IsInf(cfg.RatePerKey, 0):
		return nil, fmt.Errorf("telemetry: Config.RatePerKey: %v is not a number of requests a second", cfg.RatePerKey)
	case cfg.RateBurst < 0:
		return nil, fmt.Errorf("telemetry: Config.RateBurst: %d is negative", cfg.RateBurst)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.RatePerKey == 0 {
		cfg.RatePerKey = DefaultRatePerKey
	}
	if cfg.RateBurst == 0 {
		cfg.RateBurst = DefaultRateBurst
	}
	if cfg.RollupInterval == 0 {
		cfg.RollupInterval = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.DB.Migrate(ctx, Component, Migrations()); err != nil {
		return nil, fmt.Errorf("telemetry: migrate: %w", err)
	}
	throttled, err := throttleCounter(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("telemetry: metrics: %w", err)
	}
	s := &Service{cfg: cfg, db: cfg.DB, log: cfg.Logger, handlers: map[string]http.Handler{},
		rate: newRateLimiter(cfg.RatePerKey, cfg.RateBurst, cfg.Now), throttled: throttled}
	for _, sig := range []otlpwire.Signal{otlpwire.Metrics, otlpwire.Logs, otlpwire.Traces} {
		h, err := otlpwire.Handler(sig, otlpwire.Config{MaxBytes: cfg.MaxBytes, Ingest: s.ingest(sig),
			IngestParts: s.ingestParts(sig), Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		s.handlers[sig.Path()] = h
	}
	return s, nil
}

// Routes adds the endpoint's routes to r: POST /v1/metrics, /v1/logs and
// /v1/traces, each behind the Ingestion key's authentication. Register them
// where the organisation API's authentication does not run.
func (s *Service) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		// The common answers of the service's APIs: security headers, a
		// request id, the access log, and a panic answered 500.
		r.Use(httpx.SecurityHeaders, httpx.RequestID, httpx.AccessLog(s.log), httpx.Recover(s.writePanic))
		for path, h := range s.handlers {
			r.Handle(path, s.authenticate(h))
		}
	})
}

// writePanic answers a request whose handler panicked: a 500 whose cause
// stays in the log.
func (s *Service) writePanic(w http.ResponseWriter, r *http.Request, err error) {
	s.log.ErrorContext(r.Context(), "telemetry: request failed", "error", err, "request_id", httpx.RequestIDFrom(r.Context()))
	writeStatus(w, r, http.StatusInternalServerError, "internal error; the failure is logged on the server")
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC() }

// keyMutex is a mutex per key.
type keyMutex struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks key and returns its unlock.
func (k *keyMutex) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
