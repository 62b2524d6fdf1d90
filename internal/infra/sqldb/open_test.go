package sqldb_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// eachDialect runs fn as a parallel subtest per dialect, without opening a
// database (for tests that need URLs).
func eachDialect(t *testing.T, fn func(t *testing.T, d sqldb.Dialect)) {
	t.Helper()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, d)
		})
	}
}

func openURL(t *testing.T, u string) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(t.Context(), u)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

// roundTrip creates a table, writes and reads a row.
func roundTrip(t *testing.T, db *sqldb.DB) {
	t.Helper()
	ctx := t.Context()
	_, err := db.ExecContext(ctx, `CREATE TABLE rt (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO rt (id, v) VALUES ($1, $2)`, 1, "one")
	require.NoError(t, err)
	var v string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT v FROM rt WHERE id = $1`, 1).Scan(&v))
	require.Equal(t, "one", v)
}

func TestOpenSQLiteForms(t *testing.T) {
	t.Parallel()

	t.Run("absolute path", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "abs.db")
		db := openURL(t, "sqlite:"+path)
		require.Equal(t, sqldb.SQLite, db.Dialect)
		require.Equal(t, "sqlite:"+path, db.URL())
		roundTrip(t, db)
		_, err := os.Stat(path)
		require.NoError(t, err, "database file created at the given path")
	})

	t.Run("relative path", func(t *testing.T) {
		t.Parallel()
		wd, err := os.Getwd()
		require.NoError(t, err)
		dir := t.TempDir()
		rel, err := filepath.Rel(wd, filepath.Join(dir, "rel.db"))
		require.NoError(t, err)
		require.False(t, filepath.IsAbs(rel))
		db := openURL(t, "sqlite:"+rel)
		roundTrip(t, db)
		_, err = os.Stat(filepath.Join(dir, "rel.db"))
		require.NoError(t, err, "relative path resolved against the working directory")
	})

	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		db := openURL(t, "sqlite::memory:")
		require.Equal(t, sqldb.SQLite, db.Dialect)
		roundTrip(t, db)
	})

	t.Run("extra parameters", func(t *testing.T) {
		t.Parallel()
		db := openURL(t, "sqlite:"+filepath.Join(t.TempDir(), "x.db"))
		var sync int
		require.NoError(t, db.QueryRowContext(t.Context(), `PRAGMA synchronous`).Scan(&sync))
		require.Equal(t, 1, sync, "NORMAL by default")
		db = openURL(t, "sqlite:"+filepath.Join(t.TempDir(), "x.db")+"?_pragma=synchronous(FULL)")
		require.NoError(t, db.QueryRowContext(t.Context(), `PRAGMA synchronous`).Scan(&sync))
		require.Equal(t, 2, sync, "FULL from the URL")
	})
}

func TestOpenPostgresForms(t *testing.T) {
	t.Parallel()
	u := sqldbtest.URL(t, sqldb.Postgres)
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		t.Run(strings.TrimSuffix(scheme, "://"), func(t *testing.T) {
			// Not parallel: both subtests use the same schema.
			db := openURL(t, scheme+strings.TrimPrefix(u, "postgres://"))
			require.Equal(t, sqldb.Postgres, db.Dialect)
			var schema string
			require.NoError(t, db.QueryRowContext(t.Context(), `SELECT current_schema()`).Scan(&schema))
			require.Equal(t, sqldbtest.SchemaOf(u), schema, "search_path from the URL is used")
		})
	}
}

// TestPostgresPoolBounded: a PostgreSQL pool opens at most
// DefaultPostgresMaxConns connections (it had no bound, so a burst of
// requests exhausted the server's connections), or the URL's
// pool_max_conns, which is not sent to the server as a setting.
func TestPostgresPoolBounded(t *testing.T) {
	t.Parallel()
	u := sqldbtest.URL(t, sqldb.Postgres)
	db := openURL(t, u)
	require.Equal(t, sqldb.DefaultPostgresMaxConns, db.Stats().MaxOpenConnections)
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	db = openURL(t, u+sep+"pool_max_conns=3")
	require.Equal(t, 3, db.Stats().MaxOpenConnections)
	require.NoError(t, db.PingContext(t.Context()), "pool_max_conns is not sent to the server")
	pool, err := db.PgxPool(t.Context())
	require.NoError(t, err)
	defer pool.Close()
	require.LessOrEqual(t, pool.Config().MaxConns, int32(3), "the pgx pool keeps the bound")

	for _, bad := range []string{"0", "-1", "x", "10001"} {
		_, err := sqldb.Open(t.Context(), u+sep+"pool_max_conns="+bad)
		require.ErrorIs(t, err, sqldb.ErrURL, bad)
		require.ErrorContains(t, err, "pool_max_conns must be an integer", bad)
	}
}

func TestOpenBadURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, url, want string
	}{
		{"empty", "", "sqlite:PATH"},
		{"mysql", "mysql://u:pw@localhost/db", `scheme "mysql"`},
		{"bare path", "/var/lib/x.db", "postgres://"},
		{"sqlite no path", "sqlite:", "no path"},
		{"sqlite double slash", "sqlite://x.db", "not sqlite://"},
		{"sqlite missing dir", "sqlite:" + filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"), "open"},
		{"postgres bad port", "postgres://u:secret@localhost:notaport/db", "cannot parse"},
		{"postgres unreachable", "postgres://u:secret@127.0.0.1:1/db?connect_timeout=2", "open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db, err := sqldb.Open(t.Context(), tt.url)
			require.Error(t, err)
			require.Nil(t, db)
			require.Contains(t, err.Error(), tt.want)
			require.NotContains(t, err.Error(), "secret", "password leaked in error")
		})
	}
}

func TestMaskURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"postgres://u:secret@host:5432/db?sslmode=disable", "postgres://u:xxxxx@host:5432/db?sslmode=disable"},
		{"postgres://u@host/db", "postgres://u@host/db"},
		{"postgresql://host/db?password=secret&search_path=s", "postgresql://host/db?password=xxxxx&search_path=s"},
		{"sqlite:/tmp/x.db", "sqlite:/tmp/x.db"},
		{"sqlite::memory:", "sqlite::memory:"},
		{"postgres://u:secret@[bad/db", "<unparsable URL>"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, sqldb.MaskURL(tt.in), tt.in)
	}
}

func TestURLMasksPassword(t *testing.T) {
	t.Parallel()
	base := sqldbtest.URL(t, sqldb.Postgres)
	// Trust authentication ignores the password; it must not show.
	u := strings.Replace(base, "postgres://", "postgres://postgres:secret@", 1)
	if strings.Contains(strings.TrimPrefix(base, "postgres://"), "@") {
		u = strings.Replace(base, "@", ":secret@", 1)
	}
	db, err := sqldb.Open(t.Context(), u)
	if err != nil {
		t.Skipf("server does not accept a password on this URL: %v", err)
	}
	defer db.Close()
	require.NotContains(t, db.URL(), "secret")
	require.Contains(t, db.URL(), "xxxxx")
}

func TestSQLitePragmas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, url, journal string
	}{
		{"file", "sqlite:" + filepath.Join(t.TempDir(), "p.db"), "wal"},
		{"memory", "sqlite::memory:", "memory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := openURL(t, tt.url)
			ctx := t.Context()
			// Hold several connections at once, so the pragmas are seen on
			// more than the first connection of the pool.
			var conns []*sql.Conn
			for range 3 {
				c, err := db.Conn(ctx)
				require.NoError(t, err)
				conns = append(conns, c)
			}
			for _, c := range conns {
				var journal string
				var fk, busy int
				require.NoError(t, c.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&journal))
				require.NoError(t, c.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk))
				require.NoError(t, c.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy))
				require.Equal(t, tt.journal, journal)
				require.Equal(t, 1, fk)
				require.Equal(t, sqldb.BusyTimeout, busy)
			}
			for _, c := range conns {
				require.NoError(t, c.Close())
			}
		})
	}
}

func TestSQLiteMemoryShared(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openURL(t, "sqlite::memory:")
	_, err := db.ExecContext(ctx, `CREATE TABLE shared (id INTEGER PRIMARY KEY, who TEXT NOT NULL)`)
	require.NoError(t, err)

	// Several connections held at the same time all see the table.
	const n = 5
	var conns []*sql.Conn
	for range n {
		c, err := db.Conn(ctx)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	require.GreaterOrEqual(t, db.Stats().OpenConnections, n+1)
	for i, c := range conns {
		_, err := c.ExecContext(ctx, `INSERT INTO shared (id, who) VALUES ($1, $2)`, i, fmt.Sprint("conn", i))
		require.NoError(t, err)
	}
	for _, c := range conns {
		var count int
		require.NoError(t, c.QueryRowContext(ctx, `SELECT count(*) FROM shared`).Scan(&count))
		require.Equal(t, n, count)
		require.NoError(t, c.Close())
	}

	// Concurrent read-only transactions run side by side and see the rows.
	var txs []*sql.Tx
	for range n {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		require.NoError(t, err)
		txs = append(txs, tx)
	}
	for _, tx := range txs {
		var count int
		require.NoError(t, tx.QueryRowContext(ctx, `SELECT count(*) FROM shared`).Scan(&count))
		require.Equal(t, n, count)
		require.NoError(t, tx.Rollback())
	}

	// Concurrent write transactions from many goroutines all land.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			errs <- db.InTx(ctx, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO shared (id, who) VALUES ($1, 'tx')`, 100+i)
				return err
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var count int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM shared`).Scan(&count))
	require.Equal(t, n+20, count)

	// Another memory database is a different database.
	other := openURL(t, "sqlite::memory:")
	err = other.QueryRowContext(ctx, `SELECT count(*) FROM shared`).Scan(&count)
	require.ErrorContains(t, err, "no such table")
}

func TestSQLiteMemoryGoneAfterClose(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := sqldb.Open(ctx, "sqlite::memory:")
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `CREATE TABLE x (id INTEGER)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.Error(t, db.PingContext(ctx), "closed")
}

