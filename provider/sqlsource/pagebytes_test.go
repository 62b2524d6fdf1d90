package sqlsource

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/pagemem"
	"github.com/aiusage/kit/provider"
)

// Bounds of what one list request over records of 300 KB with limit=1000
// may allocate, in multiples of the page cap (8 MiB): the page's records
// are read once from the database driver and copied once into the page,
// whose answer is written once (REST); the MCP binding also holds the
// compacted answer, its text copy and the JSON-RPC message. Reading
// limit+1 whole records allocated 1.4-1.8 GB (some 200 caps).
const (
	restAllocCaps = 6
	mcpAllocCaps  = 24
)

// TestListMemoryLargeRecords proves that one list request for 1,000
// records of 300 KB allocates a small multiple of the page cap, through
// REST and MCP, on both databases: the source sizes the rows before it
// loads them and reads only the bodies that fit the page.
func TestListMemoryLargeRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 300 MB of records")
	}
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			db := sqldbtest.Open(t, d)
			s := newSource(t, db)
			ctx := t.Context()
			for i := 0; i < pagemem.Records; i += 50 {
				require.NoError(t, s.WriteBatch(ctx, func(w provider.Writer) error {
					for j := i; j < min(i+50, pagemem.Records); j++ {
						if err := w.UpsertConversation(ctx, "t", pagemem.Conversation(j, pagemem.RecordBytes, t0)); err != nil {
							return err
						}
					}
					return nil
				}))
			}
			capBytes := uint64(provider.DefaultMaxPageBytes)
			n, page, err := pagemem.REST(s, "t", "/conversations?limit=1000")
			require.NoError(t, err)
			t.Logf("REST: limit=1000 over %d records of %d KB: %d records, %d MiB of records; allocated %d MiB (%.1f caps)",
				pagemem.Records, pagemem.RecordBytes>>10, page.Records, page.Bytes>>20, n>>20, float64(n)/float64(capBytes))
			require.True(t, page.HasMore)
			require.LessOrEqual(t, page.Bytes+page.Records-1, int(capBytes), "the page fits the cap")
			require.Greater(t, page.Bytes+page.Records+page.Bytes/page.Records, int(capBytes), "the page holds what fits the cap")
			require.LessOrEqual(t, n, restAllocCaps*capBytes, "REST allocated %d MiB", n>>20)

			n, page, err = pagemem.MCP(s, "t", "list_conversations", map[string]any{"limit": 1000})
			require.NoError(t, err)
			t.Logf("MCP: list_conversations limit=1000: %d records; allocated %d MiB (%.1f caps)", page.Records, n>>20, float64(n)/float64(capBytes))
			require.True(t, page.HasMore)
			require.Greater(t, page.Records, 1)
			require.LessOrEqual(t, n, mcpAllocCaps*capBytes, "MCP allocated %d MiB", n>>20)
		})
	}
}

// TestListMaxBytes checks that a list with a byte budget serves the
// longest prefix of the list whose records' JSON, joined by commas, fits
// the budget (at least one record), that HasMore is exact, and that a walk
// with any budget lists every record once, in order, on both databases;
// a record larger than the budget is served alone.
func TestListMaxBytes(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			db := sqldbtest.Open(t, d)
			s := newSource(t, db)
			ctx := t.Context()
			const n = 40
			var all []string
			for i := range n {
				// Sizes from a few hundred bytes to 9 KB; record 17 is
				// larger than every budget below.
				size := 100 + (i*7919)%9000
				if i == 17 {
					size = 40000
				}
				c := pagemem.Conversation(i, size, t0)
				require.NoError(t, s.UpsertConversation(ctx, "t", c))
				all = append(all, c.ID)
			}
			// Another tenant's records never count.
			require.NoError(t, s.UpsertConversation(ctx, "u", pagemem.Conversation(0, 50000, t0)))
			for _, limit := range []int{1, 3, 7, 1000} {
				for _, budget := range []int{1, 5000, 12000, 30000} {
					var got []string
					var after *provider.Key
					for pages := 0; ; pages++ {
						require.Less(t, pages, 2*n, "the walk does not end")
						q := provider.ConversationQuery{Tenant: "t", After: after, Limit: limit, MaxBytes: budget}
						p, err := s.ListConversationsRaw(ctx, q)
						require.NoError(t, err)
						require.NotEmpty(t, p.Items)
						size := 0
						for i, r := range p.Items {
							size += len(r.JSON)
							if i > 0 {
								size++
								require.LessOrEqual(t, size, budget, "limit %d, budget %d: page past the budget", limit, budget)
							}
							got = append(got, r.Key.ID)
						}
						rest := n - len(got)
						require.Equal(t, rest > 0, p.HasMore, "limit %d, budget %d: hasMore", limit, budget)
						if p.HasMore && len(p.Items) < limit {
							// The next record would not have fitted.
							var next int
							require.NoError(t, db.QueryRowContext(ctx, "SELECT octet_length(body) FROM conversations WHERE tenant = 't' AND id = $1", all[len(got)]).Scan(&next))
							require.Greater(t, size+1+next, budget, "limit %d, budget %d: page ended early", limit, budget)
						}
						if !p.HasMore {
							break
						}
						after = &p.Items[len(p.Items)-1].Key
						typed, err := s.ListConversations(ctx, q)
						require.NoError(t, err)
						require.Len(t, typed.Items, len(p.Items))
					}
					require.Equal(t, all, got, "limit %d, budget %d", limit, budget)
				}
			}
		})
	}
}

// TestSizedQueryPlans checks that both queries of a page with a byte
// budget keep the plan of the plain keyset query (one index range, no
// sort), and that the sized one reads each body that fits by its row
// address.
func TestSizedQueryPlans(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			db := sqldbtest.Open(t, d)
			s := newSource(t, db)
			fillForPlans(t, s)
			for _, tc := range planCases() {
				k := *tc.k
				k.maxBytes, k.dialect = provider.DefaultMaxPageBytes, db.Dialect
				for _, q := range []func(bool) (string, []any){k.query, k.sizedQuery} {
					for _, withRev := range []bool{false, true} {
						query, args := q(withRev)
						sized := strings.HasPrefix(query, "WITH")
						if d == "sqlite" {
							plan := explainSQLite(t, db, query, args)
							require.Contains(t, plan, "SEARCH "+k.table+" USING INDEX "+tc.index+" (", "%s:\n%s", tc.name, plan)
							require.Equal(t, sized, strings.Contains(plan, "USING INTEGER PRIMARY KEY (rowid=?)"), "%s:\n%s", tc.name, plan)
							require.NotContains(t, plan, "TEMP B-TREE", "%s:\n%s", tc.name, plan)
							continue
						}
						plan := explainIndexOnly(t, db, query, args)
						require.Contains(t, plan, "Index Scan using "+tc.index+" on "+k.table, "%s:\n%s", tc.name, plan)
						require.Equal(t, sized, strings.Contains(plan, "Tid Scan"), "%s:\n%s", tc.name, plan)
						require.NotContains(t, plan, "Sort", "%s:\n%s", tc.name, plan)
					}
				}
			}
		})
	}
}
