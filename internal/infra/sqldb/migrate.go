package sqldb

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Migration is one SQL migration file of a component.
type Migration struct {
	// Version is the numeric prefix of the file name.
	Version int64
	// Name is the base name of the file, such as "0001_init.sql".
	Name string
	// SQL is the content of the file.
	SQL string
}

// Migrations reads the migrations of dialect d from fsys: the files
// "<d>/NNNN_name.sql", sorted by version. It fails, naming the file, on an
// entry of that directory that is not such a file (a missing numeric prefix,
// a missing "_name", another extension, a subdirectory), on a version used
// twice or on an empty or missing directory.
func Migrations(fsys fs.FS, d Dialect) ([]Migration, error) {
	dir := string(d)
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("sqldb: migrations for %s: %w", d, err)
	}
	var ms []Migration
	seen := map[int64]string{}
	for _, e := range entries {
		name := e.Name()
		file := path.Join(dir, name)
		if e.IsDir() {
			return nil, fmt.Errorf("sqldb: migration %s: is a directory, want NNNN_name.sql files only", file)
		}
		v, err := parseMigrationName(name)
		if err != nil {
			return nil, fmt.Errorf("sqldb: migration %s: %w", file, err)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("sqldb: migration %s: version %d already used by %s", file, v, path.Join(dir, other))
		}
		seen[v] = name
		b, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("sqldb: migration %s: %w", file, err)
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("sqldb: migrations for %s: directory %q is empty", d, dir)
	}
	slices.SortFunc(ms, func(a, b Migration) int { return cmp.Compare(a.Version, b.Version) })
	return ms, nil
}

// parseMigrationName returns the version of a file named "NNNN_name.sql".
func parseMigrationName(name string) (int64, error) {
	base, ok := strings.CutSuffix(name, ".sql")
	if !ok {
		return 0, errors.New(`want a name like "0001_create_things.sql"; not a .sql file`)
	}
	digits, label, hasLabel := strings.Cut(base, "_")
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, errors.New(`want a name like "0001_create_things.sql"; no numeric version prefix`)
	}
	if !hasLabel || label == "" {
		return 0, errors.New(`want a name like "0001_create_things.sql"; no "_name" after the version`)
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("version %q: %w", digits, err)
	}
	if v == 0 {
		return 0, errors.New("version 0: versions start at 1")
	}
	return v, nil
}

// Migrate applies the migrations of component found in migrations (see
// [Migrations] for the layout: one directory per dialect, named after
// [Dialect]) that are not yet recorded in the table schema_migrations, which
// it creates when needed. It applies them by increasing version, each in its
// own transaction together with its schema_migrations row, so a failing
// migration leaves neither part of its schema nor its row, and Migrate stops
// there with an error naming the file. Versions recorded in the database but
// absent from migrations are ignored (an older binary may run against a newer
// schema); a version lower than an applied one is still applied.
//
// Migrate is idempotent and safe to call from several processes at once: on
// PostgreSQL each transaction first takes a transaction-level advisory lock
// (pg_advisory_xact_lock) scoped to the current schema, then checks again
// whether the version is applied; on SQLite each transaction begins with
// BEGIN IMMEDIATE, which takes the write lock up front. A migration
// therefore must not contain statements that cannot run in a transaction
// (CREATE INDEX CONCURRENTLY, VACUUM) nor its own BEGIN/COMMIT.
//
// Each package passes its own embedded files, under its own component name:
//
//	//go:embed migrations
//	var migrationFS embed.FS
//
//	sub, _ := fs.Sub(migrationFS, "migrations")
//	err := db.Migrate(ctx, "orgapi", sub)
func (db *DB) Migrate(ctx context.Context, component string, migrations fs.FS) error {
	if component == "" {
		return errors.New("sqldb: migrate: empty component name")
	}
	ms, err := Migrations(migrations, db.Dialect)
	if err != nil {
		return err
	}
	if err := db.withMigrationLock(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, db.bookkeepingDDL())
		return err
	}); err != nil {
		return fmt.Errorf("sqldb: migrate %s: create schema_migrations: %w", component, err)
	}
	applied, err := db.appliedVersions(ctx, component)
	if err != nil {
		return fmt.Errorf("sqldb: migrate %s: %w", component, err)
	}
	for _, m := range ms {
		if applied[m.Version] {
			continue
		}
		err := db.withMigrationLock(ctx, func(tx *sql.Tx) error {
			var one int
			err := tx.QueryRowContext(ctx,
				`SELECT 1 FROM schema_migrations WHERE component = $1 AND version = $2`,
				component, m.Version).Scan(&one)
			if err == nil {
				return nil // applied meanwhile by another process
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx,
				`INSERT INTO schema_migrations (component, version, name) VALUES ($1, $2, $3)`,
				component, m.Version, m.Name)
			return err
		})
		if err != nil {
			return fmt.Errorf("sqldb: migrate %s: %s/%s: %w", component, db.Dialect, m.Name, err)
		}
	}
	return nil
}

