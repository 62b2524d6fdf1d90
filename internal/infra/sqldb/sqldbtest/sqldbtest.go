// Package sqldbtest gives tests of the kit's stores a fresh, isolated
// database on each dialect of [sqldb].
//
// SQLite databases are files in t.TempDir(). PostgreSQL databases are fresh
// schemas, named t_<random hex>, in the database named by the environment
// variable AIUSAGE_TEST_DATABASE_URL (a postgres:// URL); every connection
// opened for the test has that schema as its only search_path, and the schema
// is dropped with CASCADE when the test ends. Without that variable
// PostgreSQL tests are skipped, unless AIUSAGE_REQUIRE_POSTGRES=1, where they
// fail (CI sets both).
//
//	func TestStore(t *testing.T) {
//		sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
//			require.NoError(t, db.Migrate(t.Context(), "consumer", migrations))
//			// ...
//		})
//	}
package sqldbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aiusage/kit/internal/infra/sqldb"
)

// Environment variables read by this package.
const (
	// EnvDatabaseURL names the variable holding the PostgreSQL URL that
	// tests create their schemas in.
	EnvDatabaseURL = "AIUSAGE_TEST_DATABASE_URL"
	// EnvRequirePostgres names the variable that, set to "1", turns a
	// missing EnvDatabaseURL from a skip into a failure.
	EnvRequirePostgres = "AIUSAGE_REQUIRE_POSTGRES"
)

// cleanupTimeout bounds the creation and the drop of a test schema.
const cleanupTimeout = 30 * time.Second

// Dialects returns the dialects every store is tested on: SQLite, then
// PostgreSQL.
func Dialects() []sqldb.Dialect {
	return []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres}
}

// Each runs fn once per dialect of [Dialects], as parallel subtests named
// after the dialect ("sqlite", "postgres"), each with a fresh database from
// [Open]. The PostgreSQL subtest is skipped (or fails) as described in the
// package documentation. Since the subtests call t.Parallel, fn must not use
// t.Setenv or t.Chdir.
func Each(t *testing.T, fn func(t *testing.T, db *sqldb.DB)) {
	t.Helper()
	for _, d := range Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, Open(t, d))
		})
	}
}

// Open returns a fresh, empty database of dialect d, opened with
// [sqldb.Open], closed when the test ends and then removed (SQLite: with
// t.TempDir; PostgreSQL: DROP SCHEMA ... CASCADE).
func Open(t testing.TB, d sqldb.Dialect) *sqldb.DB {
	t.Helper()
	u := URL(t, d)
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	db, err := sqldb.Open(ctx, u)
	if err != nil {
		t.Fatalf("sqldbtest: %v", err)
	}
	// Registered after URL's cleanup, so it runs before the schema is dropped.
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("sqldbtest: close %s: %v", db.URL(), err)
		}
	})
	return db
}

// URL returns the URL of a fresh, empty database of dialect d, for tests
// that open it themselves (a CLI command, a second pool such as River's
// pgxpool): "sqlite:<t.TempDir()>/test.db", or the URL of
// AIUSAGE_TEST_DATABASE_URL with search_path set to a new schema, dropped
// with CASCADE when the test ends. Close every pool opened on it before the
// test ends: an open transaction would block the drop.
func URL(t testing.TB, d sqldb.Dialect) string {
	t.Helper()
	switch d {
	case sqldb.SQLite:
		return "sqlite:" + filepath.Join(t.TempDir(), "test.db")
	case sqldb.Postgres:
		return postgresSchemaURL(t)
	default:
		t.Fatalf("sqldbtest: unknown dialect %q", d)
		return ""
	}
}

// PostgresURL returns AIUSAGE_TEST_DATABASE_URL itself, not isolated, for
// tests that manage their own schemas. Without it, it skips the test, or
// fails it when AIUSAGE_REQUIRE_POSTGRES=1.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvDatabaseURL)
	if u == "" {
		if os.Getenv(EnvRequirePostgres) == "1" {
			t.Fatalf("sqldbtest: %s=1 but %s is not set", EnvRequirePostgres, EnvDatabaseURL)
		}
		t.Skipf("sqldbtest: PostgreSQL test skipped: set %s to a postgres:// URL to run it", EnvDatabaseURL)
	}
	return u
}

var (
	adminMu  sync.Mutex
	adminDBs = map[string]*sqldb.DB{} // by base URL, shared by every test of the process
)

// admin returns a pool on the base PostgreSQL URL, opened on first use and
// kept for the life of the test binary.
func admin(ctx context.Context, base string) (*sqldb.DB, error) {
	adminMu.Lock()
	defer adminMu.Unlock()
	if db, ok := adminDBs[base]; ok {
		return db, nil
	}
	db, err := sqldb.Open(ctx, base)
	if err != nil {
		return nil, err
	}
	db.SetMaxIdleConns(2)
	adminDBs[base] = db
	return db, nil
}

func postgresSchemaURL(t testing.TB) string {
	t.Helper()
	base := PostgresURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("sqldbtest: %s: %v", EnvDatabaseURL, err)
	}

	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])

	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	adm, err := admin(ctx, base)
	if err != nil {
		t.Fatalf("sqldbtest: %s: %v", EnvDatabaseURL, err)
	}
	if _, err := adm.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("sqldbtest: create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if _, err := adm.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("sqldbtest: drop schema %s: %v", schema, err)
		}
	})

	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// SchemaOf returns the schema a PostgreSQL URL from [URL] points at (its
// search_path parameter), or "" for another URL.
func SchemaOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Query().Get("search_path")
}
