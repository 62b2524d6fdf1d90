package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
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
