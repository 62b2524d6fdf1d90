package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/provider/push"
	"github.com/aiusage/kit/provider/sqlsource"
	"github.com/aiusage/kit/spec"
	"github.com/aiusage/kit/spec/webhook"
)

type providerPushFlags struct {
	databaseURL, to, secret, tenant string
	every, lookback                 time.Duration
	attempts                        int
	resources                       stringList
}

func providerPushCommand() *command {
	f := &providerPushFlags{}
	return &command{
		name:    "push",
		summary: "push the records that changed in the kit's tables to a push receiver",
		long: `Pushes the records of --tenant that changed in the kit's tables to the push
receiver at --to (the webhook transport; see docs/push.md): one resource per
delivery, at most 1000 records and 4 MiB each, every record the JSON the REST
interface serves, signed with --secret (Standard Webhooks).

Deliveries are queued in the database (River) before they are sent, and a
watermark per resource records what was queued, so a delivery survives a
restart and a record changed once is pushed once. A delivery the receiver does
not acknowledge with 2xx is retried with exponential backoff and jitter, up to
--attempts times; 400, 410, 413 and 422 give it up at once.

Without --every: queues what changed since the last run, waits until every
delivery is acknowledged or given up, and exits; the exit status is 1 when some
were given up. With --every: scans again every DURATION, sending as it goes,
until SIGINT or SIGTERM.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.databaseURL, "database-url", "sqlite:aiusage-provider.db", "database `URL` of the kit's tables, the queue and the watermarks: sqlite:PATH or postgres://...")
			fs.StringVar(&f.to, "to", "", "`URL` of the push receiver (required)")
			fs.StringVar(&f.secret, "secret", "", "signing `SECRET` given with the receiver: whsec_ and base64 (required)")
			fs.StringVar(&f.tenant, "tenant", "default", "`NAME` of the tenant whose records are pushed")
			fs.DurationVar(&f.every, "every", 0, "scan again every `DURATION` until stopped; 0 pushes once and exits")
			fs.DurationVar(&f.lookback, "lookback", 0, "start each scan `DURATION` before the watermark, to push records committed late (pushed again each scan)")
			fs.IntVar(&f.attempts, "attempts", 10, "`N` attempts of a delivery before it is given up")
			fs.Var(&f.resources, "resource", "`RESOURCE` to push: conversations, assistants, events or usage (repeatable; default all)")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			return providerPush(ctx, e, f)
		},
	}
}

func providerPush(ctx context.Context, e *env, f *providerPushFlags) error {
	if f.to == "" {
		return usagef("%s: --to is required: the URL of the push receiver", e.cmd)
	}
	if u, err := url.Parse(f.to); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("%s: --to %q is not an http or https URL", e.cmd, f.to)
	}
	if f.secret == "" {
		return usagef("%s: --secret is required: the signing secret given with the receiver", e.cmd)
	}
	if _, err := webhook.Sign(f.secret, "msg_check", time.Now(), nil); err != nil {
		return usagef("%s: --secret: %v", e.cmd, err)
	}
	if f.every < 0 {
		return usagef("%s: --every must not be negative", e.cmd)
	}
	if f.lookback < 0 {
		return usagef("%s: --lookback must not be negative", e.cmd)
	}
	if f.attempts < 1 {
		return usagef("%s: --attempts must be at least 1, got %d", e.cmd, f.attempts)
	}
	for _, r := range f.resources {
		if _, ok := spec.PushRecordSchema(r); !ok {
			return usagef("%s: --resource %q: want conversations, assistants, events or usage", e.cmd, r)
		}
	}
	db, err := sqldb.Open(ctx, f.databaseURL)
	if err != nil {
		return usagef("%s: --database-url: %v", e.cmd, err)
	}
	defer db.Close()
	src, err := sqlsource.New(ctx, db.DB, sqlsource.Dialect(db.Dialect))
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	p, err := push.New(ctx, push.Config{DatabaseURL: f.databaseURL, Source: src, Tenant: f.tenant, URL: f.to, Secret: f.secret,
		Resources: f.resources, MaxAttempts: f.attempts, Lookback: f.lookback, Logger: log})
	if err != nil {
		return err
	}
	defer p.Close()
	if f.every > 0 {
		fmt.Fprintf(e.stderr, "pushing to %s every %s until stopped\n", f.to, f.every)
		return p.Run(ctx, f.every)
	}
	start := time.Now()
	res, err := p.Scan(ctx)
	if err != nil {
		return err
	}
	for _, r := range spec.PushResources {
		if n := res.Records[r]; n > 0 {
			fmt.Fprintf(e.stderr, "%s: %d records queued in %d deliveries\n", r, n, res.Deliveries[r])
		}
	}
	if err := p.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = p.Stop(context.WithoutCancel(ctx)) }()
	o, err := p.Wait(ctx, start, 200*time.Millisecond)
	if err != nil {
		return fmt.Errorf("waiting for the deliveries: %w (they stay queued for the next run)", err)
	}
	if o.GivenUp > 0 {
		fmt.Fprintf(e.stderr, "%d deliveries given up; the log above says why\n", o.GivenUp)
		return &exitError{code: ExitFailure}
	}
	fmt.Fprintln(e.stderr, "every delivery acknowledged")
	return nil
}
