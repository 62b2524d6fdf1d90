package memsource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

var base = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// conversations writes n conversations with random updatedAt values drawn
// from few distinct instants, so that many share one, and returns their keys
// in list order.
func conversations(t *testing.T, s *memsource.Source, tenant string, n int, seed uint64) []provider.Key {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	var keys []provider.Key
	for i := range n {
		id := fmt.Sprintf("c-%d", r.IntN(1_000_000)) + strings.Repeat("z", i%3) + fmt.Sprint(i)
		upd := base.Add(ms(r.IntN(n/4 + 1)))
		c := spec.Conversation{ID: id, StartedAt: spec.NewTime(upd.Add(-time.Hour)), UpdatedAt: spec.NewTime(upd)}
		require.NoError(t, s.UpsertConversation(t.Context(), tenant, c))
		keys = append(keys, provider.ConversationKey(&c))
	}
	slices.SortFunc(keys, func(a, b provider.Key) int {
		if a.Less(b) {
			return -1
		}
		if b.Less(a) {
			return 1
		}
		return 0
	})
	return keys
}

// walk follows pages of list from the beginning with limit and returns the
// keys seen.
func walk[T any](t *testing.T, limit int, list func(after *provider.Key, limit int) (provider.Page[T], error), key func(*T) provider.Key) []provider.Key {
	t.Helper()
	var keys []provider.Key
	var after *provider.Key
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100000, "walk does not end")
		p, err := list(after, limit)
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Items), limit)
		for i := range p.Items {
			keys = append(keys, key(&p.Items[i]))
		}
		if !p.HasMore {
			return keys
		}
		require.NotEmpty(t, p.Items, "hasMore with an empty page")
		k := key(&p.Items[len(p.Items)-1])
		after = &k
	}
}

func TestListOrderKeysetAndTies(t *testing.T) {
	t.Parallel()
	s := memsource.New()
	want := conversations(t, s, "t1", 120, 1)
	conversations(t, s, "other", 30, 2)
	ctx := t.Context()
	for limit := 1; limit <= len(want)+1; limit++ {
		got := walk(t, limit, func(after *provider.Key, limit int) (provider.Page[spec.Conversation], error) {
			return s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t1", After: after, Limit: limit})
		}, provider.ConversationKey)
		require.Equal(t, want, got, "limit %d", limit)
	}
}

func TestAfterInsideTieGroup(t *testing.T) {
	t.Parallel()
	s := memsource.New()
	ctx := t.Context()
	ids := []string{"b", "a", "A", "10", "9", "é", "_"}
	for _, id := range ids {
		require.NoError(t, s.UpsertConversation(ctx, "t", spec.Conversation{ID: id, StartedAt: spec.NewTime(base), UpdatedAt: spec.NewTime(base)}))
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted) // byte-wise
	for i, id := range sorted {
		p, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", After: &provider.Key{Time: base, ID: id}, Limit: 100})
		require.NoError(t, err)
		got := []string{}
		for _, c := range p.Items {
			got = append(got, c.ID)
		}
		require.Equal(t, sorted[i+1:], got)
		require.False(t, p.HasMore)
	}
	// An After key that is not stored starts after its position.
	p, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", After: &provider.Key{Time: base, ID: "B"}, Limit: 2})
	require.NoError(t, err)
	require.Equal(t, "_", p.Items[0].ID)
	require.Equal(t, "a", p.Items[1].ID)
	require.True(t, p.HasMore)
}

