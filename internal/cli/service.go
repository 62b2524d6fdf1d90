package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/riverqueue/river"

	"github.com/aiusage/kit/internal/app/dashboard"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/app/sso"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/riverjobs"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/policy"
)

// defaultServiceDB is the database of the oversight service, shared by
// "service serve" and the admin commands, so that both work on the same file
// when neither is given --database-url.
const defaultServiceDB = "sqlite:aiusage-service.db"

func serviceCommand() *command {
	return &command{
		name:    "service",
		summary: "serve the oversight service: the organisation API and the review-task API",
		subs:    []*command{serviceServeCommand()},
	}
}

// serviceFlags are the flags of "service serve".
type serviceFlags struct {
	serverFlags
	embeddings           embeddingsFlags
	judge                judgeFlags
	databaseURL          string
	allowPrivateWebhooks bool
	sources              sourcePolicyFlags
	exportMaxFileMiB     int64
	vendor               vendorFlags
	reviewTimeout        time.Duration
	secrets              secretFlags
	metrics              metricsFlags
	otlpGRPC             otlpGRPCFlags
	otlpRate             otlpRateFlags
	maxPerKey, maxPerOrg int
	mcpSessions          mcpSessionFlags
	proxies              proxyFlags
	invites              inviteTTLFlag
	idp                  idpFlags
}

func serviceServeCommand() *command {
	f := &serviceFlags{}
	return &command{
		name:    "serve",
		summary: "serve the organisation API (/organisations/...) and the review-task API (/review-tasks, /webhooks) over HTTP",
		long: `Serves the oversight service at the root of ADDR, from the database at
--database-url (created and migrated when needed):

  - the organisation API: GET /organisations, the instructions of an
    organisation (create, list, search, get, patch, delete) and its agents;
  - the review-task API: POST/GET /review-tasks, GET /review-tasks/{id},
    POST/GET /webhooks, DELETE /webhooks/{id}. Tasks are evaluated against
    the instructions of their agent; a task waiting for a person is decided
    by a Reviewer or Administrator of its organisation in the dashboard or
    with 'aiusage admin review decide', or by the review timeout
    (--review-timeout, or the organisation's own) as the organisation sets;
  - the sources of each organisation ('aiusage admin source add'), polled on
    their schedule: GET /organisations/{id}/sources lists them with their
    sync status, and /organisations/{id}/sources/{sourceId}/ serves the
    collected data as a provider of the AI usage data interface (MCP at
    .../mcp, stateless unless --mcp-sessions: then each API key holds at
    most --mcp-max-sessions-per-credential sessions, the one used least
    recently ending first, for --mcp-session-idle-timeout without a
    request; an ended session is answered 404);
  - operations: /healthz, /readyz (database reachable, migrations applied)
    and /metrics (Prometheus; see below).

Every request needs an API key of type API, sent as "X-API-Key: KEY" or
"Authorization: Bearer KEY" (the review-task API also takes
"Authorization: KEY"). Organisations, agents and keys are created by an
administrator with the 'aiusage admin' commands, on the same database; a key
revoked there is refused within 5 seconds (a process reuses a key's check
that long). The review-task API limits
each organisation, all its keys together, to its plan's requests in any hour
(a sliding window counted in the database, shared by every process).

Semantic instructions are evaluated by the built-in matcher (no network),
or, with --embeddings-url, by an OpenAI-compatible embeddings endpoint
(OpenAI, Azure OpenAI, Ollama, vLLM ...; see docs/policy.md), its key from
AIUSAGE_EMBEDDINGS_API_KEY; the ready line of the log names the matcher in
use. The
embeddings of the instructions' texts are cached in memory. When the
endpoint fails or takes longer than --embeddings-timeout, the task stays
pending, POST /review-tasks answers 422 POLICY_ERROR naming it, and it is
evaluated again in the background (after 1, 2, 4 ... seconds, at most 5
minutes apart) until the endpoint answers.

With --judge-url, a model judge decides them: an OpenAI-compatible chat
completions endpoint (its key from AIUSAGE_JUDGE_API_KEY) is asked about
each sentence the matcher above picks at a high-recall threshold
(--judge-candidate-threshold), at most --judge-max-calls a request; the
candidates beyond them are matches a person sees. A match records the
judge's quote and verdict. A judge that fails, times out (--judge-timeout)
or answers 429 leaves the task pending, evaluated again as above: no task is
approved because the judge was down. The rest of an evaluation (Regex
patterns, terms, the built-in matcher) has a time budget,
--evaluation-budget: a task whose evaluation does not finish within it is
not retried but waits for a person (requires_intervention, decision reason
budget).

Background work (source syncs, evaluation retries, webhook deliveries with
retries, timeouts) runs on a job queue (River) in the same database: on PostgreSQL,
several processes serving one database share it, and work queued survives a
restart. Webhook URLs must be https and must not resolve to private,
loopback or link-local addresses, unless --allow-private-webhooks.

Sources are chosen by the organisations' Administrators, so what a source may
reach is the operator's decision: REST, MCP and export URLs must be https to
public addresses (checked when a source is added and at every connection,
against DNS rebinding) unless --allow-private-sources; an export source may
name a directory of this host only below --export-root (none by default:
exports are then read over https only), checked when it is added and at every
sync, its files opened so that no symbolic link or ".." leads out. A source
whose sync fails in a way repeating it cannot mend (an export past the
reader's bounds, a directory outside the root) is paused until an
Administrator resumes it; the organisation sees classified sync errors, this
log the whole detail.

Organisations' Administrators may connect their identity provider (OpenID
Connect) in the dashboard's Settings → Single sign-on. Its issuer URL must be
https to public addresses (checked at every connection) unless
--allow-private-idp. The identity provider sends people back to
<public URL>/signin/sso/callback, where the public URL is --public-url, or
else the scheme and host of the request that started the sign-in (behind a
proxy: see --trusted-proxy).

` + metricsHelp + `

` + secretKeyHelp + `

Logs one line with the base URL when ready, then one line per request. Stops
cleanly on SIGINT or SIGTERM, letting requests in flight and running jobs
finish.

Exit status: 0 after a clean stop, 1 when the database cannot be reached,
2 for a bad command line (including a malformed --database-url or an --addr
that cannot be listened on).`,
		flags: func(fs *flag.FlagSet) {
			f.register(fs, "127.0.0.1:8080", 15*time.Second)
			fs.StringVar(&f.databaseURL, "database-url", defaultServiceDB, "database `URL`: sqlite:PATH, sqlite::memory: or postgres://...")
			fs.BoolVar(&f.allowPrivateWebhooks, "allow-private-webhooks", false, "let webhook URLs be http and point at private, loopback or link-local addresses (local use only)")
			f.sources.register(fs)
			registerExportMaxFile(fs, &f.exportMaxFileMiB)
			f.vendor.register(fs, true)
			fs.DurationVar(&f.reviewTimeout, "review-timeout", reviewapi.DefaultReviewTimeout, "how long a task waits for a person before the review timeout decides it (organisations may set their own, and whether it rejects or approves)")
			f.embeddings.register(fs)
			f.embeddings.registerBudget(fs)
			f.judge.register(fs)
			f.secrets.register(fs)
			f.metrics.register(fs)
			f.otlpGRPC.register(fs, false)
			f.otlpRate.register(fs)
			fs.IntVar(&f.maxPerKey, "max-concurrent-per-key", httpx.DefaultConcurrentPerKey, "most requests of one API key in flight at once in this process; more are answered 429 with Retry-After")
			fs.IntVar(&f.maxPerOrg, "max-concurrent-per-organisation", httpx.DefaultConcurrentPerOrganisation, "most requests of one organisation's keys in flight at once in this process; more are answered 429 with Retry-After")
			f.mcpSessions.register(fs)
			f.proxies.register(fs)
			f.invites.register(fs)
			f.idp.register(fs, false)
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			return serviceServe(ctx, e, f)
		},
	}
}

