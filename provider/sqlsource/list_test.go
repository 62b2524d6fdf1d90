package sqlsource

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Ids that differ only in case or byte order: byte order is
// "A" < "B" < "Z" < "_" < "a" < "aa" < "b" < "~" < "é" (0xC3 0xA9).
var oddIDs = []string{"a", "B", "_", "é", "A", "aa", "Z", "~", "b", "e\u0301", "a b"}

// t0 is the updatedAt (occurredAt) many records share.
var t0 = time.Date(2026, 2, 1, 10, 0, 0, 123_000_000, time.UTC)

// roundTrip returns v as it reads back from its JSON.
func roundTrip[T any](t testing.TB, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out T
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func ptr[T any](v T) *T { return &v }

// conversationFixture writes conversations of tenant into s and returns them
// as they must read back, by id: many share t0 exactly, some have no
// updatedAt (the clock's), some are tombstones.
func conversationFixture(t *testing.T, s *Source, tenant string) map[string]spec.Conversation {
	t.Helper()
	ctx := t.Context()
	want := map[string]spec.Conversation{}
	var ids []string
	ids = append(ids, oddIDs...)
	for i := range 30 {
		ids = append(ids, fmt.Sprintf("c-%02d", i))
	}
	for i, id := range ids {
		updated := t0
		switch i % 4 {
		case 1:
			updated = t0.Add(time.Duration(i%3-1) * time.Millisecond) // t0-1ms, t0, t0+1ms
		case 2:
			updated = t0.Add(time.Duration(i) * time.Minute)
		}
		c := spec.Conversation{
			ID:             id,
			ConversationID: "thread-" + id,
			// startedAt: several share s0 = t0 - 1h exactly; sub-millisecond
			// parts are dropped.
			StartedAt: spec.Time{Time: t0.Add(-time.Hour + time.Duration(i%3)*time.Millisecond + 700*time.Microsecond)},
			UpdatedAt: spec.Time{Time: updated.Add(400 * time.Microsecond)},
			User:      &spec.User{ID: "u-" + id, Email: id + "@example.com", Department: "eng", Groups: []string{"g1"}},
			Model:     "m<1>&",
			Parameters: &spec.Parameters{Temperature: ptr(0.7), Extra: map[string]json.RawMessage{
				"seed": json.RawMessage(`42`), "stop": json.RawMessage(`["\n"]`),
			}},
			SystemPrompt: "be <brief> & kind",
			Messages: []spec.Message{
				{ID: "m1", Role: spec.RoleUser, Content: "hello é ✓", CreatedAt: spec.Time{Time: t0.Add(-time.Hour).In(time.FixedZone("X", 3600))}},
				{ID: "m2", Role: spec.RoleAssistant, Content: "hi"},
			},
			Tools:       []spec.Tool{{ID: "t1", Name: "search", Type: "function"}},
			Attachments: []spec.Attachment{{ID: "f1", Kind: spec.AttachmentUploaded, Filename: "a.pdf"}},
			Usage:       &spec.TokenUsage{InputTokens: int64(i), OutputTokens: 2, TotalTokens: int64(i) + 2, Cost: 0.1 * float64(i)},
			Status:      "ok",
			Metadata:    json.RawMessage(`{ "k" : [1, 2.50, "x"] }`),
		}
		if i%7 == 3 {
			c.UpdatedAt = spec.Time{} // becomes the clock's time
		}
		require.NoError(t, s.UpsertConversation(ctx, tenant, c))
		if c.UpdatedAt.IsZero() {
			c.UpdatedAt = spec.NewTime(clock)
		}
		want[id] = roundTrip(t, c)
	}
	// Tombstones, one of them deleted at t0 (among the ties).
	for i, id := range []string{"é", "c-05", "c-17"} {
		at := t0.Add(time.Duration(i) * 90 * time.Minute)
		require.NoError(t, s.DeleteConversation(ctx, tenant, id, at))
		want[id] = roundTrip(t, provider.TombstoneOf(want[id], at))
	}
	return want
}

// walk lists every page with the given limit, checking the page contract,
// and returns the records in the order served.
func walk[T any](t *testing.T, limit int, list func(after *provider.Key, limit int) (provider.Page[T], error), key func(*T) provider.Key) []T {
	t.Helper()
	var (
		all   []T
		after *provider.Key
	)
	seen := map[string]bool{}
	for range 10_000 {
		p, err := list(after, limit)
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Items), limit)
		for i := range p.Items {
			k := key(&p.Items[i])
			require.False(t, seen[k.ID], "limit %d: %q served twice", limit, k.ID)
			seen[k.ID] = true
			if after != nil {
				require.True(t, after.Less(k), "limit %d: %v served after %v", limit, k, *after)
			}
			after = &k
		}
		all = append(all, p.Items...)
		if !p.HasMore {
			return all
		}
		require.Len(t, p.Items, limit, "hasMore on a short page")
	}
	t.Fatalf("limit %d: no end", limit)
	return nil
}

