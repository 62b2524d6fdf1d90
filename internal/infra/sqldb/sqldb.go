package sqldb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver
)

// Dialect names the SQL dialect, and so the driver, behind a [DB].
type Dialect string

// The dialects the kit supports.
const (
	// SQLite is the embedded database, through modernc.org/sqlite.
	SQLite Dialect = "sqlite"
	// Postgres is PostgreSQL, through github.com/jackc/pgx/v5/stdlib.
	Postgres Dialect = "postgres"
)

// RowAddress is the expression that addresses a row of a table within one
// statement: SQLite's rowid, PostgreSQL's ctid. A query that sizes a page's
// rows before it loads their bodies selects it, and reads each body that
// fits by it: a lookup cheaper than the primary key's.
func (d Dialect) RowAddress() string {
	if d == Postgres {
		return "ctid"
	}
	return "rowid"
}

// BusyTimeout is how long, in milliseconds, a SQLite connection waits for a
// lock held by another connection before failing with SQLITE_BUSY.
const BusyTimeout = 5000

// MmapSize is the mmap_size, in bytes, of a SQLite file's connections: up
// to this much of the database file is read through a memory map rather
// than read(2) into each connection's own page cache, so reading a page of
// rows costs no system calls once the file is in the OS's cache.
const MmapSize = 1 << 30

// DefaultPostgresMaxConns bounds the connections a PostgreSQL pool of [Open]
// opens, unless the URL's pool_max_conns parameter says otherwise. Without a
// bound, a burst of requests opened one connection each until the server
// refused every client ("too many clients already"), other processes' too.
// Requests beyond the bound wait for a connection, within their deadlines.
const DefaultPostgresMaxConns = 20

// ErrURL marks an error of [Open] caused by the URL itself (its form, an
// unsupported scheme), as opposed to a database that cannot be reached.
var ErrURL = errors.New("bad database URL")

// urlError wraps an error about the URL's form with ErrURL.
func urlError(format string, a ...any) error {
	return fmt.Errorf("%w: %w", ErrURL, fmt.Errorf(format, a...))
}

// acceptedForms is quoted by the error for an unsupported URL.
const acceptedForms = `want "sqlite:PATH", "sqlite::memory:", "postgres://..." or "postgresql://..."`

// DB is a database/sql pool together with its dialect. Build it with [Open],
// or with [Wrap] over a pool opened elsewhere; a DB assembled by hand misses
// the checks of Wrap and the connection settings Open applies (for SQLite,
// BEGIN IMMEDIATE, on which [DB.Migrate] relies). A DB is safe for
// concurrent use.
type DB struct {
	*sql.DB
	// Dialect is the SQL dialect of the database.
	Dialect Dialect

	url  string    // the URL given to Open, password masked
	keep *sql.Conn // SQLite memory database: holds it alive

	sqliteDSN  string          // SQLite: what sql.Open was given
	sqlitePath string          // SQLite file: its path ("" in memory)
	pgConfig   *pgx.ConnConfig // PostgreSQL: the parsed URL
	pgMax      int             // PostgreSQL: the pool's connection bound
}

// Open opens and pings the database at rawURL, which is one of
//
//	sqlite:PATH                   a SQLite file, PATH relative to the working directory or absolute
//	sqlite::memory:               a private in-memory SQLite database, shared by the pool
//	postgres://user:pw@host/db    PostgreSQL (also postgresql://), any libpq URL parameter
//
// A PostgreSQL pool opens at most [DefaultPostgresMaxConns] connections, or
// the URL's pool_max_conns (a positive integer, as pgxpool spells it), which
// Open takes out of the URL before connecting.
//
// The parent directory of a SQLite file must exist. A SQLite file that does
// not exist is created with mode 0600 (owner only; SQLite gives its -wal and
// -shm files the mode of the database file); the mode of an existing file is
// left as it is. See the package documentation for the settings applied to
// each connection.
func Open(ctx context.Context, rawURL string) (*DB, error) {
	switch {
	case strings.HasPrefix(rawURL, "sqlite:"):
		return openSQLite(ctx, rawURL)
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		return openPostgres(ctx, rawURL)
	case rawURL == "":
		return nil, urlError("sqldb: empty database URL: %s", acceptedForms)
	default:
		scheme, _, _ := strings.Cut(rawURL, ":")
		return nil, urlError("sqldb: unsupported database URL scheme %q: %s", scheme, acceptedForms)
	}
}

