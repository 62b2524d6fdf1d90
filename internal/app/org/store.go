package org

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

//go:embed migrations
var migrationFS embed.FS

// Component is the name under which the store's migrations are recorded.
const Component = "orgapi"

// Migrations returns the store's embedded migrations (one directory per
// dialect), for readiness checks with [sqldb.DB.MigrationsApplied].
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err) // the directory is embedded
	}
	return sub
}

// MaxNameLength bounds the names of organisations, agents and keys, in
// characters.
const MaxNameLength = 200

// Store keeps organisations, agents, API keys, instructions and the audit
// trail in a SQLite or PostgreSQL database. It is safe for concurrent use, also
// by several processes sharing one database.
type Store struct {
	db  *sqldb.DB
	now func() time.Time
	// keyTTL is how long keys and organisations read are reused.
	keyTTL time.Duration
	keys   *ttlCache[[32]byte, storedKey] // by the secret's SHA-256
	orgs   *ttlCache[string, Organisation]
	uses   useTracker // the keys' last uses written by this process
}

// StoreOption configures a Store.
type StoreOption func(*Store)

// WithNow sets the clock that stamps changes and decides key expiry. Default:
// time.Now.
func WithNow(now func() time.Time) StoreOption { return func(s *Store) { s.now = now } }

// WithKeyCacheTTL sets how long the store reuses, in this process, what it
// read of an API key ([Store.Authenticate]) and of an organisation
// ([Store.Organisation]) before it reads them again, so that a burst of
// requests with one key costs one lookup, and a request refused for being
// over a bound costs none. A key revoked with this store is refused at once;
// a key revoked by another process on the same database (aiusage admin key
// revoke, another service process) is refused within ttl. Default
// [DefaultKeyCacheTTL] (5 s); a negative ttl reads the database every time.
// The store's clock (WithNow) measures it.
func WithKeyCacheTTL(ttl time.Duration) StoreOption {
	return func(s *Store) {
		if ttl == 0 {
			ttl = DefaultKeyCacheTTL
		}
		s.keyTTL = ttl
	}
}

// NewStore applies the store's migrations to db and returns the store.
func NewStore(ctx context.Context, db *sqldb.DB, opts ...StoreOption) (*Store, error) {
	if db == nil {
		return nil, errors.New("org: NewStore: nil database")
	}
	s := &Store{db: db, now: time.Now, keyTTL: DefaultKeyCacheTTL}
	for _, o := range opts {
		o(s)
	}
	s.keys = newTTLCache[[32]byte, storedKey](s.keyTTL)
	s.orgs = newTTLCache[string, Organisation](s.keyTTL)
	if s.now == nil {
		return nil, errors.New("org: WithNow: nil clock")
	}
	if err := db.Migrate(ctx, Component, Migrations()); err != nil {
		return nil, err
	}
	return s, nil
}

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

// DB returns the store's database.
func (s *Store) DB() *sqldb.DB { return s.db }

// Now returns the store's clock reading, in UTC at millisecond precision.
func (s *Store) Now() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func checkName(what, name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("%s name: %w: must not be empty", what, spec.ErrInvalid)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%s name: %w: must be UTF-8", what, spec.ErrInvalid)
	}
	if n := utf8.RuneCountInString(name); n > MaxNameLength {
		return fmt.Errorf("%s name: %w: %d characters, at most %d", what, spec.ErrInvalid, n, MaxNameLength)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return fmt.Errorf("%s name: %w: must not hold control characters", what, spec.ErrInvalid)
	}
	return nil
}

// forUpdate locks the rows a read-modify-write transaction selects on
// PostgreSQL; SQLite's write transactions already hold the database lock.
func (s *Store) forUpdate() string {
	if s.db.Dialect == sqldb.Postgres {
		return " FOR UPDATE"
	}
	return ""
}