// sortedByKey returns the values of m in key order.
func sortedByKey[T any](m map[string]T, key func(*T) provider.Key, keep func(*T) bool) []T {
	var out []T
	for _, v := range m {
		if keep == nil || keep(&v) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b T) int {
		ka, kb := key(&a), key(&b)
		switch {
		case ka.Less(kb):
			return -1
		case kb.Less(ka):
			return 1
		}
		return 0
	})
	return out
}

func rawKey(r *provider.RawRecord) provider.Key { return r.Key }

// checkRaw checks that raw records are json.Marshal of the structs, byte for
// byte, with their keys.
func checkRaw[T any](t *testing.T, raw []provider.RawRecord, want []T, key func(*T) provider.Key) {
	t.Helper()
	require.Len(t, raw, len(want))
	for i := range raw {
		b, err := json.Marshal(want[i])
		require.NoError(t, err)
		require.Equal(t, string(b), string(raw[i].JSON))
		require.Equal(t, key(&want[i]), raw[i].Key)
	}
}

func TestConversationWalks(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newSource(t, db)
		want := conversationFixture(t, s, "t1")
		conversationFixture(t, s, "t2") // the same ids in another tenant
		all := sortedByKey(want, provider.ConversationKey, nil)
		n := len(all)

		ties := 0
		for i := range all {
			if provider.ConversationKey(&all[i]).Time.Equal(t0) {
				ties++
			}
		}
		require.Greater(t, ties, 10, "the fixture must hold many ties")

		for limit := 1; limit <= n+1; limit++ {
			got := walk(t, limit, func(after *provider.Key, limit int) (provider.Page[spec.Conversation], error) {
				return s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t1", After: after, Limit: limit})
			}, provider.ConversationKey)
			require.Equal(t, all, got, "limit %d", limit)

			raw := walk(t, limit, func(after *provider.Key, limit int) (provider.Page[provider.RawRecord], error) {
				return s.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "t1", After: after, Limit: limit})
			}, rawKey)
			checkRaw(t, raw, all, provider.ConversationKey)
		}

		// Get returns each record, tombstones included.
		for id, c := range want {
			got, err := s.GetConversation(ctx, "t1", id)
			require.NoError(t, err)
			require.Equal(t, c, got)
		}
	})
}

