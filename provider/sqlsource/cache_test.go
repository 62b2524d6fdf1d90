package sqlsource

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// TestPageCacheInvalidation has two Sources on one database, as two
// processes would: pages one caches are never served after the other
// writes.
func TestPageCacheInvalidation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		reader, writer := newSource(t, db), newSource(t, db)
		require.IsType(t, &cachedPages{}, reader.pages)
		for i := range 5 {
			require.NoError(t, writer.UpsertConversation(ctx, "t1", spec.Conversation{ID: fmt.Sprint("c", i), StartedAt: spec.NewTime(t0), UpdatedAt: spec.NewTime(t0), Model: "v1"}))
			require.NoError(t, writer.UpsertConversation(ctx, "t2", spec.Conversation{ID: fmt.Sprint("c", i), StartedAt: spec.NewTime(t0), UpdatedAt: spec.NewTime(t0)}))
		}
		q := provider.ConversationQuery{Tenant: "t1", Limit: 3}
		list := func() provider.Page[provider.RawRecord] {
			p, err := reader.ListConversationsRaw(ctx, q)
			require.NoError(t, err)
			return p
		}
		cached := func(a, b provider.Page[provider.RawRecord]) bool { return &a.Items[0].JSON[0] == &b.Items[0].JSON[0] }

		p1 := list()
		p2 := list()
		require.True(t, cached(p1, p2), "the second read is served from the cache")
		require.Equal(t, p1, p2)
		p2.Items[0] = provider.RawRecord{} // the caller's slice
		require.Equal(t, p1, list())

		// Writes to another tenant, or to other resources, leave the page.
		require.NoError(t, writer.UpsertConversation(ctx, "t2", spec.Conversation{ID: "c9", StartedAt: spec.NewTime(t0)}))
		require.NoError(t, writer.UpsertAssistant(ctx, "t1", spec.Assistant{ID: "a", CreatedAt: spec.NewTime(t0)}))
		require.NoError(t, writer.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "r", At: t0}))
		require.True(t, cached(p1, list()))

		// Every kind of write to the tenant's conversations is seen at once.
		require.NoError(t, writer.UpsertConversation(ctx, "t1", spec.Conversation{ID: "c0", StartedAt: spec.NewTime(t0), UpdatedAt: spec.NewTime(t0), Model: "v2"}))
		p3 := list()
		require.False(t, cached(p1, p3))
		require.Contains(t, string(p3.Items[0].JSON), `"v2"`)
		require.True(t, cached(p3, list()))

		require.NoError(t, writer.DeleteConversation(ctx, "t1", "c1", t0))
		// The tombstone's updatedAt moved past t0: c1 left the first page
		// and is listed last.
		for _, r := range list().Items {
			require.NotEqual(t, "c1", r.Key.ID)
		}
		p4, err := reader.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "t1", Limit: 10})
		require.NoError(t, err)
		require.Equal(t, "c1", p4.Items[len(p4.Items)-1].Key.ID)
		require.Contains(t, string(p4.Items[len(p4.Items)-1].JSON), `"deletedAt"`)

		require.NoError(t, writer.WriteBatch(ctx, func(w provider.Writer) error {
			return w.UpsertConversation(ctx, "t1", spec.Conversation{ID: "a-first", StartedAt: spec.NewTime(t0), UpdatedAt: spec.NewTime(t0)})
		}))
		require.Equal(t, "a-first", list().Items[0].Key.ID)

		// A failed write changes nothing, the revision included.
		p5 := list()
		require.ErrorIs(t, writer.DeleteConversation(ctx, "t1", "nope", t0), provider.ErrNotFound)
		require.Error(t, writer.WriteBatch(ctx, func(w provider.Writer) error {
			if err := w.UpsertConversation(ctx, "t1", spec.Conversation{ID: "b", StartedAt: spec.NewTime(t0)}); err != nil {
				return err
			}
			return fmt.Errorf("changed my mind")
		}))
		require.True(t, cached(p5, list()))

		// Assistants and events too.
		as, err := reader.ListAssistantsRaw(ctx, provider.AssistantQuery{Tenant: "t1", Limit: 10})
		require.NoError(t, err)
		require.Len(t, as.Items, 1)
		require.NoError(t, writer.UpsertAssistant(ctx, "t1", spec.Assistant{ID: "b", CreatedAt: spec.NewTime(t0)}))
		as, err = reader.ListAssistantsRaw(ctx, provider.AssistantQuery{Tenant: "t1", Limit: 10})
		require.NoError(t, err)
		require.Len(t, as.Items, 2)
		es, err := reader.ListEvents(ctx, provider.EventQuery{Tenant: "t1", Limit: 10})
		require.NoError(t, err)
		require.Empty(t, es.Items)
		require.NoError(t, writer.AppendEvent(ctx, "t1", spec.Event{ID: "e", OccurredAt: spec.NewTime(t0)}))
		es, err = reader.ListEvents(ctx, provider.EventQuery{Tenant: "t1", Limit: 10})
		require.NoError(t, err)
		require.Len(t, es.Items, 1)
	})
}

