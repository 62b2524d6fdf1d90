package push

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/riverqueue/river"

	"github.com/aiusage/kit/internal/infra/riverjobs"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
	"github.com/aiusage/kit/spec/webhook"
)

// Component is the name under which the pusher's migrations are recorded.
const Component = "push"

//go:embed migrations
var migrationFS embed.FS

// Migrations returns the pusher's migrations, one directory per dialect.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFS, "migrations")
	return sub
}

// MaxBodyBytes is the largest body the pusher builds from several records:
// below the 5 MiB a receiver must accept, so that a delivery is never
// refused for its size. A single record larger than that travels alone.
const MaxBodyBytes = 4 << 20

// Config configures a [Pusher]. DatabaseURL, Source, Tenant, URL and Secret
// are required.
type Config struct {
	// DatabaseURL is the vendor's database, sqlite:PATH or postgres://...:
	// the pusher keeps its watermarks and River its queue there, in tables
	// of their own. It opens its own connections (on SQLite, River wants a
	// pool of one), so the database may well be the one Source reads.
	DatabaseURL string
	// Source is read for the records that changed.
	Source provider.DataSource
	// Tenant is the customer whose records are pushed.
	Tenant string
	// URL is the receiver's address, http or https.
	URL string
	// Secret signs every delivery: "whsec_" and the base64 of 24 to 64
	// bytes.
	Secret string
	// HTTPClient sends the deliveries; nil means a client with a 30-second
	// timeout. Either way, no redirect is followed: a 3xx answer is a
	// refused attempt, retried, whose error names where it pointed.
	HTTPClient *http.Client
	// Resources lists the resources pushed, of [spec.PushResources]; nil
	// means all four. A resource the Source answers [provider.ErrUnsupported]
	// for is skipped.
	Resources []string
	// MaxRecords is the most records one delivery holds, 1 to
	// spec.MaxPushRecords; 0 means spec.MaxPushRecords.
	MaxRecords int
	// MaxAttempts is how many times a delivery is tried before it is given
	// up; 0 means 10.
	MaxAttempts int
	// RetryBase is the wait before the second attempt; each further wait
	// doubles, up to RetryMax, and is drawn at random between half of it and
	// all of it. 0 means 1 second and 10 minutes.
	RetryBase, RetryMax time.Duration
	// Lookback, when positive, makes every scan of conversations,
	// assistants and events start that long before the watermark, so a
	// record a provider committed late, with a time behind records already
	// pushed, is still pushed; the records of that window are pushed again on
	// every scan, which changes nothing at the receiver. 0 starts right after
	// the watermark: such a record is then left to the receiver's
	// reconciliation walk.
	Lookback time.Duration
	// UsageBackfill is how far back the first scan pushes usage buckets; 0
	// means 30 days.
	UsageBackfill time.Duration
	// PollInterval is how often River looks for due deliveries on SQLite,
	// which has no notifications; 0 means 200 milliseconds.
	PollInterval time.Duration
	// Workers is how many deliveries are sent at once; 0 means 4.
	Workers int
	// Now is the clock of the usage windows; nil means time.Now. Deliveries
	// are stamped with the wall clock, which the receiver checks.
	Now func() time.Time
	// Logger receives a line per given-up delivery; nil discards.
	Logger *slog.Logger
}

// Pusher queues and sends deliveries for one tenant to one receiver. It is
// safe for concurrent use.
type Pusher struct {
	cfg    Config
	db     *sqldb.DB
	target string // identifies the tenant and the receiver in the watermarks
	queue  string
	jobs   riverjobs.Client
	client *http.Client
}

// New checks cfg, opens the database at cfg.DatabaseURL, applies the
// pusher's migrations and River's to it and returns a Pusher that queues
// deliveries; [Pusher.Start] sends them. Close releases the connections.
func New(ctx context.Context, cfg Config) (_ *Pusher, err error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	db, err := sqldb.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("push: DatabaseURL: %w", err)
	}
	defer func() {
		if err != nil {
			_ = db.Close()
		}
	}()
	if err := db.Migrate(ctx, Component, Migrations()); err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	p := &Pusher{cfg: cfg, db: db, client: cfg.HTTPClient}
	p.target = cfg.Tenant + " " + cfg.URL
	sum := sha256.Sum256([]byte(p.target))
	// A queue per target: deliveries queued for another receiver or
	// tenant, by an earlier configuration, are never sent here.
	p.queue = "aiusage_push_" + hex.EncodeToString(sum[:8])
	if p.client == nil {
		p.client = &http.Client{Timeout: 30 * time.Second}
	}
	// A redirect is an answer, never followed: a 307 would re-send the
	// records to wherever it points, and a 302 would turn the POST into a
	// GET whose 2xx acknowledged a delivery that never arrived.
	noRedirects := *p.client
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p.client = &noRedirects
	workers := river.NewWorkers()
	river.AddWorker(workers, &deliveryWorker{p: p})
	rc := &river.Config{
		ID:                   processID(),
		Workers:              workers,
		Queues:               map[string]river.QueueConfig{p.queue: {MaxWorkers: cfg.Workers}},
		Logger:               slog.New(slog.DiscardHandler),
		JobTimeout:           p.timeout() + 10*time.Second,
		RescueStuckJobsAfter: p.timeout() + time.Minute,
		MaxAttempts:          cfg.MaxAttempts,
	}
	if db.Dialect == sqldb.SQLite {
		rc.FetchPollInterval = cfg.PollInterval
		rc.FetchCooldown = min(cfg.PollInterval, river.FetchCooldownDefault)
	}
	jobs, err := riverjobs.Open(ctx, db, rc)
	if err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	p.jobs = jobs
	return p, nil
}

