package vendorusage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/consumer/vendorusage"
	"github.com/aiusage/kit/consumer/vendorusage/vendortest"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// fill gives f 35 days of hourly usage before now (some hours empty, some
// users unknown to the users endpoint, some usage of no user or project)
// and three costs a day.
func fill(f *vendortest.Server, now time.Time, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	f.AddUser("u1", "One@Example.com")
	f.AddUser("u2", "two@example.com")
	first := now.Add(-35 * 24 * time.Hour).Truncate(24 * time.Hour)
	for h := first; h.Before(now); h = h.Add(time.Hour) {
		if rng.IntN(4) == 0 {
			continue // an empty bucket
		}
		for range 1 + rng.IntN(3) {
			f.AddUsage(row(rng, h))
		}
	}
	for d := first; d.Before(now); d = d.Add(24 * time.Hour) {
		f.AddCost(
			vendortest.Cost{Day: d, Project: "p1", LineItem: "m1, input", Model: "m1", USD: fmt.Sprintf("%d.%06d", rng.IntN(20), rng.IntN(1e6))},
			vendortest.Cost{Day: d, Project: "p1", LineItem: "m1, output", Model: "m1", USD: fmt.Sprintf("0.%06d", rng.IntN(1e6))},
			vendortest.Cost{Day: d, LineItem: "web search tool calls", USD: fmt.Sprintf("%d.%02d", rng.IntN(3), rng.IntN(100))},
		)
	}
}

func row(rng *rand.Rand, h time.Time) vendortest.Usage {
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	return vendortest.Usage{Hour: h, Model: pick("m1", "m2"), User: pick("u1", "u2", "ghost", ""), APIKey: pick("k1", "k2"),
		Project: pick("p1", "p2", ""), ServiceTier: pick("default", "flex"), Batch: rng.IntN(2) == 0,
		Requests: 1 + rng.Int64N(9), Uncached: rng.Int64N(5000), CacheRead: rng.Int64N(3000),
		CacheWrite5m: rng.Int64N(500), CacheWrite1h: rng.Int64N(200), Output: rng.Int64N(2000), WebSearches: rng.Int64N(2)}
}

// collected sums the collected view of source over [from, until): the
// interface's metrics from the view (and its cost), the kinds of input
// tokens from the stored buckets.
func collected(t *testing.T, store *sqlstore.Store, source string, from, until time.Time) (vendortest.Totals, float64) {
	t.Helper()
	ctx := context.Background()
	var got vendortest.Totals
	var cost float64
	q := provider.UsageQuery{Tenant: source, Start: from, End: until, Granularity: spec.GranularityDay, Limit: provider.MaxLimit}
	page, err := store.Usage(ctx, q)
	require.NoError(t, err)
	require.False(t, page.HasMore)
	for _, b := range page.Items {
		got.Requests += b.Metrics.Requests
		got.Input += b.Metrics.InputTokens
		got.Output += b.Metrics.OutputTokens
		cost += b.Metrics.Cost
	}
	require.NoError(t, store.Export(ctx, source, consumer.Usage, false, func(raw json.RawMessage) error {
		var b bucket
		if err := json.Unmarshal(raw, &b); err != nil {
			return err
		}
		at, err := time.Parse(time.RFC3339, b.StartAt)
		if err != nil || at.Before(from) || !at.Before(until) {
			return err
		}
		for k, dst := range map[string]*int64{"uncachedInputTokens": &got.Uncached, "cacheReadTokens": &got.CacheRead, "cacheWriteTokens": &got.CacheWrite} {
			if v, ok := b.Metrics[k].(float64); ok {
				*dst += int64(v)
			}
		}
		return nil
	}))
	return got, cost
}

// requireTotals compares the view of source with the fake's totals.
func requireTotals(t *testing.T, f *vendortest.Server, store *sqlstore.Store, source string, from, until time.Time, what string) {
	t.Helper()
	want := f.Totals(from, until)
	got, cost := collected(t, store, source, from, until)
	require.Equal(t, want.Requests, got.Requests, "%s: requests", what)
	require.Equal(t, want.Input, got.Input, "%s: input tokens", what)
	require.Equal(t, want.Output, got.Output, "%s: output tokens", what)
	require.Equal(t, want.Uncached, got.Uncached, "%s: uncached input tokens", what)
	require.Equal(t, want.CacheRead, got.CacheRead, "%s: cache read tokens", what)
	require.Equal(t, want.CacheWrite, got.CacheWrite, "%s: cache write tokens", what)
	require.InDelta(t, want.CostFloat(), cost, 1e-6, "%s: cost", what)
	require.Positive(t, want.Input)
}

func TestEndToEndTotalsFollowTheVendor(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		for i, fk := range fakes {
			t.Run(fk.name, func(t *testing.T) { endToEnd(t, db, fk, uint64(i)) })
		}
	})
}