func openSQLite(ctx context.Context, rawURL string) (*DB, error) {
	rest := strings.TrimPrefix(rawURL, "sqlite:")
	if strings.HasPrefix(rest, "//") {
		return nil, urlError("sqldb: SQLite URL %q: write sqlite:PATH (sqlite:/abs/path.db or sqlite:rel/path.db), not sqlite://", rawURL)
	}
	path, rawQuery, _ := strings.Cut(rest, "?")
	if path == "" {
		return nil, urlError("sqldb: SQLite URL %q has no path: %s", rawURL, acceptedForms)
	}
	extra, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, urlError("sqldb: SQLite URL %q: query: %w", rawURL, err)
	}
	memory := path == ":memory:"

	params := url.Values{}
	params.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout))
	params.Add("_pragma", "foreign_keys(1)")
	if !memory {
		// WAL with synchronous=NORMAL: a commit survives the process
		// being killed (it is in the WAL, handed to the OS); only a power
		// loss or OS crash may roll back the last commits, never corrupt
		// the database. FULL would sync the WAL on every commit, which
		// costs more than the writes of a page.
		params.Add("_pragma", "journal_mode(WAL)")
		params.Add("_pragma", fmt.Sprintf("mmap_size(%d)", MmapSize))
		if !slices.ContainsFunc(extra["_pragma"], func(p string) bool {
			return strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), "synchronous")
		}) { // the driver keeps the first value of a pragma
			params.Add("_pragma", "synchronous(NORMAL)")
		}
	}
	params.Set("_txlock", "immediate")
	params.Set("_time_format", "sqlite")
	for k, vs := range extra {
		if k == "_pragma" {
			params[k] = append(params[k], vs...)
		} else {
			params[k] = vs
		}
	}

	var dsn string
	if memory {
		var b [12]byte
		_, _ = rand.Read(b[:])
		// A name starting with "/" on the memdb VFS is shared by every
		// connection of the process that opens it.
		params.Set("vfs", "memdb")
		dsn = "file:/aiusage-" + hex.EncodeToString(b[:]) + "?" + params.Encode()
	} else {
		// Not a file: URI, so modernc passes the path to SQLite verbatim and
		// strips the query it consumes.
		dsn = path + "?" + params.Encode()
		if err := createPrivate(path); err != nil {
			return nil, fmt.Errorf("sqldb: open %s: %w", rawURL, err)
		}
	}

	sqlDB, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqldb: open %s: %w", rawURL, err)
	}
	db := &DB{DB: sqlDB, Dialect: SQLite, url: rawURL, sqliteDSN: dsn}
	if !memory {
		db.sqlitePath = path
	}
	if memory {
		db.keep, err = sqlDB.Conn(ctx)
		if err == nil {
			err = db.keep.PingContext(ctx)
		}
	} else {
		err = sqlDB.PingContext(ctx)
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqldb: open %s: %w", rawURL, err)
	}
	return db, nil
}

// createPrivate creates the SQLite file at path, empty (which SQLite takes
// for a new database), with mode 0600, unless it exists. SQLite would
// create it with mode 0644, letting every local user read the database.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// SQLitePath returns the path of a SQLite database file as given in its
// URL, and "" for a memory database, PostgreSQL or a DB from [Wrap].
func (db *DB) SQLitePath() string { return db.sqlitePath }

func openPostgres(ctx context.Context, rawURL string) (*DB, error) {
	masked := MaskURL(rawURL)
	connURL, maxConns, err := poolMaxConns(rawURL)
	if err != nil {
		return nil, urlError("sqldb: %s: %w", masked, err)
	}
	cfg, err := pgx.ParseConfig(connURL)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, urlError("sqldb: %w", err)
	}
	sqlDB := stdlib.OpenDB(*cfg)
	sqlDB.SetMaxOpenConns(maxConns)
	sqlDB.SetMaxIdleConns(maxConns)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	db := &DB{DB: sqlDB, Dialect: Postgres, url: masked, pgConfig: cfg, pgMax: maxConns}
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("sqldb: open %s: %w", masked, err)
	}
	return db, nil
}