func TestFilters(t *testing.T) {
	t.Parallel()
	s := memsource.New()
	ctx := t.Context()
	for i := range 10 {
		c := spec.Conversation{
			ID:        fmt.Sprintf("c%d", i),
			StartedAt: spec.NewTime(base.Add(time.Duration(i/2) * time.Minute)), // pairs share startedAt
			UpdatedAt: spec.NewTime(base.Add(time.Duration(i) * time.Hour)),
		}
		require.NoError(t, s.UpsertConversation(ctx, "t", c))
		a := spec.Assistant{ID: fmt.Sprintf("a%d", i), CreatedAt: spec.NewTime(base), UpdatedAt: spec.NewTime(base.Add(time.Duration(i) * time.Hour))}
		require.NoError(t, s.UpsertAssistant(ctx, "t", a))
		e := spec.Event{ID: fmt.Sprintf("e%d", i), OccurredAt: spec.NewTime(base.Add(time.Duration(i/2) * time.Hour)), Category: spec.EventCategories[i%3]}
		require.NoError(t, s.AppendEvent(ctx, "t", e))
	}
	ids := func(p any) []string {
		var out []string
		switch p := p.(type) {
		case provider.Page[spec.Conversation]:
			for _, c := range p.Items {
				out = append(out, c.ID)
			}
		case provider.Page[spec.Assistant]:
			for _, c := range p.Items {
				out = append(out, c.ID)
			}
		case provider.Page[spec.Event]:
			for _, c := range p.Items {
				out = append(out, c.ID)
			}
		}
		return out
	}

	// updatedSince is inclusive.
	cp, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", UpdatedSince: base.Add(7 * time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{"c7", "c8", "c9"}, ids(cp))
	cp, err = s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", UpdatedSince: base.Add(7*time.Hour + time.Millisecond), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{"c8", "c9"}, ids(cp))
	// An offset names the same instant.
	cp, err = s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", UpdatedSince: base.Add(7 * time.Hour).In(time.FixedZone("", 2*3600)), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{"c7", "c8", "c9"}, ids(cp))
	ap, err := s.ListAssistants(ctx, provider.AssistantQuery{Tenant: "t", UpdatedSince: base.Add(8 * time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{"a8", "a9"}, ids(ap))

	// startedAfter is exclusive: c6 and c7 start at base+3m.
	cp, err = s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", StartedAfter: base.Add(3 * time.Minute), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{"c8", "c9"}, ids(cp))
	// Both filters and a keyset position.
	cp, err = s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", StartedAfter: base.Add(time.Minute), UpdatedSince: base.Add(5 * time.Hour), After: &provider.Key{Time: base.Add(6 * time.Hour), ID: "c6"}, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, []string{"c7"}, ids(cp))
	require.True(t, cp.HasMore)

	// occurredAfter is exclusive: e6 and e7 occur at base+3h.
	ep, err := s.ListEvents(ctx, provider.EventQuery{Tenant: "t", OccurredAfter: base.Add(3 * time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{"e8", "e9"}, ids(ep))
	ep, err = s.ListEvents(ctx, provider.EventQuery{Tenant: "t", OccurredAfter: base.Add(3*time.Hour - time.Millisecond), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{"e6", "e7", "e8", "e9"}, ids(ep))

	// category is equality; a page with hasMore stops at the limit.
	ep, err = s.ListEvents(ctx, provider.EventQuery{Tenant: "t", Category: spec.EventCategories[1], Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"e1", "e4"}, ids(ep))
	require.True(t, ep.HasMore)
	ep, err = s.ListEvents(ctx, provider.EventQuery{Tenant: "t", Category: spec.EventCategories[1], After: &provider.Key{Time: base.Add(2 * time.Hour), ID: "e4"}, Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"e7"}, ids(ep))
	require.False(t, ep.HasMore)
	ep, err = s.ListEvents(ctx, provider.EventQuery{Tenant: "t", Category: "Nope", Limit: 2})
	require.NoError(t, err)
	require.Empty(t, ep.Items)
	require.NotNil(t, ep.Items)

	// A far-future bound and an unknown tenant are empty.
	cp, err = s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", UpdatedSince: base.AddDate(100, 0, 0), Limit: 10})
	require.NoError(t, err)
	require.Empty(t, cp.Items)
	require.False(t, cp.HasMore)
	cp, err = s.ListConversations(ctx, provider.ConversationQuery{Tenant: "nobody", Limit: 10})
	require.NoError(t, err)
	require.Empty(t, cp.Items)
}

func TestUpsertMovesAndReplaces(t *testing.T) {
	t.Parallel()
	s := memsource.New()
	ctx := t.Context()
	put := func(id string, upd time.Time, model string) {
		require.NoError(t, s.UpsertConversation(ctx, "t", spec.Conversation{ID: id, StartedAt: spec.NewTime(base), UpdatedAt: spec.NewTime(upd), Model: model}))
	}
	put("a", base.Add(1*time.Hour), "m1")
	put("b", base.Add(2*time.Hour), "m1")
	put("a", base.Add(3*time.Hour), "m2") // moves behind b
	put("b", base.Add(2*time.Hour), "m3") // same key, replaced in place
	p, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", Limit: 10})
	require.NoError(t, err)
	require.Len(t, p.Items, 2)
	require.Equal(t, "b", p.Items[0].ID)
	require.Equal(t, "m3", p.Items[0].Model)
	require.Equal(t, "a", p.Items[1].ID)
	require.Equal(t, "m2", p.Items[1].Model)
}

func TestTimestampsAndClock(t *testing.T) {
	t.Parallel()
	now := base.Add(42*time.Hour + 123456789*time.Nanosecond)
	s := memsource.New(memsource.WithNow(func() time.Time { return now }))
	ctx := t.Context()
	zone := time.FixedZone("", -5*3600)
	c := spec.Conversation{
		ID:        "c",
		StartedAt: spec.Time{Time: base.Add(999999 * time.Nanosecond).In(zone)},
		Messages:  []spec.Message{{ID: "m", CreatedAt: spec.Time{Time: base.Add(1500 * time.Microsecond)}}},
	}
	require.NoError(t, s.UpsertConversation(ctx, "t", c))
	got, err := s.GetConversation(ctx, "t", "c")
	require.NoError(t, err)
	require.Equal(t, spec.NewTime(base), got.StartedAt)
	require.Equal(t, time.UTC, got.StartedAt.Location())
	require.Equal(t, spec.NewTime(now), got.UpdatedAt) // stamped by the clock
	require.Equal(t, base.Add(time.Millisecond), got.Messages[0].CreatedAt.Time)

	a := spec.Assistant{ID: "a", CreatedAt: spec.NewTime(base), Usage: &spec.AssistantUsage{LastUsedAt: spec.Time{Time: base.Add(2500 * time.Microsecond)}}}
	require.NoError(t, s.UpsertAssistant(ctx, "t", a))
	ga, err := s.GetAssistant(ctx, "t", "a")
	require.NoError(t, err)
	require.Equal(t, spec.NewTime(now), ga.UpdatedAt)
	require.Equal(t, base.Add(2*time.Millisecond), ga.Usage.LastUsedAt.Time)

	require.NoError(t, s.DeleteConversation(ctx, "t", "c", time.Time{}))
	got, err = s.GetConversation(ctx, "t", "c")
	require.NoError(t, err)
	require.Equal(t, spec.NewTime(now), got.DeletedAt)
}

func fullConversation(id string, upd time.Time) spec.Conversation {
	temp := 0.7
	return spec.Conversation{
		ID:             id,
		ConversationID: "thread-" + id,
		StartedAt:      spec.NewTime(upd.Add(-time.Hour)),
		UpdatedAt:      spec.NewTime(upd),
		User:           &spec.User{ID: "u1", Email: "u1@example.com", Department: "eng", Groups: []string{"g1", "g2"}},
		Assistant:      &spec.AssistantRef{ID: "a1", Name: "Helper"},
		Model:          "model-a",
		ModelProvider:  "vendor",
		Parameters:     &spec.Parameters{Temperature: &temp, Extra: map[string]json.RawMessage{"seed": json.RawMessage(`42`)}},
		SystemPrompt:   "be nice",
		Messages:       []spec.Message{{ID: "m1", Role: spec.RoleUser, Content: "hi", CreatedAt: spec.NewTime(upd)}},
		Tools:          []spec.Tool{{ID: "t1", Name: "search", Type: "function"}},
		Attachments:    []spec.Attachment{{ID: "f1", Kind: spec.AttachmentUploaded, Filename: "a.txt"}},
		Usage:          &spec.TokenUsage{InputTokens: 10, OutputTokens: 20, TotalTokens: 30, Cost: 0.5},
		Status:         "completed",
		Metadata:       json.RawMessage(`{"k":"v"}`),
	}
}

func TestTombstones(t *testing.T) {
	t.Parallel()
	s := memsource.New()
	ctx := t.Context()
	require.NoError(t, s.UpsertConversation(ctx, "t", fullConversation("x", base)))
	require.NoError(t, s.UpsertConversation(ctx, "t", fullConversation("y", base.Add(time.Hour))))
	at := base.Add(2*time.Hour + 1500*time.Microsecond)
	require.NoError(t, s.DeleteConversation(ctx, "t", "x", at))

	got, err := s.GetConversation(ctx, "t", "x")
	require.NoError(t, err)
	orig := fullConversation("x", base)
	require.Equal(t, provider.TombstoneOf(orig, at), got)
	require.True(t, got.Deleted())
	require.Empty(t, got.Messages)
	require.Empty(t, got.SystemPrompt)
	require.Nil(t, got.Parameters)
	require.Nil(t, got.Metadata)
	require.Equal(t, base.Add(2*time.Hour+time.Millisecond), got.UpdatedAt.Time)

	// The tombstone moved to its new updatedAt.
	p, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{"y", "x"}, []string{p.Items[0].ID, p.Items[1].ID})
	require.Equal(t, got, p.Items[1])

	// Upserting a conversation with deletedAt stores a tombstone too.
	c := fullConversation("z", base.Add(5*time.Hour))
	c.DeletedAt = spec.NewTime(base.Add(4 * time.Hour))
	require.NoError(t, s.UpsertConversation(ctx, "t", c))
	gz, err := s.GetConversation(ctx, "t", "z")
	require.NoError(t, err)
	require.Nil(t, gz.Messages)
	require.Equal(t, c.UpdatedAt, gz.UpdatedAt)
	require.Equal(t, c.DeletedAt, gz.DeletedAt)

	require.ErrorIs(t, s.DeleteConversation(ctx, "t", "nope", at), provider.ErrNotFound)
	require.ErrorIs(t, s.DeleteConversation(ctx, "other", "y", at), provider.ErrNotFound)
}

func TestTenantsAndErrors(t *testing.T) {
	t.Parallel()
	s := memsource.New()
	ctx := t.Context()
	require.NoError(t, s.UpsertConversation(ctx, "t1", fullConversation("c", base)))
	require.NoError(t, s.UpsertAssistant(ctx, "t1", spec.Assistant{ID: "a", CreatedAt: spec.NewTime(base)}))
	require.NoError(t, s.AppendEvent(ctx, "t1", spec.Event{ID: "e", OccurredAt: spec.NewTime(base)}))
	require.NoError(t, s.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "u", At: base}))

	_, err := s.GetConversation(ctx, "t2", "c")
	require.ErrorIs(t, err, provider.ErrNotFound)
	_, err = s.GetAssistant(ctx, "t2", "a")
	require.ErrorIs(t, err, provider.ErrNotFound)
	_, err = s.GetConversation(ctx, "t1", "missing")
	require.ErrorIs(t, err, provider.ErrNotFound)
	_, err = s.GetAssistant(ctx, "t1", "missing")
	require.ErrorIs(t, err, provider.ErrNotFound)

	// Ids are per tenant.
	require.NoError(t, s.AppendEvent(ctx, "t2", spec.Event{ID: "e", OccurredAt: spec.NewTime(base)}))
	require.NoError(t, s.RecordUsage(ctx, "t2", provider.UsageRecord{ID: "u", At: base}))
	require.ErrorIs(t, s.AppendEvent(ctx, "t1", spec.Event{ID: "e", OccurredAt: spec.NewTime(base.Add(time.Hour))}), provider.ErrConflict)
	require.ErrorIs(t, s.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "u", At: base.Add(time.Hour)}), provider.ErrConflict)

	ep, err := s.ListEvents(ctx, provider.EventQuery{Tenant: "t2", Limit: 10})
	require.NoError(t, err)
	require.Len(t, ep.Items, 1)

	invalid := func(err error, field string) {
		t.Helper()
		require.ErrorIs(t, err, provider.ErrInvalid)
		var pe *provider.Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, field, pe.Field)
	}
	invalid(s.UpsertConversation(ctx, "t1", spec.Conversation{}), "id")
	invalid(s.UpsertAssistant(ctx, "t1", spec.Assistant{}), "id")
	invalid(s.AppendEvent(ctx, "t1", spec.Event{OccurredAt: spec.NewTime(base)}), "id")
	invalid(s.AppendEvent(ctx, "t1", spec.Event{ID: "x"}), "occurredAt")
	invalid(s.RecordUsage(ctx, "t1", provider.UsageRecord{At: base}), "id")
	invalid(s.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "x"}), "at")
	for _, limit := range []int{0, -1, 1001} {
		_, err = s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t1", Limit: limit})
		invalid(err, "limit")
		_, err = s.ListAssistants(ctx, provider.AssistantQuery{Tenant: "t1", Limit: limit})
		invalid(err, "limit")
		_, err = s.ListEvents(ctx, provider.EventQuery{Tenant: "t1", Limit: limit})
		invalid(err, "limit")
		_, err = s.Usage(ctx, provider.UsageQuery{Tenant: "t1", Granularity: spec.GranularityDay, Start: base, End: base.Add(24 * time.Hour), Limit: limit})
		invalid(err, "limit")
	}
	_, err = s.Usage(ctx, provider.UsageQuery{Tenant: "t1", Granularity: "week", Start: base, End: base.Add(24 * time.Hour), Limit: 10})
	invalid(err, "granularity")
	_, err = s.Usage(ctx, provider.UsageQuery{Tenant: "t1", Granularity: "day", GroupBy: []string{"color"}, Start: base, End: base.Add(24 * time.Hour), Limit: 10})
	invalid(err, "groupBy")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.ListConversations(cancelled, provider.ConversationQuery{Tenant: "t1", Limit: 10})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, s.RecordUsage(cancelled, "t1", provider.UsageRecord{ID: "z", At: base}), context.Canceled)
}

