package sqldb_test

import (
	"embed"
	"io/fs"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

//go:embed testdata/migrations
var testMigrations embed.FS

// migrationSet returns testdata/migrations/<name> as the FS a component
// passes to Migrate.
func migrationSet(t *testing.T, name string) fs.FS {
	t.Helper()
	sub, err := fs.Sub(testMigrations, "testdata/migrations/"+name)
	require.NoError(t, err)
	return sub
}

type appliedRow struct {
	Version int64
	Name    string
}

func appliedRows(t *testing.T, db *sqldb.DB, component string) []appliedRow {
	t.Helper()
	rows, err := db.QueryContext(t.Context(),
		`SELECT version, name, applied_at FROM schema_migrations WHERE component = $1 ORDER BY version`, component)
	require.NoError(t, err)
	defer rows.Close()
	var got []appliedRow
	for rows.Next() {
		var r appliedRow
		var at any
		require.NoError(t, rows.Scan(&r.Version, &r.Name, &at))
		require.NotNil(t, at, "applied_at set")
		got = append(got, r)
	}
	require.NoError(t, rows.Err())
	return got
}

func tableExists(t *testing.T, db *sqldb.DB, table string) bool {
	t.Helper()
	q := `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = $1`
	if db.Dialect == sqldb.Postgres {
		q = `SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = $1`
	}
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(), q, table).Scan(&n))
	return n > 0
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		ok := migrationSet(t, "ok")

		done, err := db.MigrationsApplied(ctx, "widgets", ok)
		require.NoError(t, err)
		require.False(t, done, "nothing applied, no schema_migrations yet")

		require.NoError(t, db.Migrate(ctx, "widgets", ok))
		want := []appliedRow{{1, "0001_widgets.sql"}, {2, "0002_gadgets.sql"}, {3, "0003_seed.sql"}}
		require.Equal(t, want, appliedRows(t, db, "widgets"))
		require.True(t, tableExists(t, db, "widgets"))
		require.True(t, tableExists(t, db, "gadgets"))

		done, err = db.MigrationsApplied(ctx, "widgets", ok)
		require.NoError(t, err)
		require.True(t, done)

		// Idempotent: 0003_seed.sql would fail if applied again.
		require.NoError(t, db.Migrate(ctx, "widgets", ok))
		require.NoError(t, db.Migrate(ctx, "widgets", ok))
		require.Equal(t, want, appliedRows(t, db, "widgets"))
		var n int
		require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM widgets`).Scan(&n))
		require.Equal(t, 1, n)

		// Components are tracked separately in the same table.
		done, err = db.MigrationsApplied(ctx, "other", migrationSet(t, "order"))
		require.NoError(t, err)
		require.False(t, done)
		require.NoError(t, db.Migrate(ctx, "other", migrationSet(t, "order")))
		require.Equal(t, []appliedRow{{2, "2_base.sql"}, {10, "10_depends.sql"}}, appliedRows(t, db, "other"),
			"numeric order, not text order")
		require.Equal(t, want, appliedRows(t, db, "widgets"))
	})
}

func TestMigrateAppliesNewVersionsOnly(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		d := string(db.Dialect)
		v1 := fstest.MapFS{d + "/0001_a.sql": {Data: []byte(`CREATE TABLE a (id INTEGER PRIMARY KEY);`)}}
		require.NoError(t, db.Migrate(ctx, "c", v1))

		v2 := fstest.MapFS{
			d + "/0001_a.sql": v1[d+"/0001_a.sql"],
			d + "/0002_b.sql": {Data: []byte(`CREATE TABLE b (id INTEGER PRIMARY KEY); INSERT INTO a (id) VALUES (7);`)},
		}
		done, err := db.MigrationsApplied(ctx, "c", v2)
		require.NoError(t, err)
		require.False(t, done, "0002 pending")
		require.NoError(t, db.Migrate(ctx, "c", v2))
		require.Equal(t, []appliedRow{{1, "0001_a.sql"}, {2, "0002_b.sql"}}, appliedRows(t, db, "c"))

		// An older binary that knows only 0001 neither fails nor undoes 0002.
		require.NoError(t, db.Migrate(ctx, "c", v1))
		done, err = db.MigrationsApplied(ctx, "c", v1)
		require.NoError(t, err)
		require.True(t, done)
	})
}

func TestMigrateFailureRollsBack(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		err := db.Migrate(ctx, "broken", migrationSet(t, "failing"))
		require.Error(t, err)
		require.Contains(t, err.Error(), "0002_broken.sql")
		require.Contains(t, err.Error(), "broken")

		require.Equal(t, []appliedRow{{1, "0001_widgets.sql"}}, appliedRows(t, db, "broken"),
			"the migration before the failing one stays, the failing one has no row")
		require.False(t, tableExists(t, db, "half_done"), "no partial schema")
		var n int
		require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM widgets`).Scan(&n))
		require.Zero(t, n, "no partial data")

		done, err := db.MigrationsApplied(ctx, "broken", migrationSet(t, "failing"))
		require.NoError(t, err)
		require.False(t, done)

		// The failure is not sticky: a fixed 0002 applies.
		d := string(db.Dialect)
		fixed := fstest.MapFS{
			d + "/0001_widgets.sql": {Data: []byte(`CREATE TABLE widgets (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE);`)},
			d + "/0002_broken.sql":  {Data: []byte(`CREATE TABLE half_done (id INTEGER PRIMARY KEY);`)},
		}
		require.NoError(t, db.Migrate(ctx, "broken", fixed))
		require.True(t, tableExists(t, db, "half_done"))
	})
}

