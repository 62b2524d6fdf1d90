package consumer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
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
	"github.com/aiusage/kit/internal/testkit/faultproxy"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// The fault tests run a real provider (provider.NewHandler over an
// in-memory source filled by demodata) behind a fault-injecting proxy, sync
// it into consumer/sqlstore on SQLite and PostgreSQL while the provider
// changes, and then compare the store's export with the provider's data byte
// for byte.

const (
	faultTenant = "acme"
	faultToken  = "fault-token-3f9c1e"
	faultSource = "acme-provider"
)

// faultNow is the consumer's clock: fixed, so that the usage window the
// poller collects is known. Provider writes of the tests are stamped from
// demodata.DefaultEnd on (see faultWorld.tick), before faultNow.
var faultNow = demodata.DefaultEnd.Add(24 * time.Hour)

// faultUsageRange is the range of usage buckets a poller with the default
// UsageBackfill (30 days) and granularity hour collects at faultNow.
func faultUsageRange() (from, end time.Time) {
	return faultNow.Add(-30 * 24 * time.Hour).Truncate(time.Hour), faultNow.Truncate(time.Hour).Add(time.Hour)
}

// faultWorld is a provider whose data the tests change as things would
// happen: conversations updated, deleted (tombstones) and inserted, many at
// one updatedAt; assistants updated and inserted; events and usage
// appended. Every write is stamped by a clock that only moves forward.
type faultWorld struct {
	t   testing.TB
	src *memsource.Source
	ds  *demodata.Dataset
	// srv serves the provider directly, without faults.
	srv *httptest.Server

	mu    sync.Mutex
	rng   *rand.Rand
	clock time.Time
	seq   int
	convs []string // every conversation id, tombstones included
	assts []string
	ops   map[string]int
	// tieAt is the updatedAt of a tie group written in part, or zero.
	tieAt time.Time
}

func faultNewWorld(t testing.TB, seed uint64, conversations int) *faultWorld {
	t.Helper()
	ds, err := demodata.Generate(demodata.Config{Seed: seed, Conversations: conversations, Tenant: faultTenant})
	require.NoError(t, err)
	src := memsource.New()
	// The same calls as demodata.Fill, with the dataset kept as templates.
	require.NoError(t, ds.Load(context.Background(), faultTenant, src))
	h, err := provider.NewHandler(src, provider.WithTokens(provider.Token{Secret: faultToken, Tenant: faultTenant}))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	w := &faultWorld{
		t: t, src: src, ds: ds, srv: srv,
		rng:   rand.New(rand.NewPCG(seed, seed^0x5eed)),
		clock: demodata.DefaultEnd,
		ops:   map[string]int{},
	}
	for _, c := range ds.Conversations {
		w.convs = append(w.convs, c.ID)
	}
	for _, a := range ds.Assistants {
		w.assts = append(w.assts, a.ID)
	}
	return w
}

// tick moves the provider's clock forward by a few seconds and returns it.
// The steps are small enough that the changes made during one walk (at most
// 20 of them, see TestFaultySyncCopiesExactly) move the clock by less than
// the consumer's lookback (5 minutes) minus the lateness of a late commit
// (see late): a record committed late is then always within the lookback
// of the next walk, whatever a walk in progress saw meanwhile.
func (w *faultWorld) tick() time.Time {
	w.clock = w.clock.Add(time.Duration(1+w.rng.IntN(10))*time.Second + time.Duration(w.rng.IntN(1000))*time.Millisecond)
	return w.clock
}

// late returns a time up to 40 seconds before the provider's clock, which
// it leaves as it is: the stamp of a record committed late.
func (w *faultWorld) late() time.Time {
	return w.clock.Add(-time.Duration(w.rng.IntN(40_000)) * time.Millisecond)
}

func (w *faultWorld) next() int {
	w.seq++
	return w.seq
}

func (w *faultWorld) check(what string, err error) {
	if err != nil {
		w.t.Errorf("provider write (%s): %v", what, err)
	}
}