func TestPageCacheBudget(t *testing.T) {
	t.Parallel()
	c := newPageCache(64 << 10)
	page := func(n int) provider.Page[provider.RawRecord] {
		var p provider.Page[provider.RawRecord]
		for i := range n {
			p.Items = append(p.Items, provider.RawRecord{Key: provider.Key{Time: t0, ID: fmt.Sprint(i)}, JSON: make([]byte, 1000)})
		}
		return p
	}
	for i := range 100 {
		c.put(fmt.Sprint("k", i), 1, page(5))
		require.LessOrEqual(t, c.size, c.max)
	}
	require.Len(t, c.pages, c.lru.Len())
	_, ok := c.get("k0", 1)
	require.False(t, ok, "evicted")
	_, ok = c.get("k99", 1)
	require.True(t, ok)
	_, ok = c.get("k99", 2)
	require.False(t, ok, "another revision")
	_, ok = c.get("k99", 1)
	require.False(t, ok, "dropped at the revision change")
	c.put("big", 1, page(20)) // over a quarter of the budget
	_, ok = c.get("big", 1)
	require.False(t, ok)

	require.Equal(t, cacheKey("q", []any{"ab", int64(1)}), cacheKey("q", []any{"ab", int64(1)}))
	require.NotEqual(t, cacheKey("q", []any{"a", "b"}), cacheKey("q", []any{"a\x00", "b"}))
	require.NotEqual(t, cacheKey("q", []any{"ab", ""}), cacheKey("q", []any{"a", "b"}))
}

// TestWithoutPageCache walks with the cache off.
func TestWithoutPageCache(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s, err := New(ctx, db.DB, db.Dialect, WithPageCache(0), WithNow(func() time.Time { return clock }))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		require.Same(t, s, s.pages)
		want := conversationFixture(t, s, "t1")
		all := sortedByKey(want, provider.ConversationKey, nil)
		for _, limit := range []int{1, 4, 100} {
			got := walk(t, limit, func(after *provider.Key, limit int) (provider.Page[spec.Conversation], error) {
				return s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t1", After: after, Limit: limit})
			}, provider.ConversationKey)
			require.Equal(t, all, got)
		}
	})
	_, err := New(t.Context(), sqldbtest.Open(t, sqldb.SQLite).DB, SQLite, WithPageCache(-1))
	require.ErrorContains(t, err, "WithPageCache(-1)")
}

// TestConcurrentReadWrite has writers and readers share a Source: every
// page read after the writers finish shows every write.
func TestConcurrentReadWrite(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newSource(t, db)
		const writers, each = 4, 15
		var wg sync.WaitGroup
		errs := make(chan error, writers*each+4*each)
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					at := t0.Add(time.Duration(i) * time.Millisecond)
					id := fmt.Sprintf("w%d-%02d", w, i)
					errs <- s.UpsertConversation(ctx, "t", spec.Conversation{ID: id, StartedAt: spec.NewTime(at), UpdatedAt: spec.NewTime(at)})
				}
			})
		}
		for range 4 {
			wg.Go(func() {
				for range each {
					_, err := s.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "t", Limit: 7})
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		got := walk(t, 7, func(after *provider.Key, limit int) (provider.Page[provider.RawRecord], error) {
			return s.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "t", After: after, Limit: limit})
		}, rawKey)
		require.Len(t, got, writers*each)
	})
}