func TestConversationFilters(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newSource(t, db)
		want := conversationFixture(t, s, "t1")
		s0 := t0.Add(-time.Hour) // a startedAt several records share exactly
		us := time.Microsecond
		cases := []struct {
			name                string
			since, startedAfter time.Time
		}{
			{"updatedSince at the ties", t0, time.Time{}},
			{"updatedSince 1ms after the ties", t0.Add(time.Millisecond), time.Time{}},
			{"updatedSince 1ms before the ties", t0.Add(-time.Millisecond), time.Time{}},
			{"updatedSince just before the ties", t0.Add(-500 * us), time.Time{}},
			{"updatedSince just after the ties", t0.Add(500 * us), time.Time{}},
			{"updatedSince in another zone", t0.In(time.FixedZone("Y", -5*3600)), time.Time{}},
			{"updatedSince beyond everything", clock.Add(time.Hour), time.Time{}},
			{"startedAfter a shared startedAt", time.Time{}, s0},
			{"startedAfter just before it", time.Time{}, s0.Add(-500 * us)},
			{"startedAfter just after it", time.Time{}, s0.Add(500 * us)},
			{"startedAfter 1ms later", time.Time{}, s0.Add(time.Millisecond)},
			{"both", t0, s0},
		}
		for _, tc := range cases {
			keep := func(c *spec.Conversation) bool {
				k := provider.ConversationKey(c)
				if !tc.since.IsZero() && k.Time.Before(tc.since) {
					return false
				}
				if !tc.startedAfter.IsZero() && !c.StartedAt.After(tc.startedAfter) {
					return false
				}
				return true
			}
			exp := sortedByKey(want, provider.ConversationKey, keep)
			for _, limit := range []int{1, 2, 3, 5, 8, 1000} {
				got := walk(t, limit, func(after *provider.Key, limit int) (provider.Page[spec.Conversation], error) {
					return s.ListConversations(ctx, provider.ConversationQuery{
						Tenant: "t1", After: after, Limit: limit, UpdatedSince: tc.since, StartedAfter: tc.startedAfter,
					})
				}, provider.ConversationKey)
				require.Equal(t, exp, got, "%s, limit %d", tc.name, limit)
			}
		}
		// The boundary cases above really split the data.
		count := func(since, started time.Time) int {
			p, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t1", Limit: 1000, UpdatedSince: since, StartedAfter: started})
			require.NoError(t, err)
			return len(p.Items)
		}
		require.Greater(t, count(t0, time.Time{}), count(t0.Add(time.Millisecond), time.Time{}))
		require.Equal(t, count(t0, time.Time{}), count(t0.Add(-500*us), time.Time{}))
		require.Greater(t, count(time.Time{}, s0.Add(-time.Millisecond)), count(time.Time{}, s0))
		require.Equal(t, count(time.Time{}, s0), count(time.Time{}, s0.Add(500*us)))
	})
}

func TestTombstones(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newSource(t, db)
		c := spec.Conversation{
			ID: "c1", StartedAt: spec.NewTime(t0), UpdatedAt: spec.NewTime(t0), Model: "m", SystemPrompt: "secret",
			Messages: []spec.Message{{ID: "m1", Role: "user", Content: "secret"}}, Metadata: json.RawMessage(`{"a":1}`),
			User: &spec.User{ID: "u1"},
		}
		require.NoError(t, s.UpsertConversation(ctx, "t1", c))
		require.NoError(t, s.UpsertConversation(ctx, "t1", spec.Conversation{ID: "c2", StartedAt: spec.NewTime(t0), UpdatedAt: spec.NewTime(t0.Add(time.Second))}))
		at := t0.Add(time.Hour + 1500*time.Microsecond)
		require.NoError(t, s.DeleteConversation(ctx, "t1", "c1", at))

		got, err := s.GetConversation(ctx, "t1", "c1")
		require.NoError(t, err)
		require.True(t, got.Deleted())
		require.Equal(t, spec.NewTime(at), got.DeletedAt)
		require.Equal(t, spec.NewTime(at), got.UpdatedAt)
		require.Empty(t, got.Messages)
		require.Empty(t, got.SystemPrompt)
		require.Empty(t, got.Metadata)
		require.Equal(t, "m", got.Model)
		require.Equal(t, roundTrip(t, provider.TombstoneOf(c, at)), got)

		// Listed, after c2 now.
		p, err := s.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "t1", Limit: 10})
		require.NoError(t, err)
		require.Len(t, p.Items, 2)
		require.Equal(t, "c2", p.Items[0].Key.ID)
		require.Equal(t, provider.Key{Time: spec.NewTime(at).Time, ID: "c1"}, p.Items[1].Key)
		require.NotContains(t, string(p.Items[1].JSON), "secret")
		// Caught by updatedSince at the deletion time.
		p, err = s.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "t1", Limit: 10, UpdatedSince: spec.NewTime(at).Time})
		require.NoError(t, err)
		require.Len(t, p.Items, 1)

		// Unknown ids, and other tenants' ids, are not found.
		require.ErrorIs(t, s.DeleteConversation(ctx, "t1", "nope", at), provider.ErrNotFound)
		require.ErrorIs(t, s.DeleteConversation(ctx, "t2", "c2", at), provider.ErrNotFound)
		_, err = s.GetConversation(ctx, "t2", "c2")
		require.ErrorIs(t, err, provider.ErrNotFound)

		// Upserting a conversation with deletedAt stores a tombstone.
		c3 := c
		c3.ID = "c3"
		c3.DeletedAt = spec.NewTime(at)
		c3.UpdatedAt = spec.NewTime(at.Add(time.Minute))
		require.NoError(t, s.UpsertConversation(ctx, "t1", c3))
		got, err = s.GetConversation(ctx, "t1", "c3")
		require.NoError(t, err)
		require.Empty(t, got.Messages)
		require.Equal(t, spec.NewTime(at.Add(time.Minute)), got.UpdatedAt)
		require.Equal(t, spec.NewTime(at), got.DeletedAt)
	})
}

