package sqlstore_test

import (
	"encoding/json"
	"fmt"
	"slices"
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

func convQuery(source string, limit int) provider.ConversationQuery {
	return provider.ConversationQuery{Tenant: source, Limit: limit}
}

func eventQuery(source string, limit int) provider.EventQuery {
	return provider.EventQuery{Tenant: source, Limit: limit}
}

func keysOf(items []provider.RawRecord) []provider.Key {
	out := make([]provider.Key, len(items))
	for i, r := range items {
		out[i] = r.Key
	}
	return out
}

func TestViewKeysetPages(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		l := acquire(t, s, lease("src", consumer.Conversations, "p1"))
		ids := []string{"B", "a", "é", "b", "A", "0", "aa", "Z", "~", "ß"}
		var recs []consumer.Record
		var want []provider.Key
		for i, id := range ids {
			for j := range 3 { // three records per id, two sharing a time
				rid := fmt.Sprintf("%s-%d", id, j)
				upd := at(time.Duration(i%3+j/2) * time.Second)
				recs = append(recs, conv(rid, at(0), upd, ""))
				want = append(want, provider.Key{Time: upd, ID: rid})
			}
		}
		save(t, s, l, 1, recs...)
		slices.SortFunc(want, func(a, b provider.Key) int {
			if a.Less(b) {
				return -1
			}
			return 1
		})
		for limit := 1; limit <= len(want)+1; limit++ {
			var got []provider.Key
			q := convQuery("src", limit)
			for pages := 0; ; pages++ {
				require.Less(t, pages, len(want)+1)
				p, err := s.ListConversationsRaw(ctx, q)
				require.NoError(t, err)
				require.LessOrEqual(t, len(p.Items), limit)
				got = append(got, keysOf(p.Items)...)
				if !p.HasMore {
					break
				}
				last := p.Items[len(p.Items)-1].Key
				q.After = &last
			}
			require.Equal(t, want, got, "limit %d", limit)
		}

		// The typed list decodes the same records.
		p, err := s.ListConversations(ctx, convQuery("src", 5))
		require.NoError(t, err)
		require.True(t, p.HasMore)
		require.Len(t, p.Items, 5)
		for i, c := range p.Items {
			require.Equal(t, want[i], provider.ConversationKey(&c))
		}

		// Another source, an unknown one, a bad limit.
		p2, err := s.ListConversationsRaw(ctx, convQuery("other", 10))
		require.NoError(t, err)
		require.Empty(t, p2.Items)
		require.False(t, p2.HasMore)
		_, err = s.ListConversationsRaw(ctx, convQuery("src", 0))
		require.ErrorIs(t, err, provider.ErrInvalid)
		_, err = s.ListEvents(ctx, provider.EventQuery{Tenant: "src", Limit: 1001})
		require.ErrorIs(t, err, provider.ErrInvalid)
	})
}

func TestViewFilters(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		lc := acquire(t, s, lease("src", consumer.Conversations, "p1"))
		save(t, s, lc, 1,
			conv("c1", at(1*time.Second), at(10*time.Second), ""),
			conv("c2", at(2*time.Second), at(20*time.Second), ""),
			conv("c3", at(3*time.Second), at(20*time.Second), ""),
			conv("c4", at(4*time.Second), at(30*time.Second), ""),
		)
		convIDs := func(q provider.ConversationQuery) []string {
			t.Helper()
			q.Tenant, q.Limit = "src", 100
			p, err := s.ListConversations(ctx, q)
			require.NoError(t, err)
			var out []string
			for _, c := range p.Items {
				out = append(out, c.ID)
			}
			return out
		}
		require.Equal(t, []string{"c2", "c3", "c4"}, convIDs(provider.ConversationQuery{UpdatedSince: at(20 * time.Second)}), "inclusive")
		require.Equal(t, []string{"c2", "c3", "c4"}, convIDs(provider.ConversationQuery{UpdatedSince: at(20*time.Second - time.Microsecond)}))
		require.Equal(t, []string{"c4"}, convIDs(provider.ConversationQuery{UpdatedSince: at(20*time.Second + time.Microsecond)}))
		require.Equal(t, []string{"c3", "c4"}, convIDs(provider.ConversationQuery{StartedAfter: at(2 * time.Second)}), "exclusive")
		require.Equal(t, []string{"c3", "c4"}, convIDs(provider.ConversationQuery{StartedAfter: at(2*time.Second + time.Microsecond)}))
		require.Equal(t, []string{"c3", "c4"}, convIDs(provider.ConversationQuery{
			UpdatedSince: at(20 * time.Second), StartedAfter: at(time.Second),
			After: &provider.Key{Time: at(20 * time.Second), ID: "c2"},
		}))
		// A position before the filter's bound: the bound wins.
		require.Equal(t, []string{"c2", "c3", "c4"}, convIDs(provider.ConversationQuery{
			UpdatedSince: at(20 * time.Second), After: &provider.Key{Time: at(10 * time.Second), ID: "c1"},
		}))

		le := acquire(t, s, lease("src", consumer.Events, "p1"))
		save(t, s, le, 1,
			eventRec("e1", at(time.Second), spec.CategoryAccess),
			eventRec("e2", at(2*time.Second), spec.CategoryPolicy),
			eventRec("e3", at(2*time.Second), spec.CategoryAccess),
			eventRec("e4", at(3*time.Second), "Unknown"),
		)
		eventIDs := func(q provider.EventQuery) []string {
			t.Helper()
			q.Tenant, q.Limit = "src", 100
			p, err := s.ListEvents(ctx, q)
			require.NoError(t, err)
			var out []string
			for _, e := range p.Items {
				out = append(out, e.ID)
			}
			return out
		}
		require.Equal(t, []string{"e4"}, eventIDs(provider.EventQuery{OccurredAfter: at(2 * time.Second)}), "exclusive")
		require.Equal(t, []string{"e2", "e3", "e4"}, eventIDs(provider.EventQuery{OccurredAfter: at(2*time.Second - time.Microsecond)}))
		require.Equal(t, []string{"e1", "e3"}, eventIDs(provider.EventQuery{Category: spec.CategoryAccess}))
		require.Equal(t, []string{"e3"}, eventIDs(provider.EventQuery{Category: spec.CategoryAccess, OccurredAfter: at(time.Second)}))
		require.Equal(t, []string{"e4"}, eventIDs(provider.EventQuery{Category: "Unknown"}))

		la := acquire(t, s, lease("src", consumer.Assistants, "p1"))
		save(t, s, la, 1, assistantRec("a1", at(time.Second)), assistantRec("a2", at(2*time.Second)))
		p, err := s.ListAssistants(ctx, provider.AssistantQuery{Tenant: "src", Limit: 10, UpdatedSince: at(2 * time.Second)})
		require.NoError(t, err)
		require.Len(t, p.Items, 1)
		require.Equal(t, "a2", p.Items[0].ID)
	})
}