// TestSQLiteWriteContention checks the concurrency choice: read-then-write
// transactions from many goroutines, which fail with SQLITE_BUSY under
// deferred transactions, all succeed and none loses an update.
func TestSQLiteWriteContention(t *testing.T) {
	t.Parallel()
	for name, u := range map[string]string{
		"file":   "sqlite:" + filepath.Join(t.TempDir(), "c.db"),
		"memory": "sqlite::memory:",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := openURL(t, u)
			_, err := db.ExecContext(ctx, `CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO counter VALUES (1, 0)`)
			require.NoError(t, err)
			const workers, rounds = 8, 25
			var wg sync.WaitGroup
			errs := make(chan error, workers*rounds)
			for range workers {
				wg.Go(func() {
					for range rounds {
						errs <- db.InTx(ctx, func(tx *sql.Tx) error {
							var n int
							if err := tx.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
								return err
							}
							_, err := tx.ExecContext(ctx, `UPDATE counter SET n = $1 WHERE id = 1`, n+1)
							return err
						})
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			var n int
			require.NoError(t, db.QueryRowContext(ctx, `SELECT n FROM counter`).Scan(&n))
			require.Equal(t, workers*rounds, n)
		})
	}
}

// TestPlaceholders pins the finding that modernc.org/sqlite binds $N to the
// N-th argument, as PostgreSQL does, so the kit writes $N for both.
func TestPlaceholders(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		var a, b string
		require.NoError(t, db.QueryRowContext(ctx, `SELECT CAST($2 AS TEXT), CAST($1 AS TEXT)`, "first", "second").Scan(&a, &b))
		require.Equal(t, "second", a, "$2 binds the second argument even when it appears first")
		require.Equal(t, "first", b)

		var same bool
		var sum int64
		require.NoError(t, db.QueryRowContext(ctx,
			`SELECT CAST($1 AS TEXT) = CAST($1 AS TEXT), CAST($3 AS BIGINT) + CAST($2 AS BIGINT)`, "x", 2, 40).Scan(&same, &sum))
		require.True(t, same)
		require.Equal(t, int64(42), sum)

		_, err := db.ExecContext(ctx, `CREATE TABLE ph (a TEXT, b TEXT, c TEXT)`)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `INSERT INTO ph (c, a, b) VALUES ($3, $1, $2)`, "A", "B", "C")
		require.NoError(t, err)
		var ga, gb, gc string
		require.NoError(t, db.QueryRowContext(ctx, `SELECT a, b, c FROM ph WHERE b = $1`, "B").Scan(&ga, &gb, &gc))
		require.Equal(t, []string{"A", "B", "C"}, []string{ga, gb, gc})
	})
}

func TestEachRunsBothDialects(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[sqldb.Dialect]bool{}
	t.Run("group", func(t *testing.T) {
		sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
			require.NoError(t, db.PingContext(context.Background()))
			mu.Lock()
			seen[db.Dialect] = true
			mu.Unlock()
		})
	})
	require.True(t, seen[sqldb.SQLite])
	if os.Getenv(sqldbtest.EnvDatabaseURL) != "" {
		require.True(t, seen[sqldb.Postgres])
	}
}

func TestOpenTellsURLErrorsFromUnreachable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, u := range []string{"", "mysql://x", "sqlite://x.db", "sqlite:", "sqlite:x.db?%zz", "postgres://[::1"} {
		_, err := sqldb.Open(ctx, u)
		require.ErrorIs(t, err, sqldb.ErrURL, "%q", u)
	}
	_, err := sqldb.Open(ctx, "postgres://nobody@127.0.0.1:1/x?connect_timeout=2")
	require.Error(t, err)
	require.NotErrorIs(t, err, sqldb.ErrURL, "a database that cannot be reached")
}