func TestDeepCopies(t *testing.T) {
	t.Parallel()
	s := memsource.New()
	ctx := t.Context()
	in := fullConversation("c", base)
	require.NoError(t, s.UpsertConversation(ctx, "t", in))
	want := fullConversation("c", base)

	// Changing what was written changes nothing stored.
	in.User.Groups[0] = "changed"
	in.User.Email = "changed"
	in.Assistant.Name = "changed"
	*in.Parameters.Temperature = 9
	in.Parameters.Extra["seed"][0] = '7'
	in.Parameters.Extra["new"] = json.RawMessage(`1`)
	in.Messages[0].Content = "changed"
	in.Tools[0].Name = "changed"
	in.Attachments[0].Filename = "changed"
	in.Usage.Cost = 99
	in.Metadata[2] = 'X'
	got, err := s.GetConversation(ctx, "t", "c")
	require.NoError(t, err)
	require.Equal(t, want, got)

	// Changing what was read changes nothing stored.
	got.User.Groups[1] = "changed"
	got.Messages[0].Content = "changed"
	*got.Parameters.Temperature = 3
	got.Metadata[2] = 'Y'
	p, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", Limit: 10})
	require.NoError(t, err)
	require.Equal(t, want, p.Items[0])
	p.Items[0].Tools[0].ID = "changed"
	p.Items[0].Usage.InputTokens = 1
	again, err := s.GetConversation(ctx, "t", "c")
	require.NoError(t, err)
	require.Equal(t, want, again)

	temp := 0.2
	newAssistant := func() spec.Assistant {
		return spec.Assistant{
			ID: "a", CreatedAt: spec.NewTime(base),
			Owner:      &spec.User{ID: "u", Groups: []string{"g"}},
			Parameters: &spec.Parameters{TopP: &temp},
			Skills:     []spec.Skill{{ID: "s", Type: spec.SkillMCP}},
			Connectors: []spec.Connector{{ID: "k", Scopes: []string{"read", "write"}}},
			Knowledge:  []spec.KnowledgeItem{{ID: "kn", Name: "doc"}},
			Usage:      &spec.AssistantUsage{ConversationCount: 3, LastUsedAt: spec.NewTime(base)},
		}
	}
	a := newAssistant()
	require.NoError(t, s.UpsertAssistant(ctx, "t", a))
	wantA := newAssistant()
	wantA.UpdatedAt = a.UpdatedAt // stamped by the clock: read it back below
	a.Owner.Groups[0] = "x"
	a.Connectors[0].Scopes[0] = "x"
	a.Skills[0].Name = "x"
	a.Knowledge[0].Name = "x"
	a.Usage.ConversationCount = 0
	ga, err := s.GetAssistant(ctx, "t", "a")
	require.NoError(t, err)
	wantA.UpdatedAt = ga.UpdatedAt
	require.Equal(t, wantA, ga)
	ga.Connectors[0].Scopes[1] = "x"
	ga.Owner.ID = "x"
	*ga.Parameters.TopP = 1
	ga2, err := s.GetAssistant(ctx, "t", "a")
	require.NoError(t, err)
	require.Equal(t, wantA, ga2)

	e := spec.Event{ID: "e", OccurredAt: spec.NewTime(base), Actor: &spec.Actor{ID: "u"}, Target: &spec.Target{ID: "a"}, Payload: json.RawMessage(`{"a":1}`)}
	require.NoError(t, s.AppendEvent(ctx, "t", e))
	e.Actor.ID = "x"
	e.Target.ID = "x"
	e.Payload[1] = 'X'
	ep, err := s.ListEvents(ctx, provider.EventQuery{Tenant: "t", Limit: 1})
	require.NoError(t, err)
	require.Equal(t, "u", ep.Items[0].Actor.ID)
	require.Equal(t, "a", ep.Items[0].Target.ID)
	require.JSONEq(t, `{"a":1}`, string(ep.Items[0].Payload))
	ep.Items[0].Actor.ID = "y"
	ep.Items[0].Payload[1] = 'Y'
	ep2, err := s.ListEvents(ctx, provider.EventQuery{Tenant: "t", Limit: 1})
	require.NoError(t, err)
	require.Equal(t, "u", ep2.Items[0].Actor.ID)
	require.JSONEq(t, `{"a":1}`, string(ep2.Items[0].Payload))
}

