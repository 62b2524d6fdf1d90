package sqlstore

import (
	"context"
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
	"github.com/aiusage/kit/spec"
)

var planT0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// sweepCase is a sweep whose plan must read one range of the index
// (source, resource, pos_ms, id), bounded as bounds says. A usage sweep
// may rather read a range of the partial index of usage buckets (source,
// time_ms, ...), which the planners choose when they know the resource.
type sweepCase struct {
	name   string
	end    consumer.RunEnd
	bounds string // SQLite's description of the index range
	pgCond []string
}

func (tc *sweepCase) usage() bool { return tc.end.Lease.Resource == consumer.Usage }

// usageBounds returns bounds on time_ms rather than pos_ms.
func usageBounds(bounds string) string { return strings.ReplaceAll(bounds, "pos_ms", "time_ms") }

func sweepCases() []sweepCase {
	end := func(r consumer.Resource, from, until time.Time) consumer.RunEnd {
		return consumer.RunEnd{
			Lease: consumer.Lease{Source: "s1", Resource: r, Owner: "p"}, At: planT0.Add(48 * time.Hour), Sweep: true,
			SweepFrom: from, SweepUntil: until, Checkpoint: consumer.Checkpoint{Run: 5},
		}
	}
	from, until := planT0.Add(3*time.Hour), planT0.Add(5*time.Hour)
	return []sweepCase{
		{"usage window", end(consumer.Usage, from, until), "pos_ms>? AND pos_ms<?", []string{"pos_ms >= ", "pos_ms < "}},
		{"usage from", end(consumer.Usage, from, time.Time{}), "pos_ms>?", []string{"pos_ms >= "}},
		{"usage until", end(consumer.Usage, time.Time{}, until), "pos_ms<?", []string{"pos_ms < "}},
		{"events window", end(consumer.Events, from, until), "pos_ms>? AND pos_ms<?", []string{"pos_ms >= ", "pos_ms < "}},
		// A conversation may be listed after its Time: only the lower
		// bound carries over to pos_ms, a range that is selective near the
		// end of the data.
		{"conversations window", end(consumer.Conversations, planT0.Add(395*time.Hour), planT0.Add(397*time.Hour)), "pos_ms>?", []string{"pos_ms >= "}},
	}
}

// fillForSweepPlans writes usage buckets and events of five sources, so
// that the planners have statistics to go by.
func fillForSweepPlans(t *testing.T, s *Store) {
	t.Helper()
	ctx := t.Context()
	for src := range 5 {
		source := fmt.Sprintf("s%d", src)
		for _, r := range []consumer.Resource{consumer.Usage, consumer.Events, consumer.Conversations} {
			l := consumer.Lease{Source: source, Resource: r, Owner: "p", Now: planT0, Expires: planT0.Add(time.Hour)}
			ok, err := s.AcquireLease(ctx, l)
			require.NoError(t, err)
			require.True(t, ok)
			for page := range 4 {
				var recs []consumer.Record
				for i := range 100 {
					n := page*100 + i
					start := planT0.Add(time.Duration(n) * time.Hour)
					id := fmt.Sprintf("%s-%04d", r, n)
					rec := consumer.Record{ID: id, Time: start, JSON: json.RawMessage(fmt.Sprintf(`{"id":%q}`, id))}
					if r == consumer.Usage {
						rec.Bucket = &consumer.BucketKey{Granularity: spec.GranularityHour, Start: start, End: start.Add(time.Hour), Model: "m"}
						rec.JSON = json.RawMessage(`{"metrics":{"requests":1}}`)
					}
					recs = append(recs, rec)
				}
				require.NoError(t, s.SavePage(ctx, consumer.PageWrite{Lease: l, Records: recs, Checkpoint: consumer.Checkpoint{Run: 1}}))
			}
		}
	}
	_, err := s.db.ExecContext(ctx, "ANALYZE")
	require.NoError(t, err)
	require.Zero(t, countRows(t, s.db, `SELECT count(*) FROM consumer_records WHERE resource <> 'conversations' AND pos_ms <> time_ms`))
}

func countRows(t *testing.T, db *sqldb.DB, query string) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(), query).Scan(&n))
	return n
}

// TestSweepPlanSQLite checks with EXPLAIN QUERY PLAN that a sweep with a
// window reads one range of the position index.
func TestSweepPlanSQLite(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.SQLite)
	s, err := New(t.Context(), db.DB, db.Dialect)
	require.NoError(t, err)
	fillForSweepPlans(t, s)
	for _, tc := range sweepCases() {
		query, args := sweepQuery(&tc.end)
		plan := explainSQLite(t, db, query, args)
		if tc.usage() && strings.Contains(plan, "consumer_records_usage") {
			require.Contains(t, plan, "SEARCH consumer_records USING INDEX consumer_records_usage (source=? AND "+usageBounds(tc.bounds)+")",
				"%s:\n%s", tc.name, plan)
		} else {
			require.Contains(t, plan, "SEARCH consumer_records USING INDEX consumer_records_pos (source=? AND resource=? AND "+tc.bounds+")",
				"%s:\n%s", tc.name, plan)
		}
		t.Logf("%s:\n%s", tc.name, plan)
	}
}

