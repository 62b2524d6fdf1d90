package telemetry_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/telemetry/tools"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestCumulativeRuns: the store turns cumulative points into deltas as
// tools.Accumulator does: a duplicate and a stale point count nothing, a
// lower value and a new start time are resets, a delta point passes.
func TestCumulativeRuns(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	point := func(key string, startAt time.Time, sec int, input, output int64, cumulative bool) tools.Usage {
		return tools.Usage{Key: key, Time: start.Add(time.Duration(sec) * time.Second), Tool: "gemini-cli", Model: "m",
			Email: "erin@example.com", SessionID: "g", Tokens: tools.Tokens{Input: input, Output: output}, Origin: tools.OriginMetric,
			Source: "gemini_cli.token.usage", Cumulative: cumulative, Series: "series", Start: startAt}
	}
	sends := [][]tools.Usage{
		{point("a", start, 10, 100, 10, true)},
		{point("b", start, 20, 150, 12, true), point("b", start, 20, 150, 12, true)}, // +50, +2; the twin is a duplicate
		{point("a", start, 10, 100, 10, true)},                                       // re-sent: nothing
		{point("c", start, 15, 120, 11, true)},                                       // stale: in b already
		{point("d", start, 30, 30, 1, true)},                                         // lower: a reset, +30, +1
		{point("e", start.Add(time.Hour), 3610, 5, 5, true)},                         // a new run: +5, +5
		{point("f", time.Time{}, 40, 7, 0, false)},                                   // a delta point: +7
	}
	acc := tools.NewAccumulator()
	var want tools.Tokens
	for _, us := range sends {
		for _, u := range acc.Apply(us) {
			want = want.Add(u.Tokens)
		}
	}
	require.Equal(t, tools.Tokens{Input: 100 + 50 + 30 + 5 + 7, Output: 10 + 2 + 1 + 5}, want)

	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db, nil)
		p := org.Principal{KeyID: e.ingest.ID, KeyName: "laptops", OrganisationID: e.org.ID, Type: org.KeyTypeIngestion}
		for _, us := range sends {
			require.NoError(t, e.srv.Telemetry().Ingest(ctx, p, tools.Batch{Usage: us}))
		}
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		got := e.orgUsage(t)
		require.Equal(t, totals{Input: want.Input, Output: want.Output}, got)
	})
}

// TestZeroBucket: when an event of a session arrives after its metrics,
// the metrics' bucket is written again as zero, so that the hour's totals
// count the event alone.
func TestZeroBucket(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 10, 5, 0, 0, time.UTC)
	u := tools.Usage{Key: "m", Time: at, Tool: "claude-code", Model: "from-metrics", Email: "alice@example.com", SessionID: "s",
		Tokens: tools.Tokens{Input: 40, Output: 4}, Origin: tools.OriginMetric}
	ev := u
	ev.Key, ev.Model, ev.Origin, ev.Tokens = "e", "from-event", tools.OriginEvent, tools.Tokens{Input: 30, CacheRead: 5, Output: 3}
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db, nil)
		p := org.Principal{KeyID: e.ingest.ID, KeyName: "laptops", OrganisationID: e.org.ID, Type: org.KeyTypeIngestion}
		require.NoError(t, e.srv.Telemetry().Ingest(ctx, p, tools.Batch{Usage: []tools.Usage{u}}))
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		require.Equal(t, totals{Input: 40, Output: 4}, e.orgUsage(t))
		require.NoError(t, e.srv.Telemetry().Ingest(ctx, p, tools.Batch{Usage: []tools.Usage{ev}}))
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		require.Equal(t, totals{Requests: 1, Input: 35, Output: 3}, e.orgUsage(t))
	})
}

// TestSessionAcrossHours: metrics of a session exported in the hour after
// its last request are not counted beside its events, whichever comes first.
func TestSessionAcrossHours(t *testing.T) {
	t.Parallel()
	ev := tools.Usage{Key: "e", Time: time.Date(2026, 11, 27, 10, 59, 40, 0, time.UTC), Tool: "claude-code", Model: "m",
		Email: "alice@example.com", SessionID: "s", Tokens: tools.Tokens{Input: 30, Output: 3}, Origin: tools.OriginEvent}
	metric := ev
	metric.Key, metric.Time, metric.Origin = "p", time.Date(2026, 11, 27, 11, 0, 20, 0, time.UTC), tools.OriginMetric
	other := metric // another session's metrics in the same hour count
	other.Key, other.SessionID, other.Tokens = "q", "s2", tools.Tokens{Input: 7}
	for name, order := range map[string][][]tools.Usage{
		"events first":  {{ev}, {metric, other}},
		"metrics first": {{metric, other}, {ev}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
				ctx := t.Context()
				e := newEnv(t, db, nil)
				p := org.Principal{KeyID: e.ingest.ID, KeyName: "laptops", OrganisationID: e.org.ID, Type: org.KeyTypeIngestion}
				for _, us := range order {
					require.NoError(t, e.srv.Telemetry().Ingest(ctx, p, tools.Batch{Usage: us}))
					require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
				}
				require.Equal(t, totals{Requests: 1, Input: 37, Output: 3}, e.orgUsage(t))
			})
		})
	}
}