func TestMigrateRejectsBadSets(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		d := string(db.Dialect)
		tests := []struct {
			name string
			fsys fs.FS
			want []string
		}{
			{"no numeric prefix", migrationSet(t, "badname"), []string{d + "/gadgets.sql", "numeric version"}},
			{"duplicate version", migrationSet(t, "duplicate"), []string{d + "/001_gadgets.sql", "version 1 already used by " + d + "/0001_widgets.sql"}},
			{"empty dialect dir", fstest.MapFS{d: {Mode: fs.ModeDir}, "other/0001_x.sql": {}}, []string{`"` + d + `" is empty`}},
			{"missing dialect dir", fstest.MapFS{"other/0001_x.sql": {}}, []string{"migrations for " + d}},
			{"no name", fstest.MapFS{d + "/0001.sql": {}}, []string{d + "/0001.sql", `"_name"`}},
			{"not sql", fstest.MapFS{d + "/0001_x.txt": {}}, []string{d + "/0001_x.txt", "not a .sql file"}},
			{"version zero", fstest.MapFS{d + "/0000_x.sql": {}}, []string{d + "/0000_x.sql", "version 0"}},
			{"signed version", fstest.MapFS{d + "/-1_x.sql": {}}, []string{d + "/-1_x.sql", "numeric version"}},
			{"subdirectory", fstest.MapFS{d + "/0001_x.sql": {}, d + "/old/0001_y.sql": {}}, []string{d + "/old", "directory"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := db.Migrate(t.Context(), "bad", tt.fsys)
				require.Error(t, err)
				for _, w := range tt.want {
					require.Contains(t, err.Error(), w)
				}
				_, err = db.MigrationsApplied(t.Context(), "bad", tt.fsys)
				require.Error(t, err)
			})
		}
		// Nothing of the good files of a bad set was applied.
		require.False(t, tableExists(t, db, "widgets"))
		require.Error(t, db.Migrate(t.Context(), "", migrationSet(t, "ok")), "empty component")
	})
}

// TestMigrateConcurrent starts Migrate from many goroutines, each with its
// own pool, on the same database: every migration runs exactly once (the
// seed row would be inserted twice otherwise) and none fails.
func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		u := sqldbtest.URL(t, d)
		const handles = 6
		var dbs []*sqldb.DB
		for range handles {
			dbs = append(dbs, openURL(t, u))
		}
		ok, order := migrationSet(t, "ok"), migrationSet(t, "order")
		var wg sync.WaitGroup
		errs := make(chan error, 2*handles)
		for i, db := range dbs {
			wg.Go(func() {
				// Two components at once too: both create schema_migrations.
				if i%2 == 0 {
					errs <- db.Migrate(t.Context(), "widgets", ok)
				} else {
					errs <- db.Migrate(t.Context(), "other", order)
				}
				errs <- db.Migrate(t.Context(), "widgets", ok)
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		db := dbs[0]
		require.Len(t, appliedRows(t, db, "widgets"), 3)
		require.Len(t, appliedRows(t, db, "other"), 2)
		var n int
		require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM widgets`).Scan(&n))
		require.Equal(t, 1, n, "seed migration applied once")
	})
}

func TestMigrationsParse(t *testing.T) {
	t.Parallel()
	ms, err := sqldb.Migrations(migrationSet(t, "order"), sqldb.SQLite)
	require.NoError(t, err)
	require.Len(t, ms, 2)
	require.Equal(t, int64(2), ms[0].Version)
	require.Equal(t, "2_base.sql", ms[0].Name)
	require.Contains(t, ms[0].SQL, "CREATE TABLE base")
	require.Equal(t, int64(10), ms[1].Version)
}
