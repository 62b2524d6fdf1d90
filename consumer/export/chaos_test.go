package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/export"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/faultproxy"
	"github.com/aiusage/kit/provider"
	pexport "github.com/aiusage/kit/provider/export"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// The chaos tests run a provider (memsource filled by demodata) that
// changes between the sets it exports with provider/export, break the
// export as a disk, a crash or a network would (a corrupt file, a lost
// increment, a set written without its manifest, 5xx answers and cut
// bodies), sync it into consumer/sqlstore on SQLite and PostgreSQL, and
// compare the store with the provider's data record for record.

const (
	tenant = "acme"
	token  = "chaos-token-7d1a"
	source = "acme-export"
)

type world struct {
	t   *testing.T
	src *memsource.Source
	ds  *demodata.Dataset
	x   *pexport.Exporter
	dir string
	// rest serves the provider's REST interface: the reference.
	rest *consumer.Client
	now  time.Time
	rng  *rand.Rand
	seq  int
	// firstSync is the clock of the first sync: the start of the usage the
	// store collects is 30 days before it.
	firstSync time.Time
	convs     []string
	assts     []string
}

func newWorld(t *testing.T, seed uint64, conversations int) *world {
	t.Helper()
	ds, err := demodata.Generate(demodata.Config{Seed: seed, Conversations: conversations, Tenant: tenant})
	require.NoError(t, err)
	w := &world{t: t, ds: ds, dir: t.TempDir(), now: demodata.DefaultEnd.Add(time.Hour), rng: rand.New(rand.NewPCG(seed, 99))}
	w.src = memsource.New(memsource.WithNow(func() time.Time { return w.now }))
	require.NoError(t, ds.Load(context.Background(), tenant, w.src))
	for _, c := range ds.Conversations {
		w.convs = append(w.convs, c.ID)
	}
	for _, a := range ds.Assistants {
		w.assts = append(w.assts, a.ID)
	}
	w.x, err = pexport.New(w.src, pexport.Config{Dir: w.dir, Tenant: tenant, Now: func() time.Time { return w.now }})
	require.NoError(t, err)
	h, err := provider.NewHandler(w.src, provider.WithTokens(provider.Token{Secret: token, Tenant: tenant}))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	w.rest, err = consumer.NewClient(consumer.ClientConfig{URL: srv.URL, Token: token})
	require.NoError(t, err)
	return w
}

func (w *world) tick() time.Time {
	w.now = w.now.Add(time.Duration(1+w.rng.IntN(20)) * time.Second)
	return w.now
}

func (w *world) next() int { w.seq++; return w.seq }

// mutate makes n changes as a vendor's users would: conversations edited,
// deleted (tombstones), inserted, some committed late (stamped up to 40s
// back); assistants edited and added; events and usage appended.
func (w *world) mutate(n int) {
	ctx := context.Background()
	t := w.t
	for range n {
		switch x := w.rng.IntN(100); {
		case x < 45:
			c, err := w.src.GetConversation(ctx, tenant, w.convs[w.rng.IntN(len(w.convs))])
			require.NoError(t, err)
			if c.Deleted() {
				continue
			}
			at := w.tick()
			if x < 10 {
				require.NoError(t, w.src.DeleteConversation(ctx, tenant, c.ID, at))
				continue
			}
			c.Metadata = json.RawMessage(fmt.Sprintf(`{"chaosRevision":%d,"note":"edited <&> by the chaos test"}`, w.next()))
			c.UpdatedAt = spec.NewTime(at)
			require.NoError(t, w.src.UpsertConversation(ctx, tenant, c))
		case x < 60:
			c := w.ds.Conversations[w.rng.IntN(len(w.ds.Conversations))]
			c.ID = fmt.Sprintf("chaos-c-%05d", w.next())
			c.ConversationID = ""
			at := w.tick()
			if x < 52 {
				at = at.Add(-time.Duration(w.rng.IntN(40_000)) * time.Millisecond) // committed late
			}
			c.StartedAt, c.UpdatedAt, c.DeletedAt = spec.NewTime(at.Add(-time.Minute)), spec.NewTime(at), spec.Time{}
			require.NoError(t, w.src.UpsertConversation(ctx, tenant, c))
			w.convs = append(w.convs, c.ID)
		case x < 70:
			a, err := w.src.GetAssistant(ctx, tenant, w.assts[w.rng.IntN(len(w.assts))])
			require.NoError(t, err)
			a.Description = fmt.Sprintf("Revision %d, written by the chaos test.", w.next())
			a.UpdatedAt = spec.NewTime(w.tick())
			require.NoError(t, w.src.UpsertAssistant(ctx, tenant, a))
		case x < 85:
			at := w.tick()
			for range 1 + w.rng.IntN(4) {
				e := w.ds.Events[w.rng.IntN(len(w.ds.Events))]
				e.ID = fmt.Sprintf("chaos-e-%06d", w.next())
				e.OccurredAt = spec.NewTime(at)
				require.NoError(t, w.src.AppendEvent(ctx, tenant, e))
			}
		default:
			u := w.ds.Usage[w.rng.IntN(len(w.ds.Usage))]
			u.ID = fmt.Sprintf("chaos-u-%06d", w.next())
			u.At = w.now.Add(-time.Duration(1+w.rng.IntN(40*3600)) * time.Second)
			u.Cost = float64(w.rng.IntN(200000)) / 1e6
			require.NoError(t, w.src.RecordUsage(ctx, tenant, u))
		}
	}
}