func TestUpsertReplaces(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newSource(t, db)
		c := spec.Conversation{ID: "c1", StartedAt: spec.NewTime(t0), UpdatedAt: spec.NewTime(t0), Model: "old"}
		require.NoError(t, s.UpsertConversation(ctx, "t1", c))
		c.Model = "new"
		c.UpdatedAt = spec.Time{} // the clock's time
		require.NoError(t, s.UpsertConversation(ctx, "t1", c))
		got, err := s.GetConversation(ctx, "t1", "c1")
		require.NoError(t, err)
		require.Equal(t, "new", got.Model)
		require.Equal(t, spec.NewTime(clock), got.UpdatedAt)
		p, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t1", Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []spec.Conversation{got}, p.Items)

		a := spec.Assistant{ID: "a1", Name: "old", CreatedAt: spec.NewTime(t0)}
		require.NoError(t, s.UpsertAssistant(ctx, "t1", a))
		a.Name = "new"
		a.UpdatedAt = spec.NewTime(t0.Add(time.Minute))
		require.NoError(t, s.UpsertAssistant(ctx, "t1", a))
		ga, err := s.GetAssistant(ctx, "t1", "a1")
		require.NoError(t, err)
		require.Equal(t, roundTrip(t, a), ga)
		pa, err := s.ListAssistants(ctx, provider.AssistantQuery{Tenant: "t1", Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []spec.Assistant{ga}, pa.Items)
	})
}

