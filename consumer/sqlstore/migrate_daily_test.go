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

// TestMigrationFillsDailyCost applies the migrations before the one of
// daily_cost, stores usage buckets as the writer did then, then the rest: a
// bucket's daily part is its metrics.dailyCost, never negative nor above its
// cost; Usage and UsageSeries then sum it as dailyCost beside
// estimatedCost, and the writer keeps it from then on.
func TestMigrationFillsDailyCost(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		before := fstest.MapFS{}
		for _, d := range []string{"sqlite", "postgres"} {
			for _, name := range []string{"0001_init.sql", "0002_merged_view.sql", "0003_estimated_cost.sql"} {
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
		insert("daily", 2.5, true, `{"requests":0,"cost":2.5,"dailyCost":2.5}`)
		insert("part", 3, true, `{"requests":1,"cost":3,"dailyCost":1}`)
		insert("none", 4, true, `{"requests":1,"cost":4}`)
		insert("over", 3, true, `{"requests":1,"cost":3,"dailyCost":9}`)
		insert("negative", 3, true, `{"requests":1,"cost":3,"dailyCost":-1}`)
		insert("text", 3, true, `{"requests":1,"cost":3,"dailyCost":"3"}`)
		insert("nocost", 0, false, `{"requests":1,"dailyCost":1}`)

		s := newStore(t, db)
		want := map[string]float64{"daily": 2.5, "part": 1, "none": 0, "over": 3, "negative": 0, "text": 0, "nocost": 0}
		for id, w := range want {
			var got float64
			require.NoError(t, db.QueryRowContext(ctx, `SELECT daily_cost FROM consumer_records WHERE id = $1`, id).Scan(&got))
			require.Equal(t, w, got, id)
		}
		q := provider.UsageQuery{Tenant: "s", Start: at(0), End: at(24 * time.Hour), Granularity: spec.GranularityHour, Limit: 10}
		page, err := s.Usage(ctx, q)
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		require.Equal(t, 18.5, page.Items[0].Metrics.Cost)
		require.NotNil(t, page.Items[0].Metrics.DailyCost)
		require.Equal(t, 6.5, *page.Items[0].Metrics.DailyCost)
		require.Nil(t, page.Items[0].Metrics.EstimatedCost)

		series, err := s.UsageSeries(ctx, sqlstore.UsageSeriesQuery{Sources: []string{"s"}, Start: at(0), End: at(24 * time.Hour),
			Granularity: spec.GranularityDay})
		require.NoError(t, err)
		require.Len(t, series, 1)
		require.NotNil(t, series[0].DailyCost)
		require.Equal(t, 6.5, *series[0].DailyCost)

		// The writer keeps the column: a bucket written again with a
		// daily part has it, one without has none.
		lu := acquire(t, s, lease("s", consumer.Usage, "p"))
		b := bucket{gran: spec.GranularityHour, start: at(0), requests: 1, cost: 2}.record()
		b.JSON = []byte(`{"startAt":"2026-03-01T00:00:00.000Z","metrics":{"requests":1,"cost":2,"dailyCost":0.75}}`)
		save(t, s, lu, 2, b)
		var got float64
		require.NoError(t, db.QueryRowContext(ctx, `SELECT daily_cost FROM consumer_records WHERE id = $1`, b.ID).Scan(&got))
		require.Equal(t, 0.75, got)
		b.JSON = []byte(`{"startAt":"2026-03-01T00:00:00.000Z","metrics":{"requests":1,"cost":2}}`)
		save(t, s, lu, 3, b)
		require.NoError(t, db.QueryRowContext(ctx, `SELECT daily_cost FROM consumer_records WHERE id = $1`, b.ID).Scan(&got))
		require.Equal(t, 0.0, got)
	})
}