func (c *Config) check() error {
	var missing []string
	if c.DatabaseURL == "" {
		missing = append(missing, "DatabaseURL")
	}
	if c.Source == nil {
		missing = append(missing, "Source")
	}
	if c.Tenant == "" {
		missing = append(missing, "Tenant")
	}
	if c.URL == "" {
		missing = append(missing, "URL")
	}
	if c.Secret == "" {
		missing = append(missing, "Secret")
	}
	if len(missing) > 0 {
		return fmt.Errorf("push: Config lacks %v", missing)
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("push: Config.URL %q is not an http or https URL", c.URL)
	}
	if _, err := webhook.Sign(c.Secret, "msg_check", time.Unix(0, 0), nil); err != nil {
		return fmt.Errorf("push: Config.Secret: %w", err)
	}
	if c.Resources == nil {
		c.Resources = spec.PushResources
	}
	for _, r := range c.Resources {
		if _, ok := spec.PushRecordSchema(r); !ok {
			return fmt.Errorf("push: Config.Resources: unknown resource %q, want any of %v", r, spec.PushResources)
		}
	}
	if c.MaxRecords < 0 || c.MaxRecords > spec.MaxPushRecords {
		return fmt.Errorf("push: Config.MaxRecords %d is not between 1 and %d", c.MaxRecords, spec.MaxPushRecords)
	}
	setDefault(&c.MaxRecords, spec.MaxPushRecords)
	if c.Lookback < 0 {
		return errors.New("push: Config.Lookback must not be negative")
	}
	if c.MaxAttempts < 0 || c.RetryBase < 0 || c.RetryMax < 0 || c.UsageBackfill < 0 || c.PollInterval < 0 || c.Workers < 0 {
		return errors.New("push: Config: MaxAttempts, RetryBase, RetryMax, UsageBackfill, PollInterval and Workers must not be negative")
	}
	setDefault(&c.MaxAttempts, 10)
	setDefault(&c.RetryBase, time.Second)
	setDefault(&c.RetryMax, 10*time.Minute)
	setDefault(&c.UsageBackfill, 30*24*time.Hour)
	setDefault(&c.PollInterval, 200*time.Millisecond)
	setDefault(&c.Workers, 4)
	if c.RetryMax < c.RetryBase {
		return fmt.Errorf("push: Config.RetryMax %s is shorter than RetryBase %s", c.RetryMax, c.RetryBase)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

func setDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// Start starts sending the queued deliveries in the background; it returns
// at once. [Pusher.Stop] stops it. Deliveries that a pusher of this host
// killed mid-attempt (SIGKILL, a crash) left running are taken over first
// and sent at once; those of a process on another host, which cannot be
// known dead, are sent again once River gives them up, a minute after the
// attempt's timeout (90 seconds with the default HTTP client).
func (p *Pusher) Start(ctx context.Context) error {
	n, err := p.takeOver(ctx)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	if n > 0 {
		p.cfg.Logger.Info("push: took over the deliveries a killed process left running", "deliveries", n)
	}
	return p.jobs.Start(ctx)
}

// Stop stops sending, letting the attempts in flight end; what is still
// queued is sent after the next Start, by this process or another.
func (p *Pusher) Stop(ctx context.Context) error { return p.jobs.Stop(ctx) }

// Close releases the pusher's connections to the database. Call it after
// Stop.
func (p *Pusher) Close() {
	p.jobs.Close()
	_ = p.db.Close()
}

// newMessageID returns a new webhook-id: "msg_" and 26 hex digits.
func newMessageID() string {
	b := make([]byte, 13)
	_, _ = rand.Read(b)
	return "msg_" + hex.EncodeToString(b)
}

// Run starts the pusher and scans every interval, starting at once, until
// ctx is done; then it stops sending and returns nil. A failed scan is
// logged and tried again at the next tick: the watermarks keep what was
// queued.
func (p *Pusher) Run(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		return fmt.Errorf("push: Run: interval %s is not positive", every)
	}
	if err := p.Start(ctx); err != nil {
		return fmt.Errorf("push: %w", err)
	}
	defer func() { _ = p.Stop(context.WithoutCancel(ctx)) }()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := p.Scan(ctx); err != nil && ctx.Err() == nil {
			p.cfg.Logger.Error("push: scan failed; trying again at the next tick", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