func TestAssistants(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newSource(t, db)
		want := map[string]spec.Assistant{}
		for i, id := range append(slices.Clone(oddIDs), "x1", "x2", "x3", "x4", "x5") {
			a := spec.Assistant{
				ID: id, Name: "Assistant " + id, Description: "<d>", Status: "active",
				CreatedAt: spec.NewTime(t0.Add(-24 * time.Hour)), UpdatedAt: spec.NewTime(t0),
				Owner: &spec.User{ID: "u1"}, Visibility: spec.VisibilityTeam, Model: "m",
				Skills:     []spec.Skill{{ID: "s1", Name: "web", Type: spec.SkillMCP}},
				Connectors: []spec.Connector{{ID: "k1", Type: "drive", Scopes: []string{"read"}}},
				Knowledge:  []spec.KnowledgeItem{{ID: "f1", Name: "handbook.pdf", SizeBytes: 123}},
				Usage:      &spec.AssistantUsage{ConversationCount: 3, UserCount: 2, LastUsedAt: spec.NewTime(t0)},
			}
			if i%3 == 0 {
				a.UpdatedAt = spec.NewTime(t0.Add(time.Duration(i) * time.Millisecond))
			}
			require.NoError(t, s.UpsertAssistant(ctx, "t1", a))
			require.NoError(t, s.UpsertAssistant(ctx, "t2", spec.Assistant{ID: id + "-other", CreatedAt: spec.NewTime(t0)}))
			want[id] = roundTrip(t, a)
		}
		all := sortedByKey(want, provider.AssistantKey, nil)
		for limit := 1; limit <= len(all)+1; limit++ {
			got := walk(t, limit, func(after *provider.Key, limit int) (provider.Page[spec.Assistant], error) {
				return s.ListAssistants(ctx, provider.AssistantQuery{Tenant: "t1", After: after, Limit: limit})
			}, provider.AssistantKey)
			require.Equal(t, all, got)
			raw := walk(t, limit, func(after *provider.Key, limit int) (provider.Page[provider.RawRecord], error) {
				return s.ListAssistantsRaw(ctx, provider.AssistantQuery{Tenant: "t1", After: after, Limit: limit})
			}, rawKey)
			checkRaw(t, raw, all, provider.AssistantKey)
		}
		for _, since := range []time.Time{t0, t0.Add(time.Millisecond), t0.Add(-time.Microsecond), t0.Add(time.Microsecond)} {
			exp := sortedByKey(want, provider.AssistantKey, func(a *spec.Assistant) bool { return !provider.AssistantKey(a).Time.Before(since) })
			for _, limit := range []int{1, 2, 7, 100} {
				got := walk(t, limit, func(after *provider.Key, limit int) (provider.Page[spec.Assistant], error) {
					return s.ListAssistants(ctx, provider.AssistantQuery{Tenant: "t1", After: after, Limit: limit, UpdatedSince: since})
				}, provider.AssistantKey)
				require.Equal(t, exp, got, "since %v limit %d", since, limit)
			}
		}
		_, err := s.GetAssistant(ctx, "t1", "a-other")
		require.ErrorIs(t, err, provider.ErrNotFound)
		_, err = s.GetAssistant(ctx, "t1", "x1-other")
		require.ErrorIs(t, err, provider.ErrNotFound)
	})
}

