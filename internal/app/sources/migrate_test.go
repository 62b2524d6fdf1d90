package sources_test

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestPushMigrationKeepsSources applies the first migration, adds a source
// the way a release before push did, then the rest: the source is intact,
// without a push secret, and a push source can be stored.
func TestPushMigrationKeepsSources(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		dir := string(db.Dialect)
		first, err := fs.ReadFile(sources.Migrations(), dir+"/0001_init.sql")
		require.NoError(t, err)
		require.NoError(t, db.Migrate(ctx, sources.Component, fstest.MapFS{dir + "/0001_init.sql": {Data: first}}))
		_, err = db.ExecContext(ctx, `INSERT INTO sources (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, last_sync_started_ms)
			VALUES ('s1', 'o1', 'old', 'https://vendor.example', 'tok', 'mcp', 60000, 1, 2, 3)`)
		require.NoError(t, err)

		require.NoError(t, db.Migrate(ctx, sources.Component, sources.Migrations()))
		var name, url, token, transport string
		var every, created, next, last int64
		var secret *string
		require.NoError(t, db.QueryRowContext(ctx, `SELECT name, url, token, transport, every_ms, created_at_ms, next_due_ms, last_sync_started_ms, push_secret
			FROM sources WHERE id = 's1'`).Scan(&name, &url, &token, &transport, &every, &created, &next, &last, &secret))
		require.Equal(t, []any{"old", "https://vendor.example", "tok", "mcp", int64(60000), int64(1), int64(2), int64(3)},
			[]any{name, url, token, transport, every, created, next, last})
		require.Nil(t, secret)
		_, err = db.ExecContext(ctx, `INSERT INTO sources (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, push_secret)
			VALUES ('s2', 'o1', 'pushed', '', '', 'push', 60000, 1, 2, 'whsec_x')`)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `INSERT INTO sources (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms)
			VALUES ('s3', 'o1', 'bad', '', '', 'grpc', 60000, 1, 2)`)
		require.Error(t, err, "the transport is still checked")
		_, err = db.ExecContext(ctx, `INSERT INTO sources (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms)
			VALUES ('s4', 'o1', 'old', '', '', 'rest', 60000, 1, 2)`)
		require.Error(t, err, "names are still unique per organisation")
	})
}

// TestExportMigrationKeepsPushSecrets applies the migrations up to push,
// stores a push source, then the export migration, which rebuilds the table
// on SQLite: the push secret survives, and export sources can be stored.
func TestExportMigrationKeepsPushSecrets(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		dir := string(db.Dialect)
		upTo := fstest.MapFS{}
		for _, name := range []string{"0001_init.sql", "0002_push.sql"} {
			b, err := fs.ReadFile(sources.Migrations(), dir+"/"+name)
			require.NoError(t, err)
			upTo[dir+"/"+name] = &fstest.MapFile{Data: b}
		}
		require.NoError(t, db.Migrate(ctx, sources.Component, upTo))
		_, err := db.ExecContext(ctx, `INSERT INTO sources (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, push_secret)
			VALUES ('s1', 'o1', 'pushed', '', '', 'push', 60000, 1, 2, 'whsec_kept')`)
		require.NoError(t, err)

		require.NoError(t, db.Migrate(ctx, sources.Component, sources.Migrations()))
		var secret string
		require.NoError(t, db.QueryRowContext(ctx, `SELECT push_secret FROM sources WHERE id = 's1'`).Scan(&secret))
		require.Equal(t, "whsec_kept", secret)
		_, err = db.ExecContext(ctx, `INSERT INTO sources (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms)
			VALUES ('s2', 'o1', 'files', '/srv/exports/acme', '', 'export', 60000, 1, 2)`)
		require.NoError(t, err)
	})
}

// TestVendorMigrationKeepsSources applies the migrations before the vendors'
// transports, stores a telemetry source that received a request and a push
// source, then the vendors' migration, which rebuilds the table on SQLite:
// both survive whole, sources of transport openai and anthropic can be
// stored, and the transport is still checked.
func TestVendorMigrationKeepsSources(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		dir := string(db.Dialect)
		upTo := fstest.MapFS{}
		entries, err := fs.ReadDir(sources.Migrations(), dir)
		require.NoError(t, err)
		for _, en := range entries {
			if en.Name() >= "0009" {
				continue
			}
			b, err := fs.ReadFile(sources.Migrations(), dir+"/"+en.Name())
			require.NoError(t, err)
			upTo[dir+"/"+en.Name()] = &fstest.MapFile{Data: b}
		}
		require.Len(t, upTo, 8)
		require.NoError(t, db.Migrate(ctx, sources.Component, upTo))
		_, err = db.ExecContext(ctx, `INSERT INTO sources (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms,
			secret_key_id, last_received_ms, paused_at_ms, paused_reason) VALUES ('s1', 'o1', 'laptops', '', 'sealed', 'telemetry', 60000, 1, 2, 'k1', 77, 5, 'why')`)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `INSERT INTO sources (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, push_secret)
			VALUES ('s2', 'o1', 'pushed', '', '', 'push', 60000, 1, 2, 'whsec_kept')`)
		require.NoError(t, err)

		require.NoError(t, db.Migrate(ctx, sources.Component, sources.Migrations()))
		var received, paused int64
		var keyID, reason, secret string
		require.NoError(t, db.QueryRowContext(ctx, `SELECT last_received_ms, secret_key_id, paused_at_ms, paused_reason FROM sources WHERE id = 's1'`).
			Scan(&received, &keyID, &paused, &reason))
		require.Equal(t, []any{int64(77), "k1", int64(5), "why"}, []any{received, keyID, paused, reason})
		require.NoError(t, db.QueryRowContext(ctx, `SELECT push_secret FROM sources WHERE id = 's2'`).Scan(&secret))
		require.Equal(t, "whsec_kept", secret)
		for i, tr := range []string{"openai", "anthropic"} {
			_, err = db.ExecContext(ctx, `INSERT INTO sources (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms)
				VALUES ($1, 'o1', $2, 'https://api.example', 'sealed', $2, 3600000, 1, 2)`, "v"+string(rune('0'+i)), tr)
			require.NoError(t, err, tr)
		}
		_, err = db.ExecContext(ctx, `INSERT INTO sources (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms)
			VALUES ('s3', 'o1', 'bad', '', '', 'gemini', 60000, 1, 2)`)
		require.Error(t, err, "the transport is still checked")
	})
}
