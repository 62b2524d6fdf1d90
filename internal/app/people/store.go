package people

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/aiusage/kit/internal/app/org"
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
	DefaultFailureWindow   = time.Hour
	// DefaultBaseDelay is Config.BaseDelay's default.
	DefaultBaseDelay = time.Second
	// DefaultMaxDelay is Config.MaxDelay's default.
	DefaultMaxDelay = 5 * time.Minute
	// DefaultMaxAddressFailures is Config.MaxAddressFailures's default.
	DefaultMaxAddressFailures = 20
	// DefaultMaxAccountFailures is Config.MaxAccountFailures's default.
	DefaultMaxAccountFailures = 10
	// DefaultDeviceLifetime is Config.DeviceLifetime's default.
	DefaultDeviceLifetime = 90 * 24 * time.Hour
	// DefaultOneTimePasswordTTL is Config.OneTimePasswordTTL's default.
	DefaultOneTimePasswordTTL = 72 * time.Hour
	// MaxDevicesPerUser is how many device tokens a user keeps: the ones
	// used last; an older one is forgotten (its browser is untrusted again).
	MaxDevicesPerUser = 10
)

// Config configures a [Store]. DB and Orgs are required; every other field
// has the default its comment gives.
type Config struct {
	// DB is the service's database, shared with Orgs.
	DB *sqldb.DB
	// Orgs checks that organisations exist and records changes in their
	// audit trail.
	Orgs *org.Store
	// Now is the clock of changes, sessions and the throttle. Default
	// time.Now.
	Now func() time.Time
	// IdleTimeout ends a session unused this long. Default 2 h.
	IdleTimeout time.Duration
	// AbsoluteTimeout ends a session this long after its sign-in, however
	// much it is used. Default 12 h.
	AbsoluteTimeout time.Duration
	// MaxFailures is how many failed sign-ins to one account a client
	// address may make without delay, and how many a trusted device (a
	// browser that signed in to the account before) may make; past them,
	// each further attempt waits a growing delay after the last failure
	// (BaseDelay, doubled with every failure, at most MaxDelay). Default 5.
	MaxFailures int
	// MaxAddressFailures is how many failed sign-ins to any accounts a
	// client address without a trusted device may make without delay.
	// Default 20.
	MaxAddressFailures int
	// MaxAccountFailures is how many failed sign-ins to one account, from
	// every client without a trusted device, make the account "under
	// attack": then each such client address has one failure at the
	// account without delay instead of MaxFailures. It never delays a
	// trusted device, nor an address that has not failed at the account.
	// Default 10.
	MaxAccountFailures int
	// BaseDelay is the first delay, after a count's free failures; each
	// further failure doubles it. Default 1 s.
	BaseDelay time.Duration
	// MaxDelay caps the delays. Default 5 min.
	MaxDelay time.Duration
	// FailureWindow is how long a count of failures is kept after its last
	// failure; then it starts afresh. Default 1 h.
	FailureWindow time.Duration
	// DeviceLifetime is how long a device token stays valid after its last
	// successful sign-in. Default 90 days.
	DeviceLifetime time.Duration
	// OneTimePasswordTTL is how long a one-time password (an invitation or
	// a reset) may be signed in with. Default 72 h.
	OneTimePasswordTTL time.Duration
	// HashCost is the cost of the password hashes the store makes.
	// Default HashStrong; HashTest is for tests alone.
	HashCost HashCost
	// SSORequired reports whether the organisation orgID requires single
	// sign-on: then [Store.SignIn] refuses a right password with
	// [ErrSSORequired], unless the user holds a break-glass password still
	// valid. Default nil: no organisation requires it.
	SSORequired func(ctx context.Context, orgID string) (bool, error)
}

// Store keeps the people of organisations, their sessions and the throttle
// of failed sign-ins. It is safe for concurrent use, also by several
// processes sharing one database.
type Store struct {
	cfg  Config
	db   *sqldb.DB
	orgs *org.Store
}

// New applies the store's migrations to c.DB and returns the store.
func New(ctx context.Context, c Config) (*Store, error) {
	switch {
	case c.DB == nil:
		return nil, errors.New("people: Config.DB is required")
	case c.Orgs == nil:
		return nil, errors.New("people: Config.Orgs is required")
	case c.HashCost != HashStrong && c.HashCost != HashTest:
		return nil, fmt.Errorf("people: Config.HashCost %d is neither HashStrong nor HashTest", c.HashCost)
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
	if c.MaxAddressFailures == 0 {
		c.MaxAddressFailures = DefaultMaxAddressFailures
	}
	if c.MaxAccountFailures == 0 {
		c.MaxAccountFailures = DefaultMaxAccountFailures
	}
	if c.BaseDelay == 0 {
		c.BaseDelay = DefaultBaseDelay
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.DeviceLifetime == 0 {
		c.DeviceLifetime = DefaultDeviceLifetime
	}
	if c.OneTimePasswordTTL == 0 {
		c.OneTimePasswordTTL = DefaultOneTimePasswordTTL
	}
	switch {
	case c.IdleTimeout < time.Millisecond, c.AbsoluteTimeout < time.Millisecond, c.FailureWindow < time.Millisecond,
		c.DeviceLifetime < time.Millisecond, c.OneTimePasswordTTL < time.Millisecond:
		return nil, fmt.Errorf("people: Config.IdleTimeout (%s), AbsoluteTimeout (%s), FailureWindow (%s), DeviceLifetime (%s) and OneTimePasswordTTL (%s) must be at least 1ms",
			c.IdleTimeout, c.AbsoluteTimeout, c.FailureWindow, c.DeviceLifetime, c.OneTimePasswordTTL)
	case c.BaseDelay < time.Millisecond, c.MaxDelay < c.BaseDelay:
		return nil, fmt.Errorf("people: Config.BaseDelay (%s) must be at least 1ms and MaxDelay (%s) at least BaseDelay", c.BaseDelay, c.MaxDelay)
	case c.MaxFailures < 1, c.MaxAddressFailures < 1, c.MaxAccountFailures < 1:
		return nil, fmt.Errorf("people: Config.MaxFailures (%d), MaxAddressFailures (%d) and MaxAccountFailures (%d) must be at least 1",
			c.MaxFailures, c.MaxAddressFailures, c.MaxAccountFailures)
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
		return &spec.Error{Kind: spec.ErrUnavailable, Detail: "The service is busy with concurrent changes; retry the request."}
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
