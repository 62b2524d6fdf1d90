package consumer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// updatedAt, the order and filter a DataSource must then use: startedAt
// (createdAt for assistants).
type faultSliceSource struct {
	mu     sync.RWMutex
	convs  map[string]spec.Conversation
	assts  map[string]spec.Assistant
	events map[string]spec.Event
}

var _ provider.DataSource = (*faultSliceSource)(nil)

func faultPageOf[T any](m map[string]T, key func(*T) provider.Key, after *provider.Key, keep func(*T) bool, limit int) provider.Page[T] {
	items := make([]T, 0, len(m))
	for _, v := range m {
		items = append(items, v)
	}
	sort.Slice(items, func(i, j int) bool { return key(&items[i]).Less(key(&items[j])) })
	p := provider.Page[T]{Items: []T{}}
	for i := range items {
		it := &items[i]
		if after != nil && !after.Less(key(it)) || keep != nil && !keep(it) {
			continue
		}
		if len(p.Items) == limit {
			p.HasMore = true
			break
		}
		p.Items = append(p.Items, *it)
	}
	return p
}

func (s *faultSliceSource) ListConversations(_ context.Context, q provider.ConversationQuery) (provider.Page[spec.Conversation], error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return faultPageOf(s.convs, provider.ConversationKey, q.After, func(c *spec.Conversation) bool {
		return !provider.ConversationKey(c).Time.Before(q.UpdatedSince) && (q.StartedAfter.IsZero() || c.StartedAt.After(q.StartedAfter))
	}, q.Limit), nil
}

func (s *faultSliceSource) GetConversation(_ context.Context, _, id string) (spec.Conversation, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.convs[id]
	if !ok {
		return c, fmt.Errorf("conversation %q: %w", id, provider.ErrNotFound)
	}
	return c, nil
}

func (s *faultSliceSource) ListAssistants(_ context.Context, q provider.AssistantQuery) (provider.Page[spec.Assistant], error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return faultPageOf(s.assts, provider.AssistantKey, q.After, func(a *spec.Assistant) bool {
		return !provider.AssistantKey(a).Time.Before(q.UpdatedSince)
	}, q.Limit), nil
}

func (s *faultSliceSource) GetAssistant(_ context.Context, _, id string) (spec.Assistant, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, ok := s.assts[id]
	if !ok {
		return a, fmt.Errorf("assistant %q: %w", id, provider.ErrNotFound)
	}
	return a, nil
}

func (s *faultSliceSource) ListEvents(_ context.Context, q provider.EventQuery) (provider.Page[spec.Event], error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return faultPageOf(s.events, provider.EventKey, q.After, func(e *spec.Event) bool {
		return e.OccurredAt.After(q.OccurredAfter) && (q.Category == "" || e.Category == q.Category)
	}, q.Limit), nil
}

func (s *faultSliceSource) Usage(context.Context, provider.UsageQuery) (provider.Page[spec.UsageBucket], error) {
	return provider.Page[spec.UsageBucket]{}, provider.ErrUnsupported
}

// faultLacking is a provider that lacks a sync feature: a
// faultSliceSource behind provider.NewHandler (direct), and what the
// consumer talks to (front), which may be a middleware.
type faultLacking struct {
	src           *faultSliceSource
	direct, front *httptest.Server
	noUpdatedAt   bool
	rng           *rand.Rand
	clock         time.Time
	seq           int
	ds            *demodata.Dataset
	// gone lists the ids hard-deleted per resource.
	gone map[consumer.Resource][]string
}

