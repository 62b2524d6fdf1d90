// Package sqldb is the storage base shared by every store of the kit
// (provider/sqlsource, consumer/sqlstore, org, reviewapi). It opens a
// database from a URL (or takes a pool opened elsewhere, see [Wrap]),
// applies each component's embedded SQL migrations,
// runs transactions and translates driver errors, on two dialects:
//
//   - [SQLite] through modernc.org/sqlite (pure Go, driver name "sqlite"):
//     URLs "sqlite:PATH" and "sqlite::memory:".
//   - [Postgres] through github.com/jackc/pgx/v5/stdlib (database/sql):
//     URLs "postgres://..." and "postgresql://...".
//
// # Usage
//
//	//go:embed migrations
//	var migrations embed.FS // migrations/sqlite/0001_init.sql, migrations/postgres/0001_init.sql
//
//	db, err := sqldb.Open(ctx, "sqlite:/var/lib/aiusage/aiusage.db")
//	if err != nil {
//		return err
//	}
//	defer db.Close()
//	sub, _ := fs.Sub(migrations, "migrations")
//	if err := db.Migrate(ctx, "consumer", sub); err != nil {
//		return err
//	}
//	err = db.InTx(ctx, func(tx *sql.Tx) error {
//		_, err := tx.ExecContext(ctx, `INSERT INTO things (id, name) VALUES ($1, $2)`, id, name)
//		if sqldb.IsUniqueViolation(err) {
//			return fmt.Errorf("thing %s: %w", id, errConflict)
//		}
//		return err
//	})
//
// # Placeholders
//
// The kit writes PostgreSQL-style positional placeholders ($1, $2, ...) for
// both dialects. SQLite parses "$1" as a named parameter, and modernc.org/sqlite
// binds a parameter named "$N" to the N-th argument (not to the N-th distinct
// parameter in order of appearance), so "$2 ... $1" and a repeated "$1" bind
// exactly as on PostgreSQL. The tests of this package pin that behaviour, so
// there is no Rebind step. Do not write "?" placeholders in kit code.
//
// # SQLite connections and write concurrency
//
// Every SQLite connection opened by [Open] runs
//
//	PRAGMA busy_timeout = 5000   -- wait up to 5 s for a lock instead of failing with SQLITE_BUSY
//	PRAGMA foreign_keys = ON
//	PRAGMA journal_mode = WAL    -- file databases only
//	PRAGMA synchronous = NORMAL  -- file databases only: a commit survives a killed process, not a power loss
//	PRAGMA mmap_size = 1073741824 -- file databases only: reads through a memory map, not read(2) (see MmapSize)
//
// and the driver is told to start every read-write transaction with
// BEGIN IMMEDIATE (modernc's "_txlock=immediate"), and to write time.Time values
// in SQLite's own text format ("_time_format=sqlite"; stores should still pass
// UTC times or integers so that text comparison orders them).
//
// The pool is not limited to one connection: in WAL mode readers never block
// the writer nor each other, so queries run concurrently. Writers are
// serialised by SQLite itself. The classic failure of a database/sql pool over
// SQLite is a deferred transaction that reads and then tries to write while
// another connection already writes: SQLite then returns SQLITE_BUSY at once,
// without calling the busy handler, since waiting could deadlock. Taking the
// write lock at BEGIN avoids that, so a write transaction either gets the lock
// within the busy timeout or fails with a busy error. The price: read-write
// transactions are serialised, even those that turn out to only read. Pass
// &sql.TxOptions{ReadOnly: true} to BeginTx for a read-only transaction; it
// starts with a plain BEGIN and runs concurrently (SQLite does not enforce
// the flag: do not write in such a transaction). A single statement outside
// a transaction takes the write lock when it starts, with the busy handler.
//
// "sqlite::memory:" opens a private in-memory database with a unique name on
// SQLite's "memdb" VFS ("file:/aiusage-<random>?vfs=memdb"), which every
// connection of the pool opening that name shares, with the normal locking
// and busy handling. A plain ":memory:" would give each pooled connection its
// own empty database; "cache=shared" would share one database per name across
// the whole process and use table-level locks that ignore the busy timeout. A
// memdb database lives as long as one connection to it is open, so [DB] holds
// one connection for its whole life and [DB.Close] releases it. Two calls to
// Open("sqlite::memory:") give two independent databases. WAL is not used for
// memory databases. Since the held connection counts against the pool, do not
// limit a memory database's pool below two open connections.
//
// Extra query parameters in a SQLite URL ("sqlite:x.db?_pragma=synchronous(FULL)")
// are handed to modernc.org/sqlite after the defaults above; "_pragma" values
// are added, other keys replace the defaults.
//
// # PostgreSQL
//
// The URL is parsed by pgx; parameters pgx does not know, such as
// "search_path" or "application_name", are sent as run-time parameters when
// each connection starts, so "postgres://host/db?search_path=tenant1" puts every
// pooled connection in schema tenant1.
//
// # Migrations
//
// See [DB.Migrate]. Each component keeps its own versions in the shared table
// schema_migrations(component, version, name, applied_at).
package sqldb
