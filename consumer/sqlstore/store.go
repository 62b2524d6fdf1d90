package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqlpage"
	"github.com/aiusage/kit/provider"
)

// Component is the name under which the migrations of this package are
// recorded in schema_migrations.
const Component = "consumer"

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

// Store is a [consumer.Store] on SQLite or PostgreSQL, and the collected
// view of what it stored: a [provider.DataSource], [provider.RawSource] and
// [provider.RawGetter] whose tenants are the source names. It is safe for
// concurrent use; several processes may share one database.
type Store struct {
	db          *sqldb.DB
	ownDB       bool // opened by Open: Close closes it
	asyncCommit bool
	stmts       sqldb.Stmts
}

var (
	_ consumer.Store      = (*Store)(nil)
	_ provider.DataSource = (*Store)(nil)
	_ provider.RawSource  = (*Store)(nil)
	_ provider.RawGetter  = (*Store)(nil)
)

// Option configures a [Store].
type Option func(*Store) error

// WithAsyncCommit makes [Store.SavePage] and [Store.EndRun] commit on
// PostgreSQL without waiting for the commit's WAL to reach the disk (SET
// LOCAL synchronous_commit = off), which saves that wait on every page. A
// crash of the database server may then lose the last commits (those of
// about the last three wal_writer_delay), never part of one: records and
// checkpoints roll back together, so the poller fetches those pages again.
// The default waits. It has no effect on SQLite, where a URL such as
// "sqlite:PATH?_pragma=synchronous(NORMAL)" makes the same trade for the
// whole database.
func WithAsyncCommit() Option {
	return func(s *Store) error {
		s.asyncCommit = true
		return nil
	}
}

// Dialect names the SQL dialect of a database given to [New], and so the
// driver it was opened with: [SQLite] or [Postgres]. It is the kit's one
// dialect type, shared with provider/sqlsource.
type Dialect = sqldb.Dialect

// The dialects a Store works on.
const (
	// SQLite is a database opened with modernc.org/sqlite (driver name
	// "sqlite").
	SQLite = sqldb.SQLite
	// Postgres is a PostgreSQL database opened with
	// github.com/jackc/pgx/v5/stdlib (driver name "pgx", or stdlib.OpenDB).
	Postgres = sqldb.Postgres
)

// New returns a Store over db, a pool the caller opened, of the given
// dialect, first applying the Store's migrations to it (tables prefixed
// consumer_, recorded in the table schema_migrations under [Component];
// idempotent, safe from several processes at once). The Store does not own
// db: close db after the last use of the Store. [Open] opens and owns the
// database instead. The database may be shared, with provider/sqlsource
// among others.
//
// db must come from the driver of its dialect, whose errors the Store
// recognises: modernc.org/sqlite for [SQLite], github.com/jackc/pgx/v5/stdlib
// for [Postgres]. A SQLite pool must be opened with the settings [Open]
// applies, at least a busy timeout and write transactions that take the
// write lock when they begin:
//
//	db, err := sql.Open("sqlite", "consumer.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate")
//
// New refuses a SQLite pool without a busy timeout. Every connection must
// reach the same database: for a memory database use [Open] with
// "sqlite::memory:" (a plain ":memory:" gives each connection its own).
func New(ctx context.Context, db *sql.DB, dialect Dialect, opts ...Option) (*Store, error) {
	if db == nil {
		return nil, errors.New("sqlstore: New: db is nil")
	}
	sdb, err := sqldb.Wrap(ctx, db, dialect)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: New: %w", err)
	}
	return newFromDB(ctx, sdb, opts...)
}