// poolMaxConns takes the pool_max_conns parameter out of a PostgreSQL URL
// (pgx would send it to the server as a setting, which refuses it) and
// returns the URL without it and the bound, [DefaultPostgresMaxConns] when
// absent.
func poolMaxConns(rawURL string) (string, int, error) {
	u, err := url.Parse(rawURL)
	if err != nil || !strings.Contains(u.RawQuery, "pool_max_conns") {
		return rawURL, DefaultPostgresMaxConns, nil // pgx reports a malformed URL
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "", 0, fmt.Errorf("query: %w", err)
	}
	v := q.Get("pool_max_conns")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 10000 {
		return "", 0, fmt.Errorf("pool_max_conns must be an integer from 1 to 10000, got %q", v)
	}
	q.Del("pool_max_conns")
	u.RawQuery = q.Encode()
	return u.String(), n, nil
}

// Wrap returns a DB over sqlDB, a pool the caller opened, of dialect d:
// for [SQLite] a pool of modernc.org/sqlite, for [Postgres] one of
// github.com/jackc/pgx/v5/stdlib, the drivers whose errors this package
// recognises. It refuses either of those two drivers under the other
// dialect; a driver it does not know (one wrapped for tracing, say) is
// taken at its word.
//
// A SQLite pool must be set up as [Open] sets up its own (see the package
// documentation): busy_timeout, and "_txlock=immediate" on which
// [DB.Migrate] and the stores' write transactions rely; journal_mode WAL
// for a file is advised. Wrap checks the busy timeout of one connection,
// which sql.Open("sqlite", "x.db") leaves at 0, and refuses such a pool; it
// cannot see "_txlock".
//
// The DB has no URL ([DB.URL] returns ""), and [DB.SQLitePool] and
// [DB.PgxPool] fail on it. [DB.Close] closes sqlDB.
func Wrap(ctx context.Context, sqlDB *sql.DB, d Dialect) (*DB, error) {
	if sqlDB == nil {
		return nil, errors.New("sqldb: Wrap: nil *sql.DB")
	}
	switch drv := sqlDB.Driver(); d {
	case SQLite:
		if _, ok := drv.(*stdlib.Driver); ok {
			return nil, fmt.Errorf("sqldb: Wrap: dialect %s on a pgx (PostgreSQL) pool", d)
		}
		var timeout int
		if err := sqlDB.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&timeout); err != nil {
			return nil, fmt.Errorf("sqldb: Wrap: read busy_timeout: %w", err)
		}
		if timeout <= 0 {
			return nil, fmt.Errorf("sqldb: Wrap: the SQLite pool has no busy timeout: open it with "+
				"\"?_pragma=busy_timeout(%d)&_txlock=immediate\" (see Open)", BusyTimeout)
		}
	case Postgres:
		if _, ok := drv.(*sqlite.Driver); ok {
			return nil, fmt.Errorf("sqldb: Wrap: dialect %s on a modernc.org/sqlite pool", d)
		}
	default:
		return nil, fmt.Errorf("sqldb: Wrap: unsupported dialect %q, want %q or %q", d, SQLite, Postgres)
	}
	return &DB{DB: sqlDB, Dialect: d}, nil
}

// SQLitePool opens another database/sql pool on the same SQLite database
// (file or memory), with the same connection settings, limited to maxOpen
// connections. A component that must not compete with the main pool for
// connections (River's job queue wants exactly one) uses it. The caller
// closes it, before db for a memory database.
func (db *DB) SQLitePool(maxOpen int) (*sql.DB, error) {
	if db.Dialect != SQLite {
		return nil, fmt.Errorf("sqldb: SQLitePool on a %s database", db.Dialect)
	}
	if db.sqliteDSN == "" {
		return nil, errors.New("sqldb: SQLitePool on a DB from Wrap")
	}
	p, err := sql.Open("sqlite", db.sqliteDSN)
	if err != nil {
		return nil, err
	}
	p.SetMaxOpenConns(maxOpen)
	return p, nil
}

