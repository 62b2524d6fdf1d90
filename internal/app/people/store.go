package people

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/aiusage/kit/internal/app/orgapi"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

//go:embed migrations
var migrationFS embed.FS

// Component is the name under which the store's migrations are recorded.
const Component = "people"

// Migrations returns the store's embedded migrations (one directory per
// dialect), for readiness checks with [sqldb.DB.MigrationsApplied].
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err) // the directory is embedded
	}
	return sub
}

// Defaults of [Config].
const (
	DefaultIdleTimeout     = 2 * time.Hour
	DefaultAbsoluteTimeout = 12 * time.Hour
	DefaultMaxFailures     = 5
	DefaultFailureWindow   = 15 * time.Minute
)

// Config configures a [Store]. DB and Orgs are required; every other field
// has the default its comment gives.
type Config struct {
	// DB is the service's database, shared with Orgs.
	DB *sqldb.DB
	// Orgs checks that organisations exist and records changes in their
	// audit trail.
	Orgs *orgapi.Store
	// Now is the clock of changes, sessions and the throttle. Default
	// time.Now.
	Now func() time.Time
	// IdleTimeout ends a session unused this long. Default 2 h.
	IdleTimeout time.Duration
	// AbsoluteTimeout ends a session this long after its sign-in, however
	// much it is used. Default 12 h.
	AbsoluteTimeout time.Duration
	// MaxFailures is how many failed sign-ins an account, and a client
	// address, may make within one FailureWindow; further sign-ins are
	// refused until the window ends. Default 5.
	MaxFailures int
	// FailureWindow is the window of MaxFailures. Windows are fixed
	// (aligned on the Unix epoch), not sliding. Default 15 min.
	FailureWindow time.Duration
}

// Store keeps the people of organisations, their sessions and the throttle
// of failed sign-ins. It is safe for concurrent use, also by several
// processes sharing one database.
type Store struct {
	cfg  Config
	db   *sqldb.DB
	orgs *orgapi.Store
}

// New applies the store's migrations to c.DB and returns the store.
func New(ctx context.Context, c Config) (*Store, error) {
	switch {
	case c.DB == nil:
		return nil, errors.New("people: Config.DB is required")
	case c.Orgs == nil:
		return nil, errors.New("people: Config.Orgs is required")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.AbsoluteTimeout == 0 {
		c.AbsoluteTimeout = DefaultAbsoluteTimeout
	}
	if c.MaxFailures == 0 {
		c.MaxFailures = DefaultMaxFailures
	}
	if c.FailureWindow == 0 {
		c.FailureWindow = DefaultFailureWindow
	}
	switch {
	case c.IdleTimeout < time.Millisecond, c.AbsoluteTimeout < time.Millisecond, c.FailureWindow < time.Millisecond:
		return nil, fmt.Errorf("people: Config.IdleTimeout (%s), AbsoluteTimeout (%s) and FailureWindow (%s) must be at least 1ms",
			c.IdleTimeout, c.AbsoluteTimeout, c.FailureWindow)
	case c.MaxFailures < 1:
		return nil, fmt.Errorf("people: Config.MaxFailures must be at least 1, got %d", c.MaxFailures)
	}
	if err := c.DB.Migrate(ctx, Component, Migrations()); err != nil {
		return nil, fmt.Errorf("people: migrate: %w", err)
	}
	return &Store{cfg: c, db: c.DB, orgs: c.Orgs}, nil
}

// now returns the store's clock reading, in UTC at millisecond precision,
// the precision stored.
func (s *Store) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// inTx runs fn in a transaction, again when it failed only because of
// concurrent ones (sqldb.DB.InTxRetry); still failing so after the last
// attempt is spec.ErrUnavailable.
func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	err := s.db.InTxRetry(ctx, fn)
	if sqldb.IsRetryable(err) {
		return &httpx.Error{Kind: spec.ErrUnavailable, Detail: "The service is busy with concurrent changes; retry the request."}
	}
	return err
}

// forUpdate locks the rows a read-modify-write transaction selects on
// PostgreSQL; SQLite's write transactions already hold the database lock.
func (s *Store) forUpdate() string {
	if s.db.Dialect == sqldb.Postgres {
		return " FOR UPDATE"
	}
	return ""
}

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