// Open opens the database at databaseURL and returns a Store over it, as
// [New] does. The URL is one of
//
//	sqlite:PATH                   a SQLite file (its directory must exist), PATH relative or absolute
//	sqlite::memory:               a private in-memory SQLite database, gone when the Store is closed
//	postgres://user:pw@host/db    PostgreSQL (also postgresql://), any libpq URL parameter
//
// SQLite connections get a busy timeout of 5 s, foreign keys, WAL with
// synchronous=NORMAL for a file, and write transactions that begin with
// BEGIN IMMEDIATE; extra query parameters ("sqlite:x.db?_pragma=...") go to
// modernc.org/sqlite. A SQLite file also gets the settings of
// [sqlitePragmas] unless the URL sets them. The Store owns the database:
// [Store.Close] closes it.
func Open(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	db, err := sqldb.Open(ctx, withSQLitePragmas(databaseURL))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %w", err)
	}
	s, err := newFromDB(ctx, db, opts...)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	s.ownDB = true
	return s, nil
}

// sqlitePragmas are what [Open] adds to a SQLite file's URL for a sync's
// writes, each unless the URL sets that pragma. A page of records inserts
// into several indexes at random places, so a commit touches many pages
// of each:
//
//   - cache_size: a page cache of up to 64 MiB per connection rather than
//     2 MiB, so those index pages are not read back from the file;
//   - wal_autocheckpoint: a checkpoint every 16,384 pages (64 MiB of WAL)
//     rather than every 1,000, which a commit of one page of 1,000
//     records exceeded, so that a page of an index changed by several
//     commits is copied to the database file once, with one fsync. The
//     WAL file keeps its largest size;
//   - temp_store: statement journals in memory rather than in temporary
//     files. Each multi-row upsert of a page runs in the page's
//     transaction, so SQLite journals every page it changes to undo that
//     statement alone on a constraint error: with temporary files, a
//     system call per page journaled.
//
// BenchmarkConsumerSync's profile, over three full syncs of 100,000
// conversations: the store's reads from the file fell from 1.34 s to
// 0.52 s and its checkpoints from 3.0 s to 2.0 s (cache_size and
// wal_autocheckpoint); the statement journal's writes from 3.9 s to 0.6 s
// and SavePage from 14.3 s to 9.0 s of CPU (temp_store). A 16 KiB page
// size measured worse (SavePage 10.4 s).
var sqlitePragmas = []string{"cache_size(-65536)", "wal_autocheckpoint(16384)", "temp_store(MEMORY)"}

// withSQLitePragmas returns databaseURL with [sqlitePragmas] added when it
// names a SQLite file; other URLs, and malformed ones (for sqldb.Open to
// report), are returned as they are.
func withSQLitePragmas(databaseURL string) string {
	rest, ok := strings.CutPrefix(databaseURL, "sqlite:")
	if !ok {
		return databaseURL
	}
	path, query, _ := strings.Cut(rest, "?")
	vals, err := url.ParseQuery(query)
	if err != nil || path == "" || path == ":memory:" || strings.HasPrefix(path, "//") {
		return databaseURL
	}
	var add []string
	for _, p := range sqlitePragmas {
		name, _, _ := strings.Cut(p, "(")
		if !slices.ContainsFunc(vals["_pragma"], func(v string) bool {
			return strings.HasPrefix(strings.ToLower(strings.TrimSpace(v)), name)
		}) {
			add = append(add, "_pragma="+url.QueryEscape(p))
		}
	}
	if len(add) == 0 {
		return databaseURL
	}
	sep := "?"
	if strings.Contains(databaseURL, "?") {
		sep = "&"
	}
	return databaseURL + sep + strings.Join(add, "&")
}

// newFromDB is [New] over a database from sqldb.Open or sqldb.Wrap.
func newFromDB(ctx context.Context, db *sqldb.DB, opts ...Option) (*Store, error) {
	s := &Store{db: db}
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	if err := db.Migrate(ctx, Component, Migrations()); err != nil {
		return nil, fmt.Errorf("sqlstore: %w", err)
	}
	return s, nil
}

