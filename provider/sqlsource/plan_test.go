package sqlsource

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// planCase is a query whose plan must read one range of index.
type planCase struct {
	name  string
	k     *keyset
	index string
}

func planCases() []planCase {
	after := &provider.Key{Time: t0, ID: "x"}
	since := t0.Add(-time.Hour)
	return []planCase{
		{"conversations first page", conversationKeyset(&provider.ConversationQuery{Tenant: "t", Limit: 100}), "conversations_tenant_updated"},
		{"conversations next page", conversationKeyset(&provider.ConversationQuery{Tenant: "t", After: after, Limit: 100}), "conversations_tenant_updated"},
		{"conversations updatedSince", conversationKeyset(&provider.ConversationQuery{Tenant: "t", UpdatedSince: since, Limit: 100}), "conversations_tenant_updated"},
		{"conversations next page, both filters", conversationKeyset(&provider.ConversationQuery{Tenant: "t", After: after, UpdatedSince: since, StartedAfter: since, Limit: 100}), "conversations_tenant_updated"},
		{"assistants next page", assistantKeyset(&provider.AssistantQuery{Tenant: "t", After: after, UpdatedSince: since, Limit: 100}), "assistants_tenant_updated"},
		{"events next page", eventKeyset(&provider.EventQuery{Tenant: "t", After: after, OccurredAfter: since, Limit: 100}), "events_tenant_occurred"},
		{"events by category", eventKeyset(&provider.EventQuery{Tenant: "t", After: after, Category: spec.CategoryAccess, Limit: 100}), "events_tenant_category_occurred"},
	}
}

// fillForPlans writes enough rows that the planners have statistics to go by.
func fillForPlans(t *testing.T, s *Source) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, s.WriteBatch(ctx, func(w provider.Writer) error {
		for i := range 2000 {
			at := t0.Add(time.Duration(i) * time.Second)
			id := fmt.Sprintf("x%05d", i)
			tenant := fmt.Sprintf("t%d", i%5)
			if err := w.UpsertConversation(ctx, tenant, spec.Conversation{ID: id, StartedAt: spec.NewTime(at), UpdatedAt: spec.NewTime(at)}); err != nil {
				return err
			}
			if err := w.UpsertAssistant(ctx, tenant, spec.Assistant{ID: id, CreatedAt: spec.NewTime(at)}); err != nil {
				return err
			}
			if err := w.AppendEvent(ctx, tenant, spec.Event{ID: id, OccurredAt: spec.NewTime(at), Category: spec.EventCategories[i%8]}); err != nil {
				return err
			}
			if err := w.RecordUsage(ctx, tenant, provider.UsageRecord{ID: id, At: at, Model: "m"}); err != nil {
				return err
			}
		}
		return nil
	}))
	_, err := s.db.ExecContext(ctx, "ANALYZE")
	require.NoError(t, err)
}