// serviceServe opens the database, migrates it and serves the organisation
// API until ctx ends.
func serviceServe(ctx context.Context, e *env, f *serviceFlags) error {
	log, err := f.logger(e.cmd, e.stderr)
	if err != nil {
		return err
	}
	candidates, matcherAttrs, err := f.embeddings.matcher(e.cmd)
	if err != nil {
		return err
	}
	matcher, _, judgeAttrs, err := f.judge.cascade(e.cmd, candidates)
	if err != nil {
		return err
	}
	matcherAttrs = append(matcherAttrs, judgeAttrs...)
	db, err := openDB(ctx, e.cmd, f.databaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	if f.reviewTimeout <= 0 {
		return usagef("%s: --review-timeout must be positive, got %s", e.cmd, f.reviewTimeout)
	}
	if err := f.embeddings.checkBudget(e.cmd); err != nil {
		return err
	}
	if err := f.invites.check(e.cmd); err != nil {
		return err
	}
	if err := f.sources.check(e.cmd); err != nil {
		return err
	}
	if err := f.idp.check(e.cmd); err != nil {
		return err
	}
	if err := checkExportMaxFile(e.cmd, f.exportMaxFileMiB); err != nil {
		return err
	}
	if err := f.vendor.check(e.cmd); err != nil {
		return err
	}
	if f.maxPerKey < 1 || f.maxPerOrg < 1 {
		return usagef("%s: --max-concurrent-per-key and --max-concurrent-per-organisation must be at least 1, got %d and %d", e.cmd, f.maxPerKey, f.maxPerOrg)
	}
	mcpOpts, err := f.mcpSessions.options(e.cmd)
	if err != nil {
		return err
	}
	ring, keySrc, err := f.secrets.keyring(e.cmd, e, db)
	if err != nil {
		return err
	}
	opsToken, err := metricsToken(e.cmd, e)
	if err != nil {
		return err
	}
	logKeyring(ctx, log, keySrc, db)
	store, err := org.NewStore(ctx, db)
	if err != nil {
		return fmt.Errorf("%s: migrate %s: %w", e.cmd, db.URL(), err)
	}
	srv, err := server.New(ctx, server.Config{DB: db, Orgs: store, Secrets: ring, Logger: log, InviteTTL: f.invites.inviteTTL,
		Concurrency: httpx.NewLimiter(f.maxPerKey, f.maxPerOrg), TrustedProxies: &f.proxies.trustedProxies,
		Telemetry:    f.otlpRate.config(),
		MetricsGuard: func(h http.Handler) http.Handler { return guardMetrics(opsToken, h) },
		Review: reviewapi.Config{AllowPrivateWebhooks: f.allowPrivateWebhooks, ReviewTimeout: f.reviewTimeout,
			Policy: policy.Options{Semantic: matcher, Budget: f.embeddings.budget}},
		Sources: sources.Config{MCPOptions: mcpOpts, AllowPrivate: f.sources.allowPrivate, ExportRoot: f.sources.exportRoot,
			ExportMaxFileBytes: f.exportMaxFileMiB << 20, VendorRate: f.vendor.rate, VendorBackfill: f.vendor.backfill,
			VendorLookback: f.vendor.lookback},
		SSO:       sso.Config{AllowPrivate: f.idp.allowPrivate},
		Dashboard: dashboard.Config{PublicURL: f.idp.publicURL}})
	if err != nil {
		return fmt.Errorf("%s: %w", e.cmd, err)
	}
	defer srv.Close()
	stopMetrics, err := f.metrics.serve(ctx, e.cmd, log, srv.MetricsHandler())
	if err != nil {
		return err
	}
	defer stopMetrics()
	stopGRPC, err := f.otlpGRPC.serve(ctx, e.cmd, log, srv)
	if err != nil {
		return err
	}
	defer stopGRPC()
	return runServer(ctx, srv, log, &f.serverFlags, nil, "service serving", append([]slog.Attr{
		slog.String("database", db.URL()), slog.Bool("allow_private_webhooks", f.allowPrivateWebhooks),
		slog.String("trusted_proxies", f.proxies.trustedProxies.String()),
		slog.Bool("allow_private_sources", f.sources.allowPrivate), slog.String("export_root", f.sources.exportRoot),
		slog.Bool("allow_private_idp", f.idp.allowPrivate), slog.String("public_url", f.idp.publicURL)}, matcherAttrs...)...)
}

// runServer serves srv with the lifecycle of sf and works its job queue
// beside it: the queue starts once the address is listened on, and stops
// after the requests in flight have finished, letting the jobs they queued
// finish too. It logs msg with the URL when ready and calls ready, if set,
// with the base URL.
func runServer(ctx context.Context, srv *server.Server, log *slog.Logger, sf *serverFlags, ready func(base string), msg string, attrs ...slog.Attr) error {
	jobsCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopJobs()
	return sf.serve(ctx, log, srv.Handler(), serveHooks{
		start: func() error {
			if err := srv.Start(jobsCtx); err != nil {
				return fmt.Errorf("job queue: %w", err)
			}
			return nil
		},
		ready: ready,
		stop:  srv.Stop,
	}, msg, attrs...)
}

// openQueue opens, for an admin command, the service's job queue on db as
// a client that queues jobs and works none: the running service works them.
func openQueue(ctx context.Context, db *sqldb.DB) (riverjobs.Client, error) {
	return riverjobs.Open(ctx, db, &river.Config{Logger: slog.New(slog.DiscardHandler)})
}

// openDB opens the database at url for the command cmd. A malformed URL is a
// usage error (exit 2); a database that cannot be reached is a failure
// (exit 1). Both name --database-url.
func openDB(ctx context.Context, cmd, url string) (*sqldb.DB, error) {
	db, err := sqldb.Open(ctx, url)
	switch {
	case errors.Is(err, sqldb.ErrURL):
		return nil, usagef("%s: --database-url: %v", cmd, err)
	case err != nil:
		return nil, fmt.Errorf("%s: --database-url: %w", cmd, err)
	}
	return db, nil
}