// MigrationsApplied reports whether every migration of component in
// migrations for db's dialect is recorded as applied, for readiness checks.
// It reports false, without error, when schema_migrations does not exist
// yet; it returns an error when migrations itself is malformed.
func (db *DB) MigrationsApplied(ctx context.Context, component string, migrations fs.FS) (bool, error) {
	ms, err := Migrations(migrations, db.Dialect)
	if err != nil {
		return false, err
	}
	exists, err := db.bookkeepingExists(ctx)
	if err != nil || !exists {
		return false, err
	}
	applied, err := db.appliedVersions(ctx, component)
	if err != nil {
		return false, fmt.Errorf("sqldb: migrations of %s: %w", component, err)
	}
	for _, m := range ms {
		if !applied[m.Version] {
			return false, nil
		}
	}
	return true, nil
}

// withMigrationLock runs fn in a transaction that holds the migration lock:
// the write lock on SQLite (BEGIN IMMEDIATE, set up by Open), an advisory
// transaction lock for the current schema on PostgreSQL.
func (db *DB) withMigrationLock(ctx context.Context, fn func(*sql.Tx) error) error {
	return db.InTx(ctx, func(tx *sql.Tx) error {
		if db.Dialect == Postgres {
			if _, err := tx.ExecContext(ctx,
				`SELECT pg_advisory_xact_lock(hashtextextended('github.com/aiusage/kit/internal/infra/sqldb.Migrate:' || coalesce(current_schema(), ''), 0))`,
			); err != nil {
				return fmt.Errorf("advisory lock: %w", err)
			}
		}
		return fn(tx)
	})
}

func (db *DB) bookkeepingDDL() string {
	if db.Dialect == Postgres {
		return `CREATE TABLE IF NOT EXISTS schema_migrations (
	component  TEXT        NOT NULL,
	version    BIGINT      NOT NULL,
	name       TEXT        NOT NULL,
	applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
	PRIMARY KEY (component, version)
)`
	}
	return `CREATE TABLE IF NOT EXISTS schema_migrations (
	component  TEXT    NOT NULL,
	version    BIGINT  NOT NULL,
	name       TEXT    NOT NULL,
	applied_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	PRIMARY KEY (component, version)
)`
}

func (db *DB) bookkeepingExists(ctx context.Context) (bool, error) {
	q := `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`
	if db.Dialect == Postgres {
		q = `SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = 'schema_migrations'`
	}
	var n int
	if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return false, fmt.Errorf("sqldb: look up schema_migrations: %w", err)
	}
	return n > 0, nil
}

func (db *DB) appliedVersions(ctx context.Context, component string) (map[int64]bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT version FROM schema_migrations WHERE component = $1`, component)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	applied := map[int64]bool{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		applied[v] = true
	}
	return applied, rows.Err()
}