// mutate applies n random changes. It is safe for concurrent use: the
// tests call it while a sync runs.
func (w *faultWorld) mutate(ctx context.Context, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for range n {
		switch x := w.rng.IntN(100); {
		case x < 24:
			w.updateConv(ctx, w.tick())
		case x < 32:
			w.deleteConv(ctx, w.tick())
		case x < 38:
			w.insertConv(ctx, w.tick())
		case x < 42:
			// Committed late: stamped before the newest record, well
			// within the consumer's lookback (5m).
			w.insertConv(ctx, w.late())
		case x < 50:
			w.tieGroup(ctx)
		case x < 58:
			w.updateAssistant(ctx)
		case x < 62:
			w.insertAssistants(ctx)
		case x < 72:
			w.appendEvents(ctx, w.tick())
		case x < 80:
			w.appendEvents(ctx, w.late())
		default:
			w.recordUsage(ctx)
		}
	}
}

func (w *faultWorld) pickConv(ctx context.Context) (spec.Conversation, bool) {
	for range 8 {
		id := w.convs[w.rng.IntN(len(w.convs))]
		c, err := w.src.GetConversation(ctx, faultTenant, id)
		w.check("get conversation", err)
		if err == nil && !c.Deleted() {
			return c, true
		}
	}
	return spec.Conversation{}, false
}

func (w *faultWorld) updateConv(ctx context.Context, at time.Time) {
	c, ok := w.pickConv(ctx)
	if !ok {
		return
	}
	c.Metadata = json.RawMessage(fmt.Sprintf(`{"faultRevision":%d,"note":"edited <&> by the fault test"}`, w.next()))
	c.Status = []string{"completed", "relabelled", "reviewed"}[w.rng.IntN(3)]
	c.UpdatedAt = spec.NewTime(at)
	w.check("update conversation", w.src.UpsertConversation(ctx, faultTenant, c))
	w.ops["conversation updated"]++
}

func (w *faultWorld) deleteConv(ctx context.Context, at time.Time) {
	c, ok := w.pickConv(ctx)
	if !ok {
		return
	}
	w.check("delete conversation", w.src.DeleteConversation(ctx, faultTenant, c.ID, at))
	w.ops["conversation deleted"]++
}

func (w *faultWorld) insertConv(ctx context.Context, at time.Time) {
	c := w.ds.Conversations[w.rng.IntN(len(w.ds.Conversations))] // shared values are not modified
	c.ID = fmt.Sprintf("fault-c-%05d", w.next())
	c.ConversationID = ""
	c.StartedAt = spec.NewTime(at.Add(-time.Duration(w.rng.IntN(3600)) * time.Second))
	c.UpdatedAt = spec.NewTime(at)
	c.DeletedAt = spec.Time{}
	w.check("insert conversation", w.src.UpsertConversation(ctx, faultTenant, c))
	w.convs = append(w.convs, c.ID)
	w.ops["conversation inserted"]++
}

// tieGroup writes many conversations with one updatedAt (a bulk relabel),
// some of them new, some deleted, so that the group spans several pages.
// Every other group is written in two batches, the second with the next
// change (as a bulk update committed in parts would), so that a sync may
// see part of the group.
func (w *faultWorld) tieGroup(ctx context.Context) {
	at := w.tick()
	if !w.tieAt.IsZero() && at.Sub(w.tieAt) < 40*time.Second { // as late as late()
		at, w.tieAt = w.tieAt, time.Time{}
	} else if w.rng.IntN(2) == 0 {
		w.tieAt = at
	}
	k := 8 + w.rng.IntN(24)
	done := map[string]bool{}
	for range k {
		switch x := w.rng.IntN(10); {
		case x < 2:
			w.insertConv(ctx, at)
		default:
			c, ok := w.pickConv(ctx)
			if !ok || done[c.ID] || c.UpdatedAt.After(at) {
				continue
			}
			done[c.ID] = true
			if x == 2 {
				w.check("delete conversation", w.src.DeleteConversation(ctx, faultTenant, c.ID, at))
				w.ops["conversation deleted"]++
				continue
			}
			c.Metadata = json.RawMessage(fmt.Sprintf(`{"faultRevision":%d,"bulk":true}`, w.next()))
			c.UpdatedAt = spec.NewTime(at)
			w.check("relabel conversation", w.src.UpsertConversation(ctx, faultTenant, c))
			w.ops["conversation updated"]++
		}
	}
	w.ops["tie group"]++
}