func faultNewLacking(t testing.TB, seed uint64, noUpdatedAt bool, front func(http.Handler) http.Handler) *faultLacking {
	t.Helper()
	ds, err := demodata.Generate(demodata.Config{Seed: seed, Conversations: 120, Tenant: faultTenant})
	require.NoError(t, err)
	p := &faultLacking{
		src: &faultSliceSource{
			convs: map[string]spec.Conversation{}, assts: map[string]spec.Assistant{}, events: map[string]spec.Event{},
		},
		noUpdatedAt: noUpdatedAt,
		rng:         rand.New(rand.NewPCG(seed, 99)),
		clock:       demodata.DefaultEnd,
		ds:          ds,
		gone:        map[consumer.Resource][]string{},
	}
	for _, c := range ds.FinalConversations() {
		p.putConv(c)
	}
	for _, a := range ds.Assistants {
		p.putAssistant(a)
	}
	for _, e := range ds.Events {
		p.src.events[e.ID] = e
	}
	h, err := provider.NewHandler(p.src, provider.WithTokens(provider.Token{Secret: faultToken, Tenant: faultTenant}))
	require.NoError(t, err)
	p.direct = httptest.NewServer(h)
	t.Cleanup(p.direct.Close)
	p.front = httptest.NewServer(front(h))
	t.Cleanup(p.front.Close)
	return p
}

func (p *faultLacking) putConv(c spec.Conversation) {
	if p.noUpdatedAt {
		c.UpdatedAt = spec.Time{}
	}
	p.src.convs[c.ID] = c
}

func (p *faultLacking) putAssistant(a spec.Assistant) {
	if p.noUpdatedAt {
		a.UpdatedAt = spec.Time{}
	}
	p.src.assts[a.ID] = a
}

func (p *faultLacking) tick() time.Time {
	p.clock = p.clock.Add(time.Duration(1+p.rng.IntN(20)) * time.Second)
	return p.clock
}

// pick returns n distinct random keys of m, in a random order, keeping
// those keep accepts.
func faultPick[T any](rng *rand.Rand, m map[string]T, n int, keep func(T) bool) []string {
	var ids []string
	for id, v := range m {
		if keep == nil || keep(v) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids[:min(n, len(ids))]
}

// mutate changes the provider: conversations updated, deleted as
// tombstones, hard-deleted and inserted (some sharing one updatedAt, or
// startedAt without updatedAt); assistants updated, hard-deleted and
// inserted; events appended and, when hardDeleteEvents, hard-deleted.
func (p *faultLacking) mutate(hardDeleteEvents bool) {
	s := p.src
	s.mu.Lock()
	defer s.mu.Unlock()
	live := func(c spec.Conversation) bool { return !c.Deleted() }
	for _, id := range faultPick(p.rng, s.convs, 10, live) {
		c := s.convs[id]
		p.seq++
		c.Metadata = json.RawMessage(fmt.Sprintf(`{"faultRevision":%d}`, p.seq))
		c.UpdatedAt = spec.NewTime(p.tick())
		p.putConv(c)
	}
	for _, id := range faultPick(p.rng, s.convs, 5, live) {
		at := p.tick()
		p.putConv(provider.TombstoneOf(s.convs[id], at))
	}
	for _, id := range faultPick(p.rng, s.convs, 8, nil) {
		delete(s.convs, id)
		p.gone[consumer.Conversations] = append(p.gone[consumer.Conversations], id)
	}
	at := p.tick()
	for i := range 12 {
		c := p.ds.Conversations[p.rng.IntN(len(p.ds.Conversations))]
		p.seq++
		c.ID = fmt.Sprintf("fault-c-%05d", p.seq)
		c.ConversationID = ""
		c.StartedAt = spec.NewTime(at.Add(-time.Hour))
		c.UpdatedAt = spec.NewTime(at)
		if i%3 == 0 { // not every new record shares the instant
			c.StartedAt = spec.NewTime(p.tick())
			c.UpdatedAt = c.StartedAt
		}
		p.putConv(c)
	}
	for _, id := range faultPick(p.rng, s.assts, 2, nil) {
		a := s.assts[id]
		p.seq++
		a.Description = fmt.Sprintf("Revision %d", p.seq)
		a.UpdatedAt = spec.NewTime(p.tick())
		p.putAssistant(a)
	}
	for _, id := range faultPick(p.rng, s.assts, 2, nil) {
		delete(s.assts, id)
		p.gone[consumer.Assistants] = append(p.gone[consumer.Assistants], id)
	}
	at = p.tick()
	for range 3 {
		a := p.ds.Assistants[p.rng.IntN(len(p.ds.Assistants))]
		p.seq++
		a.ID = fmt.Sprintf("fault-a-%04d", p.seq)
		a.CreatedAt, a.UpdatedAt = spec.NewTime(at), spec.NewTime(at)
		p.putAssistant(a)
	}
	at = p.tick()
	for range 6 {
		e := p.ds.Events[p.rng.IntN(len(p.ds.Events))]
		p.seq++
		e.ID = fmt.Sprintf("fault-e-%06d", p.seq)
		e.OccurredAt = spec.NewTime(at)
		s.events[e.ID] = e
	}
	if hardDeleteEvents {
		for _, id := range faultPick(p.rng, s.events, 4, nil) {
			delete(s.events, id)
			p.gone[consumer.Events] = append(p.gone[consumer.Events], id)
		}
	}
}

// faultIgnoreFilters is a provider that ignores updatedSince and
// occurredAfter.
func faultIgnoreFilters(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		q.Del("updatedSince")
		q.Del("occurredAfter")
		r = r.Clone(r.Context())
		r.URL.RawQuery = q.Encode()
		r.RequestURI = r.URL.RequestURI()
		h.ServeHTTP(w, r)
	})
}