// usageRecords returns n deterministic records over four days, with empty
// values among every dimension, and some records on hour boundaries.
func usageRecords(n int, seed uint64) []provider.UsageRecord {
	r := rand.New(rand.NewPCG(seed, 7))
	pick := func(vals ...string) string { return vals[r.IntN(len(vals))] }
	var out []provider.UsageRecord
	for i := range n {
		at := base.Add(ms(r.IntN(4 * 24 * 3600 * 1000)))
		if i%10 == 0 {
			at = at.Truncate(time.Hour)
		}
		out = append(out, provider.UsageRecord{
			ID:             fmt.Sprintf("r%04d", i),
			At:             at,
			ConversationID: pick("", "c1", "c2", "c3", "c4"),
			UserID:         pick("", "u1", "u2", "u3"),
			Department:     pick("", "eng", "ops"),
			Model:          pick("", "m-a", "m-b", "M-c"),
			AssistantID:    pick("", "a1", "a2"),
			InputTokens:    int64(r.IntN(1000)),
			OutputTokens:   int64(r.IntN(1000)),
			Cost:           float64(r.IntN(100000)) / 7919,
		})
	}
	return out
}

// expectedBucket is a bucket computed naively from the records.
type expectedBucket struct {
	requests, conversations, users, in, out int64
	cost                                    float64
}

