package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// mergedRec is a record of a merged list as the test expects it.
type mergedRec struct {
	pos    time.Time
	id     string
	source string
}

func (r mergedRec) less(o mergedRec) bool {
	if !r.pos.Equal(o.pos) {
		return r.pos.Before(o.pos)
	}
	if r.id != o.id {
		return r.id < o.id
	}
	return r.source < o.source
}

// fillMerged stores, in sources "a", "b" and "x" (x belongs to another
// tenant), conversations and events that share ids and timestamps across
// sources, and returns what each source holds.
func fillMerged(t *testing.T, s *sqlstore.Store) (convs, events map[string][]mergedRec) {
	t.Helper()
	convs, events = map[string][]mergedRec{}, map[string][]mergedRec{}
	cats := []string{"Access", "Policy", "Other"}
	for si, src := range []string{"a", "b", "x"} {
		l := acquire(t, s, lease(src, consumer.Conversations, "p"))
		le := acquire(t, s, lease(src, consumer.Events, "p"))
		var cs, es []consumer.Record
		for i := range 12 {
			// Ids shared by every source; timestamps in pairs, so that ids
			// tie within a source and (time, id) ties across sources.
			id := fmt.Sprintf("c%02d", (i*7)%12)
			updated := at(time.Duration(i/2) * time.Minute)
			if src == "b" && i%3 == 0 {
				updated = updated.Add(time.Second) // some not tied
			}
			cs = append(cs, conv(id, at(-time.Duration(i+si)*time.Hour), updated, src))
			convs[src] = append(convs[src], mergedRec{updated, id, src})
			eid := fmt.Sprintf("e%02d", i%5)
			if i >= 5 {
				eid = fmt.Sprintf("e%02d-%s", i, src)
			}
			es = append(es, eventRec(eid, at(time.Duration(i/3)*time.Minute), cats[i%3]))
			events[src] = append(events[src], mergedRec{at(time.Duration(i/3) * time.Minute), eid, src})
		}
		save(t, s, l, 1, cs...)
		save(t, s, le, 1, es...)
	}
	return convs, events
}

// tenants of the merged test view.
func testSources(_ context.Context, tenant string) ([]string, error) {
	switch tenant {
	case "org":
		return []string{"b", "a", "b"}, nil // any order, repeats
	case "lone":
		return []string{"a"}, nil
	case "broken":
		return nil, fmt.Errorf("no directory")
	}
	return nil, nil
}

// walkMerged walks a merged list page by page and returns what it served,
// checking every page's size and each record's sourceId.
func walkMerged(t *testing.T, limit int, page func(after *provider.Key, limit int) (provider.Page[provider.RawRecord], error)) []mergedRec {
	t.Helper()
	var (
		out   []mergedRec
		after *provider.Key
	)
	for n := 0; ; n++ {
		require.Less(t, n, 1000, "the walk does not end")
		p, err := page(after, limit)
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Items), limit)
		for _, it := range p.Items {
			var v struct {
				ID         string    `json:"id"`
				SourceID   string    `json:"sourceId"`
				UpdatedAt  spec.Time `json:"updatedAt"`
				OccurredAt spec.Time `json:"occurredAt"`
			}
			require.NoError(t, json.Unmarshal(it.JSON, &v), string(it.JSON))
			require.NotEmpty(t, v.SourceID, string(it.JSON))
			require.Equal(t, 1, strings.Count(string(it.JSON), `"sourceId"`), string(it.JSON))
			out = append(out, mergedRec{it.Key.Time, v.ID, v.SourceID})
		}
		if !p.HasMore {
			return out
		}
		require.NotEmpty(t, p.Items)
		k := p.Items[len(p.Items)-1].Key
		after = &k
	}
}

