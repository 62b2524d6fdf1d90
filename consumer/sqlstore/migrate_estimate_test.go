package sqlstore_test

import (
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// TestMigrationFillsEstimatedCost applies the migrations before the one of
// estimated_cost, stores usage buckets as the writer did then, then the
// rest: a bucket's estimated part is its metrics.estimatedCost, or its whole
// cost when its costSource is "estimate", never above its cost; Usage then
// sums it as estimatedCost, which the writer keeps from then on.
func TestMigrationFillsEstimatedCost(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		before := fstest.MapFS{}
		for _, d := range []string{"sqlite", "postgres"} {
			for _, name := range []string{"0001_init.sql", "0002_merged_view.sql"} {
				b, err := fs.ReadFile(sqlstore.Migrations(), d+"/"+name)
				require.NoError(t, err)
				before[d+"/"+name] = &fstest.MapFile{Data: b}
			}
		}
		require.NoError(t, db.Migrate(ctx, sqlstore.Component, before))
		insert := func(id string, cost float64, hasCost bool, metrics string) {
			t.Helper()
			_, err := db.ExecContext(ctx, `INSERT INTO consumer_records (source, resource, id, time_ms, pos_ms, run, body,
				granularity, end_ms, cost, has_cost, requests) VALUES ('s', 'usage', $1, $2, $2, 1, $3, 'hour', $4, $5, $6, 1)`,
				id, at(0).UnixMilli(), `{"startAt":"2026-03-01T00:00:00Z","metrics":`+metrics+`}`, at(0).UnixMilli()+3_600_000, cost, hasCost)
			require.NoError(t, err)
		}
		insert("estimate", 2.5, true, `{"requests":1,"cost":2.5,"costSource":"estimate"}`)
		insert("part", 3, true, `{"requests":1,"cost":3,"estimatedCost":1}`)
		insert("prices", 4, true, `{"requests":1,"cost":4,"costSource":"prices"}`)
		insert("over", 3, true, `{"requests":1,"cost":3,"estimatedCost":9}`)
		insert("negative", 3, true, `{"requests":1,"cost":3,"estimatedCost":-1}`)
		insert("nocost", 0, false, `{"requests":1,"costSource":"estimate"}`)

		s := newStore(t, db)
		want := map[string]float64{"estimate": 2.5, "part": 1, "prices": 0, "over": 3, "negative": 0, "nocost": 0}
		for id, w := range want {
			var got float64
			require.NoError(t, db.QueryRowContext(ctx, `SELECT estimated_cost FROM consumer_records WHERE id = $1`, id).Scan(&got))
			require.Equal(t, w, got, id)
		}
		q := provider.UsageQuery{Tenant: "s", Start: at(0), End: at(24 * time.Hour), Granularity: spec.GranularityHour, Limit: 10}
		page, err := s.Usage(ctx, q)
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		require.Equal(t, 15.5, page.Items[0].Metrics.Cost)
		require.NotNil(t, page.Items[0].Metrics.EstimatedCost)
		require.Equal(t, 6.5, *page.Items[0].Metrics.EstimatedCost)

		// The writer keeps the column: a bucket written again without an
		// estimate has none.
		lu := acquire(t, s, lease("s", consumer.Usage, "p"))
		b := bucket{gran: spec.GranularityHour, start: at(0), requests: 1, cost: 2}.record()
		b.JSON = []byte(`{"startAt":"2026-03-01T00:00:00.000Z","metrics":{"requests":1,"cost":2,"estimatedCost":0.5}}`)
		save(t, s, lu, 2, b)
		var got float64
		require.NoError(t, db.QueryRowContext(ctx, `SELECT estimated_cost FROM consumer_records WHERE id = $1`, b.ID).Scan(&got))
		require.Equal(t, 0.5, got)
	})
}
