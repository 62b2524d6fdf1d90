package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/conformance"
	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// testEnd is the end of the generated activity; the pollers' clock stands
// an hour later.
var testEnd = time.Now().UTC().Truncate(time.Hour)

// testProvider is a memsource provider served over HTTP.
type testProvider struct {
	src *memsource.Source
	srv *httptest.Server
}

func newTestProvider(t *testing.T, conversations int, wrap ...func(http.Handler) http.Handler) *testProvider {
	t.Helper()
	src := memsource.New()
	ctx := context.Background()
	for i, tenant := range []string{"acme", "other"} {
		require.NoError(t, demodata.Fill(ctx, demodata.Config{Seed: uint64(7 + i), Conversations: conversations / (1 + 9*i), Tenant: tenant, End: testEnd}, tenant, src))
	}
	h, err := provider.NewHandler(src, provider.WithTokens(
		provider.Token{Secret: "acme-token", Tenant: "acme"},
		provider.Token{Secret: "other-token", Tenant: "other"},
	))
	require.NoError(t, err)
	var handler http.Handler = h
	for _, w := range wrap {
		handler = w(handler)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return &testProvider{src: src, srv: srv}
}

func newTestClient(t *testing.T, url, token string) *consumer.Client {
	t.Helper()
	c, err := consumer.NewClient(consumer.ClientConfig{URL: url, Token: token, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	require.NoError(t, err)
	return c
}

func newTestPoller(t *testing.T, src consumer.Source, store consumer.Store, source string, mut ...func(*consumer.Config)) *consumer.Poller {
	t.Helper()
	cfg := &consumer.Config{Source: source, PageSize: 37, UsageBackfill: 61 * 24 * time.Hour, UsageWindow: 31 * 24 * time.Hour,
		Now: func() time.Time { return testEnd.Add(time.Hour) }}
	for _, m := range mut {
		m(cfg)
	}
	p, err := consumer.NewPoller(src, store, cfg)
	require.NoError(t, err)
	return p
}

// walkAll reads every record of r from src, as received, in order.
func walkAll(t *testing.T, src consumer.Source, r consumer.Resource, q consumer.Query) []string {
	t.Helper()
	var out []string
	for {
		p, err := src.Fetch(context.Background(), r, q)
		require.NoError(t, err)
		for _, rec := range p.Records {
			out = append(out, string(rec))
		}
		if !p.HasMore {
			return out
		}
		q.Cursor = p.NextCursor
	}
}

func exportAll(t *testing.T, store consumer.Store, source string, r consumer.Resource, missing bool) []string {
	t.Helper()
	var out []string
	require.NoError(t, store.Export(context.Background(), source, r, missing, func(b json.RawMessage) error {
		out = append(out, string(b))
		return nil
	}))
	return out
}

// requireCopy asserts the store holds exactly what the provider serves.
func requireCopy(t *testing.T, c *consumer.Client, store consumer.Store, source string) {
	t.Helper()
	for _, r := range []consumer.Resource{consumer.Conversations, consumer.Assistants, consumer.Events} {
		want := walkAll(t, c, r, consumer.Query{Limit: 1000})
		got := exportAll(t, store, source, r, false)
		require.Equal(t, len(want), len(got), "%s: record count", r)
		require.Equal(t, want, got, "%s: the export differs from the provider", r)
	}
	// Usage: the collected window, hour by hour, grouped by everything.
	var want []string
	end := testEnd.Add(time.Hour)
	for start := end.Add(-61 * 24 * time.Hour).Truncate(time.Hour); start.Before(end); start = start.Add(31 * 24 * time.Hour) {
		we := start.Add(31 * 24 * time.Hour)
		if we.After(end) {
			we = end
		}
		q := consumer.Query{StartAt: start, EndAt: we, Granularity: "hour", GroupBy: spec.Dimensions, Limit: 1000}
		want = append(want, walkAll(t, c, consumer.Usage, q)...)
	}
	got := exportAll(t, store, source, consumer.Usage, false)
	require.NotEmpty(t, want)
	require.Equal(t, want, got, "usage: the export differs from the provider")
}

func TestSyncCopiesAndFollowsChanges(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		prov := newTestProvider(t, 300)
		store, err := sqlstore.New(ctx, db.DB, sqlstore.Dialect(db.Dialect))
		require.NoError(t, err)
		client := newTestClient(t, prov.srv.URL, "acme-token")
		var pages int
		poller := newTestPoller(t, client, store, "acme", func(c *consumer.Config) {
			c.OnPage = func(consumer.PageProgress) { pages++ }
		})

		res, err := poller.SyncOnce(ctx)
		require.NoError(t, err)
		require.Len(t, res.Resources, 4)
		for _, r := range res.Resources {
			require.Empty(t, r.Skipped, r.Resource)
			require.Equal(t, r.Walks, r.Full, "%s: the first sync is a full pull", r.Resource)
			require.False(t, r.NeedsFull, r.Resource)
		}
		require.Equal(t, pages, res.Resources[0].Pages+res.Resources[1].Pages+res.Resources[2].Pages+res.Resources[3].Pages)
		requireCopy(t, client, store, "acme")

		// Change the provider: update, delete, insert; the next sync is
		// incremental and still ends with an exact copy.
		var convs []spec.Conversation
		for _, raw := range walkAll(t, client, consumer.Conversations, consumer.Query{Limit: 1000}) {
			var c spec.Conversation
			require.NoError(t, json.Unmarshal([]byte(raw), &c))
			convs = append(convs, c)
		}
		for i, c := range convs[:30] {
			switch i % 3 {
			case 0:
				c.Status = "edited"
				c.UpdatedAt = spec.Time{}
				require.NoError(t, prov.src.UpsertConversation(ctx, "acme", c))
			case 1:
				require.NoError(t, prov.src.DeleteConversation(ctx, "acme", c.ID, time.Time{}))
			case 2:
				c.ID = c.ID + "-new"
				c.UpdatedAt = spec.Time{}
				require.NoError(t, prov.src.UpsertConversation(ctx, "acme", c))
			}
		}
		res, err = poller.SyncOnce(ctx)
		require.NoError(t, err)
		conv := res.Resources[0]
		require.Equal(t, 0, conv.Full, "an incremental walk")
		// What changed, and what the 5-minute lookback reads again.
		require.GreaterOrEqual(t, conv.Records, 30)
		require.Less(t, conv.Records, 40, "only what changed is read again")
		requireCopy(t, client, store, "acme")

		st, err := store.Status(ctx)
		require.NoError(t, err)
		require.Len(t, st, 4)
		for _, s := range st {
			require.Equal(t, "acme", s.Source)
			require.False(t, s.Checkpoint.InProgress)
			require.False(t, s.Checkpoint.LastSuccess.IsZero())
			require.Empty(t, s.Checkpoint.LastError)
			require.Positive(t, s.Records)
		}
	})
}

// recordingSource remembers every query.
type recordingSource struct {
	consumer.Source
	mu      sync.Mutex
	queries map[consumer.Resource][]consumer.Query
}

func (r *recordingSource) Fetch(ctx context.Context, res consumer.Resource, q consumer.Query) (consumer.Page, error) {
	r.mu.Lock()
	if r.queries == nil {
		r.queries = map[consumer.Resource][]consumer.Query{}
	}
	r.queries[res] = append(r.queries[res], q)
	r.mu.Unlock()
	return r.Source.Fetch(ctx, res, q)
}

func TestIncrementalFiltersAndUsageWindows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prov := newTestProvider(t, 120)
	store, err := sqlstore.New(ctx, sqldbtest.Open(t, sqldb.SQLite).DB, sqlstore.SQLite)
	require.NoError(t, err)
	rec := &recordingSource{Source: newTestClient(t, prov.srv.URL, "acme-token")}
	now := testEnd.Add(time.Hour)
	poller := newTestPoller(t, rec, store, "acme", func(c *consumer.Config) { c.Lookback = time.Minute })
	_, err = poller.SyncOnce(ctx)
	require.NoError(t, err)
	for _, r := range []consumer.Resource{consumer.Conversations, consumer.Assistants, consumer.Events} {
		require.True(t, rec.queries[r][0].UpdatedSince.IsZero() && rec.queries[r][0].OccurredAfter.IsZero(), "%s: the first walk has no filter", r)
	}
	// Usage: windows of at most 31 days from 61 days back to the hour after now.
	u := rec.queries[consumer.Usage]
	require.Equal(t, now.Add(-61*24*time.Hour).Truncate(time.Hour), u[0].StartAt)
	require.Equal(t, now.Truncate(time.Hour).Add(time.Hour), u[len(u)-1].EndAt)
	for _, q := range u {
		require.LessOrEqual(t, q.EndAt.Sub(q.StartAt), 31*24*time.Hour)
		require.Equal(t, "hour", q.Granularity)
		require.Equal(t, spec.Dimensions, q.GroupBy)
	}

	cps := map[consumer.Resource]consumer.Checkpoint{}
	for _, r := range consumer.Resources {
		cps[r], err = store.Checkpoint(ctx, "acme", r)
		require.NoError(t, err)
	}
	rec.queries = nil
	_, err = poller.SyncOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, cps[consumer.Conversations].Watermark.Add(-time.Minute), rec.queries[consumer.Conversations][0].UpdatedSince)
	require.Equal(t, cps[consumer.Assistants].Watermark.Add(-time.Minute), rec.queries[consumer.Assistants][0].UpdatedSince)
	require.Equal(t, cps[consumer.Events].Watermark.Add(-time.Minute), rec.queries[consumer.Events][0].OccurredAfter)
	// Usage re-pulls the trailing 48 hours only.
	u = rec.queries[consumer.Usage]
	require.Len(t, u, 1)
	require.Equal(t, now.Add(-48*time.Hour), u[0].StartAt)
}