// publish moves the clock on and writes a set.
func (w *world) publish(k pexport.Kind) spec.ExportManifest {
	w.t.Helper()
	w.now = w.now.Add(time.Duration(1+w.rng.IntN(5)) * time.Minute)
	m, err := w.x.Write(context.Background(), k)
	require.NoError(w.t, err)
	return m
}

// keyOf identifies a record of r: its id, or a bucket's start and
// dimensions.
func keyOf(t *testing.T, r consumer.Resource, raw json.RawMessage) string {
	var v struct {
		ID         string          `json:"id"`
		StartAt    string          `json:"startAt"`
		Dimensions json.RawMessage `json:"dimensions"`
	}
	require.NoError(t, json.Unmarshal(raw, &v), "%s", raw)
	if r == consumer.Usage {
		return v.StartAt + " " + string(v.Dimensions)
	}
	return v.ID
}

// want returns the provider's records of r as REST serves them: all of
// them, and for usage the hourly buckets by every dimension from 30 days
// before the first sync to the end of the current hour.
func (w *world) want(r consumer.Resource) map[string]string {
	t := w.t
	q := consumer.Query{Limit: 1000}
	if r == consumer.Usage {
		q.StartAt = w.firstSync.Add(-30 * 24 * time.Hour).Truncate(time.Hour)
		q.EndAt = w.now.Truncate(time.Hour).Add(time.Hour)
		q.Granularity, q.GroupBy = spec.GranularityHour, spec.Dimensions
	}
	out := map[string]string{}
	for {
		p, err := w.rest.Fetch(context.Background(), r, q)
		require.NoError(t, err)
		for _, raw := range p.Records {
			out[keyOf(t, r, raw)] = string(raw)
		}
		if !p.HasMore {
			return out
		}
		q.Cursor = p.NextCursor
	}
}

// stored returns the store's records of r, failing on a record stored
// twice.
func stored(t *testing.T, s consumer.Store, r consumer.Resource) map[string]string {
	out := map[string]string{}
	require.NoError(t, s.Export(context.Background(), source, r, false, func(raw json.RawMessage) error {
		k := keyOf(t, r, raw)
		if _, dup := out[k]; dup {
			t.Errorf("%s %s stored twice", r, k)
		}
		out[k] = string(bytes.Clone(raw))
		return nil
	}))
	return out
}

