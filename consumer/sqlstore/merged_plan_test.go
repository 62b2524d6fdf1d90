package sqlstore

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
)

// mergedPlanCases are merged pages whose every source must be read as one
// range of the index (source, resource, pos_ms, id), never sorted as a
// whole: a page costs the same at any depth.
func mergedPlanCases() map[string]struct {
	k   keyset
	pos *mergedPosition
} {
	pos := &mergedPosition{key: provider.Key{Time: planT0.Add(200 * time.Hour), ID: "events-0200"}, source: "s2"}
	return map[string]struct {
		k   keyset
		pos *mergedPosition
	}{
		"first page":    {keyset{resource: "events", limit: 100}, nil},
		"deep page":     {keyset{resource: "events", limit: 100}, pos},
		"since":         {keyset{resource: "conversations", since: planT0.Add(100 * time.Hour), inclusive: true, limit: 100}, pos},
		"category":      {keyset{resource: "events", category: "Policy", limit: 100}, pos},
		"started after": {keyset{resource: "conversations", startedAfter: planT0, limit: 100}, pos},
	}
}

func TestMergedPlanSQLite(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.SQLite)
	s, err := New(t.Context(), db.DB, Dialect(db.Dialect))
	require.NoError(t, err)
	fillForSweepPlans(t, s)
	sources := []string{"s1", "s2", "s3"}
	for name, tc := range mergedPlanCases() {
		query, args := mergedSQL(&tc.k, tc.pos, sources)
		plan := explainSQLite(t, db, query, args)
		require.Equal(t, len(sources), strings.Count(plan, "USING INDEX consumer_records_pos (source=? AND resource=?"), "%s:\n%s", name, plan)
		require.NotContains(t, plan, "SCAN consumer_records", "%s:\n%s", name, plan)
		if tc.pos != nil || !tc.k.since.IsZero() {
			require.Equal(t, len(sources), strings.Count(plan, "AND resource=? AND (pos_ms"), "%s:\n%s", name, plan)
		}
		t.Logf("%s:\n%s", name, plan)
	}
}

func TestMergedPlanPostgres(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.Postgres)
	s, err := New(t.Context(), db.DB, Dialect(db.Dialect))
	require.NoError(t, err)
	fillForSweepPlans(t, s)
	ctx := t.Context()
	sources := []string{"s1", "s2", "s3"}
	for name, tc := range mergedPlanCases() {
		query, args := mergedSQL(&tc.k, tc.pos, sources)
		var plan string
		err := db.InTx(ctx, func(tx *sql.Tx) error {
			for _, set := range []string{"SET LOCAL enable_seqscan = off", "SET LOCAL enable_bitmapscan = off"} {
				if _, err := tx.ExecContext(ctx, set); err != nil {
					return err
				}
			}
			var err error
			plan, err = explainPostgres(ctx, tx, query, args)
			return err
		})
		require.NoError(t, err)
		require.Equal(t, len(sources), strings.Count(plan, "Index Scan using consumer_records_pos on consumer_records"), "%s:\n%s", name, plan)
		if tc.pos != nil {
			require.Equal(t, len(sources), strings.Count(plan, "ROW(pos_ms, id) >"), "%s:\n%s", name, plan)
		}
		t.Logf("%s:\n%s", name, plan)
	}
}
