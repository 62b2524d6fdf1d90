package reviewapi

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/riverqueue/river"

	"github.com/aiusage/kit/internal/app/orgapi"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/riverjobs"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/policy"
)

//go:embed migrations
var migrationFS embed.FS

// Component is the name under which the store's migrations are recorded.
const Component = "reviewapi"

// Migrations returns the embedded migrations, for readiness checks.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err)
	}
	return sub
}

// DefaultReviewTimeout is how long a task waits for a person before the
// review timeout decides it, unless the organisation sets another.
const DefaultReviewTimeout = 24 * time.Hour

// Config configures a [Service]. DB and Orgs are required; every other field
// has the default its comment gives.
type Config struct {
	// DB is the service's database, shared with Orgs.
	DB *sqldb.DB
	// Orgs authenticates keys and gives the agents' instructions.
	Orgs *orgapi.Store
	// Secrets encrypts the webhooks' signing secrets in the database (see
	// secrets.go). Required; every process sharing DB must hold the keys of
	// the rows it reads.
	Secrets *keyring.Keyring
	// People are the organisations' users, of whom the Reviewers and
	// Administrators decide tasks. Default: a people.Store on DB.
	People *people.Store
	// Policy configures evaluation (the semantic matcher, the redaction
	// mark, the time budget of one evaluation). Default: policy's defaults
	// (the built-in lexical matcher, a budget of 2 s). A task whose
	// evaluation overruns the budget waits for a person (decision reason
	// budget).
	Policy policy.Options
	// AllowPrivateWebhooks lets webhook URLs be http and resolve to
	// private, loopback and link-local addresses: for local use only.
	AllowPrivateWebhooks bool
	// Resolver resolves webhook hosts at registration. Default:
	// net.DefaultResolver.
	Resolver *net.Resolver
	// ReviewTimeout is the default review timeout. Default 24 h.
	ReviewTimeout time.Duration
	// RetrySchedule is the wait before each retry of a webhook delivery.
	// Default DefaultRetrySchedule (about 5 s, 5 min, 30 min, 2 h, 5 h,
	// 10 h, 10 h).
	RetrySchedule []time.Duration
	// DeliveryTimeout bounds one delivery attempt. Default 10 s.
	DeliveryTimeout time.Duration
	// SweepInterval is how often timeouts are applied and lost work is
	// picked up again. Default 30 s.
	SweepInterval time.Duration
	// NoSweepOnStart leaves out the sweep the job queue runs once it starts
	// (on PostgreSQL, once a leader is elected, which may take seconds):
	// for tests that move a clock and sweep themselves, and count what
	// their own sweep did.
	NoSweepOnStart bool
	// PollInterval is how often the job queue looks for jobs it was not
	// notified of: on SQLite, which has no notifications, every job (default
	// 50 ms); on PostgreSQL, which notifies inserts, the jobs that became due
	// (retries, snoozed deliveries), when set (default River's, 1 s).
	PollInterval time.Duration
	// Workers is how many jobs of the default queue run at once in this
	// process: the sweep and the schedules of other components. Default 10.
	Workers int
	// DeliveryWorkers is how many webhook deliveries run at once in this
	// process, on a queue of their own (QueueDeliveries). Default 20.
	DeliveryWorkers int
	// EvaluationWorkers is how many queued evaluations run at once in this
	// process, on a queue of their own (QueueEvaluations). Default 5.
	EvaluationWorkers int
	// OrgDeliveryLimit is how many deliveries of one organisation run at
	// once in this process; the organisation's other deliveries wait
	// (snoozed) while the other organisations' are worked. Default 4; it
	// should stay well below DeliveryWorkers.
	OrgDeliveryLimit int
	// FailingAfter is how many consecutive failed attempts make a webhook
	// failing: its attempts are then bounded by FailingDeliveryTimeout and
	// its retries wait four times as long (at most the schedule's longest
	// wait), until an attempt succeeds. Default 3.
	FailingAfter int
	// FailingDeliveryTimeout bounds one attempt to a failing webhook.
	// Default 2 s (never more than DeliveryTimeout).
	FailingDeliveryTimeout time.Duration
	// Queues are more job queues, for the jobs of other components
	// (AddWorkers) that ask for queues of their own.
	Queues map[string]river.QueueConfig
	// InsertOnly makes a service that queues jobs but never works them: the
	// admin commands, which leave the work to the running service.
	InsertOnly bool
	// AddWorkers, when set, registers more River workers on the service's
	// job queue, for other components of the service that share it (the
	// consumer's scheduled syncs).
	AddWorkers func(*river.Workers)
	// Concurrency bounds the requests in flight per API key and per
	// organisation (share one Limiter among the APIs of a service); a
	// request over the bound is 429 RATE_LIMIT_EXCEEDED with Retry-After.
	// Default: nil, no bound.
	Concurrency *httpx.Limiter
	// PeriodicJobs are more periodic jobs for the queue (run by one process
	// of those sharing a database, its leader).
	PeriodicJobs []*river.PeriodicJob
	// Now is the clock of state changes, deadlines and rate limits.
	// Default time.Now.
	Now func() time.Time
	// Logger logs 5xx errors, jobs and deliveries. Default: nothing.
	Logger *slog.Logger
}