func (w *faultWorld) updateAssistant(ctx context.Context) {
	id := w.assts[w.rng.IntN(len(w.assts))]
	a, err := w.src.GetAssistant(ctx, faultTenant, id)
	w.check("get assistant", err)
	if err != nil {
		return
	}
	a.Description = fmt.Sprintf("Revision %d of the assistant, written by the fault test.", w.next())
	a.UpdatedAt = spec.NewTime(w.tick())
	w.check("update assistant", w.src.UpsertAssistant(ctx, faultTenant, a))
	w.ops["assistant updated"]++
}

func (w *faultWorld) insertAssistants(ctx context.Context) {
	at := w.tick()
	for range 1 + w.rng.IntN(4) {
		a := w.ds.Assistants[w.rng.IntN(len(w.ds.Assistants))]
		a.ID = fmt.Sprintf("fault-a-%04d", w.next())
		a.CreatedAt = spec.NewTime(at)
		a.UpdatedAt = spec.NewTime(at)
		w.check("insert assistant", w.src.UpsertAssistant(ctx, faultTenant, a))
		w.assts = append(w.assts, a.ID)
		w.ops["assistant inserted"]++
	}
}

// appendEvents appends a burst of events sharing one occurredAt.
func (w *faultWorld) appendEvents(ctx context.Context, at time.Time) {
	for range 1 + w.rng.IntN(6) {
		e := w.ds.Events[w.rng.IntN(len(w.ds.Events))]
		e.ID = fmt.Sprintf("fault-e-%06d", w.next())
		e.OccurredAt = spec.NewTime(at)
		w.check("append event", w.src.AppendEvent(ctx, faultTenant, e))
		w.ops["event appended"]++
	}
}

// recordUsage records requests within the trailing window that every sync
// re-pulls.
func (w *faultWorld) recordUsage(ctx context.Context) {
	for range 1 + w.rng.IntN(5) {
		u := w.ds.Usage[w.rng.IntN(len(w.ds.Usage))]
		u.ID = fmt.Sprintf("fault-u-%06d", w.next())
		u.At = faultNow.Add(-time.Duration(1+w.rng.IntN(45*3600)) * time.Second)
		u.InputTokens = 1 + w.rng.Int64N(8000)
		u.OutputTokens = 1 + w.rng.Int64N(2000)
		u.Cost = float64(w.rng.IntN(200000)) / 1e6
		w.check("record usage", w.src.RecordUsage(ctx, faultTenant, u))
		w.ops["usage recorded"]++
	}
}

// faultClient returns a consumer client without faults for baseURL.
func faultClient(t testing.TB, baseURL string) *consumer.Client {
	t.Helper()
	c, err := consumer.NewClient(consumer.ClientConfig{URL: baseURL, Token: faultToken, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	require.NoError(t, err)
	return c
}

// faultList walks every page of r that q selects and returns the records as
// received.
func faultList(t testing.TB, ctx context.Context, src consumer.Source, r consumer.Resource, q consumer.Query) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	seen := map[string]bool{}
	for {
		p, err := src.Fetch(ctx, r, q)
		require.NoError(t, err, "list %s", r)
		out = append(out, p.Records...)
		if !p.HasMore {
			return out
		}
		require.False(t, seen[p.NextCursor], "the provider repeated a cursor")
		seen[p.NextCursor] = true
		q.Cursor = p.NextCursor
	}
}

// faultProviderData returns the provider's records of r: all of them for
// conversations, assistants and events, the buckets of faultUsageRange
// (granularity hour, grouped by all four dimensions) for usage.
func faultProviderData(t testing.TB, ctx context.Context, c *consumer.Client, r consumer.Resource) []json.RawMessage {
	t.Helper()
	q := consumer.Query{Limit: 1000}
	if r == consumer.Usage {
		q.StartAt, q.EndAt = faultUsageRange()
		q.Granularity = spec.GranularityHour
		q.GroupBy = spec.Dimensions
	}
	return faultList(t, ctx, c, r, q)
}

// faultExport returns what the store exports for (source, r).
func faultExport(t testing.TB, ctx context.Context, s consumer.Store, source string, r consumer.Resource, includeMissing bool) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	require.NoError(t, s.Export(ctx, source, r, includeMissing, func(raw json.RawMessage) error {
		out = append(out, bytes.Clone(raw))
		return nil
	}))
	return out
}