// faultNoCursors is a provider without pagination: a list answers every
// record at once, {"data":[...]}, with neither hasMore nor nextCursor. It
// walks the real handler's pages itself.
func faultNoCursors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/conversations", "/assistants", "/events":
		default:
			h.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		q.Del("cursor")
		q.Set("limit", "1000")
		var records []json.RawMessage
		for {
			in := r.Clone(r.Context())
			in.URL.RawQuery = q.Encode()
			in.RequestURI = in.URL.RequestURI()
			in.Header.Del("Accept-Encoding")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, in)
			if rec.Code != http.StatusOK {
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				_, _ = w.Write(rec.Body.Bytes())
				return
			}
			var env struct {
				Data       []json.RawMessage `json:"data"`
				HasMore    bool              `json:"hasMore"`
				NextCursor string            `json:"nextCursor"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			records = append(records, env.Data...)
			if !env.HasMore {
				break
			}
			q.Set("cursor", env.NextCursor)
		}
		var b bytes.Buffer
		b.WriteString(`{"data":[`)
		for i, rec := range records {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(rec)
		}
		b.WriteString("]}\n")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b.Bytes())
	})
}

// faultCheckLacking syncs p three times, with a round of changes (hard
// deletes included) before the second and the third, and checks after each
// sync that the copy equals the provider, that hard-deleted records are
// kept but marked missing, and that the status names the lacking feature
// for the resources in reasons.
func faultCheckLacking(t *testing.T, noUpdatedAt bool, front func(http.Handler) http.Handler, hardDeleteEvents bool, reasons map[consumer.Resource]string) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		p := faultNewLacking(t, 5, noUpdatedAt, front)
		store, err := sqlstore.New(ctx, db.DB, sqlstore.Dialect(db.Dialect))
		require.NoError(t, err)
		t.Cleanup(func() { _ = store.Close() })
		lists := []consumer.Resource{consumer.Conversations, consumer.Assistants, consumer.Events}
		client := faultClient(t, p.front.URL)
		poller, err := consumer.NewPoller(client, store, &consumer.Config{
			Source: faultSource, Owner: "fault-poller", PageSize: 9, Resources: lists,
			Now: func() time.Time { return faultNow },
		})
		require.NoError(t, err)
		direct := faultClient(t, p.direct.URL)
		// lastServed holds the provider's records as of the sync before,
		// by id: what a hard-deleted record must still be kept as.
		lastServed := map[consumer.Resource]map[string]json.RawMessage{}
		for round := range 3 {
			if round > 0 {
				p.mutate(hardDeleteEvents)
			}
			_, err := poller.SyncOnce(ctx)
			require.NoError(t, err, "sync %d", round+1)
			status, err := store.Status(ctx)
			require.NoError(t, err)
			require.Len(t, status, len(lists))
			for i, r := range lists {
				want := faultList(t, ctx, direct, r, consumer.Query{Limit: 1000})
				if !faultSame(t, r, fmt.Sprintf("sync %d: export", round+1), want, faultExport(t, ctx, store, faultSource, r, false)) {
					continue
				}
				// With missing records: the provider's and every
				// hard-deleted one, as last served.
				gone := p.gone[r]
				withMissing := map[string]json.RawMessage{}
				for _, raw := range faultExport(t, ctx, store, faultSource, r, true) {
					k, _ := faultKeyOf(r, raw)
					withMissing[k] = raw
				}
				require.Len(t, withMissing, len(want)+len(gone), "sync %d: %s with missing records", round+1, r)
				for _, raw := range want {
					k, _ := faultKeyOf(r, raw)
					require.JSONEq(t, string(raw), string(withMissing[k]), "sync %d: %s %s", round+1, r, k)
				}
				for _, id := range gone {
					raw, ok := withMissing[id]
					require.True(t, ok, "sync %d: hard-deleted %s %s was dropped, not marked missing", round+1, r, id)
					if prev, ok := lastServed[r][id]; ok {
						require.Equal(t, string(prev), string(raw), "sync %d: hard-deleted %s %s", round+1, r, id)
					}
				}
				if lastServed[r] == nil {
					lastServed[r] = map[string]json.RawMessage{}
				}
				for _, raw := range want {
					k, _ := faultKeyOf(r, raw)
					lastServed[r][k] = raw
				}

				st := status[i]
				require.Equal(t, r, st.Resource)
				require.EqualValues(t, len(want), st.Records, "sync %d: %s records", round+1, r)
				require.EqualValues(t, len(gone), st.Missing, "sync %d: %s missing", round+1, r)
				require.Zero(t, st.Quarantined, "sync %d: %s quarantined", round+1, r)
				require.False(t, st.Checkpoint.InProgress)
				reason, lacking := reasons[r]
				if lacking && round > 0 {
					require.True(t, st.Checkpoint.NeedsFull, "sync %d: %s: the lacking feature went unnoticed", round+1, r)
					require.Contains(t, st.Checkpoint.NeedsFullReason, reason, "sync %d: %s", round+1, r)
				}
				if !lacking {
					require.False(t, st.Checkpoint.NeedsFull, "sync %d: %s: %s", round+1, r, st.Checkpoint.NeedsFullReason)
				}
			}
		}
	})
}

// TestFaultProviderIgnoringUpdatedSince: a provider that ignores
// updatedSince and occurredAfter is detected (it answers records older than
// the filter) and then copied by full re-pulls, hard deletes included.
func TestFaultProviderIgnoringUpdatedSince(t *testing.T) {
	faultCheckLacking(t, false, faultIgnoreFilters, true, map[consumer.Resource]string{
		consumer.Conversations: "ignores", consumer.Assistants: "ignores", consumer.Events: "ignores",
	})
}

// TestFaultProviderWithoutCursors: a provider that answers a whole list at
// once, without hasMore and nextCursor, is copied exactly.
func TestFaultProviderWithoutCursors(t *testing.T) {
	faultCheckLacking(t, false, faultNoCursors, true, map[consumer.Resource]string{
		consumer.Conversations: "paginate", consumer.Assistants: "paginate", consumer.Events: "paginate",
	})
}

// TestFaultProviderWithoutUpdatedAt: records without updatedAt, listed in
// startedAt (createdAt) order, are copied exactly; events keep their
// incremental sync.
func TestFaultProviderWithoutUpdatedAt(t *testing.T) {
	faultCheckLacking(t, true, func(h http.Handler) http.Handler { return h }, false, map[consumer.Resource]string{
		consumer.Conversations: "updatedAt", consumer.Assistants: "updatedAt",
	})
}
