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
)

// defaultServiceDB is the database of the oversight service, shared by
// "service serve" and the admin commands, so that both work on the same file
// when neither is given --database-url.
const defaultServiceDB = "sqlite:aiusage-service.db"

func serviceCommand() *command {
	return &command{
		name:    "service",
		summary: "serve the oversight service: the organisation API (the review-task API will join it)",
		subs:    []*command{serviceServeCommand()},
	}
}

// serviceFlags are the flags of "service serve".
type serviceFlags struct {
	addr, databaseURL, logFormat string
	shutdownTimeout              time.Duration
}

func serviceServeCommand() *command {
	f := &serviceFlags{}
	return &command{
		name:    "serve",
		summary: "serve the organisation API (/organisations/...) over HTTP",
		long: `Serves the oversight service at the root of ADDR, from the database at
--database-url (created and migrated when needed). For now that is the
organisation API: GET /organisations, the instructions of an organisation
(create, list, search, get, patch, delete) and its agents. The review-task
API will join it on the same address.

Every request needs an API key of type API, sent as "X-API-Key: KEY" or
"Authorization: Bearer KEY". Organisations, agents and keys are created by an
administrator with the 'aiusage admin' commands, on the same database; a key
revoked there is refused on its next request.

Logs one line with the base URL when ready, then one line per request. Stops
cleanly on SIGINT or SIGTERM, letting requests in flight finish.

Exit status: 0 after a clean stop, 1 when the database cannot be reached,
2 for a bad command line (including a malformed --database-url or an --addr
that cannot be listened on).`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "`ADDR` to listen on (host:port; port 0 picks a free port)")
			fs.StringVar(&f.databaseURL, "database-url", defaultServiceDB, "database `URL`: sqlite:PATH, sqlite::memory: or postgres://...")
			fs.StringVar(&f.logFormat, "log-format", "text", "log `FORMAT`: text or json")
			fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 15*time.Second, "how long to let requests in flight finish on shutdown")
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
	h, err := orgapi.NewHandler(store, orgapi.WithLogger(log))
	if err != nil {
		return err
	}
	return serve(ctx, log, f.addr, h, f.shutdownTimeout, "service serving", slog.String("database", db.URL()))
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