func TestEvents(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newSource(t, db)
		want := map[string]spec.Event{}
		categories := []string{spec.CategoryAccess, spec.CategoryPolicy, "SomethingNew", ""}
		ids := slices.Clone(oddIDs)
		for i := range 25 {
			ids = append(ids, fmt.Sprintf("e-%02d", i))
		}
		for i, id := range ids {
			at := t0
			if i%3 == 1 {
				at = t0.Add(time.Duration(i%5-2) * time.Millisecond)
			}
			e := spec.Event{
				ID: id, OccurredAt: spec.Time{Time: at.Add(999 * time.Microsecond)}, Type: "vendor.thing_happened",
				Actor: &spec.Actor{Type: spec.ActorUser, ID: "u1"}, Category: categories[i%len(categories)],
				Action: "Created", Target: &spec.Target{Kind: "assistant", ID: "a1"},
				Payload: json.RawMessage(`{"raw": true, "n": 1e3}`),
			}
			require.NoError(t, s.AppendEvent(ctx, "t1", e))
			want[id] = roundTrip(t, e)
		}
		require.NoError(t, s.AppendEvent(ctx, "t2", spec.Event{ID: "a", OccurredAt: spec.NewTime(t0), Category: spec.CategoryAccess}))

		all := sortedByKey(want, provider.EventKey, nil)
		for limit := 1; limit <= len(all)+1; limit++ {
			got := walk(t, limit, func(after *provider.Key, limit int) (provider.Page[spec.Event], error) {
				return s.ListEvents(ctx, provider.EventQuery{Tenant: "t1", After: after, Limit: limit})
			}, provider.EventKey)
			require.Equal(t, all, got)
			raw := walk(t, limit, func(after *provider.Key, limit int) (provider.Page[provider.RawRecord], error) {
				return s.ListEventsRaw(ctx, provider.EventQuery{Tenant: "t1", After: after, Limit: limit})
			}, rawKey)
			checkRaw(t, raw, all, provider.EventKey)
		}
		us := time.Microsecond
		for _, after := range []time.Time{{}, t0, t0.Add(-time.Millisecond), t0.Add(-500 * us), t0.Add(500 * us), t0.Add(time.Millisecond)} {
			for _, cat := range []string{"", spec.CategoryAccess, "SomethingNew", "Nothing"} {
				exp := sortedByKey(want, provider.EventKey, func(e *spec.Event) bool {
					return (after.IsZero() || provider.EventKey(e).Time.After(after)) && (cat == "" || e.Category == cat)
				})
				for _, limit := range []int{1, 2, 3, 100} {
					got := walk(t, limit, func(k *provider.Key, limit int) (provider.Page[spec.Event], error) {
						return s.ListEvents(ctx, provider.EventQuery{Tenant: "t1", After: k, Limit: limit, OccurredAfter: after, Category: cat})
					}, provider.EventKey)
					require.Equal(t, exp, got, "occurredAfter %v category %q limit %d", after, cat, limit)
				}
			}
		}

		// Conflicts: the same id again in the tenant, but not in another.
		err := s.AppendEvent(ctx, "t1", spec.Event{ID: "a", OccurredAt: spec.NewTime(t0)})
		require.ErrorIs(t, err, provider.ErrConflict)
		require.NoError(t, s.AppendEvent(ctx, "t3", spec.Event{ID: "a", OccurredAt: spec.NewTime(t0)}))
	})
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newSource(t, db)
		for _, tenant := range []string{"t1", "t2"} {
			require.NoError(t, s.UpsertConversation(ctx, tenant, spec.Conversation{ID: "shared", StartedAt: spec.NewTime(t0), Model: tenant}))
			require.NoError(t, s.UpsertConversation(ctx, tenant, spec.Conversation{ID: "only-" + tenant, StartedAt: spec.NewTime(t0), Model: tenant}))
			require.NoError(t, s.UpsertAssistant(ctx, tenant, spec.Assistant{ID: "only-" + tenant, CreatedAt: spec.NewTime(t0), Name: tenant}))
			require.NoError(t, s.AppendEvent(ctx, tenant, spec.Event{ID: "only-" + tenant, OccurredAt: spec.NewTime(t0), Type: tenant}))
			require.NoError(t, s.RecordUsage(ctx, tenant, provider.UsageRecord{ID: "r1", At: t0, Model: tenant, InputTokens: 1}))
		}
		require.NoError(t, s.DeleteConversation(ctx, "t2", "shared", t0))

		for _, tenant := range []string{"t1", "t2"} {
			other := map[string]string{"t1": "t2", "t2": "t1"}[tenant]
			cs, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: tenant, Limit: 100})
			require.NoError(t, err)
			require.Len(t, cs.Items, 2)
			for _, c := range cs.Items {
				require.Equal(t, tenant, c.Model)
			}
			c, err := s.GetConversation(ctx, tenant, "shared")
			require.NoError(t, err)
			require.Equal(t, tenant == "t2", c.Deleted())
			_, err = s.GetConversation(ctx, tenant, "only-"+other)
			require.ErrorIs(t, err, provider.ErrNotFound)
			_, err = s.GetAssistant(ctx, tenant, "only-"+other)
			require.ErrorIs(t, err, provider.ErrNotFound)
			as, err := s.ListAssistants(ctx, provider.AssistantQuery{Tenant: tenant, Limit: 100})
			require.NoError(t, err)
			require.Len(t, as.Items, 1)
			require.Equal(t, tenant, as.Items[0].Name)
			es, err := s.ListEvents(ctx, provider.EventQuery{Tenant: tenant, Limit: 100})
			require.NoError(t, err)
			require.Len(t, es.Items, 1)
			require.Equal(t, tenant, es.Items[0].Type)
			us, err := s.Usage(ctx, provider.UsageQuery{Tenant: tenant, Start: t0.Truncate(24 * time.Hour), End: t0.Truncate(24 * time.Hour).Add(24 * time.Hour), Granularity: spec.GranularityDay, GroupBy: []string{spec.DimensionModel}, Limit: 100})
			require.NoError(t, err)
			require.Len(t, us.Items, 1)
			require.Equal(t, tenant, *us.Items[0].Dimensions.Model)
			require.Equal(t, int64(1), us.Items[0].Metrics.Requests)
		}
		cs, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t3", Limit: 100})
		require.NoError(t, err)
		require.Empty(t, cs.Items)
		require.False(t, cs.HasMore)
	})
}