func endToEnd(t *testing.T, db *sqldb.DB, fk fake, seed uint64) {
	ctx := context.Background()
	store, err := sqlstore.New(ctx, db.DB, db.Dialect)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	f := fk.srv()
	t.Cleanup(f.Close)
	var clock atomic.Pointer[time.Time]
	now := time.Date(2026, 4, 10, 13, 30, 0, 0, time.UTC)
	clock.Store(&now)
	tick := func(d time.Duration) { n := clock.Load().Add(d); clock.Store(&n) }
	fill(f, now, seed)
	src, err := fk.src(fastConfig(f))
	require.NoError(t, err)
	var cancelAfter atomic.Int32
	var cancel context.CancelFunc
	cfg := vendorusage.PollerConfig()
	cfg.Source = fk.name
	cfg.PageSize = 50 // 50 hourly buckets a page: 4 pages a week
	cfg.Now = func() time.Time { return *clock.Load() }
	cfg.OnPage = func(consumer.PageProgress) {
		if cancelAfter.Add(-1) == 0 {
			cancel()
		}
	}
	p, err := consumer.NewPoller(src, store, &cfg)
	require.NoError(t, err)
	sync := func(what string) consumer.Result {
		t.Helper()
		res, err := p.SyncOnce(ctx)
		require.NoError(t, err, what)
		return res
	}
	from := now.Add(-30 * 24 * time.Hour).Truncate(24 * time.Hour)
	until := now.Add(24 * time.Hour).Truncate(24 * time.Hour)

	res := sync("first sync")
	require.Greater(t, res.Resources[0].Pages, 20)
	requireTotals(t, f, store, fk.name, from, until, "first sync: 30 days back")
	sync("again")
	requireTotals(t, f, store, fk.name, from, until, "a repeated sync")

	// Late usage and revisions inside the 48h look-back: a revised hour
	// loses a dimension set, yesterday's costs change, the current hour
	// gains usage.
	revised := now.Truncate(time.Hour).Add(-30 * time.Hour)
	f.Revise(revised, vendortest.Usage{Model: "m3", User: "u2", APIKey: "k3", Project: "p3", Requests: 4, Uncached: 11, CacheRead: 12, CacheWrite5m: 13, Output: 14})
	f.ReviseCosts(now.Add(-24*time.Hour), vendortest.Cost{Project: "p1", LineItem: "m1, input", Model: "m1", USD: "7.654321"})
	f.AddUsage(row(rand.New(rand.NewPCG(9, 9)), now))
	tick(time.Hour)
	sync("after revisions")
	requireTotals(t, f, store, fk.name, from, until, "revised buckets")
	var atRevised int
	require.NoError(t, store.Export(ctx, fk.name, consumer.Usage, false, func(raw json.RawMessage) error {
		var b bucket
		require.NoError(t, json.Unmarshal(raw, &b))
		if b.StartAt == revised.Format(time.RFC3339) {
			atRevised++
			require.Equal(t, "m3", b.Dimensions["model"], "the dimension sets gone from the revised hour are swept")
		}
		return nil
	}))
	require.Equal(t, 1, atRevised)

	// Faults: a revoked key fails the sync with the vendor's message and
	// loses nothing; server errors beyond MaxAttempts likewise.
	f.Revoke()
	_, err = p.SyncOnce(ctx)
	require.ErrorIs(t, err, provider.ErrUnauthorized)
	st, err := store.Checkpoint(ctx, fk.name, consumer.Usage)
	require.NoError(t, err)
	require.Contains(t, st.LastError, "HTTP 401")
	require.NotContains(t, st.LastError, f.Key)
	requireTotals(t, f, store, fk.name, from, until, "after a revoked key")
	f.Restore()
	for range 5 {
		f.FailNext(http.StatusBadGateway, "")
	}
	_, err = p.SyncOnce(ctx)
	require.ErrorIs(t, err, provider.ErrUnavailable)
	requireTotals(t, f, store, fk.name, from, until, "after a failed sync")

	// An interrupted sync (the process stopped after its second page),
	// with usage changed meanwhile, then resumed.
	f.Revise(revised.Add(time.Hour), vendortest.Usage{Model: "m1", User: "u1", Uncached: 5, Output: 6, Requests: 1})
	f.AddCost(vendortest.Cost{Day: now, Project: "p2", LineItem: "m2, output", Model: "m2", USD: "0.000001"})
	tick(2 * time.Hour)
	cancelAfter.Store(2)
	var sctx context.Context
	sctx, cancel = context.WithCancel(ctx)
	defer cancel()
	_, err = p.SyncOnce(sctx)
	require.ErrorIs(t, err, context.Canceled)
	sync("resumed")
	requireTotals(t, f, store, fk.name, from, until, "a resumed sync")
	// A new day: the backfill start does not move, the trailing window
	// starts on a day.
	tick(24 * time.Hour)
	sync("next day")
	requireTotals(t, f, store, fk.name, from, until.Add(24*time.Hour), "next day")

	// Nothing was quarantined, and persons are emails where the users
	// list knows them.
	require.NoError(t, store.Quarantined(ctx, fk.name, func(q consumer.Quarantine) error {
		return fmt.Errorf("quarantined %s: %s", q.ID, q.Reason)
	}))
	users := map[string]bool{}
	require.NoError(t, store.Export(ctx, fk.name, consumer.Usage, false, func(raw json.RawMessage) error {
		var b bucket
		require.NoError(t, json.Unmarshal(raw, &b))
		users[b.Dimensions["userId"]] = true
		return nil
	}))
	ghost := map[string]string{"openai": "openai-user:ghost", "anthropic": "anthropic-account:ghost"}[fk.name]
	require.Equal(t, map[string]bool{"one@example.com": true, "two@example.com": true, ghost: true, "": true}, users)
}
