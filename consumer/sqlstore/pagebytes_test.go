package sqlstore_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/pagemem"
	"github.com/aiusage/kit/provider"
)

// Bounds of what one list request of the collected views over records of
// 300 KB with limit=1000 may allocate, in multiples of the page cap
// (8 MiB): as for provider/sqlsource, the records that fit the page are
// read once and copied once (REST), and the MCP binding encodes the page
// into its answer twice (structured and as text). Reading limit+1 whole
// records allocated 1.4-2.8 GB.
const (
	restAllocCaps = 6
	mcpAllocCaps  = 24
)

// largeRecord returns record i of pagemem's large conversations.
func largeRecord(t *testing.T, i, size int) consumer.Record {
	t.Helper()
	c := pagemem.Conversation(i, size, t0)
	b, err := json.Marshal(c)
	require.NoError(t, err)
	return consumer.Record{ID: c.ID, Time: c.UpdatedAt.Time, StartedAt: c.StartedAt.Time, JSON: b}
}

// fillLarge writes records first..last-1 of size bytes to source, in
// pages of 50.
func fillLarge(t *testing.T, s *sqlstore.Store, source string, first, last, step, size int) {
	t.Helper()
	l := acquire(t, s, lease(source, consumer.Conversations, "p"))
	var recs []consumer.Record
	for i := first; i < last; i += step {
		recs = append(recs, largeRecord(t, i, size))
		if len(recs) == 50 {
			save(t, s, l, 1, recs...)
			recs = nil
		}
	}
	if len(recs) > 0 {
		save(t, s, l, 1, recs...)
	}
}

// TestViewMemoryLargeRecords proves that one list request of 1,000
// records of 300 KB allocates a small multiple of the page cap in the
// collected view of one source (REST and MCP) and in the merged view of an
// organisation's sources (REST), on both databases.
func TestViewMemoryLargeRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 330 MB of records")
	}
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			db := sqldbtest.Open(t, d)
			s := newStore(t, db)
			fillLarge(t, s, "a", 0, pagemem.Records, 1, pagemem.RecordBytes)
			fillLarge(t, s, "b", 5, pagemem.Records, 10, pagemem.RecordBytes)
			capBytes := uint64(provider.DefaultMaxPageBytes)
			check := func(what string, n uint64, page pagemem.Page, err error, caps uint64) {
				t.Helper()
				require.NoError(t, err, what)
				t.Logf("%s: limit=1000 over records of %d KB: %d records, %d MiB of records; allocated %d MiB (%.1f caps)",
					what, pagemem.RecordBytes>>10, page.Records, page.Bytes>>20, n>>20, float64(n)/float64(capBytes))
				require.True(t, page.HasMore, what)
				require.Greater(t, page.Records, 1, what)
				require.LessOrEqual(t, page.Bytes+page.Records-1, int(capBytes), "%s: the page fits the cap", what)
				require.LessOrEqual(t, n, caps*capBytes, "%s allocated %d MiB", what, n>>20)
			}
			n, page, err := pagemem.REST(s, "a", "/conversations?limit=1000")
			check("source view, REST", n, page, err, restAllocCaps)
			n, page, err = pagemem.MCP(s, "a", "list_conversations", map[string]any{"limit": 1000})
			check("source view, MCP", n, page, err, mcpAllocCaps)
			org := s.Merged(func(context.Context, string) ([]string, error) { return []string{"a", "b"}, nil })
			n, page, err = pagemem.REST(org, "org", "/conversations?limit=1000")
			check("organisation view, REST", n, page, err, restAllocCaps)
		})
	}
}

// TestViewMaxBytes checks, for the view of one source and the merged view,
// that a list with a byte budget serves the longest prefix of the list
// whose served JSON, joined by commas, fits the budget (at least one
// record), that HasMore is exact, and that a walk with any budget serves
// exactly the list without one, on both databases.
func TestViewMaxBytes(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			db := sqldbtest.Open(t, d)
			s := newStore(t, db)
			l := acquire(t, s, lease("a", consumer.Conversations, "p"))
			lb := acquire(t, s, lease("b", consumer.Conversations, "p"))
			for i := range 40 {
				size := 100 + (i*7919)%9000
				if i == 17 {
					size = 40000 // larger than every budget below
				}
				if i%3 == 0 {
					save(t, s, lb, 1, largeRecord(t, i, size))
				}
				save(t, s, l, 1, largeRecord(t, i, size+7))
			}
			org := s.Merged(func(context.Context, string) ([]string, error) { return []string{"a", "b"}, nil })
			for name, src := range map[string]provider.RawSource{"source": s, "merged": org} {
				tenant := "a"
				if name == "merged" {
					tenant = "org"
				}
				list := func(after *provider.Key, limit, budget int) provider.Page[provider.RawRecord] {
					p, err := src.ListConversationsRaw(t.Context(), provider.ConversationQuery{Tenant: tenant, After: after, Limit: limit, MaxBytes: budget})
					require.NoError(t, err)
					return p
				}
				all := list(nil, 1000, 0)
				require.False(t, all.HasMore)
				for _, limit := range []int{1, 3, 7, 1000} {
					for _, budget := range []int{1, 5000, 12000, 30000} {
						var got []provider.RawRecord
						var after *provider.Key
						for pages := 0; ; pages++ {
							require.Less(t, pages, 2*len(all.Items), "%s: the walk does not end", name)
							p := list(after, limit, budget)
							require.NotEmpty(t, p.Items)
							size := 0
							for i, r := range p.Items {
								size += len(r.JSON)
								if i > 0 {
									size++
									require.LessOrEqual(t, size, budget, "%s, limit %d, budget %d: page past the budget", name, limit, budget)
								}
							}
							got = append(got, p.Items...)
							require.Equal(t, len(got) < len(all.Items), p.HasMore, "%s, limit %d, budget %d: hasMore", name, limit, budget)
							if p.HasMore && len(p.Items) < limit {
								next := all.Items[len(got)]
								require.Greater(t, size+1+len(next.JSON), budget, "%s, limit %d, budget %d: page ended early", name, limit, budget)
							}
							if !p.HasMore {
								break
							}
							after = &p.Items[len(p.Items)-1].Key
						}
						require.Len(t, got, len(all.Items))
						for i := range got {
							require.Equal(t, all.Items[i].Key, got[i].Key, "%s, limit %d, budget %d", name, limit, budget)
							require.JSONEq(t, string(all.Items[i].JSON), string(got[i].JSON))
						}
					}
				}
			}
		})
	}
}
