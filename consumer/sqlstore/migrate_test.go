package sqlstore_test

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// TestMigrationFillsSearchColumns applies the first migration alone, stores
// records as its schema did, then the rest: conversations get their user
// and assistant ids, usage buckets whether they carried a cost; an id too
// long to index, or a body with a \u0000 escape, is left empty.
func TestMigrationFillsSearchColumns(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		first := fstest.MapFS{}
		for _, d := range []string{"sqlite", "postgres"} {
			b, err := fs.ReadFile(sqlstore.Migrations(), d+"/0001_init.sql")
			require.NoError(t, err)
			first[d+"/0001_init.sql"] = &fstest.MapFile{Data: b}
		}
		require.NoError(t, db.Migrate(ctx, sqlstore.Component, first))
		insert := func(resource, id, body string) {
			t.Helper()
			_, err := db.ExecContext(ctx, `INSERT INTO consumer_records (source, resource, id, time_ms, pos_ms, run, body)
				VALUES ('s', $1, $2, 0, 0, 1, $3)`, resource, id, body)
			require.NoError(t, err)
		}
		long := pad(257)
		insert("conversations", "c1", `{"id":"c1","user":{"id":"u1","email":"a@b"},"assistant":{"id":"a1"}}`)
		insert("conversations", "c2", `{"id":"c2","user":{"id":"`+long+`"},"assistant":{"id":7}}`)
		insert("conversations", "c3", `{"id":"c3","user":{"id":"u3"},"x":"\u0000"}`)
		insert("conversations", "c4", `{"id":"c4"}`)
		insert("usage", "b1", `{"startAt":"2026-03-01T00:00:00Z","metrics":{"requests":1,"cost":0}}`)
		insert("usage", "b2", `{"startAt":"2026-03-01T00:00:00Z","metrics":{"requests":1}}`)
		insert("usage", "b3", `{"startAt":"2026-03-01T00:00:00Z","metrics":{"requests":1,"cost":null}}`)

		s := newStore(t, db)
		type cols struct{ user, assistant string }
		want := map[string]cols{"c1": {"u1", "a1"}, "c2": {"", ""}, "c3": {"", ""}, "c4": {"", ""}}
		for id, w := range want {
			var got cols
			require.NoError(t, db.QueryRowContext(ctx, `SELECT user_id, assistant_id FROM consumer_records WHERE id = $1`, id).
				Scan(&got.user, &got.assistant))
			require.Equal(t, w, got, id)
		}
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM consumer_records WHERE has_cost`))
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM consumer_records WHERE has_cost AND id = 'b1'`))

		// The writer keeps the same columns.
		l := acquire(t, s, lease("s", consumer.Conversations, "p"))
		c := conv("c5", at(0), at(0), "")
		c.JSON = []byte(`{"id":"c5","startedAt":"2026-03-01T00:00:00.000Z","user":{"id":"u5"},"assistant":{"id":"` + long + `"}}`)
		save(t, s, l, 2, c)
		var got cols
		require.NoError(t, db.QueryRowContext(ctx, `SELECT user_id, assistant_id FROM consumer_records WHERE id = 'c5'`).Scan(&got.user, &got.assistant))
		require.Equal(t, cols{"u5", ""}, got)
		lu := acquire(t, s, lease("s", consumer.Usage, "p"))
		withCost := bucket{gran: spec.GranularityHour, start: at(0), requests: 1, cost: 0}.record()
		noCost := bucket{gran: spec.GranularityHour, start: at(0), dims: map[string]string{"model": "m"}, requests: 1}.record()
		noCost.JSON = []byte(`{"startAt":"2026-03-01T00:00:00.000Z","dimensions":{"model":"m"},"metrics":{"requests":1}}`)
		save(t, s, lu, 2, withCost, noCost)
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM consumer_records WHERE has_cost AND id = $1`, withCost.ID))
		require.Equal(t, 0, count(t, s, `SELECT count(*) FROM consumer_records WHERE has_cost AND id = $1`, noCost.ID))
	})
}