// PgxPool opens a pgx connection pool on the same PostgreSQL database, with
// the same parameters (search_path included), for components that speak pgx
// natively (River's driver). The caller closes it.
func (db *DB) PgxPool(ctx context.Context) (*pgxpool.Pool, error) {
	if db.Dialect != Postgres {
		return nil, fmt.Errorf("sqldb: PgxPool on a %s database", db.Dialect)
	}
	if db.pgConfig == nil {
		return nil, errors.New("sqldb: PgxPool on a DB from Wrap")
	}
	cfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig = db.pgConfig.Copy()
	if cfg.MaxConns > int32(db.pgMax) {
		cfg.MaxConns = int32(db.pgMax)
	}
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("sqldb: pgx pool on %s: %w", db.url, err)
	}
	return p, nil
}

// TxAttempts is how often InTxRetry runs a transaction that fails only
// because of concurrent ones.
const TxAttempts = 4

// InTxRetry is InTx, run again (up to TxAttempts times in all, after 5 ms,
// 20 ms and 80 ms with jitter) while the transaction fails only because of
// concurrent ones ([IsRetryable]): a PostgreSQL deadlock or serialization
// failure, SQLite's busy timeout. fn must not keep state across attempts.
// After the last attempt the error is still retryable, so callers can tell
// "busy" from other failures; a cancelled ctx ends the waiting with its error.
func (db *DB) InTxRetry(ctx context.Context, fn func(*sql.Tx) error) error {
	backoff := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := db.InTx(ctx, fn)
		if attempt == TxAttempts || !IsRetryable(err) {
			return err
		}
		t := time.NewTimer(backoff + time.Duration(mrand.Int64N(int64(backoff))))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff *= 4
	}
}

// URL returns the URL the database was opened with, with any password
// replaced by "xxxxx", for logs; "" for a DB from [Wrap].
func (db *DB) URL() string { return db.url }

// Close closes the database, first releasing the connection that keeps a
// SQLite memory database alive (the database is then gone).
func (db *DB) Close() error {
	var errKeep error
	if db.keep != nil {
		errKeep = db.keep.Close()
		db.keep = nil
	}
	return errors.Join(errKeep, db.DB.Close())
}

// MaskURL returns rawURL with the password of its user info, and any
// "password" query parameter, replaced by "xxxxx". A string that does not
// parse as a URL is returned as "<unparsable URL>", since it cannot be
// masked reliably.
func MaskURL(rawURL string) string {
	if strings.HasPrefix(rawURL, "sqlite:") {
		// Not a hierarchical URL; a path may contain '%' or '#'.
		return rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "<unparsable URL>"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// InTx runs fn in a transaction and commits it if fn returns nil; fn must
// not commit or roll back tx itself (InTx then returns an error wrapping
// [sql.ErrTxDone]). It rolls
// the transaction back if fn returns an error (returned as is, joined with a
// failed rollback's error) or panics (the panic then continues). On SQLite
// the transaction takes the write lock at its start (see the package
// documentation).
func (db *DB) InTx(ctx context.Context, fn func(*sql.Tx) error) (err error) {
	return inTx(ctx, db.BeginTx, fn)
}

// InConnTx is [DB.InTx] on conn, a connection of the pool taken with
// [sql.DB.Conn]: for a transaction that also uses the driver's connection
// itself ([sql.Conn.Raw]), such as pgx's COPY. The caller closes conn.
func InConnTx(ctx context.Context, conn *sql.Conn, fn func(*sql.Tx) error) error {
	return inTx(ctx, conn.BeginTx, fn)
}

func inTx(ctx context.Context, begin func(context.Context, *sql.TxOptions) (*sql.Tx, error), fn func(*sql.Tx) error) (err error) {
	tx, err := begin(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqldb: begin: %w", err)
	}
	committed := false
	defer func() {
		if committed {
			return
		}
		if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) && err != nil {
			err = errors.Join(err, fmt.Errorf("sqldb: rollback: %w", rerr))
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	committed = true
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqldb: commit: %w", err)
	}
	return nil
}