func explainSQLite(t *testing.T, db *sqldb.DB, query string, args []any) string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &notused, &detail))
		lines = append(lines, detail)
	}
	require.NoError(t, rows.Err())
	return strings.Join(lines, "\n")
}

// TestSweepPlanPostgres checks that a sweep with a window can be answered by
// a range of the position index: with sequential and bitmap scans priced
// out, the plan is an index scan whose condition bounds pos_ms.
func TestSweepPlanPostgres(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.Postgres)
	s, err := New(t.Context(), db.DB, db.Dialect)
	require.NoError(t, err)
	fillForSweepPlans(t, s)
	ctx := t.Context()
	// A custom plan knows the resource; a generic one does not.
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		for _, tc := range sweepCases() {
			query, args := sweepQuery(&tc.end)
			var plan string
			err := db.InTx(ctx, func(tx *sql.Tx) error {
				for _, set := range []string{"SET LOCAL enable_seqscan = off", "SET LOCAL enable_bitmapscan = off", "SET LOCAL plan_cache_mode = " + mode} {
					if _, err := tx.ExecContext(ctx, set); err != nil {
						return err
					}
				}
				if mode == "force_custom_plan" {
					var err error
					plan, err = explainPostgres(ctx, tx, query, args)
					return err
				}
				// pgx prepares the statements it runs, so a sweep run
				// often may get a generic plan.
				if _, err := tx.ExecContext(ctx, "PREPARE sweep AS "+query); err != nil {
					return err
				}
				lits := make([]string, len(args))
				for i, a := range args {
					if s, ok := a.(string); ok {
						lits[i] = "'" + s + "'"
					} else {
						lits[i] = fmt.Sprint(a)
					}
				}
				var err error
				plan, err = explainPostgres(ctx, tx, "EXECUTE sweep("+strings.Join(lits, ", ")+")", nil)
				if err != nil {
					return err
				}
				_, err = tx.ExecContext(ctx, "DEALLOCATE sweep")
				return err
			})
			require.NoError(t, err)
			index, conds := "consumer_records_pos", tc.pgCond
			if tc.usage() && strings.Contains(plan, "consumer_records_usage") {
				index, conds = "consumer_records_usage", nil
				for _, c := range tc.pgCond {
					conds = append(conds, usageBounds(c))
				}
			}
			require.Contains(t, plan, "Index Scan using "+index+" on consumer_records", "%s, %s:\n%s", tc.name, mode, plan)
			i := strings.Index(plan, "Index Cond:")
			require.GreaterOrEqual(t, i, 0, "%s, %s:\n%s", tc.name, mode, plan)
			cond, _, _ := strings.Cut(plan[i:], "\n")
			for _, c := range conds {
				require.Contains(t, cond, c, "%s, %s:\n%s", tc.name, mode, plan)
			}
			t.Logf("%s, %s:\n%s", tc.name, mode, plan)
		}
	}
}

func explainPostgres(ctx context.Context, tx *sql.Tx, query string, args []any) (string, error) {
	rows, err := tx.QueryContext(ctx, "EXPLAIN "+query, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n"), rows.Err()
}

func TestSetMember(t *testing.T) {
	t.Parallel()
	at := []byte(`"2026-03-02T04:05:06.789Z"`)
	for _, tc := range []struct{ in, want string }{
		{`{"id":"c1","updatedAt":"2026-03-01T00:00:00.000Z","x":1}`, `{"id":"c1","updatedAt":"2026-03-02T04:05:06.789Z","x":1}`},
		{"{ \"id\" : \"c1\" ,\n \"updatedAt\" :  \"old\" , \"n\": 1.50 }", "{ \"id\" : \"c1\" ,\n \"updatedAt\" :  \"2026-03-02T04:05:06.789Z\" , \"n\": 1.50 }"},
		{`{"updatedAt":null}`, `{"updatedAt":"2026-03-02T04:05:06.789Z"}`},
		{`{"updatedAt":{"a":[1,"updatedAt"]},"z":"\u00e9"}`, `{"updatedAt":"2026-03-02T04:05:06.789Z","z":"\u00e9"}`},
		{`{"updated\u0041t":"old"}`, `{"updated\u0041t":"2026-03-02T04:05:06.789Z"}`},
		{`{"a":{"updatedAt":"nested"},"updatedAt":"x","updatedAt":"y"}`, `{"a":{"updatedAt":"nested"},"updatedAt":"2026-03-02T04:05:06.789Z","updatedAt":"2026-03-02T04:05:06.789Z"}`},
		{`{"id":"c1","startedAt":"s"}`, `{"id":"c1","startedAt":"s","updatedAt":"2026-03-02T04:05:06.789Z"}`},
		{`{ }`, `{ "updatedAt":"2026-03-02T04:05:06.789Z"}`},
		{"{\"id\":1}\n", "{\"id\":1,\"updatedAt\":\"2026-03-02T04:05:06.789Z\"}\n"},
	} {
		got, err := setMember([]byte(tc.in), "updatedAt", at)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, string(got), tc.in)
		require.True(t, json.Valid(got), tc.in)
	}
	for _, bad := range []string{`[1]`, `"x"`, `{"a":}`, `{"a":1`, ``} {
		_, err := setMember([]byte(bad), "updatedAt", at)
		require.Error(t, err, bad)
	}
}
