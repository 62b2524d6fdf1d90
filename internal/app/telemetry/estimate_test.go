package telemetry_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/telemetry/tools"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// orgUsageBy reads the organisation-wide usage of the fixtures' days, one
// bucket for the whole range grouped by groupBy ("" for none), with the
// API key, through the HTTP API, keyed by the grouped model.
func (e *env) orgUsageBy(t *testing.T, groupBy string) map[string]spec.UsageMetrics {
	t.Helper()
	q := url.Values{"granularity": {"day"}, "startAt": {"2026-11-20T00:00:00Z"}, "endAt": {"2026-12-01T00:00:00Z"}, "limit": {"1000"}}
	if groupBy != "" {
		q.Set("groupBy", groupBy)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url+"/organisations/"+e.org.ID+"/usage?"+q.Encode(), nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", e.api.Secret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	findings, err := spec.Validate("usage-list", b)
	require.NoError(t, err)
	require.True(t, spec.Valid(findings), "the answer stays valid against the interface's schema: %v", findings)
	var page spec.List[spec.UsageBucket]
	require.NoError(t, json.Unmarshal(b, &page))
	out := map[string]spec.UsageMetrics{}
	for _, bk := range page.Data {
		model := ""
		if bk.Dimensions.Model != nil {
			model = *bk.Dimensions.Model
		}
		m := out[model]
		m.Cost = provider.RoundCost(m.Cost + bk.Metrics.Cost)
		if bk.Metrics.EstimatedCost != nil {
			require.Positive(t, *bk.Metrics.EstimatedCost)
			require.LessOrEqual(t, *bk.Metrics.EstimatedCost, bk.Metrics.Cost, "the estimated part of a bucket's cost")
			est := provider.RoundCost(*bk.Metrics.EstimatedCost)
			if m.EstimatedCost != nil {
				est = provider.RoundCost(est + *m.EstimatedCost)
			}
			m.EstimatedCost = &est
		}
		out[model] = m
	}
	return out
}

// estimates returns the sum of the tools' estimates of fixture name, by
// model, as the endpoint counts them (the one-source rule).
func estimates(t *testing.T, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, u := range tools.Dedup(batchOf(t, name).Usage) {
		if u.CostEstimate != nil {
			out[u.Model] = provider.RoundCost(out[u.Model] + *u.CostEstimate)
		}
	}
	return out
}

// TestEstimatedCost: the organisation-wide usage says which part of its
// cost is the tools' estimate (estimatedCost), the rest being computed from
// prices, and the parts add up across the buckets of several telemetry
// sources merged.
func TestEstimatedCost(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db, nil)
		second := e.key(t, "build farm", org.KeyTypeIngestion)
		for _, k := range []org.CreatedKey{e.ingest, second} {
			code, body := post(t, e.url, "claude_logs.json", false, bearer(k.Secret))
			require.Equal(t, http.StatusOK, code, string(body))
		}
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		est := estimates(t, "claude_logs.json")
		require.Len(t, est, 2, "the fixture has two models with estimates")

		// No price: the whole cost is the estimate, twice (two sources).
		all := e.orgUsageBy(t, "")[""]
		require.NotNil(t, all.EstimatedCost)
		require.InDelta(t, 2*(est["claude-sonnet-4-5"]+est["claude-haiku-4-5"]), *all.EstimatedCost, 1e-9)
		require.InDelta(t, all.Cost, *all.EstimatedCost, 1e-9)

		// A price for one model: its cost is computed, no longer estimated;
		// the other model's stays the estimate.
		p := org.PriceSet{Model: "claude-sonnet-4-5", Input: price(3), CacheRead: price(0.3), CacheWrite: price(3.75), Output: price(15)}
		_, err := e.orgs.SetPrice(ctx, e.org.ID, p, admin)
		require.NoError(t, err)
		require.NoError(t, e.srv.Telemetry().Reprice(ctx, e.org.ID))
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		by := e.orgUsageBy(t, spec.DimensionModel)
		require.Nil(t, by["claude-sonnet-4-5"].EstimatedCost, "priced: no part estimated")
		require.Positive(t, by["claude-sonnet-4-5"].Cost)
		require.NotNil(t, by["claude-haiku-4-5"].EstimatedCost)
		require.InDelta(t, 2*est["claude-haiku-4-5"], *by["claude-haiku-4-5"].EstimatedCost, 1e-9)
		require.InDelta(t, by["claude-haiku-4-5"].Cost, *by["claude-haiku-4-5"].EstimatedCost, 1e-9)
		all = e.orgUsageBy(t, "")[""]
		require.NotNil(t, all.EstimatedCost)
		require.InDelta(t, 2*est["claude-haiku-4-5"], *all.EstimatedCost, 1e-9, "merged: only the estimated part")
		require.InDelta(t, by["claude-sonnet-4-5"].Cost+by["claude-haiku-4-5"].Cost, all.Cost, 1e-9)
		require.Greater(t, all.Cost, *all.EstimatedCost)

		// Prices for both: nothing is an estimate, and the answer has no
		// estimatedCost at all.
		p.Model = "claude-haiku-4-5"
		_, err = e.orgs.SetPrice(ctx, e.org.ID, p, admin)
		require.NoError(t, err)
		require.NoError(t, e.srv.Telemetry().Reprice(ctx, e.org.ID))
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		require.Nil(t, e.orgUsageBy(t, "")[""].EstimatedCost)
	})
}
