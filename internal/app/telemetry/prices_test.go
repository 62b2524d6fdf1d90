package telemetry_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/telemetry"
	"github.com/aiusage/kit/internal/app/telemetry/tools"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
)

func price(v float64) *float64 { return &v }

// TestPrices: where the organisation has a price for a bucket's model, its
// cost is computed from its tokens; elsewhere the tools' estimate stays.
func TestPrices(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db, nil)
		code, body := post(t, e.url, "claude_logs.json", false, bearer(e.ingest.Secret))
		require.Equal(t, http.StatusOK, code, string(body))
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		// No price: the estimates.
		require.Equal(t, reference(t, "claude_logs.json").Cost, e.orgUsage(t).Cost)
		require.Equal(t, map[string]string{"claude-sonnet-4-5": "estimate", "claude-haiku-4-5": "estimate"}, e.costSources(t))

		p := org.PriceSet{Model: "claude-sonnet-4-5", Input: price(3), CacheRead: price(0.3), CacheWrite: price(3.75), Output: price(15)}
		_, err := e.orgs.SetPrice(ctx, e.org.ID, p, admin)
		require.NoError(t, err)
		// Until the hours are computed again, the cost is the estimate.
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		require.Equal(t, reference(t, "claude_logs.json").Cost, e.orgUsage(t).Cost)
		require.NoError(t, e.srv.Telemetry().Reprice(ctx, e.org.ID))
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))

		var want float64
		var tok tools.Tokens
		for _, u := range tools.Dedup(batchOf(t, "claude_logs.json").Usage) {
			if u.Model == "claude-sonnet-4-5" {
				tok = tok.Add(u.Tokens)
			} else if u.CostEstimate != nil {
				want = provider.RoundCost(want + *u.CostEstimate)
			}
		}
		require.NotZero(t, tok.Input)
		priced := provider.RoundCost((float64(tok.Input)*3 + float64(tok.CacheRead)*0.3 + float64(tok.CacheWrite)*3.75 +
			float64(tok.Output)*15) / 1e6)
		want = provider.RoundCost(want + priced)
		require.Equal(t, want, e.orgUsage(t).Cost)
		require.Equal(t, map[string]string{"claude-sonnet-4-5": "prices", "claude-haiku-4-5": "estimate"}, e.costSources(t))

		// Without the price, the estimate again.
		require.NoError(t, e.orgs.DeletePrice(ctx, e.org.ID, "claude-sonnet-4-5", admin))
		require.NoError(t, e.srv.Telemetry().Reprice(ctx, e.org.ID))
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		require.Equal(t, reference(t, "claude_logs.json").Cost, e.orgUsage(t).Cost)
	})
}

// costSources returns the costSource of the usage buckets stored in the
// Ingestion key's collected view, by model (the usage API sums buckets
// and serves the interface's metrics only).
func (e *env) costSources(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := e.srv.Sources().Store().Export(t.Context(), telemetry.SourceID(e.ingest.ID), consumer.Usage, false, func(raw json.RawMessage) error {
		var b struct {
			Dimensions struct {
				Model string `json:"model"`
			} `json:"dimensions"`
			Metrics struct {
				CostSource string `json:"costSource"`
			} `json:"metrics"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			return err
		}
		if prev, ok := out[b.Dimensions.Model]; ok && prev != b.Metrics.CostSource {
			return fmt.Errorf("model %s: costSource %s and %s", b.Dimensions.Model, prev, b.Metrics.CostSource)
		}
		out[b.Dimensions.Model] = b.Metrics.CostSource
		return nil
	})
	require.NoError(t, err)
	return out
}

// TestRepriceBesideARunningRollup: a change of prices queues the rollup of
// the hours it changes even while a rollup of the source is running (one
// that finished its last pass just before the change, its job not yet
// marked completed), rather than waiting for the next sweep.
func TestRepriceBesideARunningRollup(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db, nil)
		code, body := post(t, e.url, "claude_logs.json", false, bearer(e.ingest.Secret))
		require.Equal(t, http.StatusOK, code, string(body))
		sid := telemetry.SourceID(e.ingest.ID)
		jobs := func() int {
			var n int
			require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM river_job WHERE kind = $1 AND CAST(args AS TEXT) LIKE $2`,
				telemetry.RollupArgs{}.Kind(), `%`+sid+`%`).Scan(&n))
			return n
		}
		require.Equal(t, 1, jobs(), "the ingestion queued the source's rollup")
		// The rollup's job runs (the service works no jobs here: it is
		// marked running), and has computed the hours.
		_, err := db.ExecContext(ctx, `UPDATE river_job SET state = 'running', attempt = 1 WHERE kind = $1`, telemetry.RollupArgs{}.Kind())
		require.NoError(t, err)
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))

		require.NoError(t, e.srv.Telemetry().Reprice(ctx, e.org.ID))
		require.Equal(t, 2, jobs(), "the change of prices queued a rollup beside the running one")
		// Another ingestion while both exist queues nothing more.
		code, body = post(t, e.url, "claude_logs.json", false, bearer(e.ingest.Secret))
		require.Equal(t, http.StatusOK, code, string(body))
		require.Equal(t, 2, jobs())
	})
}