// checkCacheEquivalence runs the program ops on two Sources over db, one
// with the page cache and one without, as two processes would: writes
// through either, and list reads through both, whose pages must be the
// same, byte for byte, every time; each read through the cached Source is
// made twice, so that the second may be served from the cache.
func checkCacheEquivalence(t *testing.T, db *sqldb.DB, ops []byte) {
	ctx := t.Context()
	cached := newSource(t, db)
	plain, err := New(ctx, db.DB, db.Dialect, WithPageCache(0), WithNow(func() time.Time { return clock }))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, plain.Close()) })
	sources := [2]*Source{cached, plain}
	for i := 0; i+1 < len(ops); i += 2 {
		op, arg := ops[i], ops[i+1]
		w := sources[op>>7]
		tenant := [2]string{"t1", "t2"}[arg>>7]
		id := fmt.Sprint("r", arg%8)
		at := spec.NewTime(t0.Add(time.Duration(arg%5) * time.Second))
		switch op % 6 {
		case 0:
			require.NoError(t, w.UpsertConversation(ctx, tenant, spec.Conversation{ID: id, StartedAt: at, UpdatedAt: at, Model: fmt.Sprint("m", op)}))
		case 1:
			if err := w.DeleteConversation(ctx, tenant, id, at.Time); err != nil {
				require.ErrorIs(t, err, provider.ErrNotFound)
			}
		case 2:
			require.NoError(t, w.UpsertAssistant(ctx, tenant, spec.Assistant{ID: id, CreatedAt: at, UpdatedAt: at, Name: fmt.Sprint("a", op)}))
		case 3:
			if err := w.AppendEvent(ctx, tenant, spec.Event{ID: fmt.Sprint(id, "-", op), OccurredAt: at}); err != nil {
				require.ErrorIs(t, err, provider.ErrConflict)
			}
		default:
			limit, maxBytes := 1+int(arg%4), [3]int{0, 150, 400}[op%3]
			var after *provider.Key
			for range 3 { // three pages of the list
				list := func(s *Source) provider.Page[provider.RawRecord] {
					var p provider.Page[provider.RawRecord]
					var err error
					switch arg % 3 {
					case 0:
						p, err = s.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: tenant, After: after, Limit: limit, MaxBytes: maxBytes})
					case 1:
						p, err = s.ListAssistantsRaw(ctx, provider.AssistantQuery{Tenant: tenant, After: after, Limit: limit, MaxBytes: maxBytes})
					default:
						p, err = s.ListEventsRaw(ctx, provider.EventQuery{Tenant: tenant, After: after, Limit: limit, MaxBytes: maxBytes})
					}
					require.NoError(t, err)
					return p
				}
				want := list(plain)
				for range 2 {
					got := list(cached)
					require.Equal(t, want.HasMore, got.HasMore, "op %d", i/2)
					require.Len(t, got.Items, len(want.Items), "op %d", i/2)
					for j := range want.Items {
						require.Equal(t, want.Items[j].Key, got.Items[j].Key, "op %d", i/2)
						require.Equal(t, string(want.Items[j].JSON), string(got.Items[j].JSON), "op %d", i/2)
					}
				}
				if !want.HasMore {
					break
				}
				after = &want.Items[len(want.Items)-1].Key
			}
		}
	}
}

// TestPageCacheEquivalence checks, on both databases, that a Source with
// the page cache serves the pages one without it serves, through a long
// random sequence of writes (from either Source) and reads.
func TestPageCacheEquivalence(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ops := make([]byte, 600)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range ops {
			ops[i] = byte(r.UintN(256))
		}
		checkCacheEquivalence(t, db, ops)
	})
}

// FuzzPageCache is TestPageCacheEquivalence on SQLite, its program given
// by the fuzzer.
func FuzzPageCache(f *testing.F) {
	f.Add([]byte{0, 1, 4, 0, 0, 2, 5, 3, 1, 1, 4, 3})
	f.Add([]byte{2, 0, 2, 9, 130, 1, 5, 1, 3, 2, 3, 130, 4, 2})
	f.Add([]byte{0, 0, 0, 1, 0, 2, 0, 3, 4, 0, 128, 1, 4, 0, 4, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 200 {
			t.Skip("long programs are TestPageCacheEquivalence's")
		}
		checkCacheEquivalence(t, sqldbtest.Open(t, sqldb.SQLite), ops)
	})
}
