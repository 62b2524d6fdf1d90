package sqldb_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// openPool opens a database/sql pool on a fresh database of dialect d the
// way a user of the kit might: a SQLite file with the settings Wrap asks
// for, or PostgreSQL through the "pgx" driver name.
func openPool(t *testing.T, d sqldb.Dialect) *sql.DB {
	t.Helper()
	var (
		p   *sql.DB
		err error
	)
	switch d {
	case sqldb.SQLite:
		path := filepath.Join(t.TempDir(), "wrap.db")
		p, err = sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	case sqldb.Postgres:
		p, err = sql.Open("pgx", sqldbtest.URL(t, d))
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func TestWrap(t *testing.T) {
	t.Parallel()
	migrations := fstest.MapFS{
		"sqlite/0001_notes.sql":   {Data: []byte(`CREATE TABLE notes (id TEXT PRIMARY KEY)`)},
		"postgres/0001_notes.sql": {Data: []byte(`CREATE TABLE notes (id TEXT PRIMARY KEY)`)},
	}
	eachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := t.Context()
		p := openPool(t, d)
		db, err := sqldb.Wrap(ctx, p, d)
		require.NoError(t, err)
		require.Equal(t, d, db.Dialect)
		require.Same(t, p, db.DB, "the caller's pool itself")
		require.Empty(t, db.URL())

		require.NoError(t, db.Migrate(ctx, "notes", migrations))
		ok, err := db.MigrationsApplied(ctx, "notes", migrations)
		require.NoError(t, err)
		require.True(t, ok)
		roundTrip(t, db)
		err = db.InTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO notes (id) VALUES ($1), ($1)`, "n1")
			return err
		})
		require.True(t, sqldb.IsUniqueViolation(err), "driver errors are recognised: %v", err)

		if d == sqldb.SQLite {
			_, err = db.SQLitePool(1)
		} else {
			_, err = db.PgxPool(ctx)
		}
		require.ErrorContains(t, err, "Wrap", "no second pool without the URL")

		require.NoError(t, db.Close())
		require.Error(t, p.PingContext(ctx), "Close closes the pool")
	})
}

func TestWrapRefuses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pgCfg, err := pgx.ParseConfig("postgres://u@127.0.0.1:1/db") // never connected to
	require.NoError(t, err)
	pg := stdlib.OpenDB(*pgCfg)
	t.Cleanup(func() { _ = pg.Close() })
	sqlitePool := func(query string) *sql.DB {
		p, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "r.db")+query)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		return p
	}

	tests := []struct {
		name string
		db   *sql.DB
		d    sqldb.Dialect
		want string
	}{
		{"nil pool", nil, sqldb.SQLite, "nil"},
		{"unknown dialect", sqlitePool("?_pragma=busy_timeout(5000)"), "mysql", `unsupported dialect "mysql"`},
		{"sqlite as postgres", sqlitePool("?_pragma=busy_timeout(5000)"), sqldb.Postgres, "modernc.org/sqlite pool"},
		{"pgx as sqlite", pg, sqldb.SQLite, "pgx"},
		{"sqlite without busy timeout", sqlitePool(""), sqldb.SQLite, "busy_timeout(5000)&_txlock=immediate"},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			db, err := sqldb.Wrap(ctx, tt.db, tt.d)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, db)
		})
	}
}