// union returns the records of sources, filtered by keep, in merged order.
func union(by map[string][]mergedRec, keep func(mergedRec) bool, sources ...string) []mergedRec {
	var out []mergedRec
	for _, s := range sources {
		for _, r := range by[s] {
			if keep == nil || keep(r) {
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, func(a, b mergedRec) int {
		if a.less(b) {
			return -1
		}
		if b.less(a) {
			return 1
		}
		return 0
	})
	return out
}

// TestMergedKeysetPages walks the merged lists of two sources that share ids
// and timestamps with every page size: the union, exactly, in (time, id,
// source) order, with the filters holding across pages.
func TestMergedKeysetPages(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		convs, events := fillMerged(t, s)
		m := s.Merged(testSources)
		for _, limit := range []int{1, 2, 3, 7, 24, 1000} {
			got := walkMerged(t, limit, func(after *provider.Key, limit int) (provider.Page[provider.RawRecord], error) {
				return m.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "org", After: after, Limit: limit})
			})
			require.Equal(t, union(convs, nil, "a", "b"), got, "limit %d", limit)

			since := at(2 * time.Minute)
			got = walkMerged(t, limit, func(after *provider.Key, limit int) (provider.Page[provider.RawRecord], error) {
				return m.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "org", After: after, Limit: limit, UpdatedSince: since})
			})
			require.Equal(t, union(convs, func(r mergedRec) bool { return !r.pos.Before(since) }, "a", "b"), got, "limit %d", limit)

			got = walkMerged(t, limit, func(after *provider.Key, limit int) (provider.Page[provider.RawRecord], error) {
				return m.ListEventsRaw(ctx, provider.EventQuery{Tenant: "org", After: after, Limit: limit})
			})
			require.Equal(t, union(events, nil, "a", "b"), got, "limit %d", limit)

			occurred := at(time.Minute)
			got = walkMerged(t, limit, func(after *provider.Key, limit int) (provider.Page[provider.RawRecord], error) {
				return m.ListEventsRaw(ctx, provider.EventQuery{Tenant: "org", After: after, Limit: limit, OccurredAfter: occurred, Category: "Policy"})
			})
			var policy []mergedRec
			for _, r := range union(events, func(r mergedRec) bool { return r.pos.After(occurred) }, "a", "b") {
				var cat string
				require.NoError(t, db.QueryRowContext(ctx, `SELECT category FROM consumer_records WHERE source = $1 AND resource = 'events' AND id = $2`,
					r.source, r.id).Scan(&cat))
				if cat == "Policy" {
					policy = append(policy, r)
				}
			}
			require.NotEmpty(t, policy)
			require.Equal(t, policy, got, "limit %d", limit)

			got = walkMerged(t, limit, func(after *provider.Key, limit int) (provider.Page[provider.RawRecord], error) {
				return m.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "lone", After: after, Limit: limit})
			})
			require.Equal(t, union(convs, nil, "a"), got, "limit %d", limit)
		}

		// startedAfter: the conversations of source b started within the
		// last hours only.
		started := at(-4 * time.Hour)
		p, err := m.ListConversations(ctx, provider.ConversationQuery{Tenant: "org", StartedAfter: started, Limit: 1000})
		require.NoError(t, err)
		require.NotEmpty(t, p.Items)
		for _, c := range p.Items {
			require.True(t, c.StartedAt.After(started), c.ID)
		}

		// A tenant without sources, a source directory that fails.
		p, err = m.ListConversations(ctx, provider.ConversationQuery{Tenant: "nobody", Limit: 10})
		require.NoError(t, err)
		require.Empty(t, p.Items)
		require.NotNil(t, p.Items)
		_, err = m.ListConversations(ctx, provider.ConversationQuery{Tenant: "broken", Limit: 10})
		require.ErrorContains(t, err, "no directory")

		// A position that does not name a source; no single records.
		_, err = m.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "org", Limit: 10, After: &provider.Key{Time: at(0), ID: "c01"}})
		require.ErrorIs(t, err, provider.ErrInvalid)
		_, err = m.GetConversation(ctx, "org", "c01")
		require.ErrorIs(t, err, provider.ErrNotFound)
		_, err = m.GetAssistant(ctx, "org", "c01")
		require.ErrorIs(t, err, provider.ErrNotFound)
		_, err = m.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "org", Limit: 0})
		require.ErrorIs(t, err, provider.ErrInvalid)
	})
}

