package sqlstore

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// usageYear is the first day of the year of daily buckets the usage plans
// are checked over.
var usageYear = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// fillUsageYear writes a year of daily usage buckets by user (users of
// them a day) for each of sources, plus conversations beside them, and
// analyses the tables, so that the planners weigh an index against a scan
// with real statistics.
func fillUsageYear(t *testing.T, s *Store, sources []string, users int) {
	t.Helper()
	ctx := t.Context()
	for _, source := range sources {
		for _, r := range []consumer.Resource{consumer.Usage, consumer.Conversations} {
			l := consumer.Lease{Source: source, Resource: r, Owner: "p", Now: planT0, Expires: planT0.Add(time.Hour)}
			ok, err := s.AcquireLease(ctx, l)
			require.NoError(t, err)
			require.True(t, ok)
			var recs []consumer.Record
			flush := func() {
				require.NoError(t, s.SavePage(ctx, consumer.PageWrite{Lease: l, Records: recs, Checkpoint: consumer.Checkpoint{Run: 1}}))
				recs = recs[:0]
			}
			for day := range 365 {
				start := usageYear.AddDate(0, 0, day)
				for u := range users {
					id := fmt.Sprintf("%s-%03d-%04d", r, day, u)
					rec := consumer.Record{ID: id, Time: start, JSON: json.RawMessage(fmt.Sprintf(`{"id":%q}`, id))}
					if r == consumer.Usage {
						user := fmt.Sprintf("u%04d", u)
						rec.Bucket = &consumer.BucketKey{Granularity: spec.GranularityDay, Start: start, End: start.AddDate(0, 0, 1),
							Model: fmt.Sprintf("m%d", u%3), UserID: user, Department: fmt.Sprintf("d%d", u%7)}
						rec.JSON = json.RawMessage(`{"dimensions":{"userId":"` + user + `"},"metrics":{"requests":3,"inputTokens":100,"outputTokens":50}}`)
					}
					recs = append(recs, rec)
					if len(recs) == 1000 {
						flush()
					}
				}
			}
			if len(recs) > 0 {
				flush()
			}
		}
	}
	_, err := s.db.ExecContext(ctx, "ANALYZE")
	require.NoError(t, err)
}

// usagePlanCases are the usage queries of the collected views and the
// dashboard over a year: one source's view (Usage) and the organisation's,
// several sources at once (Usage of a merged view, UsageSeries).
func usagePlanCases(sources []string) map[string]*usagePlan {
	plan := func(q provider.UsageQuery) *usagePlan {
		p, err := planUsage(&q)
		if err != nil {
			panic(err)
		}
		return p
	}
	series := func(q UsageSeriesQuery) *usagePlan {
		p, err := planSeries(&q)
		if err != nil {
			panic(err)
		}
		return p
	}
	// A quarter of the year stored: the index on time is the better path
	// whatever the statistics sampled (over the whole year the primary key
	// costs the planner about the same).
	end := usageYear.AddDate(0, 3, 0)
	merged := plan(provider.UsageQuery{Tenant: sources[0], Start: usageYear, End: end, Granularity: spec.GranularityDay,
		GroupBy: []string{spec.DimensionModel}, Limit: 1000})
	merged.sources = sources
	return map[string]*usagePlan{
		"source, by day": plan(provider.UsageQuery{Tenant: sources[0], Start: usageYear, End: end, Granularity: spec.GranularityDay, Limit: 1000}),
		"source, by day and user": plan(provider.UsageQuery{Tenant: sources[0], Start: usageYear, End: end, Granularity: spec.GranularityDay,
			GroupBy: []string{spec.DimensionUserID}, Limit: 1000}),
		"organisation, by day and model": merged,
		"organisation series, by source": series(UsageSeriesQuery{Sources: sources, Start: usageYear, End: end,
			GroupBy: []string{DimensionSource}}),
		"organisation series, by department": series(UsageSeriesQuery{Sources: sources, Start: usageYear, End: end,
			GroupBy: []string{spec.DimensionDepartment}}),
		"organisation series, of one user by model": series(UsageSeriesQuery{Sources: sources, Start: usageYear, End: end,
			GroupBy: []string{spec.DimensionModel}, UserIDs: []string{"U0003"}}),
	}
}

// TestUsagePlanSQLite checks with EXPLAIN QUERY PLAN that the usage of a
// source and of an organisation over a year of daily buckets is read from a
// range of the index of usage buckets, never by scanning the records.
func TestUsagePlanSQLite(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.SQLite)
	s, err := New(t.Context(), db.DB, db.Dialect)
	require.NoError(t, err)
	sources := []string{"s0", "s1", "s2"}
	fillUsageYear(t, s, sources, 20)
	for name, p := range usagePlanCases(sources) {
		p.postgres = false
		query, args := p.sql()
		plan := explainSQLite(t, db, query, args)
		require.Contains(t, plan, "SEARCH r USING INDEX consumer_records_usage (source=? AND time_ms>? AND time_ms<?)", "%s:\n%s", name, plan)
		require.NotContains(t, plan, "SCAN r", "%s:\n%s", name, plan)
		require.NotContains(t, plan, "SCAN consumer_records", "%s:\n%s", name, plan)
		t.Logf("%s:\n%s", name, plan)
	}
}

// TestUsagePlanPostgres checks the same on PostgreSQL: with sequential scans
// priced out, the records are read through the index of usage buckets,
// bounded by source and time.
func TestUsagePlanPostgres(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.Postgres)
	s, err := New(t.Context(), db.DB, db.Dialect)
	require.NoError(t, err)
	sources := []string{"s0", "s1", "s2"}
	fillUsageYear(t, s, sources, 20)
	ctx := t.Context()
	for name, p := range usagePlanCases(sources) {
		p.postgres = true
		query, args := p.sql()
		var plan string
		err := db.InTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
				return err
			}
			var err error
			plan, err = explainPostgres(ctx, tx, query, args)
			return err
		})
		require.NoError(t, err)
		require.NotContains(t, plan, "Seq Scan", "%s:\n%s", name, plan)
		// The records r are a range of the index of usage buckets, bounded
		// by source and time; every other read (the subquery's d) is a
		// range of an index bounded by source at least, never all sources.
		require.Regexp(t, `(Bitmap Index Scan on|Index Scan using) consumer_records_usage`, plan, "%s:\n%s", name, plan)
		conds := 0
		for line := range strings.Lines(plan) {
			if !strings.Contains(line, "Index Cond:") {
				continue
			}
			if conds == 0 {
				require.Contains(t, line, "time_ms >= ", "%s:\n%s", name, plan)
				require.Contains(t, line, "time_ms < ", "%s:\n%s", name, plan)
			}
			conds++
			require.Contains(t, line, "source", "%s:\n%s", name, plan)
		}
		require.Positive(t, conds, "%s:\n%s", name, plan)
		t.Logf("%s:\n%s", name, plan)
	}
}
