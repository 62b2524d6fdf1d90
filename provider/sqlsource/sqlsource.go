package sqlsource

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqlpage"
	"github.com/aiusage/kit/provider"
)

// Component is the name under which the migrations of this package are
// recorded in schema_migrations.
const Component = "provider/sqlsource"

//go:embed migrations
var migrationFS embed.FS

// Migrations returns the embedded migrations of this package, which [New]
// and [Open] apply: one directory per [Dialect] ("sqlite", "postgres") of
// files "NNNN_name.sql", applied in order of NNNN, each recorded in the
// table schema_migrations under [Component].
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err) // the directory is embedded: cannot happen
	}
	return sub
}

// Source is a [provider.DataSource], [provider.RawSource] and
// [provider.Writer] over the kit's own tables, on SQLite or PostgreSQL. It is
// safe for concurrent use; several processes may share one database.
type Source struct {
	db         *sqldb.DB
	ownDB      bool // opened by Open: Close closes it
	now        func() time.Time
	cacheBytes int64
	pages      rawPages // s itself, or a page cache in front of it
	stmts      sqldb.Stmts
	batchCells int  // see maxBatchCells
	batchRows  int  // see DefaultBatchRows
	noCopy     bool // batches INSERT every row also on PostgreSQL (tests)

	keyMu sync.Mutex
	key   []byte // cursor key, once read
}

var (
	_ provider.DataSource = (*Source)(nil)
	_ provider.RawSource  = (*Source)(nil)
	_ provider.Writer     = (*Source)(nil)
)

// Option configures a [Source].
type Option func(*Source) error

// WithNow sets the clock that stamps records written without an updatedAt
// (and deletions without a time). The default is time.Now.
func WithNow(now func() time.Time) Option {
	return func(s *Source) error {
		if now == nil {
			return errors.New("sqlsource: WithNow(nil)")
		}
		s.now = now
		return nil
	}
}

// DefaultPageCacheBytes is the default budget of the page cache (see
// [WithPageCache]).
const DefaultPageCacheBytes = 32 << 20

// WithPageCache sets the memory budget, in bytes, of the cache of recently
// served pages of stored JSON; 0 disables it. The default is
// [DefaultPageCacheBytes]. A cached page is served again only while no write
// has changed the tenant's list since it was read (checked against the
// database on every request, so the cache is exact also when several
// processes write to one database); serving it costs one primary-key lookup
// instead of reading a page of records.
func WithPageCache(maxBytes int64) Option {
	return func(s *Source) error {
		if maxBytes < 0 {
			return fmt.Errorf("sqlsource: WithPageCache(%d): want 0 (off) or more", maxBytes)
		}
		s.cacheBytes = maxBytes
		return nil
	}
}

// Dialect names the SQL dialect of a database given to [New], and so the
// driver it was opened with: [SQLite] or [Postgres]. It is the kit's one
// dialect type, shared with consumer/sqlstore.
type Dialect = sqldb.Dialect

// The dialects a Source works on.
const (
	// SQLite is a database opened with modernc.org/sqlite (driver name
	// "sqlite").
	SQLite = sqldb.SQLite
	// Postgres is a PostgreSQL database opened with
	// github.com/jackc/pgx/v5/stdlib (driver name "pgx", or stdlib.OpenDB).
	Postgres = sqldb.Postgres
)

// New returns a Source over db, a pool the caller opened, of the given
// dialect, first applying the Source's migrations to it (the tables of the
// package documentation, recorded in the table schema_migrations under
// [Component]; idempotent, safe from several processes at once). The Source does not own db: close db after the last
// use of the Source. [Open] opens and owns the database instead.
//
// db must come from the driver of its dialect, whose errors the Source
// recognises: modernc.org/sqlite for [SQLite], github.com/jackc/pgx/v5/stdlib
// for [Postgres]. A SQLite pool must be opened with the settings [Open]
// applies, at least a busy timeout and write transactions that take the
// write lock when they begin:
//
//	db, err := sql.Open("sqlite", "provider.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate")
//
// New refuses a SQLite pool without a busy timeout. Every connection must
// reach the same database: for a memory database use [Open] with
// "sqlite::memory:" (a plain ":memory:" gives each connection its own).
func New(ctx context.Context, db *sql.DB, dialect Dialect, opts ...Option) (*Source, error) {
	if db == nil {
		return nil, errors.New("sqlsource: New: db is nil")
	}
	sdb, err := sqldb.Wrap(ctx, db, dialect)
	if err != nil {
		return nil, fmt.Errorf("sqlsource: New: %w", err)
	}
	return newFromDB(ctx, sdb, opts...)
}