// TestMergedServed checks the records as the merged view serves them: the
// source's bytes with sourceId added, or put in place of a sourceId member
// of the record's own, and tombstones with theirs.
func TestMergedServed(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		l := acquire(t, s, lease("a", consumer.Conversations, "p"))
		plain := conv("c1", at(0), at(time.Minute), "")
		own := consumer.Record{ID: "c2", Time: at(2 * time.Minute), StartedAt: at(0),
			JSON: json.RawMessage(`{ "id":"c2", "startedAt":"2026-03-01T00:00:00.000Z", "sourceId": {"theirs":1}, "updatedAt":"2026-03-01T00:02:00.000Z" }`)}
		escaped := consumer.Record{ID: "c3", Time: at(3 * time.Minute), StartedAt: at(0),
			JSON: json.RawMessage(`{"id":"c3","startedAt":"2026-03-01T00:00:00.000Z","updatedAt":"2026-03-01T00:03:00.000Z","source\u0049d":"x","n":"\u00e9"}`)}
		save(t, s, l, 1, plain, own, escaped, tombstoneRec("c4", at(0), at(4*time.Minute)))
		m := s.Merged(func(context.Context, string) ([]string, error) { return []string{"a"}, nil })
		p, err := m.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "t", Limit: 10})
		require.NoError(t, err)
		require.Len(t, p.Items, 4)
		var want map[string]any
		require.NoError(t, json.Unmarshal(plain.JSON, &want))
		want["sourceId"] = "a"
		var got map[string]any
		require.NoError(t, json.Unmarshal(p.Items[0].JSON, &got))
		require.Equal(t, want, got)
		require.Equal(t, string(plain.JSON[:len(plain.JSON)-1])+`,"sourceId":"a"}`, string(p.Items[0].JSON))
		require.Equal(t, `{ "id":"c2", "startedAt":"2026-03-01T00:00:00.000Z", "sourceId": "a", "updatedAt":"2026-03-01T00:02:00.000Z" }`, string(p.Items[1].JSON))
		require.Equal(t, `{"id":"c3","startedAt":"2026-03-01T00:00:00.000Z","updatedAt":"2026-03-01T00:03:00.000Z","source\u0049d":"a","n":"\u00e9"}`, string(p.Items[2].JSON))
		require.JSONEq(t, `{"id":"c4","startedAt":"2026-03-01T00:00:00.000Z","updatedAt":"2026-03-01T00:04:00.000Z","deletedAt":"2026-03-01T00:04:00.000Z","sourceId":"a"}`, string(p.Items[3].JSON))
		for _, it := range p.Items {
			require.True(t, json.Valid(it.JSON), string(it.JSON))
			_, err := spec.Validate("conversation", it.JSON)
			require.NoError(t, err)
		}
	})
}

// TestMergedUsage adds up the buckets of the tenant's sources, never those
// of another source.
func TestMergedUsage(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		for i, src := range []string{"a", "b", "x"} {
			l := acquire(t, s, lease(src, consumer.Usage, "p"))
			save(t, s, l, 1,
				bucket{gran: spec.GranularityHour, start: at(time.Hour), dims: map[string]string{"model": "m", "userId": "u1"}, requests: int64(1 + i), in: 10, cost: 0.25}.record(),
				bucket{gran: spec.GranularityHour, start: at(time.Hour), dims: map[string]string{"model": "m", "userId": "u" + src}, requests: 1, in: 5, cost: 0.5}.record(),
				bucket{gran: spec.GranularityHour, start: at(2 * time.Hour), dims: map[string]string{"model": "n-" + src, "userId": "u1"}, requests: 4}.record())
		}
		m := s.Merged(testSources)
		q := provider.UsageQuery{Tenant: "org", Start: at(0), End: at(24 * time.Hour), Granularity: spec.GranularityDay, Limit: 10}
		p, err := m.Usage(ctx, q)
		require.NoError(t, err)
		require.Len(t, p.Items, 1)
		require.Equal(t, spec.UsageMetrics{Requests: 1 + 2 + 1 + 1 + 4 + 4, ActiveUsers: 3, InputTokens: 30, Cost: 1.5}, p.Items[0].Metrics)

		q.GroupBy, q.Limit = []string{spec.DimensionModel}, 1
		var models []string
		for {
			p, err := m.Usage(ctx, q)
			require.NoError(t, err)
			for _, b := range p.Items {
				models = append(models, *b.Dimensions.Model)
			}
			if !p.HasMore {
				break
			}
			k := provider.BucketKey(&p.Items[len(p.Items)-1])
			q.After = &k
		}
		require.Equal(t, []string{"m", "n-a", "n-b"}, models)

		p, err = m.Usage(ctx, provider.UsageQuery{Tenant: "nobody", Start: at(0), End: at(24 * time.Hour), Granularity: spec.GranularityDay, Limit: 10})
		require.NoError(t, err)
		require.Empty(t, p.Items)
		_, err = m.Usage(ctx, provider.UsageQuery{Tenant: "org", Start: at(0), End: at(24 * time.Hour), Granularity: "week", Limit: 10})
		require.ErrorIs(t, err, provider.ErrInvalid)
	})
}