// servedRecords is a provider of one resource without any sync feature: a
// fixed list, answered whole.
type servedRecords struct {
	mu      sync.Mutex
	records []string
}

func (s *servedRecords) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path != "/conversations" {
		w.WriteHeader(http.StatusNotImplemented)
		_, _ = w.Write([]byte(`{"type":"about:blank","title":"Not Implemented","status":501}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"data":[%s]}`, strings.Join(s.records, ","))
}

func TestQuarantineKeepsUnknownAndRejectsInvalid(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		good := `{"id":"c1","startedAt":"2026-01-01T10:00:00.000Z","updatedAt":"2026-01-01T10:00:00.000Z","status":"novel-status","messages":[{"id":"m","role":"developer","content":"hi","createdAt":"2026-01-01T10:00:00.000Z"}],"vendorField":{"x":[1,2]}}`
		bad := `{"id":"c2","startedAt":"2026-01-01 10:00:00","updatedAt":"2026-01-01T10:00:01.000Z"}`
		fixed := `{"id":"c2","startedAt":"2026-01-01T10:00:00.000Z","updatedAt":"2026-01-01T10:00:02.000Z"}`
		nul := `{"id":"nul\u0000id","startedAt":"2026-01-01T10:00:00.000Z"}`
		notUTF8 := "{\"id\":\"bad\xff\",\"startedAt\":\"2026-01-01T10:00:00.000Z\"}"
		served := &servedRecords{records: []string{good, bad, `{"startedAt":"x"}`, nul, notUTF8}}
		srv := httptest.NewServer(served)
		defer srv.Close()
		store, err := sqlstore.New(ctx, db.DB, sqlstore.Dialect(db.Dialect))
		require.NoError(t, err)
		poller := newTestPoller(t, newTestClient(t, srv.URL, "t"), store, "s")
		res, err := poller.SyncOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, 4, res.Resources[0].Quarantined)
		require.Equal(t, 1, res.Resources[0].Records)
		for _, r := range res.Resources[1:] {
			require.Contains(t, r.Skipped, "does not offer", r.Resource)
		}
		require.True(t, res.Resources[0].NeedsFull)
		require.Equal(t, "the provider does not paginate with cursors", res.Resources[0].Reason)
		require.Equal(t, []string{good}, exportAll(t, store, "s", consumer.Conversations, false), "unknown members and enum values are kept as received")

		var qs []consumer.Quarantine
		require.NoError(t, store.Quarantined(ctx, "s", func(q consumer.Quarantine) error { qs = append(qs, q); return nil }))
		require.Len(t, qs, 4)
		byID := map[string]consumer.Quarantine{}
		for _, q := range qs {
			byID[q.ID] = q
		}
		require.Contains(t, byID["c2"].Reason, "/startedAt")
		require.Equal(t, bad, string(byID["c2"].JSON))
		for _, q := range qs {
			if q.Reason == "not valid UTF-8" {
				require.Equal(t, notUTF8, string(q.JSON), "kept byte for byte")
			}
		}

		served.mu.Lock()
		served.records = []string{good, fixed}
		served.mu.Unlock()
		_, err = poller.SyncOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{good, fixed}, exportAll(t, store, "s", consumer.Conversations, false))
		qs = nil
		require.NoError(t, store.Quarantined(ctx, "s", func(q consumer.Quarantine) error { qs = append(qs, q); return nil }))
		require.Len(t, qs, 3, "c2 left quarantine once valid")
		for _, q := range qs {
			require.True(t, strings.HasPrefix(q.ID, "sha256:"), q.ID)
		}
	})
}

func TestLeaseKeepsPollersApart(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		prov := newTestProvider(t, 60)
		store, err := sqlstore.New(ctx, db.DB, sqlstore.Dialect(db.Dialect))
		require.NoError(t, err)
		client := newTestClient(t, prov.srv.URL, "acme-token")
		now := testEnd.Add(time.Hour)
		ok, err := store.AcquireLease(ctx, consumer.Lease{Source: "acme", Resource: consumer.Events, Owner: "someone-else", Now: now, Expires: now.Add(time.Hour)})
		require.NoError(t, err)
		require.True(t, ok)
		res, err := newTestPoller(t, client, store, "acme").SyncOnce(ctx)
		require.NoError(t, err)
		require.Regexp(t, `^another poller \(someone-else\) holds the lease until \S+Z$`, res.Resources[2].Skipped)
		require.Positive(t, res.Resources[0].Records)

		// Two pollers at once: every resource is synced by one of them, and
		// the copy is exact.
		var wg sync.WaitGroup
		results := make([]consumer.Result, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := newTestPoller(t, client, store, "other-copy", func(c *consumer.Config) {
					c.Owner = fmt.Sprintf("p%d", i)
					c.Resources = []consumer.Resource{consumer.Conversations, consumer.Assistants}
				})
				r, err := p.SyncOnce(ctx)
				require.NoError(t, err)
				results[i] = r
			}()
		}
		wg.Wait()
		for _, r := range []consumer.Resource{consumer.Conversations, consumer.Assistants} {
			want := walkAll(t, client, r, consumer.Query{Limit: 1000})
			require.Equal(t, want, exportAll(t, store, "other-copy", r, false), r)
		}
	})
}

func TestCollectedViewPassesConformance(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		prov := newTestProvider(t, 300)
		store, err := sqlstore.New(ctx, db.DB, sqlstore.Dialect(db.Dialect))
		require.NoError(t, err)
		for _, tenant := range []string{"acme", "other"} {
			_, err := newTestPoller(t, newTestClient(t, prov.srv.URL, tenant+"-token"), store, tenant).SyncOnce(ctx)
			require.NoError(t, err)
		}
		h, err := provider.NewHandler(store, provider.WithTokens(
			provider.Token{Secret: "view", Tenant: "acme"},
			provider.Token{Secret: "view-nousage", Tenant: "acme", Scopes: []string{provider.ScopeConversations, provider.ScopeAssistants, provider.ScopeEvents}},
			provider.Token{Secret: "view-other", Tenant: "other"},
		))
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		defer srv.Close()
		conformance.Test(t, conformance.Config{BaseURL: srv.URL, Token: "view", UsagelessToken: "view-nousage", OtherTenantToken: "view-other", MaxRate: 5000})
	})
}