// ErrNoStore is returned, wrapped, by [OpenExisting] when the database holds
// no consumer store: a SQLite file that does not exist, a memory database,
// or a database where the migrations of this package are not all applied.
var ErrNoStore = errors.New("sqlstore: no consumer store in the database")

// OpenExisting opens the store in the database at databaseURL (see [Open]),
// for commands that read or manage what a consumer collected: unlike
// [Open], it creates nothing, neither a SQLite file nor a table, and applies
// no migration. It returns an error wrapping [ErrNoStore] when there is no
// store there: a "sqlite:PATH" whose file does not exist or is empty (the
// path is looked up before the database is opened), "sqlite::memory:"
// (always new, so always empty), or a database where the migrations of
// [Component] are not all applied. Opening an existing SQLite file still
// sets it to WAL mode, as [Open] does. The Store owns the database:
// [Store.Close] closes it.
func OpenExisting(ctx context.Context, databaseURL string) (*Store, error) {
	if rest, ok := strings.CutPrefix(databaseURL, "sqlite:"); ok {
		path, query, _ := strings.Cut(rest, "?")
		_, qerr := url.ParseQuery(query)
		switch {
		case path == "" || strings.HasPrefix(path, "//") || qerr != nil:
			// A malformed URL: sqldb.Open reports it (sqldb.ErrURL) before
			// it opens anything.
		case path == ":memory:":
			return nil, fmt.Errorf("%w: %s is a new, empty memory database", ErrNoStore, databaseURL)
		default:
			fi, err := os.Stat(path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return nil, fmt.Errorf("%w: %s: no such file", ErrNoStore, databaseURL)
			case err != nil:
				return nil, fmt.Errorf("sqlstore: %w", err)
			case fi.Mode().IsRegular() && fi.Size() == 0:
				// An empty database, which opening would write a header to.
				return nil, fmt.Errorf("%w: %s: empty file", ErrNoStore, databaseURL)
			}
		}
	}
	db, err := sqldb.Open(ctx, databaseURL)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %w", err)
	}
	s, err := existing(ctx, db)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	s.ownDB = true
	return s, nil
}

// existing returns a Store over db, whose migrations must all be applied.
func existing(ctx context.Context, db *sqldb.DB) (*Store, error) {
	// Reads schema_migrations only when it exists: creates nothing.
	ok, err := db.MigrationsApplied(ctx, Component, Migrations())
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s: the %s migrations are not all applied", ErrNoStore, db.URL(), Component)
	}
	return &Store{db: db}, nil
}

// Close releases the statements the Store prepared and, for a Store from
// [Open], closes its database; a database given to [New] stays open. The
// Store must not be used afterwards.
func (s *Store) Close() error {
	errs := []error{s.stmts.Close()}
	if s.ownDB {
		errs = append(errs, s.db.Close())
	}
	return errors.Join(errs...)
}

// prepared returns the statement for query, prepared once per Store.
func (s *Store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	return s.stmts.Prepare(ctx, s.db.DB, query)
}

// dbError turns an error of the database driver into one of the kit's
// (see [sqlpage.DBError]).
func dbError(ctx context.Context, op string, err error) error {
	return sqlpage.DBError(ctx, "sqlstore", op, err)
}

// checkResource returns an error unless r is one of [consumer.Resources].
func checkResource(op string, r consumer.Resource) error {
	if !slices.Contains(consumer.Resources, r) {
		return fmt.Errorf("sqlstore: %s: unknown resource %q", op, r)
	}
	return nil
}

// ms returns t as milliseconds since the Unix epoch, rounded down.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMS returns the UTC time of m milliseconds since the Unix epoch.
func fromMS(m int64) time.Time { return time.UnixMilli(m).UTC() }

// nullMS returns t in milliseconds, or nil (NULL) for the zero time.
func nullMS(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return ms(t)
}

// fromNullMS returns the time of a nullable millisecond column, the zero
// time for NULL.
func fromNullMS(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromMS(n.Int64)
}