// Open opens the database at databaseURL and returns a Source over it, as
// [New] does. The URL is one of
//
//	sqlite:PATH                   a SQLite file (its directory must exist), PATH relative or absolute
//	sqlite::memory:               a private in-memory SQLite database, gone when the Source is closed
//	postgres://user:pw@host/db    PostgreSQL (also postgresql://), any libpq URL parameter
//
// SQLite connections get a busy timeout of 5 s, foreign keys, WAL with
// synchronous=NORMAL and a 1 GiB mmap_size for a file, and write
// transactions that begin with BEGIN IMMEDIATE; extra query parameters ("sqlite:x.db?_pragma=...") go to
// modernc.org/sqlite. The Source owns the database: [Source.Close] closes
// it.
func Open(ctx context.Context, databaseURL string, opts ...Option) (*Source, error) {
	db, err := sqldb.Open(ctx, databaseURL)
	if err != nil {
		return nil, fmt.Errorf("sqlsource: %w", err)
	}
	s, err := newFromDB(ctx, db, opts...)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	s.ownDB = true
	return s, nil
}

// newFromDB is [New] over a database from sqldb.Open or sqldb.Wrap.
func newFromDB(ctx context.Context, db *sqldb.DB, opts ...Option) (*Source, error) {
	s := &Source{db: db, now: time.Now, cacheBytes: DefaultPageCacheBytes, batchCells: maxBatchCells, batchRows: DefaultBatchRows}
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	s.pages = s
	if s.cacheBytes > 0 {
		s.pages = &cachedPages{src: s, cache: newPageCache(s.cacheBytes)}
	}
	if err := db.Migrate(ctx, Component, Migrations()); err != nil {
		return nil, fmt.Errorf("sqlsource: %w", err)
	}
	return s, nil
}

// prepared returns the statement for query, prepared once per Source.
func (s *Source) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	return s.stmts.Prepare(ctx, s.db.DB, query)
}

// Close releases the statements the Source prepared and, for a Source from
// [Open], closes its database; a database given to [New] stays open. The
// Source must not be used afterwards.
func (s *Source) Close() error {
	errs := []error{s.stmts.Close()}
	if s.ownDB {
		errs = append(errs, s.db.Close())
	}
	return errors.Join(errs...)
}

// cursorKeySetting is the provider_settings row holding the cursor key.
const cursorKeySetting = "cursor_key"

// CursorKey returns the 32-byte key for sealing cursors (see
// [provider.WithCursorKey]), created at random on first use and stored in the
// database, so every process serving from the same database seals and opens
// cursors with the same key, across restarts. Concurrent first calls, from
// any number of processes, agree on one key.
func (s *Source) CursorKey(ctx context.Context) ([]byte, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.key != nil {
		return append([]byte(nil), s.key...), nil
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("sqlsource: cursor key: %w", err)
	}
	if _, err := s.db.ExecContext(ctx,
		`INSERT INTO provider_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`,
		cursorKeySetting, hex.EncodeToString(fresh)); err != nil {
		return nil, dbError(ctx, "cursor key", err)
	}
	var stored string
	if err := s.db.QueryRowContext(ctx,
		`SELECT value FROM provider_settings WHERE name = $1`, cursorKeySetting).Scan(&stored); err != nil {
		return nil, dbError(ctx, "cursor key", err)
	}
	key, err := hex.DecodeString(stored)
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("sqlsource: cursor key: the stored %s is not 64 hex digits", cursorKeySetting)
	}
	s.key = key
	return append([]byte(nil), key...), nil
}

// dbError turns an error of the database driver into one of the kit's
// (see [sqlpage.DBError]).
func dbError(ctx context.Context, op string, err error) error {
	return sqlpage.DBError(ctx, "sqlsource", op, err)
}

// ms returns t as milliseconds since the Unix epoch, rounded down.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMS returns the UTC time of m milliseconds since the Unix epoch.
func fromMS(m int64) time.Time { return time.UnixMilli(m).UTC() }