// same reports, as test errors, how got differs from want.
func same(t *testing.T, what string, r consumer.Resource, want, got map[string]string) {
	t.Helper()
	var lost, extra, differ []string
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			lost = append(lost, k)
		case g != v:
			differ = append(differ, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(lost)+len(extra)+len(differ) > 0 {
		t.Errorf("%s: %s: %d in the provider, %d stored: lost %q, extra %q, differ %q", what, r, len(want), len(got),
			lost[:min(5, len(lost))], extra[:min(5, len(extra))], differ[:min(5, len(differ))])
	}
}

func (w *world) sameAll(what string, store consumer.Store) {
	w.t.Helper()
	for _, r := range consumer.Resources {
		same(w.t, what, r, w.want(r), stored(w.t, store, r))
	}
}

// syncer syncs the export into the store, repeating a sync that failed
// only for transient reasons (the faults of the network), and returns the
// last result.
type syncer struct {
	t      *testing.T
	poller *consumer.Poller
}

func (s syncer) sync() consumer.Result {
	s.t.Helper()
	var res consumer.Result
	for range 12 {
		var err error
		res, err = s.poller.SyncOnce(context.Background())
		if err == nil {
			return res
		}
		transient := true
		for _, rr := range res.Resources {
			if rr.Err != nil && !errors.Is(rr.Err, provider.ErrUnavailable) {
				transient = false
			}
		}
		if !transient {
			return res
		}
	}
	return res
}

func (s syncer) ok(what string) {
	s.t.Helper()
	res := s.sync()
	for _, rr := range res.Resources {
		require.NoError(s.t, rr.Err, "%s: %s", what, rr.Resource)
		require.Empty(s.t, rr.Skipped, "%s: %s", what, rr.Resource)
		require.Zero(s.t, rr.Quarantined, "%s: %s", what, rr.Resource)
	}
}

// newSyncer returns a poller of a new Source for url into store, with the
// world's clock.
func (w *world) newSyncer(store consumer.Store, exportURL string, pageSize int, onPage func(consumer.PageProgress)) syncer {
	tok := ""
	if strings.HasPrefix(exportURL, "http") {
		tok = token
	}
	src, err := export.New(export.Config{URL: exportURL, Token: tok, MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond})
	require.NoError(w.t, err)
	p, err := consumer.NewPoller(src, store, &consumer.Config{Source: source, PageSize: pageSize, Now: func() time.Time { return w.now }, OnPage: onPage})
	require.NoError(w.t, err)
	return syncer{t: w.t, poller: p}
}

// chaos is the scenario every transport runs.
func chaos(t *testing.T, w *world, store consumer.Store, exportURL string) {
	ctx := context.Background()
	sy := w.newSyncer(store, exportURL, 100, nil)

	// 1. A full set.
	w.publish(pexport.Full)
	w.firstSync = w.now
	sy.ok("first sync")
	w.sameAll("after the full set", store)

	// 2. Increments, one synced while the next is already out.
	w.mutate(40)
	w.publish(pexport.Auto)
	w.mutate(40)
	w.publish(pexport.Auto)
	sy.ok("sync of two increments")
	w.sameAll("after two increments", store)

	// 3. A corrupt file: the sync of conversations fails naming it, and
	// none of its records is applied; the other resources go on.
	before := w.want(consumer.Conversations)
	w.mutate(40)
	corrupt := w.publish(pexport.Auto)
	name := filepath.Join(w.dir, corrupt.ID, "conversations.ndjson.gz")
	good, err := os.ReadFile(name)
	require.NoError(t, err)
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0x40
	require.NoError(t, os.WriteFile(name, bad, 0o644))
	res := sy.sync()
	require.Equal(t, consumer.Conversations, res.Resources[0].Resource)
	convErr := res.Resources[0].Err
	require.Error(t, convErr)
	require.ErrorIs(t, convErr, export.ErrCorrupt)
	require.Contains(t, convErr.Error(), corrupt.ID+"/conversations.ndjson.gz")
	same(t, "after a corrupt file", consumer.Conversations, before, stored(t, store, consumer.Conversations))
	for _, rr := range res.Resources[1:] {
		require.NoError(t, rr.Err, "%s", rr.Resource)
	}
	require.NoError(t, os.WriteFile(name, good, 0o644)) // restored from the vendor's copy
	sy.ok("sync after the repair")
	w.sameAll("after the corrupt file was repaired", store)

	// 4. A lost increment: the chain stops before it, so the store stays
	// at the set before the gap, whatever follows; the next full set
	// brings it level.
	atGap := map[consumer.Resource]map[string]string{}
	w.mutate(40)
	lost := w.publish(pexport.Auto)
	for _, r := range []consumer.Resource{consumer.Conversations, consumer.Assistants, consumer.Events} {
		atGap[r] = w.want(r)
	}
	w.mutate(40)
	lostNext := w.publish(pexport.Auto)
	w.mutate(40)
	w.publish(pexport.Auto)
	// The set after the lost one goes missing; the index still lists it.
	require.NoError(t, os.Remove(filepath.Join(w.dir, lostNext.ID, spec.ExportManifestName)))
	sy.ok("sync over a gap")
	for r, want := range atGap {
		same(t, "over a gap, the store stays at the set before it ("+lost.ID+")", r, want, stored(t, store, r))
	}
	w.publish(pexport.Full)
	sy.ok("sync of the next full set")
	w.sameAll("after the full set that follows a gap", store)

	// 5. A set written without its manifest (the crash came before the
	// rename: files and a temporary manifest), and a manifest renamed but
	// not yet in the index: neither is read.
	w.mutate(40)
	pending := map[consumer.Resource]map[string]string{}
	for _, r := range []consumer.Resource{consumer.Conversations, consumer.Assistants, consumer.Events} {
		pending[r] = stored(t, store, r)
	}
	partial := w.publish(pexport.Auto)
	idx, err := os.ReadFile(filepath.Join(w.dir, spec.ExportIndexName))
	require.NoError(t, err)
	manifest := filepath.Join(w.dir, partial.ID, spec.ExportManifestName)
	require.NoError(t, os.Rename(manifest, filepath.Join(w.dir, partial.ID, ".manifest.json.4711.tmp")))
	sy.ok("sync beside a set without manifest")
	for r, want := range pending {
		same(t, "a set without manifest is not read", r, want, stored(t, store, r))
	}
	// The manifest is in place, but the index was not rewritten yet.
	require.NoError(t, os.Rename(filepath.Join(w.dir, partial.ID, ".manifest.json.4711.tmp"), manifest))
	var index spec.ExportIndex
	require.NoError(t, json.Unmarshal(idx, &index))
	index.Sets = index.Sets[:len(index.Sets)-1]
	b, err := json.Marshal(index)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, spec.ExportIndexName), b, 0o644))
	sy.ok("sync beside a set missing from the index")
	for r, want := range pending {
		same(t, "a set the index does not list is not read", r, want, stored(t, store, r))
	}
	w.mutate(20)
	w.publish(pexport.Auto) // rewrites the index from the manifests on disk
	sy.ok("sync after the next set")
	w.sameAll("after the interrupted publication", store)

	// 6. A sync killed after its first pages resumes from its checkpoint
	// with a new Source and poller: nothing lost, nothing twice.
	w.mutate(120)
	w.publish(pexport.Full)
	kctx, cancel := context.WithCancel(ctx)
	pages := 0
	killed := w.newSyncer(store, exportURL, 7, func(consumer.PageProgress) {
		if pages++; pages == 3 {
			cancel()
		}
	})
	_, err = killed.poller.SyncOnce(kctx)
	require.ErrorIs(t, err, context.Canceled)
	w.newSyncer(store, exportURL, 7, nil).ok("resumed sync")
	w.sameAll("after a killed and resumed sync", store)

	// 7. Pruned sets: the walk starts from the latest full set.
	_, err = w.x.Prune(time.Minute)
	require.NoError(t, err)
	w.mutate(20)
	w.publish(pexport.Auto)
	sy.ok("sync after pruning")
	w.sameAll("after pruning", store)
}

