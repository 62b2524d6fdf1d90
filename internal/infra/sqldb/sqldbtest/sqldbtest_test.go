package sqldbtest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

func TestIsolation(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			a, b := sqldbtest.Open(t, d), sqldbtest.Open(t, d)
			for _, db := range []*sqldb.DB{a, b} {
				_, err := db.ExecContext(ctx, `CREATE TABLE same_name (id INTEGER PRIMARY KEY)`)
				require.NoError(t, err, "each database starts empty")
			}
			_, err := a.ExecContext(ctx, `INSERT INTO same_name (id) VALUES (1), (2)`)
			require.NoError(t, err)
			var n int
			require.NoError(t, b.QueryRowContext(ctx, `SELECT count(*) FROM same_name`).Scan(&n))
			require.Zero(t, n, "b does not see a's rows")

			// A second pool on the same URL sees the same database.
			u := sqldbtest.URL(t, d)
			c1, err := sqldb.Open(ctx, u)
			require.NoError(t, err)
			defer c1.Close()
			c2, err := sqldb.Open(ctx, u)
			require.NoError(t, err)
			defer c2.Close()
			_, err = c1.ExecContext(ctx, `CREATE TABLE from_url (id INTEGER)`)
			require.NoError(t, err)
			require.NoError(t, c2.QueryRowContext(ctx, `SELECT count(*) FROM from_url`).Scan(&n))
		})
	}
}

func TestPostgresSchemaDroppedAfterTest(t *testing.T) {
	t.Parallel()
	base := sqldbtest.PostgresURL(t)
	var schema, urlSchema string
	t.Run("inner", func(t *testing.T) {
		db := sqldbtest.Open(t, sqldb.Postgres)
		require.NoError(t, db.QueryRowContext(t.Context(), `SELECT current_schema()`).Scan(&schema))
		require.True(t, strings.HasPrefix(schema, "t_"), schema)
		_, err := db.ExecContext(t.Context(), `CREATE TABLE leftover (id INTEGER)`)
		require.NoError(t, err)
		urlSchema = sqldbtest.SchemaOf(sqldbtest.URL(t, sqldb.Postgres))
		require.NotEqual(t, schema, urlSchema)
	})
	require.NotEmpty(t, schema)

	db, err := sqldb.Open(context.Background(), base)
	require.NoError(t, err)
	defer db.Close()
	for _, s := range []string{schema, urlSchema} {
		var n int
		require.NoError(t, db.QueryRowContext(t.Context(),
			`SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname = $1`, s).Scan(&n))
		require.Zero(t, n, "schema %s dropped", s)
	}
}

func TestSQLiteFileRemovedAfterTest(t *testing.T) {
	t.Parallel()
	var path string
	t.Run("inner", func(t *testing.T) {
		db := sqldbtest.Open(t, sqldb.SQLite)
		u := db.URL()
		path = strings.TrimPrefix(u, "sqlite:")
		require.True(t, filepath.IsAbs(path), u)
		_, err := db.ExecContext(t.Context(), `CREATE TABLE x (id INTEGER)`)
		require.NoError(t, err)
	})
	_, err := os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestHelperPostgres is run by TestMissingPostgresURL in a child process.
func TestHelperPostgres(t *testing.T) {
	if os.Getenv("SQLDBTEST_HELPER") != "1" {
		t.Skip("helper for TestMissingPostgresURL")
	}
	sqldbtest.Open(t, sqldb.Postgres)
	t.Log("opened")
}

func TestMissingPostgresURL(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the test binary again")
	}
	run := func(require string) (string, error) {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperPostgres$", "-test.v", "-test.count=1")
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, sqldbtest.EnvDatabaseURL+"=") && !strings.HasPrefix(kv, sqldbtest.EnvRequirePostgres+"=") {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env, "SQLDBTEST_HELPER=1", sqldbtest.EnvRequirePostgres+"="+require)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run("")
	require.NoError(t, err, out)
	require.Contains(t, out, "--- SKIP: TestHelperPostgres")
	require.Contains(t, out, "set "+sqldbtest.EnvDatabaseURL)

	out, err = run("1")
	require.Error(t, err, out)
	require.Contains(t, out, "--- FAIL: TestHelperPostgres")
	require.Contains(t, out, sqldbtest.EnvRequirePostgres+"=1 but "+sqldbtest.EnvDatabaseURL+" is not set")
	require.NotContains(t, out, "opened")
}