// TestQueryPlansSQLite checks with EXPLAIN QUERY PLAN that every keyset
// query searches its index by range and sorts nothing: no temp B-tree for
// ORDER BY.
func TestQueryPlansSQLite(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.SQLite)
	s := newSource(t, db)
	fillForPlans(t, s)
	for _, tc := range planCases() {
		query, args := tc.k.sql()
		plan := explainSQLite(t, db, query, args)
		require.Contains(t, plan, "SEARCH "+tc.k.table+" USING INDEX "+tc.index+" (", "%s:\n%s", tc.name, plan)
		require.NotContains(t, plan, "TEMP B-TREE", "%s:\n%s", tc.name, plan)
		if tc.k.after != nil && tc.k.since.IsZero() {
			require.Contains(t, plan, "("+tc.k.timeCol+",id)>(?,?)", "%s: the keyset bound must be an index range:\n%s", tc.name, plan)
		}
	}

	// Usage reads one range of the rollup cells; grouped by a prefix of
	// their key (here model, department), it sorts nothing.
	day := t0.Truncate(24 * time.Hour)
	// Other groupings sort the cells (GROUP BY) or the groups (ORDER BY) of
	// the window of buckets read.
	for _, tc := range []struct {
		groupBy             []string
		sortCells, sortRows bool
	}{
		{nil, false, false},
		{[]string{spec.DimensionModel}, false, false},
		{[]string{spec.DimensionModel, spec.DimensionDepartment}, false, false},
		{[]string{spec.DimensionModel, spec.DimensionAssistantID, spec.DimensionDepartment}, false, true},
		{[]string{spec.DimensionUserID}, true, false},
	} {
		p, err := planUsage(&provider.UsageQuery{
			Tenant: "t", Start: day, End: day.Add(30 * 24 * time.Hour),
			Granularity: spec.GranularityDay, GroupBy: tc.groupBy, Limit: 100,
			After: &provider.UsageKey{Start: day, Model: "m"},
		})
		require.NoError(t, err)
		query, args := p.sql(p.lo, p.hi, 101)
		plan := explainSQLite(t, db, query, args)
		require.Contains(t, plan, "SEARCH usage_rollups USING PRIMARY KEY (tenant=? AND width=? AND bucket>? AND bucket<?)", plan)
		require.Equal(t, tc.sortCells, strings.Contains(plan, "TEMP B-TREE FOR GROUP BY"), "%v:\n%s", tc.groupBy, plan)
		require.Equal(t, tc.sortRows, strings.Contains(plan, "TEMP B-TREE FOR ORDER BY"), "%v:\n%s", tc.groupBy, plan)
		t.Logf("usage plan, groupBy %v:\n%s", tc.groupBy, plan)
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

// explainIndexOnly is the PostgreSQL plan of query with sorts, sequential
// and bitmap scans priced out, planned for its arguments.
func explainIndexOnly(t *testing.T, db *sqldb.DB, query string, args []any) string {
	t.Helper()
	ctx := t.Context()
	var plan string
	err := db.InTx(ctx, func(tx *sql.Tx) error {
		for _, set := range []string{"SET LOCAL enable_sort = off", "SET LOCAL enable_seqscan = off", "SET LOCAL enable_bitmapscan = off", "SET LOCAL plan_cache_mode = force_custom_plan"} {
			if _, err := tx.ExecContext(ctx, set); err != nil {
				return err
			}
		}
		var err error
		plan, err = explainPostgres(ctx, tx, query, args)
		return err
	})
	require.NoError(t, err)
	return plan
}

// TestQueryPlansPostgres checks that every keyset query can be answered by
// its index without a sort: with sorting and sequential scans priced out, the
// plan is an index scan whose condition holds the keyset bound.
func TestQueryPlansPostgres(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.Postgres)
	s := newSource(t, db)
	fillForPlans(t, s)
	for _, tc := range planCases() {
		query, args := tc.k.sql()
		plan := explainIndexOnly(t, db, query, args)
		require.Contains(t, plan, "Index Scan using "+tc.index+" on "+tc.k.table, "%s:\n%s", tc.name, plan)
		require.NotContains(t, plan, "Sort", "%s:\n%s", tc.name, plan)
		if tc.k.after != nil && tc.k.since.IsZero() {
			require.Contains(t, plan, "ROW("+tc.k.timeCol+", id) > ROW(", "%s: the keyset bound must be an index condition:\n%s", tc.name, plan)
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

// TestCollationPostgres checks that every text column that orders or groups
// compares byte by byte, whatever the database's default collation.
func TestCollationPostgres(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.Postgres)
	newSource(t, db)
	rows, err := db.QueryContext(t.Context(), `SELECT table_name, column_name, coalesce(collation_name, '')
FROM information_schema.columns
WHERE table_schema = current_schema() AND data_type = 'text' AND column_name <> 'body'
	AND table_name IN ('conversations', 'assistants', 'events', 'usage_records')`)
	require.NoError(t, err)
	defer rows.Close()
	n := 0
	for rows.Next() {
		var table, column, collation string
		require.NoError(t, rows.Scan(&table, &column, &collation))
		require.Equal(t, "C", collation, "%s.%s", table, column)
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 2+2+3+7, n)
}

// TestQueryPlansWithRevision checks that the keyset queries of a page not
// yet cached, which read the table's revision in the same statement, keep
// the plan of the plain query: one index range, no sort, and the revision
// read once by its primary key.
func TestQueryPlansWithRevision(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := sqldbtest.Open(t, sqldb.SQLite)
		fillForPlans(t, newSource(t, db))
		for _, tc := range planCases() {
			query, args := tc.k.sqlWithRevision()
			plan := explainSQLite(t, db, query, args)
			require.Contains(t, plan, "SEARCH "+tc.k.table+" USING INDEX "+tc.index+" (", "%s:\n%s", tc.name, plan)
			require.Contains(t, plan, "SEARCH provider_revisions USING PRIMARY KEY (tenant=? AND resource=?)", "%s:\n%s", tc.name, plan)
			require.NotContains(t, plan, "CORRELATED", "%s: the revision is read once:\n%s", tc.name, plan)
			require.NotContains(t, plan, "TEMP B-TREE", "%s:\n%s", tc.name, plan)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		db := sqldbtest.Open(t, sqldb.Postgres)
		fillForPlans(t, newSource(t, db))
		for _, tc := range planCases() {
			query, args := tc.k.sqlWithRevision()
			plan := explainIndexOnly(t, db, query, args)
			require.Contains(t, plan, "Index Scan using "+tc.index+" on "+tc.k.table, "%s:\n%s", tc.name, plan)
			require.Contains(t, plan, "InitPlan", "%s: the revision is read once:\n%s", tc.name, plan)
			require.NotContains(t, plan, "Sort", "%s:\n%s", tc.name, plan)
		}
	})
}
