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
	"github.com/aiusage/kit/internal/infra/sqlpage"
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
	s, err := New(t.Context(), db.DB, db.Dialect)
	require.NoError(t, err)
	fillForSweepPlans(t, s)
	for _, sources := range [][]string{{"s1"}, {"s1", "s2", "s3"}} {
		for name, tc := range sizedPlanCases() {
			name := fmt.Sprintf("%d sources, %s", len(sources), name)
			query, args := mergedSQL(sqldb.SQLite, &tc.k, tc.pos, sources, tc.mode)
			plan := explainSQLite(t, db, query, args)
			if tc.mode == sqlpage.Sized {
				// Each body that fits is read by its rowid.
				require.Contains(t, plan, "SEARCH consumer_records USING INTEGER PRIMARY KEY (rowid=?)", "%s:\n%s", name, plan)
			}
			require.Equal(t, len(sources), strings.Count(plan, "USING INDEX consumer_records_pos (source=? AND resource=?"), "%s:\n%s", name, plan)
			require.NotContains(t, plan, "SCAN consumer_records", "%s:\n%s", name, plan)
			// Each source's rows come in index order; only the merge sorts,
			// at most limit+1 rows of each.
			require.LessOrEqual(t, strings.Count(plan, "USE TEMP B-TREE"), len(sources), "%s:\n%s", name, plan)
			if tc.pos != nil || !tc.k.since.IsZero() {
				require.Equal(t, len(sources), strings.Count(plan, "AND resource=? AND (pos_ms"), "%s:\n%s", name, plan)
			}
			t.Logf("%s:\n%s", name, plan)
		}
	}
}

func TestMergedPlanPostgres(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.Postgres)
	s, err := New(t.Context(), db.DB, db.Dialect)
	require.NoError(t, err)
	fillForSweepPlans(t, s)
	ctx := t.Context()
	for _, sources := range [][]string{{"s1"}, {"s1", "s2", "s3"}} {
		for name, tc := range sizedPlanCases() {
			name := fmt.Sprintf("%d sources, %s", len(sources), name)
			query, args := mergedSQL(sqldb.Postgres, &tc.k, tc.pos, sources, tc.mode)
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
			if tc.mode == sqlpage.Sized {
				// Each body that fits is read by its ctid.
				require.Contains(t, plan, "Tid Scan on consumer_records", "%s:\n%s", name, plan)
			}
			if tc.pos != nil {
				require.Equal(t, len(sources), strings.Count(plan, "ROW(pos_ms, id) >"), "%s:\n%s", name, plan)
			}
			t.Logf("%s:\n%s", name, plan)
		}
	}
}

// sizedPlanCase is a merged page read with the query of mode.
type sizedPlanCase struct {
	k    keyset
	pos  *mergedPosition
	mode sqlpage.Mode
}

// sizedPlanCases are mergedPlanCases, and each again with the byte budget
// of a Handler's page, read with the guarded and with the sized query:
// each must read each source's range of the index as the plain one does.
func sizedPlanCases() map[string]sizedPlanCase {
	cases := map[string]sizedPlanCase{}
	for name, tc := range mergedPlanCases() {
		cases[name] = sizedPlanCase{k: tc.k, pos: tc.pos, mode: sqlpage.Plain}
		tc.k.maxBytes = provider.DefaultMaxPageBytes
		cases[name+", guarded"] = sizedPlanCase{k: tc.k, pos: tc.pos, mode: sqlpage.Guarded}
		cases[name+", sized"] = sizedPlanCase{k: tc.k, pos: tc.pos, mode: sqlpage.Sized}
	}
	return cases
}