func openStore(t *testing.T, db *sqldb.DB) *sqlstore.Store {
	store, err := sqlstore.New(context.Background(), db.DB, sqlstore.Dialect(db.Dialect))
	require.NoError(t, err)
	return store
}

func TestChaosDirectory(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		w := newWorld(t, 11, 120)
		chaos(t, w, openStore(t, db), w.dir)
	})
}

// TestChaosHTTP serves the export directory over HTTP behind a proxy that
// answers 5xx, resets connections and cuts bodies, and runs the same
// scenario; every fault is retried, and a corrupt file still fails after
// its retries.
func TestChaosHTTP(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		w := newWorld(t, 12, 120)
		files := http.FileServer(http.Dir(w.dir))
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+token {
				http.Error(rw, "unauthorized", http.StatusUnauthorized)
				return
			}
			files.ServeHTTP(rw, r)
		}))
		t.Cleanup(srv.Close)
		target, err := url.Parse(srv.URL)
		require.NoError(t, err)
		proxy, err := faultproxy.Listen(faultproxy.Config{Target: target, Seed: 5,
			Faults: faultproxy.Faults{Error5xx: 0.1, Reset: 0.05, Truncate: 0.1}})
		require.NoError(t, err)
		t.Cleanup(proxy.Close)
		chaos(t, w, openStore(t, db), proxy.URL+"/")
		stats := proxy.Proxy.Stats()
		require.Positive(t, stats.Faulted(), "the proxy faulted requests")
		t.Logf("proxy: %+v", stats)
	})
}

func TestHTTPTokenRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		http.Error(rw, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	src, err := export.New(export.Config{URL: srv.URL, Token: "wrong"})
	require.NoError(t, err)
	_, err = src.Fetch(context.Background(), consumer.Conversations, consumer.Query{})
	require.ErrorIs(t, err, provider.ErrUnauthorized)
	require.True(t, strings.Contains(err.Error(), "index.json"), err.Error())
}

// TestChaosRandomRounds runs rounds of changes, sets and faults drawn at
// random (a corrupt file repaired later, a lost increment, a sync killed
// after a few pages, pruning, a full set now and then), syncing after
// each; nothing is ever stored twice, and once the provider writes a full
// set and the files are whole again, the store equals the provider.
func TestChaosRandomRounds(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		seed := uint64(21)
		if db.Dialect == sqldb.Postgres {
			seed = 22
		}
		w := newWorld(t, seed, 80)
		store := openStore(t, db)
		rng := rand.New(rand.NewPCG(seed, 7))
		sy := w.newSyncer(store, w.dir, 1+rng.IntN(60), nil)
		w.publish(pexport.Full)
		w.firstSync = w.now
		sy.ok("first sync")
		type repair struct {
			name string
			good []byte
		}
		var broken []repair
		for round := range 15 {
			w.mutate(10 + rng.IntN(40))
			k := pexport.Auto
			if rng.IntN(6) == 0 {
				k = pexport.Full
			}
			m := w.publish(k)
			switch x := rng.IntN(10); {
			case x < 2: // a file of the new set corrupt
				f := m.Files[rng.IntN(len(m.Files))]
				name := filepath.Join(w.dir, m.ID, f.Path)
				good, err := os.ReadFile(name)
				require.NoError(t, err)
				bad := bytes.Clone(good)
				bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
				require.NoError(t, os.WriteFile(name, bad, 0o644))
				broken = append(broken, repair{name, good})
			case x < 3 && m.Kind == spec.ExportIncrement: // the new increment lost
				require.NoError(t, os.Remove(filepath.Join(w.dir, m.ID, spec.ExportManifestName)))
			case x < 5: // a sync killed after a few pages
				ctx, cancel := context.WithCancel(context.Background())
				pages, stop := 0, 1+rng.IntN(4)
				killed := w.newSyncer(store, w.dir, 1+rng.IntN(30), func(consumer.PageProgress) {
					if pages++; pages == stop {
						cancel()
					}
				})
				_, _ = killed.poller.SyncOnce(ctx)
				cancel()
			case x < 6:
				_, err := w.x.Prune(time.Duration(1+rng.IntN(30)) * time.Minute)
				require.NoError(t, err)
			}
			res := sy.sync() // may fail on a corrupt file: the next rounds go on
			for _, rr := range res.Resources {
				if rr.Err != nil {
					require.ErrorIs(t, rr.Err, export.ErrCorrupt, "round %d: %s", round, rr.Resource)
				}
			}
			for _, r := range consumer.Resources {
				stored(t, store, r) // fails on a record stored twice
			}
			if len(broken) > 0 && rng.IntN(3) == 0 {
				for _, b := range broken {
					require.NoError(t, os.WriteFile(b.name, b.good, 0o644))
				}
				broken = nil
			}
		}
		for _, b := range broken {
			require.NoError(t, os.WriteFile(b.name, b.good, 0o644))
		}
		w.mutate(20)
		w.publish(pexport.Full)
		sy.ok("the last sync")
		w.sameAll("after random rounds", store)
	})
}