func TestBatch(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newSource(t, db)
		err := s.WriteBatch(ctx, func(w provider.Writer) error {
			for i := range 50 {
				id := fmt.Sprintf("c%02d", i)
				if err := w.UpsertConversation(ctx, "t1", spec.Conversation{ID: id, StartedAt: spec.NewTime(t0)}); err != nil {
					return err
				}
				if err := w.RecordUsage(ctx, "t1", provider.UsageRecord{ID: id, At: t0, InputTokens: 2}); err != nil {
					return err
				}
			}
			if err := w.DeleteConversation(ctx, "t1", "c07", clock.Add(time.Hour)); err != nil {
				return err
			}
			if err := w.UpsertAssistant(ctx, "t1", spec.Assistant{ID: "a", CreatedAt: spec.NewTime(t0)}); err != nil {
				return err
			}
			return w.AppendEvent(ctx, "t1", spec.Event{ID: "e", OccurredAt: spec.NewTime(t0)})
		})
		require.NoError(t, err)
		p, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t1", Limit: 100})
		require.NoError(t, err)
		require.Len(t, p.Items, 50)
		require.Equal(t, "c07", p.Items[49].ID)
		require.True(t, p.Items[49].Deleted())

		// A failed write fails the whole batch, even when fn goes on.
		err = s.WriteBatch(ctx, func(w provider.Writer) error {
			require.NoError(t, w.UpsertConversation(ctx, "t1", spec.Conversation{ID: "new", StartedAt: spec.NewTime(t0)}))
			require.ErrorIs(t, w.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "", At: t0}), provider.ErrInvalid)
			require.ErrorIs(t, w.AppendEvent(ctx, "t1", spec.Event{ID: "e2", OccurredAt: spec.NewTime(t0)}), provider.ErrInvalid)
			return nil
		})
		require.ErrorIs(t, err, provider.ErrInvalid)
		_, err = s.GetConversation(ctx, "t1", "new")
		require.ErrorIs(t, err, provider.ErrNotFound)

		// A usage record whose id is stored: the batch holds it until it
		// writes its rows, and WriteBatch returns the conflict, naming it.
		err = s.WriteBatch(ctx, func(w provider.Writer) error {
			require.NoError(t, w.UpsertConversation(ctx, "t1", spec.Conversation{ID: "new", StartedAt: spec.NewTime(t0)}))
			require.NoError(t, w.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "c01", At: t0}))
			return nil
		})
		require.ErrorIs(t, err, provider.ErrConflict)
		require.ErrorContains(t, err, `"c01"`)
		_, err = s.GetConversation(ctx, "t1", "new")
		require.ErrorIs(t, err, provider.ErrNotFound)

		// fn's error rolls back.
		boom := fmt.Errorf("boom")
		err = s.WriteBatch(ctx, func(w provider.Writer) error {
			require.NoError(t, w.UpsertConversation(ctx, "t1", spec.Conversation{ID: "new", StartedAt: spec.NewTime(t0)}))
			return boom
		})
		require.ErrorIs(t, err, boom)
		_, err = s.GetConversation(ctx, "t1", "new")
		require.ErrorIs(t, err, provider.ErrNotFound)

		// Deleting an unknown id in a batch.
		err = s.WriteBatch(ctx, func(w provider.Writer) error {
			return w.DeleteConversation(ctx, "t1", "nope", t0)
		})
		require.ErrorIs(t, err, provider.ErrNotFound)
	})
}

func TestUsageConflict(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newSource(t, db)
		require.NoError(t, s.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "r", At: t0}))
		// The same id at another time is still the same request.
		require.ErrorIs(t, s.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "r", At: t0.Add(time.Hour)}), provider.ErrConflict)
		require.ErrorIs(t, s.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "r", At: t0}), provider.ErrConflict)
		require.NoError(t, s.RecordUsage(ctx, "t2", provider.UsageRecord{ID: "r", At: t0}))
	})
}