// fillForSearchPlans writes conversations of five sources, with users and
// assistants, so that the planners have statistics to go by.
func fillForSearchPlans(t *testing.T, s *Store) {
	t.Helper()
	ctx := t.Context()
	for src := range 5 {
		l := consumer.Lease{Source: fmt.Sprintf("s%d", src), Resource: consumer.Conversations, Owner: "p", Now: planT0, Expires: planT0.Add(time.Hour)}
		ok, err := s.AcquireLease(ctx, l)
		require.NoError(t, err)
		require.True(t, ok)
		for page := range 10 {
			var recs []consumer.Record
			for i := range 100 {
				n := page*100 + i
				id := fmt.Sprintf("c-%04d", n)
				started := planT0.Add(time.Duration(n) * time.Minute)
				recs = append(recs, consumer.Record{ID: id, Time: started.Add(time.Hour), StartedAt: started,
					JSON: json.RawMessage(fmt.Sprintf(`{"id":%q,"user":{"id":"u%d"},"assistant":{"id":"a%d"}}`, id, n%50, n%20))})
			}
			require.NoError(t, s.SavePage(ctx, consumer.PageWrite{Lease: l, Records: recs, Checkpoint: consumer.Checkpoint{Run: 1}}))
		}
	}
	_, err := s.db.ExecContext(ctx, "ANALYZE")
	require.NoError(t, err)
}

// searchPlanCases are searches and the index each source's part must read
// a range of.
func searchPlanCases() map[string]struct {
	q     ConversationSearch
	index string
} {
	after := &ConversationPosition{StartedAt: planT0.Add(300 * time.Minute), ID: "c-0300", Source: "s2"}
	return map[string]struct {
		q     ConversationSearch
		index string
	}{
		"newest":         {ConversationSearch{Limit: 50}, "consumer_records_started"},
		"deep":           {ConversationSearch{Limit: 50, After: after}, "consumer_records_started"},
		"range":          {ConversationSearch{Limit: 50, From: planT0, To: planT0.Add(time.Hour), After: after}, "consumer_records_started"},
		"user":           {ConversationSearch{Limit: 50, UserID: "u7", After: after}, "consumer_records_conv_user"},
		"assistant":      {ConversationSearch{Limit: 50, AssistantID: "a3", After: after}, "consumer_records_conv_assistant"},
		"user and range": {ConversationSearch{Limit: 50, UserID: "u7", From: planT0, To: planT0.Add(600 * time.Minute)}, "consumer_records_conv_user"},
		"deep in range":  {ConversationSearch{Limit: 50, From: planT0, To: planT0.Add(600 * time.Minute), After: after}, "consumer_records_started"},
	}
}

func TestSearchPlanSQLite(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.SQLite)
	s, err := New(t.Context(), db.DB, db.Dialect)
	require.NoError(t, err)
	fillForSearchPlans(t, s)
	sources := []string{"s1", "s2", "s3"}
	for name, tc := range searchPlanCases() {
		query, args := searchSQL(&tc.q, sources)
		plan := explainSQLite(t, db, query, args)
		require.Equal(t, len(sources), strings.Count(plan, "USING INDEX "+tc.index+" (source=?"), "%s:\n%s", name, plan)
		require.NotContains(t, plan, "SCAN consumer_records", "%s:\n%s", name, plan)
		// Each source's rows come in index order; only the merge sorts,
		// at most limit+1 rows of each.
		require.LessOrEqual(t, strings.Count(plan, "USE TEMP B-TREE"), len(sources), "%s:\n%s", name, plan)
		t.Logf("%s:\n%s", name, plan)
	}
}

func TestSearchPlanPostgres(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.Postgres)
	s, err := New(t.Context(), db.DB, db.Dialect)
	require.NoError(t, err)
	fillForSearchPlans(t, s)
	ctx := t.Context()
	sources := []string{"s1", "s2", "s3"}
	for name, tc := range searchPlanCases() {
		query, args := searchSQL(&tc.q, sources)
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
		require.Equal(t, len(sources), strings.Count(plan, "Index Scan Backward using "+tc.index+" on consumer_records"), "%s:\n%s", name, plan)
		t.Logf("%s:\n%s", name, plan)
	}
}