func (c *Config) withDefaults() (*Config, error) {
	out := *c
	switch {
	case out.DB == nil:
		return nil, errors.New("reviewapi: Config.DB is required")
	case out.Orgs == nil:
		return nil, errors.New("reviewapi: Config.Orgs is required")
	case out.Secrets == nil:
		return nil, fmt.Errorf("reviewapi: Config.Secrets is required: %w", keyring.ErrNoKeyring)
	}
	if out.Resolver == nil {
		out.Resolver = net.DefaultResolver
	}
	if out.ReviewTimeout == 0 {
		out.ReviewTimeout = DefaultReviewTimeout
	}
	if out.RetrySchedule == nil {
		out.RetrySchedule = DefaultRetrySchedule
	}
	if out.DeliveryTimeout == 0 {
		out.DeliveryTimeout = 10 * time.Second
	}
	if out.SweepInterval == 0 {
		out.SweepInterval = 30 * time.Second
	}
	if out.PollInterval == 0 {
		out.PollInterval = 50 * time.Millisecond
	}
	if out.Workers == 0 {
		out.Workers = 10
	}
	if out.DeliveryWorkers == 0 {
		out.DeliveryWorkers = 20
	}
	if out.EvaluationWorkers == 0 {
		out.EvaluationWorkers = 5
	}
	if out.OrgDeliveryLimit == 0 {
		out.OrgDeliveryLimit = 4
	}
	if out.FailingAfter == 0 {
		out.FailingAfter = 3
	}
	if out.FailingDeliveryTimeout == 0 {
		out.FailingDeliveryTimeout = 2 * time.Second
	}
	out.FailingDeliveryTimeout = min(out.FailingDeliveryTimeout, out.DeliveryTimeout)
	if out.Now == nil {
		out.Now = time.Now
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case out.ReviewTimeout < 0:
		return nil, fmt.Errorf("reviewapi: Config.ReviewTimeout %s is negative", out.ReviewTimeout)
	case out.DeliveryTimeout < 0, out.SweepInterval < 0, out.PollInterval < 0, out.FailingDeliveryTimeout < 0:
		return nil, errors.New("reviewapi: Config durations must be positive")
	case out.Workers < 0, out.DeliveryWorkers < 0, out.EvaluationWorkers < 0, out.OrgDeliveryLimit < 0, out.FailingAfter < 0:
		return nil, errors.New("reviewapi: Config worker counts and limits must be positive")
	}
	for name := range out.Queues {
		switch name {
		case river.QueueDefault, QueueDeliveries, QueueEvaluations:
			return nil, fmt.Errorf("reviewapi: Config.Queues names %q, a queue of the service's own", name)
		}
	}
	for _, d := range out.RetrySchedule {
		if d <= 0 {
			return nil, fmt.Errorf("reviewapi: Config.RetrySchedule holds %s; every wait must be positive", d)
		}
	}
	return &out, nil
}

// Service is the review-task API: tasks evaluated against the policy of
// their agent, human decisions, timeouts, webhooks and rate limits. Its
// background work (evaluation retries, webhook deliveries, timeouts) runs on
// River over the same database, so several processes sharing a PostgreSQL
// database share the work.
type Service struct {
	cfg    *Config
	db     *sqldb.DB
	orgs   *orgapi.Store
	people *people.Store
	cache  *policy.Cache
	jobs   riverjobs.Client
	client *http.Client
	// orgDeliveries bounds the deliveries of one organisation in progress.
	orgDeliveries *riverjobs.KeyLimiter
	// orgVolume sets the priority of the deliveries queued.
	orgVolume orgVolume
	// rates keeps the organisations' last rate states (rateMemo).
	rates rateMemo
}

