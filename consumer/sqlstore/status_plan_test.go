package sqlstore

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestStatusPlan checks that Status counts each line's records with index
// ranges, never reading consumer_records' rows.
func TestStatusPlan(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		s, err := New(t.Context(), db.DB, db.Dialect)
		require.NoError(t, err)
		fillForSweepPlans(t, s)
		ctx := t.Context()
		if db.Dialect == sqldb.SQLite {
			plan := explainSQLite(t, db, statusSQL, nil)
			t.Logf("status plan:\n%s", plan)
			require.NotContains(t, plan, "SCAN consumer_records", plan)
			require.Contains(t, plan, "SEARCH r USING COVERING INDEX consumer_records_missing (source=? AND resource=?", plan)
			return
		}
		var plan string
		require.NoError(t, db.InTx(ctx, func(tx *sql.Tx) error {
			for _, set := range []string{"SET LOCAL enable_seqscan = off", "SET LOCAL enable_bitmapscan = off"} {
				if _, err := tx.ExecContext(ctx, set); err != nil {
					return err
				}
			}
			var err error
			plan, err = explainPostgres(ctx, tx, statusSQL, nil)
			return err
		}))
		t.Logf("status plan:\n%s", plan)
		require.NotContains(t, plan, "Seq Scan on consumer_records", plan)
		require.Contains(t, plan, "Index Only Scan using consumer_records_missing", plan)
		require.Equal(t, 2, strings.Count(plan, "Index Only Scan using consumer_records_"), plan)
	})
}