func expectUsage(recs []provider.UsageRecord, start, end time.Time, step time.Duration, groupBy []string) map[string]*expectedBucket {
	type acc struct {
		b     expectedBucket
		convs map[string]bool
		users map[string]bool
	}
	accs := map[string]*acc{}
	for _, u := range recs {
		bs := u.At.UTC().Truncate(step)
		if bs.Before(start) || !bs.Before(end) {
			continue
		}
		vals := map[string]string{"model": u.Model, "assistantId": u.AssistantID, "userId": u.UserID, "department": u.Department}
		k := bs.Format(time.RFC3339)
		for _, d := range groupBy {
			k += "|" + d + "=" + vals[d]
		}
		a := accs[k]
		if a == nil {
			a = &acc{convs: map[string]bool{}, users: map[string]bool{}}
			accs[k] = a
		}
		a.b.requests++
		a.b.in += u.InputTokens
		a.b.out += u.OutputTokens
		a.b.cost += u.Cost
		if u.ConversationID != "" {
			a.convs[u.ConversationID] = true
		}
		if u.UserID != "" {
			a.users[u.UserID] = true
		}
	}
	out := map[string]*expectedBucket{}
	for k, a := range accs {
		a.b.conversations = int64(len(a.convs))
		a.b.users = int64(len(a.users))
		out[k] = &a.b
	}
	return out
}