// New applies the migrations (the service's and River's) and returns the
// service. Call Start to work jobs and Close when done.
func New(ctx context.Context, c Config) (*Service, error) {
	cfg, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := cfg.DB.Migrate(ctx, Component, Migrations()); err != nil {
		return nil, err
	}
	if _, err := secretTable.Reseal(ctx, cfg.DB.DB, cfg.Secrets, true); err != nil {
		return nil, fmt.Errorf("reviewapi: encrypt the webhook secrets stored in plaintext: %w", err)
	}
	if err := secretTable.Check(ctx, cfg.DB.DB, cfg.Secrets); err != nil {
		return nil, fmt.Errorf("reviewapi: the key of the stored secrets: %w", err)
	}
	if cfg.People == nil {
		if cfg.People, err = people.New(ctx, people.Config{DB: cfg.DB, Orgs: cfg.Orgs, Now: cfg.Now}); err != nil {
			return nil, err
		}
	}
	s := &Service{cfg: cfg, db: cfg.DB, orgs: cfg.Orgs, people: cfg.People, cache: policy.NewCache(cfg.Policy, 1000),
		orgDeliveries: riverjobs.NewKeyLimiter(cfg.OrgDeliveryLimit), orgVolume: orgVolume{limit: cfg.OrgDeliveryLimit}}
	s.client = NewWebhookClient(AddressPolicy{AllowPrivate: cfg.AllowPrivateWebhooks}, cfg.DeliveryTimeout)
	workers := river.NewWorkers()
	river.AddWorker(workers, &deliverWorker{s: s})
	river.AddWorker(workers, &evaluateWorker{s: s})
	river.AddWorker(workers, &sweepWorker{s: s})
	if cfg.AddWorkers != nil {
		cfg.AddWorkers(workers)
	}
	rc := &river.Config{
		Workers:    workers,
		Logger:     slog.New(warnOnly{cfg.Logger.Handler()}),
		JobTimeout: cfg.DeliveryTimeout + 30*time.Second,
		// A job left running by a process that died is worked again
		// after this, not after River's default hour.
		RescueStuckJobsAfter: cfg.DeliveryTimeout + 2*time.Minute,
	}
	if cfg.DB.Dialect == sqldb.SQLite {
		// SQLite has no notifications: River finds new jobs by polling.
		// PostgreSQL notifies River of each insert.
		rc.FetchPollInterval = cfg.PollInterval
		rc.FetchCooldown = min(cfg.PollInterval, river.FetchCooldownDefault)
	} else if c.PollInterval > 0 {
		rc.FetchPollInterval = c.PollInterval
		rc.FetchCooldown = min(c.PollInterval, river.FetchCooldownDefault)
	}
	if !cfg.InsertOnly {
		// Deliveries and evaluations have queues of their own, so a backlog
		// of one never delays the other nor the sweep.
		rc.Queues = map[string]river.QueueConfig{
			river.QueueDefault: {MaxWorkers: cfg.Workers},
			QueueDeliveries:    {MaxWorkers: cfg.DeliveryWorkers},
			QueueEvaluations:   {MaxWorkers: cfg.EvaluationWorkers},
		}
		for name, q := range cfg.Queues {
			rc.Queues[name] = q
		}
		rc.PeriodicJobs = []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(cfg.SweepInterval),
			func() (river.JobArgs, *river.InsertOpts) { return sweepArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: !cfg.NoSweepOnStart})}
		rc.PeriodicJobs = append(rc.PeriodicJobs, cfg.PeriodicJobs...)
	}
	if s.jobs, err = riverjobs.Open(ctx, cfg.DB, rc); err != nil {
		return nil, err
	}
	return s, nil
}

// Start starts working jobs in the background; it returns at once. Stop or
// cancelling ctx stops it.
func (s *Service) Start(ctx context.Context) error {
	if s.cfg.InsertOnly {
		return nil
	}
	return s.jobs.Start(ctx)
}

// Stop stops working jobs, letting those running finish until ctx ends.
func (s *Service) Stop(ctx context.Context) error {
	if s.cfg.InsertOnly {
		return nil
	}
	return s.jobs.Stop(ctx)
}

// Enqueue queues a job of another component on the service's job queue (its
// worker registered with Config.AddWorkers), on the queue its options name
// (one of Config.Queues, or the default queue).
func (s *Service) Enqueue(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) error {
	_, err := s.jobs.Insert(ctx, args, opts)
	return err
}

// Close releases the job queue's connections. Call it after Stop.
func (s *Service) Close() { s.jobs.Close() }

// RedactionMark is the text that replaces each redacted span in the
// redacted copies of requests.
func (s *Service) RedactionMark() string {
	if s.cfg.Policy.RedactionMark == "" {
		return policy.DefaultRedactionMark
	}
	return s.cfg.Policy.RedactionMark
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// warnOnly passes on records of level Warn and above: River reports its
// routine (start, poll mode, leadership) at Info, which is noise in the
// service's log.
type warnOnly struct{ slog.Handler }

func (h warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnOnly) WithAttrs(a []slog.Attr) slog.Handler { return warnOnly{h.Handler.WithAttrs(a)} }
func (h warnOnly) WithGroup(n string) slog.Handler      { return warnOnly{h.Handler.WithGroup(n)} }