// faultKeyOf returns what identifies a record of r (the id; a usage
// bucket's start and dimensions) and its sort time, for messages.
func faultKeyOf(r consumer.Resource, raw json.RawMessage) (key, at string) {
	var v struct {
		ID         string            `json:"id"`
		UpdatedAt  string            `json:"updatedAt"`
		StartedAt  string            `json:"startedAt"`
		OccurredAt string            `json:"occurredAt"`
		StartAt    string            `json:"startAt"`
		Dimensions map[string]string `json:"dimensions"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return "<not JSON: " + err.Error() + ">", ""
	}
	switch r {
	case consumer.Usage:
		d, _ := json.Marshal(v.Dimensions)
		return v.StartAt + " " + string(d), v.StartAt
	case consumer.Events:
		return v.ID, v.OccurredAt
	default:
		if v.UpdatedAt == "" {
			return v.ID, v.StartedAt + " (startedAt)"
		}
		return v.ID, v.UpdatedAt
	}
}

// faultSame checks that got holds exactly the records of want, in the same
// order and byte for byte, and explains the difference when not.
func faultSame(t testing.TB, r consumer.Resource, what string, want, got []json.RawMessage) bool {
	t.Helper()
	keys := func(list []json.RawMessage) ([]string, map[string]json.RawMessage, []string) {
		var order, dups []string
		m := map[string]json.RawMessage{}
		for _, raw := range list {
			k, _ := faultKeyOf(r, raw)
			if _, dup := m[k]; dup {
				dups = append(dups, k)
			}
			m[k] = raw
			order = append(order, k)
		}
		return order, m, dups
	}
	wantOrder, wantBy, wantDups := keys(want)
	gotOrder, gotBy, gotDups := keys(got)
	require.Empty(t, wantDups, "%s: the provider itself listed duplicates", what)
	ok := true
	if len(gotDups) > 0 {
		t.Errorf("%s: %d duplicate %s, e.g. %q", what, len(gotDups), r, gotDups[:min(5, len(gotDups))])
		ok = false
	}
	var lost, extra, differ []string
	for _, k := range wantOrder {
		g, found := gotBy[k]
		switch {
		case !found:
			_, at := faultKeyOf(r, wantBy[k])
			lost = append(lost, k+" @"+at)
		case !bytes.Equal(g, wantBy[k]):
			_, wat := faultKeyOf(r, wantBy[k])
			_, gat := faultKeyOf(r, g)
			differ = append(differ, fmt.Sprintf("%s (provider @%s, export @%s)", k, wat, gat))
		}
	}
	for _, k := range gotOrder {
		if _, found := wantBy[k]; !found {
			_, at := faultKeyOf(r, gotBy[k])
			extra = append(extra, k+" @"+at)
		}
	}
	if len(lost)+len(extra)+len(differ) > 0 {
		t.Errorf("%s: %d %s in the provider, %d exported: %d lost %q, %d extra %q, %d differ %q",
			what, len(want), r, len(got), len(lost), lost[:min(8, len(lost))], len(extra), extra[:min(8, len(extra))],
			len(differ), differ[:min(8, len(differ))])
		return false
	}
	if !slices.Equal(wantOrder, gotOrder) {
		for i := range wantOrder {
			if wantOrder[i] != gotOrder[i] {
				t.Errorf("%s: same %s, other order: first difference at %d: provider %q, export %q", what, r, i, wantOrder[i], gotOrder[i])
				break
			}
		}
		return false
	}
	return ok
}

// faultRetries records the retries of a client.
type faultRetries struct {
	mu       sync.Mutex
	byStatus map[int]int
	// badWaits lists 429 retries whose wait was not the capped Retry-After.
	badWaits []time.Duration
	cap      time.Duration
}

func (f *faultRetries) on(r consumer.Retry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byStatus[r.Status]++
	// The proxy's 429 says Retry-After 0 or 1 (seconds), capped at
	// MaxRetryAfter: the wait is one of the two, never a backoff.
	if r.Status == http.StatusTooManyRequests && r.Wait != 0 && r.Wait != f.cap {
		f.badWaits = append(f.badWaits, r.Wait)
	}
}

// faultFaults are the random faults of TestFaultySyncCopiesExactly: about
// one request in four fails.
var faultFaults = faultproxy.Faults{Error5xx: 0.08, RateLimit: 0.06, Reset: 0.05, Hang: 0.025, Truncate: 0.06}

// TestFaultySyncCopiesExactly syncs a provider through a hostile network
// (5xx, 429 with Retry-After, resets, hangs, bodies cut mid-JSON, a cursor
// rejected once) while the provider changes between and during syncs, then
// checks that the copy equals the provider's data exactly.
func TestFaultySyncCopiesExactly(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		start := time.Now()
		store, err := sqlstore.New(ctx, db.DB, sqlstore.Dialect(db.Dialect))
		require.NoError(t, err)
		t.Cleanup(func() { _ = store.Close() })

		// Other seeds per database, for a wider net; fixed, for
		// reproducible runs (but for the timing of concurrent requests).
		seed := uint64(7)
		if db.Dialect == sqldb.Postgres {
			seed = 8
		}
		w := faultNewWorld(t, seed, 300)
		target, err := url.Parse(w.srv.URL)
		require.NoError(t, err)
		proxy, err := faultproxy.Listen(faultproxy.Config{
			Target: target, Seed: int64(seed) + 4, Faults: faultFaults, HangFor: 2 * time.Second, RejectCursorOnce: true,
		})
		require.NoError(t, err)
		t.Cleanup(proxy.Close)

		const maxRetryAfter = 3 * time.Millisecond
		retries := &faultRetries{byStatus: map[int]int{}, cap: maxRetryAfter}
		client, err := consumer.NewClient(consumer.ClientConfig{
			URL: proxy.URL, Token: faultToken,
			Timeout:    250 * time.Millisecond, // a hang costs this much
			MaxRetries: 3,                      // low, so that some syncs fail and resume
			MinBackoff: time.Millisecond, MaxBackoff: 8 * time.Millisecond, MaxRetryAfter: maxRetryAfter,
			OnRetry: retries.on, Seed: seed,
		})
		require.NoError(t, err)
		kick := make(chan struct{}, 1)
		poller, err := consumer.NewPoller(client, store, &consumer.Config{
			Source: faultSource, Owner: "fault-poller", PageSize: 10,
			Now: func() time.Time { return faultNow },
			OnPage: func(consumer.PageProgress) {
				select {
				case kick <- struct{}{}:
				default:
				}
			},
		})
		require.NoError(t, err)

		var syncs, failed, restarts int
		allFaults := func() bool {
			s := proxy.Proxy.Stats()
			return s.Error5xx > 0 && s.RateLimit > 0 && s.Reset > 0 && s.Hang > 0 && s.Truncate > 0 && s.RejectCursor > 0
		}
		const minRounds, maxRounds = 5, 20
		for round := 0; round < minRounds || !allFaults(); round++ {
			require.Less(t, round, maxRounds, "the proxy did not inject every kind of fault: %+v", proxy.Proxy.Stats())
			if round > 0 {
				w.mutate(ctx, 40) // between syncs
			}
			// During the sync: a change after every committed page, up to a
			// budget, from a goroutine of its own.
			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for budget := 20; budget > 0; budget-- {
					select {
					case <-done:
						return
					case <-kick:
						w.mutate(ctx, 1)
					}
				}
			})
			for attempt := 1; ; attempt++ {
				res, err := poller.SyncOnce(ctx)
				syncs++
				for _, rr := range res.Resources {
					restarts += rr.Restarts
					require.Empty(t, rr.Skipped, "%s skipped", rr.Resource)
					require.False(t, rr.NeedsFull, "%s: a provider with every sync feature judged lacking: %s", rr.Resource, rr.Reason)
				}
				if err == nil {
					break
				}
				failed++
				t.Logf("round %d: sync %d failed, syncing again: %v", round, attempt, err)
				require.Less(t, attempt, 15, "the sync never succeeded")
			}
			close(done)
			wg.Wait()
		}

		// The final sync, on a quiet network.
		proxy.Proxy.SetFaults(faultproxy.Faults{})
		res, err := poller.SyncOnce(ctx)
		require.NoError(t, err, "the final sync without faults")
		for _, rr := range res.Resources {
			require.Empty(t, rr.Skipped)
		}

		direct := faultClient(t, w.srv.URL)
		for _, r := range consumer.Resources {
			want := faultProviderData(t, ctx, direct, r)
			require.NotEmpty(t, want)
			faultSame(t, r, "export", want, faultExport(t, ctx, store, faultSource, r, false))
			faultSame(t, r, "export with missing", want, faultExport(t, ctx, store, faultSource, r, true))
		}
		status, err := store.Status(ctx)
		require.NoError(t, err)
		require.Len(t, status, len(consumer.Resources))
		for _, st := range status {
			require.Equal(t, faultSource, st.Source)
			require.Zero(t, st.Missing, "%s: records marked missing", st.Resource)
			require.Zero(t, st.Quarantined, "%s: records quarantined", st.Resource)
			require.False(t, st.Checkpoint.InProgress, "%s: a walk still in progress", st.Resource)
			require.False(t, st.Checkpoint.NeedsFull, "%s: %s", st.Resource, st.Checkpoint.NeedsFullReason)
			require.Empty(t, st.Checkpoint.LastError, "%s", st.Resource)
		}
		var quarantined []string
		require.NoError(t, store.Quarantined(ctx, "", func(q consumer.Quarantine) error {
			quarantined = append(quarantined, q.ID+": "+q.Reason)
			return nil
		}))
		require.Empty(t, quarantined)

		// The faults really happened, and were retried.
		stats := proxy.Proxy.Stats()
		require.True(t, allFaults(), "%+v", stats)
		require.Equal(t, 1, stats.RejectCursor, "%+v", stats)
		require.GreaterOrEqual(t, restarts, 1, "no walk restarted after the rejected cursor")
		retries.mu.Lock()
		defer retries.mu.Unlock()
		var fiveXX int
		for status, n := range retries.byStatus {
			if status >= 500 {
				fiveXX += n
			}
		}
		require.Positive(t, retries.byStatus[http.StatusTooManyRequests], "no 429 retried: %v", retries.byStatus)
		require.Positive(t, fiveXX, "no 5xx retried: %v", retries.byStatus)
		require.Positive(t, retries.byStatus[0], "no network error or cut body retried: %v", retries.byStatus)
		require.Empty(t, retries.badWaits, "429 retries that did not wait the Retry-After (capped at %s)", maxRetryAfter)
		w.mu.Lock()
		ops := fmt.Sprint(w.ops)
		w.mu.Unlock()
		t.Logf("%d syncs (%d failed and resumed), %d walk restarts; proxy %+v; retries by status %v; provider changes %s; %s",
			syncs, failed, restarts, stats, retries.byStatus, ops, time.Since(start).Round(time.Millisecond))
	})
}

// faultSliceSource is a provider.DataSource over plain maps, with hard
// deletes (a record simply vanishes) and, when its records carry no
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