func subsets() [][]string {
	var out [][]string
	for mask := range 1 << len(spec.Dimensions) {
		var g []string
		for i, d := range spec.Dimensions {
			if mask&(1<<i) != 0 {
				g = append(g, d)
			}
		}
		out = append(out, g)
	}
	return out
}

func TestUsageAggregation(t *testing.T) {
	t.Parallel()
	s := memsource.New()
	ctx := t.Context()
	recs := usageRecords(1500, 3)
	for _, u := range recs {
		require.NoError(t, s.RecordUsage(ctx, "t", u))
	}
	for _, u := range usageRecords(50, 4) {
		require.NoError(t, s.RecordUsage(ctx, "other", u))
	}
	ranges := []struct {
		granularity string
		step        time.Duration
		start, end  time.Time
	}{
		{spec.GranularityDay, 24 * time.Hour, base, base.Add(4 * 24 * time.Hour)},
		{spec.GranularityDay, 24 * time.Hour, base.Add(24 * time.Hour), base.Add(3 * 24 * time.Hour)},
		{spec.GranularityHour, time.Hour, base.Add(5 * time.Hour), base.Add(29 * time.Hour)},
	}
	for _, rg := range ranges {
		for _, g := range subsets() {
			name := fmt.Sprintf("%s/%s-%s/%s", rg.granularity, rg.start.Format("02T15"), rg.end.Format("02T15"), strings.Join(g, "+"))
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				want := expectUsage(recs, rg.start, rg.end, rg.step, g)
				got := map[string]spec.UsageBucket{}
				var after *provider.UsageKey
				var prev *provider.UsageKey
				for {
					p, err := s.Usage(ctx, provider.UsageQuery{Tenant: "t", Start: rg.start, End: rg.end, Granularity: rg.granularity, GroupBy: g, After: after, Limit: 17})
					require.NoError(t, err)
					require.LessOrEqual(t, len(p.Items), 17)
					for _, b := range p.Items {
						k := provider.BucketKey(&b)
						if prev != nil {
							require.True(t, prev.Less(k), "order: %+v then %+v", *prev, k)
						}
						prev = &k
						require.Equal(t, rg.granularity, b.Granularity)
						require.Equal(t, b.StartAt.Truncate(rg.step), b.StartAt.Time)
						require.Equal(t, b.StartAt.Add(rg.step), b.EndAt.Time)
						require.False(t, b.StartAt.Before(rg.start))
						require.True(t, b.StartAt.Before(rg.end))
						raw, err := json.Marshal(b.Dimensions)
						require.NoError(t, err)
						var dm map[string]string
						require.NoError(t, json.Unmarshal(raw, &dm))
						var keys []string
						for d := range dm {
							keys = append(keys, d)
						}
						sort.Strings(keys)
						wantKeys := slices.Clone(g)
						sort.Strings(wantKeys)
						require.Equal(t, wantKeys, keys, "dimension keys")
						id := b.StartAt.UTC().Format(time.RFC3339)
						for _, d := range g {
							id += "|" + d + "=" + dm[d]
						}
						require.NotContains(t, got, id)
						got[id] = b
					}
					if !p.HasMore {
						break
					}
					k := provider.BucketKey(&p.Items[len(p.Items)-1])
					after = &k
				}
				require.Len(t, got, len(want))
				for id, w := range want {
					b, ok := got[id]
					require.True(t, ok, "missing bucket %s", id)
					m := b.Metrics
					require.Equal(t, []int64{w.requests, w.conversations, w.users, w.in, w.out},
						[]int64{m.Requests, m.Conversations, m.ActiveUsers, m.InputTokens, m.OutputTokens}, id)
					require.LessOrEqual(t, math.Abs(m.Cost-w.cost), 1e-9*math.Max(1, math.Abs(w.cost)), id)
				}
			})
		}
	}
}