func TestViewMissingAndTombstones(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		lc := acquire(t, s, lease("src", consumer.Conversations, "p1"))
		started := at(time.Second + 5*time.Millisecond)
		c1 := conv("c1", started, at(10*time.Second), "hello")
		gone := tombstoneRec("c2", at(0), at(5*time.Second))
		c3 := conv("c3", at(0), at(20*time.Second), "")
		save(t, s, lc, 1, c1, gone, c3)
		save(t, s, lc, 2, c3)
		missingAt := time.Date(2026, 3, 2, 4, 5, 6, 789_000_000, time.UTC)
		require.NoError(t, s.EndRun(ctx, consumer.RunEnd{Lease: lc, At: missingAt, Sweep: true, Checkpoint: consumer.Checkpoint{Run: 2}}))

		p, err := s.ListConversationsRaw(ctx, convQuery("src", 10))
		require.NoError(t, err)
		require.Equal(t, []provider.Key{
			{Time: at(5 * time.Second), ID: "c2"}, // already a tombstone: unchanged
			{Time: at(20 * time.Second), ID: "c3"},
			{Time: missingAt, ID: "c1"},
		}, keysOf(p.Items))
		require.Equal(t, string(gone.JSON), string(p.Items[0].JSON))
		want := `{"id":"c1","conversationId":"thread-c1","startedAt":"2026-03-01T00:00:01.005Z",` +
			`"updatedAt":"2026-03-02T04:05:06.789Z","deletedAt":"2026-03-02T04:05:06.789Z"}`
		require.Equal(t, want, string(p.Items[2].JSON))

		raw, err := s.GetConversationRaw(ctx, "src", "c1")
		require.NoError(t, err)
		require.Equal(t, want, string(raw))
		c, err := s.GetConversation(ctx, "src", "c1")
		require.NoError(t, err)
		require.True(t, c.Deleted())
		require.Equal(t, missingAt, c.UpdatedAt.Time)
		require.Empty(t, c.Metadata)
		raw, err = s.GetConversationRaw(ctx, "src", "c3")
		require.NoError(t, err)
		require.Equal(t, string(c3.JSON), string(raw), "served as received")

		// Filtering sees the tombstone at its Missing time.
		p, err = s.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "src", Limit: 10, UpdatedSince: at(time.Hour)})
		require.NoError(t, err)
		require.Equal(t, []provider.Key{{Time: missingAt, ID: "c1"}}, keysOf(p.Items))

		// Seen again in the same version: it does not move back before its
		// tombstone (a reader polling with updatedSince saw it there), and
		// is served as received but for updatedAt, its position.
		save(t, s, lc, 3, c1)
		live := strings.Replace(string(c1.JSON), `"updatedAt":"2026-03-01T00:00:10.000Z"`, `"updatedAt":"2026-03-02T04:05:06.789Z"`, 1)
		require.NotEqual(t, string(c1.JSON), live)
		raw, err = s.GetConversationRaw(ctx, "src", "c1")
		require.NoError(t, err)
		require.Equal(t, live, string(raw))
		p, err = s.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "src", Limit: 10, UpdatedSince: missingAt})
		require.NoError(t, err)
		require.Equal(t, []provider.Key{{Time: missingAt, ID: "c1"}}, keysOf(p.Items), "found by a reader polling since the tombstone")
		require.Equal(t, live, string(p.Items[0].JSON))
		c, err = s.GetConversation(ctx, "src", "c1")
		require.NoError(t, err)
		require.False(t, c.Deleted())
		require.Equal(t, missingAt, c.UpdatedAt.Time)
		require.JSONEq(t, `{"note":"hello"}`, string(c.Metadata))
		// Export writes it as received, at its own Time.
		require.Equal(t, []string{string(c1.JSON), string(c3.JSON)}, exported(t, s, "src", consumer.Conversations, false))

		// A later version older than the position keeps it; a newer one
		// takes its own.
		c1b := conv("c1", started, at(time.Hour), "later")
		save(t, s, lc, 4, c1b)
		raw, err = s.GetConversationRaw(ctx, "src", "c1")
		require.NoError(t, err)
		require.JSONEq(t, strings.Replace(string(c1b.JSON), `"2026-03-01T01:00:00.000Z"`, `"2026-03-02T04:05:06.789Z"`, 1), string(raw))
		c1c := conv("c1", started, missingAt.Add(time.Millisecond), "newest")
		save(t, s, lc, 5, c1c)
		p, err = s.ListConversationsRaw(ctx, convQuery("src", 10))
		require.NoError(t, err)
		require.Equal(t, []provider.Key{
			{Time: at(5 * time.Second), ID: "c2"}, {Time: at(20 * time.Second), ID: "c3"}, {Time: missingAt.Add(time.Millisecond), ID: "c1"},
		}, keysOf(p.Items))
		require.Equal(t, string(c1c.JSON), string(p.Items[2].JSON))

		// Assistants and events marked Missing are left out.
		la := acquire(t, s, lease("src", consumer.Assistants, "p1"))
		save(t, s, la, 1, assistantRec("a1", at(time.Second)), assistantRec("a2", at(2*time.Second)))
		save(t, s, la, 2, assistantRec("a2", at(2*time.Second)))
		require.NoError(t, s.EndRun(ctx, consumer.RunEnd{Lease: la, At: missingAt, Sweep: true, Checkpoint: consumer.Checkpoint{Run: 2}}))
		pa, err := s.ListAssistantsRaw(ctx, provider.AssistantQuery{Tenant: "src", Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{"a2"}, idsOf(pa.Items))
		_, err = s.GetAssistant(ctx, "src", "a1")
		require.ErrorIs(t, err, provider.ErrNotFound)
		a, err := s.GetAssistant(ctx, "src", "a2")
		require.NoError(t, err)
		require.Equal(t, "A a2", a.Name)
		rawA, err := s.GetAssistantRaw(ctx, "src", "a2")
		require.NoError(t, err)
		require.Equal(t, string(assistantRec("a2", at(2*time.Second)).JSON), string(rawA))

		le := acquire(t, s, lease("src", consumer.Events, "p1"))
		save(t, s, le, 1, eventRec("e1", at(time.Second), "Access"), eventRec("e2", at(time.Second), "Access"))
		save(t, s, le, 2, eventRec("e2", at(time.Second), "Access"))
		require.NoError(t, s.EndRun(ctx, consumer.RunEnd{Lease: le, At: missingAt, Sweep: true, Checkpoint: consumer.Checkpoint{Run: 2}}))
		pe, err := s.ListEventsRaw(ctx, eventQuery("src", 10))
		require.NoError(t, err)
		require.Equal(t, []string{"e2"}, idsOf(pe.Items))

		// Unknown ids and sources.
		for _, get := range []func(tenant, id string) error{
			func(tenant, id string) error { _, err := s.GetConversation(ctx, tenant, id); return err },
			func(tenant, id string) error { _, err := s.GetConversationRaw(ctx, tenant, id); return err },
			func(tenant, id string) error { _, err := s.GetAssistant(ctx, tenant, id); return err },
			func(tenant, id string) error { _, err := s.GetAssistantRaw(ctx, tenant, id); return err },
		} {
			require.ErrorIs(t, get("src", "nope"), provider.ErrNotFound)
			require.ErrorIs(t, get("other", "c1"), provider.ErrNotFound)
			require.ErrorIs(t, get("other", "a2"), provider.ErrNotFound)
		}
		_, err = s.GetAssistant(ctx, "src", "c1")
		require.ErrorIs(t, err, provider.ErrNotFound, "a conversation is not an assistant")
	})
}

func idsOf(items []provider.RawRecord) []string {
	out := make([]string, len(items))
	for i, r := range items {
		out[i] = r.Key.ID
		var v struct{ ID string }
		if err := json.Unmarshal(r.JSON, &v); err != nil || v.ID != r.Key.ID {
			panic(fmt.Sprintf("record %q: JSON id %q (%v)", r.Key.ID, v.ID, err))
		}
	}
	return out
}
