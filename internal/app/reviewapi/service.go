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

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/ops"
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

// Config configures a [Service]. DB, Orgs, Secrets and Jobs are required;
// every other field has the default its comment gives.
type Config struct {
	// DB is the service's database, shared with Orgs.
	DB *sqldb.DB
	// Orgs authenticates keys and gives the agents' instructions.
	Orgs *org.Store
	// Secrets encrypts the webhooks' signing secrets in the database (see
	// secrets.go). Required; every process sharing DB must hold the keys of
	// the rows it reads.
	Secrets *keyring.Keyring
	// Jobs queues the service's evaluations and webhook deliveries on the
	// service's job queue, whose River client works them with the workers
	// of [Service.Jobs]. Required; a process that only queues (an admin
	// command) gives a client that works nothing.
	Jobs riverjobs.Enqueuer
	// Metrics counts the webhook deliveries' outcomes. Default: nil,
	// nothing counted.
	Metrics *ops.Metrics
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
	// Concurrency bounds the requests in flight per API key and per
	// organisation (share one Limiter among the APIs of a service); a
	// request over the bound is 429 RATE_LIMIT_EXCEEDED with Retry-After.
	// Default: nil, no bound.
	Concurrency *httpx.Limiter
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
	case out.Jobs == nil:
		return nil, errors.New("reviewapi: Config.Jobs is required")
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
	case out.DeliveryTimeout < 0, out.SweepInterval < 0, out.FailingDeliveryTimeout < 0:
		return nil, errors.New("reviewapi: Config durations must be positive")
	case out.DeliveryWorkers < 0, out.EvaluationWorkers < 0, out.OrgDeliveryLimit < 0, out.FailingAfter < 0:
		return nil, errors.New("reviewapi: Config worker counts and limits must be positive")
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
// the service's job queue (River over the same database, Config.Jobs and
// [Service.Jobs]), so several processes sharing a PostgreSQL database share
// the work.
type Service struct {
	cfg    *Config
	db     *sqldb.DB
	orgs   *org.Store
	people *people.Store
	cache  *policy.Cache
	client *http.Client
	// orgDeliveries bounds the deliveries of one organisation in progress.
	orgDeliveries *riverjobs.KeyLimiter
	// orgVolume sets the priority of the deliveries queued.
	orgVolume orgVolume
	// rates keeps the organisations' last rate states (rateMemo).
	rates rateMemo
}

// New applies the service's migrations and returns the service. Its jobs
// are worked once the composition root has registered [Service.Jobs] and
// started the job queue.
func New(ctx context.Context, c Config) (*Service, error) {
	cfg, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := cfg.DB.Migrate(ctx, Component, Migrations()); err != nil {
		return nil, err
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
	return s, nil
}

// Jobs registers the service's background work on the job queue: the
// workers of deliveries, evaluations and the sweep; the queues of
// deliveries and evaluations, so that a backlog of one never delays the
// other nor the sweep (on the default queue); and the periodic sweep.
func (s *Service) Jobs(j *riverjobs.Jobs) {
	river.AddWorker(j.Workers, &deliverWorker{s: s})
	river.AddWorker(j.Workers, &evaluateWorker{s: s})
	river.AddWorker(j.Workers, &sweepWorker{s: s})
	j.AddQueue(QueueDeliveries, s.cfg.DeliveryWorkers)
	j.AddQueue(QueueEvaluations, s.cfg.EvaluationWorkers)
	j.AddPeriodic(river.NewPeriodicJob(river.PeriodicInterval(s.cfg.SweepInterval),
		func() (river.JobArgs, *river.InsertOpts) { return sweepArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: !s.cfg.NoSweepOnStart}))
}

// RedactionMark is the text that replaces each redacted span in the
// redacted copies of requests.
func (s *Service) RedactionMark() string {
	if s.cfg.Policy.RedactionMark == "" {
		return policy.DefaultRedactionMark
	}
	return s.cfg.Policy.RedactionMark
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }
