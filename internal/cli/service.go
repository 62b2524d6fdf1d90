package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/aiusage/kit/internal/sqldb"
	"github.com/aiusage/kit/orgapi"
	"github.com/aiusage/kit/reviewapi"
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
	addr, databaseURL, logFormat string
	shutdownTimeout              time.Duration
	allowPrivateWebhooks         bool
	reviewTimeout                time.Duration
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
    with 'aiusage admin review decide', or rejected after --review-timeout.

Every request needs an API key of type API, sent as "X-API-Key: KEY" or
"Authorization: Bearer KEY" (the review-task API also takes
"Authorization: KEY"). Organisations, agents and keys are created by an
administrator with the 'aiusage admin' commands, on the same database; a key
revoked there is refused on its next request. The review-task API counts
requests per key per hour by the organisation's plan.

Background work (evaluation retries, webhook deliveries with retries,
timeouts) runs on a job queue (River) in the same database: on PostgreSQL,
several processes serving one database share it, and work queued survives a
restart. Webhook URLs must be https and must not resolve to private,
loopback or link-local addresses, unless --allow-private-webhooks.

Logs one line with the base URL when ready, then one line per request. Stops
cleanly on SIGINT or SIGTERM, letting requests in flight and running jobs
finish.

Exit status: 0 after a clean stop, 1 when the database cannot be reached,
2 for a bad command line (including a malformed --database-url or an --addr
that cannot be listened on).`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "`ADDR` to listen on (host:port; port 0 picks a free port)")
			fs.StringVar(&f.databaseURL, "database-url", defaultServiceDB, "database `URL`: sqlite:PATH, sqlite::memory: or postgres://...")
			fs.StringVar(&f.logFormat, "log-format", "text", "log `FORMAT`: text or json")
			fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 15*time.Second, "how long to let requests in flight finish on shutdown")
			fs.BoolVar(&f.allowPrivateWebhooks, "allow-private-webhooks", false, "let webhook URLs be http and point at private, loopback or link-local addresses (local use only)")
			fs.DurationVar(&f.reviewTimeout, "review-timeout", reviewapi.DefaultReviewTimeout, "how long a task waits for a person before it is rejected with reason timeout (organisations may set their own)")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, args []string) error {
			if len(args) > 0 {
				return usagef("service serve takes no arguments, got %q", args[0])
			}
			return serviceServe(ctx, e, f)
		},
	}
}

// serviceServe opens the database, migrates it and serves the organisation
// API until ctx ends.
func serviceServe(ctx context.Context, e *env, f *serviceFlags) error {
	log, err := newLogger(e.stderr, f.logFormat)
	if err != nil {
		return err
	}
	if f.shutdownTimeout <= 0 {
		return usagef("service serve: --shutdown-timeout must be positive, got %s", f.shutdownTimeout)
	}
	db, err := openDB(ctx, "service serve", f.databaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	store, err := orgapi.NewStore(ctx, db)
	if err != nil {
		return fmt.Errorf("service serve: migrate %s: %w", db.URL(), err)
	}
	if f.reviewTimeout <= 0 {
		return usagef("service serve: --review-timeout must be positive, got %s", f.reviewTimeout)
	}
	svc, err := reviewapi.New(ctx, reviewapi.Config{DB: db, Orgs: store, Logger: log,
		AllowPrivateWebhooks: f.allowPrivateWebhooks, ReviewTimeout: f.reviewTimeout})
	if err != nil {
		return fmt.Errorf("service serve: %w", err)
	}
	defer svc.Close()
	org, err := orgapi.NewHandler(store, orgapi.WithLogger(log))
	if err != nil {
		return err
	}
	// The job queue runs until the server has stopped, so that jobs queued
	// by requests in flight are worked.
	jobsCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopJobs()
	if err := svc.Start(jobsCtx); err != nil {
		return fmt.Errorf("service serve: job queue: %w", err)
	}
	err = serve(ctx, log, f.addr, reviewapi.NewHandler(org, svc), f.shutdownTimeout, "service serving",
		slog.String("database", db.URL()), slog.Bool("allow_private_webhooks", f.allowPrivateWebhooks))
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.shutdownTimeout)
	defer cancel()
	return errors.Join(err, svc.Stop(sctx))
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