func TestUsageBoundaries(t *testing.T) {
	t.Parallel()
	s := memsource.New()
	ctx := t.Context()
	day := 24 * time.Hour
	for i, at := range []time.Time{
		base.Add(-time.Millisecond),      // before the range
		base,                             // first instant
		base.Add(day - time.Millisecond), // last instant of the first day
		base.Add(day),                    // second day
		base.Add(2 * day),                // == End: outside
		base.Add(2*day + time.Second),    // outside
	} {
		require.NoError(t, s.RecordUsage(ctx, "t", provider.UsageRecord{ID: fmt.Sprint(i), At: at, InputTokens: int64(1 << i), UserID: "u", Model: "m"}))
	}
	p, err := s.Usage(ctx, provider.UsageQuery{Tenant: "t", Start: base, End: base.Add(2 * day), Granularity: "day", Limit: 100})
	require.NoError(t, err)
	require.Len(t, p.Items, 2)
	require.Equal(t, int64(2+4), p.Items[0].Metrics.InputTokens)
	require.Equal(t, int64(2), p.Items[0].Metrics.Requests)
	require.Equal(t, int64(1), p.Items[0].Metrics.ActiveUsers)
	require.Equal(t, int64(0), p.Items[0].Metrics.Conversations)
	require.Equal(t, int64(8), p.Items[1].Metrics.InputTokens)
	require.Nil(t, p.Items[0].Dimensions.Model)

	// Hours: the first day has buckets at 00 and 23 only; empty buckets are
	// left out.
	p, err = s.Usage(ctx, provider.UsageQuery{Tenant: "t", Start: base, End: base.Add(day), Granularity: "hour", GroupBy: []string{"model"}, Limit: 100})
	require.NoError(t, err)
	require.Len(t, p.Items, 2)
	require.Equal(t, base, p.Items[0].StartAt.Time)
	require.Equal(t, base.Add(23*time.Hour), p.Items[1].StartAt.Time)
	require.Equal(t, "m", *p.Items[1].Dimensions.Model)

	// An empty or inverted range is an empty page.
	p, err = s.Usage(ctx, provider.UsageQuery{Tenant: "t", Start: base, End: base, Granularity: "hour", Limit: 100})
	require.NoError(t, err)
	require.Empty(t, p.Items)
	require.NotNil(t, p.Items)
	p, err = s.Usage(ctx, provider.UsageQuery{Tenant: "nobody", Start: base, End: base.Add(day), Granularity: "hour", Limit: 100})
	require.NoError(t, err)
	require.Empty(t, p.Items)
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s := memsource.New()
	ctx := context.Background()
	var wg sync.WaitGroup
	const writers, perWriter = 4, 200
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				id := fmt.Sprintf("w%d-%d", w, i)
				at := base.Add(time.Duration(i%17) * time.Second)
				if err := s.UpsertConversation(ctx, "t", fullConversation(id, at)); err != nil {
					t.Error(err)
				}
				if err := s.AppendEvent(ctx, "t", spec.Event{ID: id, OccurredAt: spec.NewTime(at)}); err != nil {
					t.Error(err)
				}
				if err := s.RecordUsage(ctx, "t", provider.UsageRecord{ID: id, At: at, UserID: id}); err != nil {
					t.Error(err)
				}
				if i%5 == 0 {
					if err := s.DeleteConversation(ctx, "t", id, at.Add(time.Minute)); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 100 {
				p, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", Limit: 50})
				if err != nil {
					t.Error(err)
					return
				}
				for _, c := range p.Items {
					if len(c.Messages) > 0 {
						c.Messages[0].Content = "mutated by a reader" // must not race
					}
				}
				if _, err := s.Usage(ctx, provider.UsageQuery{Tenant: "t", Start: base, End: base.Add(time.Hour), Granularity: "hour", GroupBy: []string{"userId"}, Limit: 10}); err != nil {
					t.Error(err)
				}
				if _, err := s.ListEvents(ctx, provider.EventQuery{Tenant: "t", Limit: 10}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	p, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", Limit: 1000})
	require.NoError(t, err)
	require.Len(t, p.Items, writers*perWriter)
	for _, c := range p.Items {
		if !c.Deleted() {
			require.Equal(t, "hi", c.Messages[0].Content)
		}
	}
	u, err := s.Usage(ctx, provider.UsageQuery{Tenant: "t", Start: base, End: base.Add(time.Hour), Granularity: "hour", Limit: 10})
	require.NoError(t, err)
	require.Len(t, u.Items, 1)
	require.Equal(t, int64(writers*perWriter), u.Items[0].Metrics.Requests)
	require.Equal(t, int64(writers*perWriter), u.Items[0].Metrics.ActiveUsers)
}

func BenchmarkListConversations(b *testing.B) {
	s := memsource.New()
	ctx := context.Background()
	for i := range 10000 {
		if err := s.UpsertConversation(ctx, "t", fullConversation(fmt.Sprintf("c%05d", i), base.Add(time.Duration(i)*time.Second))); err != nil {
			b.Fatal(err)
		}
	}
	after := provider.Key{Time: base.Add(9000 * time.Second), ID: "c09000"}
	for b.Loop() {
		if _, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", After: &after, Limit: 100}); err != nil {
			b.Fatal(err)
		}
	}
}
