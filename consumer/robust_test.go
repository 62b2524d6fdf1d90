package consumer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// fakeProvider serves /conversations (and /assistants, /events) from fixed
// JSON records, in order, paginated by offset cursors, with quirks.
type fakeProvider struct {
	mu      sync.Mutex
	records map[string][]string // by path
	// quirks
	noHasMore      bool // send nextCursor but never hasMore
	cursor404Once  bool // answer 404 to the first request with a cursor
	rejectFilter   bool // answer 400 to updatedSince / occurredAfter
	maxLimit       int  // answer 400 naming limit above this
	pageSize       int
	requests       []string
	answered404For bool
}

func (f *fakeProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.URL.RequestURI())
	problem := func(status int, field, detail string) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"about:blank","title":"x","status":%d,"detail":%q,"errors":[{"field":%q,"message":"bad"}]}`, status, detail, field)
	}
	recs, ok := f.records[r.URL.Path]
	if !ok {
		problem(http.StatusNotImplemented, "", "not offered")
		return
	}
	q := r.URL.Query()
	if f.rejectFilter && (q.Has("updatedSince") || q.Has("occurredAfter")) {
		problem(http.StatusBadRequest, "updatedSince", "unknown parameter")
		return
	}
	size := f.pageSize
	if l := q.Get("limit"); l != "" {
		n, _ := strconv.Atoi(l)
		if f.maxLimit > 0 && n > f.maxLimit {
			problem(http.StatusBadRequest, "limit", "at most "+strconv.Itoa(f.maxLimit))
			return
		}
		size = min(size, n)
	}
	off := 0
	if c := q.Get("cursor"); c != "" {
		if f.cursor404Once && !f.answered404For {
			f.answered404For = true
			problem(http.StatusGone, "cursor", "cursor expired")
			return
		}
		off, _ = strconv.Atoi(c)
	}
	end := min(off+size, len(recs))
	next := "null"
	if end < len(recs) {
		next = strconv.Quote(strconv.Itoa(end))
	}
	w.Header().Set("Content-Type", "application/json")
	if f.noHasMore {
		fmt.Fprintf(w, `{"data":[%s],"nextCursor":%s}`, strings.Join(recs[off:end], ","), next)
		return
	}
	fmt.Fprintf(w, `{"data":[%s],"hasMore":%t,"nextCursor":%s}`, strings.Join(recs[off:end], ","), end < len(recs), next)
}

func fakeConversations(n int, at time.Time) []string {
	var out []string
	for i := range n {
		ts := at.Add(time.Duration(i) * time.Second).Format("2006-01-02T15:04:05.000Z")
		out = append(out, fmt.Sprintf(`{"id":"c%03d","startedAt":%q,"updatedAt":%q}`, i, ts, ts))
	}
	return out
}

func syncFake(t *testing.T, f *fakeProvider, store consumer.Store, mut ...func(*consumer.Config)) consumer.Result {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := consumer.NewClient(consumer.ClientConfig{URL: srv.URL, MaxRetries: 1, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	require.NoError(t, err)
	cfg := &consumer.Config{Source: "fake", PageSize: 3, Resources: []consumer.Resource{consumer.Conversations}, Now: func() time.Time { return testEnd }}
	for _, m := range mut {
		m(cfg)
	}
	p, err := consumer.NewPoller(c, store, cfg)
	require.NoError(t, err)
	res, _ := p.SyncOnce(context.Background())
	return res
}

func TestProviderQuirks(t *testing.T) {
	t.Parallel()
	base := testEnd.Add(-time.Hour)
	cases := []struct {
		name  string
		fake  *fakeProvider
		check func(t *testing.T, res consumer.Result)
	}{
		{"nextCursor without hasMore", &fakeProvider{noHasMore: true}, nil},
		{"a cursor answered 410 once", &fakeProvider{cursor404Once: true}, func(t *testing.T, res consumer.Result) {
			require.Equal(t, 1, res.Resources[0].Restarts)
		}},
		{"filters refused with 400", &fakeProvider{rejectFilter: true}, nil},
		{"a smaller maximum page size", &fakeProvider{maxLimit: 2}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store, err := sqlstore.New(context.Background(), sqldbtest.Open(t, sqldb.SQLite).DB, sqlstore.SQLite)
			require.NoError(t, err)
			tc.fake.pageSize = 4
			tc.fake.records = map[string][]string{"/conversations": fakeConversations(10, base)}
			for round := range 2 {
				res := syncFake(t, tc.fake, store)
				require.NoError(t, res.Resources[0].Err, "round %d", round)
				require.Empty(t, res.Resources[0].Skipped)
				if tc.check != nil && round == 0 {
					tc.check(t, res)
				}
				require.Equal(t, tc.fake.records["/conversations"], exportAll(t, store, "fake", consumer.Conversations, false), "round %d", round)
				tc.fake.mu.Lock()
				tc.fake.records["/conversations"] = append(tc.fake.records["/conversations"], fakeConversations(12, base)[10+round])
				tc.fake.mu.Unlock()
			}
		})
	}
}

func TestHostileRecordsAreQuarantinedNotBlocking(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		store, err := sqlstore.New(context.Background(), db.DB, sqlstore.Dialect(db.Dialect))
		require.NoError(t, err)
		ts := testEnd.Add(-time.Hour).Format("2006-01-02T15:04:05.000Z")
		good := fmt.Sprintf(`{"id":"ok","startedAt":%q,"updatedAt":%q}`, ts, ts)
		long := fmt.Sprintf(`{"id":%q,"startedAt":%q,"updatedAt":%q}`, strings.Repeat("x", 3000), ts, ts)
		hour := testEnd.Add(-2 * time.Hour).Format("2006-01-02T15:04:05.000Z")
		hourEnd := testEnd.Add(-time.Hour).Format("2006-01-02T15:04:05.000Z")
		bucket := func(dept, metrics string) string {
			return fmt.Sprintf(`{"startAt":%q,"endAt":%q,"granularity":"hour","dimensions":{"model":"m","assistantId":"a","userId":"u","department":%q},"metrics":%s}`, hour, hourEnd, dept, metrics)
		}
		f := &fakeProvider{pageSize: 10, records: map[string][]string{
			"/conversations": {good, "null", long, `[1]`},
			"/usage": {
				bucket("ok", `{"requests":3,"cost":0.5}`),
				bucket(strings.Repeat("d", 3000), `{"requests":1}`),
				bucket("huge", `{"requests":9223372036854775807}`),
				bucket("frac", `{"inputTokens":1.5}`),
				bucket("rich", `{"cost":1e300}`),
			},
		}}
		res := syncFake(t, f, store, func(c *consumer.Config) {
			c.Resources = []consumer.Resource{consumer.Conversations, consumer.Usage}
			c.UsageBackfill = 24 * time.Hour
		})
		for _, r := range res.Resources {
			require.NoError(t, r.Err, r.Resource)
		}
		require.Equal(t, 1, res.Resources[0].Records)
		require.Equal(t, 3, res.Resources[0].Quarantined)
		require.Equal(t, 1, res.Resources[1].Records)
		require.Equal(t, 4, res.Resources[1].Quarantined)
		require.Equal(t, []string{good}, exportAll(t, store, "fake", consumer.Conversations, false))
	})
}

func TestMicrosecondTimestampsAreNotAnIgnoredFilter(t *testing.T) {
	t.Parallel()
	store, err := sqlstore.New(context.Background(), sqldbtest.Open(t, sqldb.SQLite).DB, sqlstore.SQLite)
	require.NoError(t, err)
	at := testEnd.Add(-time.Hour).Truncate(time.Second)
	rec := func(id string, d time.Duration) string {
		return fmt.Sprintf(`{"id":%q,"occurredAt":%q,"type":"x"}`, id, at.Add(d).Format("2006-01-02T15:04:05.000000Z"))
	}
	// A provider honouring occurredAfter exactly, at microsecond precision.
	all := []string{rec("e1", 456*time.Microsecond), rec("e2", 5*time.Minute+123*time.Microsecond)}
	f := &fakeProvider{pageSize: 10, records: map[string][]string{"/events": all}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.records["/events"] = all
		if oa := r.URL.Query().Get("occurredAfter"); oa != "" {
			after, _ := time.Parse(time.RFC3339Nano, oa)
			var keep []string
			for i, d := range []time.Duration{456 * time.Microsecond, 5*time.Minute + 123*time.Microsecond} {
				if at.Add(d).After(after) {
					keep = append(keep, all[i])
				}
			}
			f.records["/events"] = keep
		}
		f.mu.Unlock()
		f.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, err := consumer.NewClient(consumer.ClientConfig{URL: srv.URL})
	require.NoError(t, err)
	p, err := consumer.NewPoller(c, store, &consumer.Config{Source: "s", Resources: []consumer.Resource{consumer.Events},
		Now: func() time.Time { return testEnd }})
	require.NoError(t, err)
	for range 3 {
		res, err := p.SyncOnce(context.Background())
		require.NoError(t, err)
		require.False(t, res.Resources[0].NeedsFull, res.Resources[0].Reason)
	}
}

func TestFullEveryMarksHardDeletesMissing(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		store, err := sqlstore.New(context.Background(), db.DB, sqlstore.Dialect(db.Dialect))
		require.NoError(t, err)
		recs := fakeConversations(6, testEnd.Add(-time.Hour))
		f := &fakeProvider{pageSize: 4, records: map[string][]string{"/conversations": recs}}
		now := testEnd
		clock := func(c *consumer.Config) { c.Now = func() time.Time { return now } }
		res := syncFake(t, f, store, clock)
		require.Equal(t, 1, res.Resources[0].Full)
		f.mu.Lock()
		f.records["/conversations"] = append(append([]string{}, recs[:2]...), recs[3:]...) // c002 vanishes
		f.mu.Unlock()
		now = now.Add(time.Hour)
		res = syncFake(t, f, store, clock)
		require.Equal(t, 0, res.Resources[0].Full, "incremental within a day")
		require.Len(t, exportAll(t, store, "fake", consumer.Conversations, false), 6, "a hard delete is not seen incrementally")
		now = now.Add(24 * time.Hour)
		res = syncFake(t, f, store, clock)
		require.Equal(t, 1, res.Resources[0].Full, "a full re-pull once a day")
		require.Equal(t, f.records["/conversations"], exportAll(t, store, "fake", consumer.Conversations, false))
		require.Len(t, exportAll(t, store, "fake", consumer.Conversations, true), 6)
	})
}

func TestLeaseOfAKilledSyncIsTakenOver(t *testing.T) {
	t.Parallel()
	store, err := sqlstore.New(context.Background(), sqldbtest.Open(t, sqldb.SQLite).DB, sqlstore.SQLite)
	require.NoError(t, err)
	// A process of this host that has ended.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	require.NoError(t, cmd.Run())
	host, _ := os.Hostname()
	// The owner form of this host and pid namespace: host:pid:tag.random.
	own := consumer.DefaultOwnerForTest()
	tag, _, found := strings.Cut(own[strings.LastIndexByte(own, ':')+1:], ".")
	if !found {
		t.Skip("no pid namespace to tell processes apart on this system: leases only expire")
	}
	dead := fmt.Sprintf("%s:%d:%s.deadbeef", host, cmd.Process.Pid, tag)
	// The same dead pid in another pid namespace (another container with
	// the same host name) is not judged dead.
	elsewhere := fmt.Sprintf("%s:%d:000000000000.deadbeef", host, cmd.Process.Pid)
	ok, err := store.AcquireLease(context.Background(), consumer.Lease{Source: "fake", Resource: consumer.Events, Owner: elsewhere, Now: testEnd, Expires: testEnd.Add(time.Hour)})
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = store.AcquireLease(context.Background(), consumer.Lease{Source: "fake", Resource: consumer.Conversations, Owner: dead, Now: testEnd, Expires: testEnd.Add(time.Hour)})
	require.NoError(t, err)
	require.True(t, ok)
	// A live owner elsewhere is respected.
	ok, err = store.AcquireLease(context.Background(), consumer.Lease{Source: "fake", Resource: consumer.Assistants, Owner: "other-host:1:x", Now: testEnd, Expires: testEnd.Add(time.Hour)})
	require.NoError(t, err)
	require.True(t, ok)
	f := &fakeProvider{pageSize: 4, records: map[string][]string{"/conversations": fakeConversations(5, testEnd.Add(-time.Hour)), "/assistants": nil, "/events": nil}}
	res := syncFake(t, f, store, func(c *consumer.Config) {
		c.Resources = []consumer.Resource{consumer.Conversations, consumer.Assistants, consumer.Events}
	})
	require.Empty(t, res.Resources[0].Skipped)
	require.Equal(t, 5, res.Resources[0].Records)
	require.Contains(t, res.Resources[1].Skipped, "another poller (other-host:1:x) holds the lease until ")
	require.Contains(t, res.Resources[2].Skipped, "another poller ("+elsewhere+")", "a dead pid of another pid namespace")
}

func TestCursorOnEveryPageEndsOnAnEmptyPage(t *testing.T) {
	t.Parallel()
	store, err := sqlstore.New(context.Background(), sqldbtest.Open(t, sqldb.SQLite).DB, sqlstore.SQLite)
	require.NoError(t, err)
	ts := testEnd.Add(-time.Hour).Format("2006-01-02T15:04:05.000Z")
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		if r.URL.Query().Get("cursor") == "" {
			fmt.Fprintf(w, `{"data":[{"id":"a","startedAt":%q,"updatedAt":%q}],"nextCursor":"p2"}`, ts, ts)
			return
		}
		fmt.Fprintf(w, `{"data":[],"nextCursor":"p%d"}`, n) // a fresh cursor, and nothing more
	}))
	defer srv.Close()
	c, err := consumer.NewClient(consumer.ClientConfig{URL: srv.URL})
	require.NoError(t, err)
	p, err := consumer.NewPoller(c, store, &consumer.Config{Source: "s", Resources: []consumer.Resource{consumer.Conversations}})
	require.NoError(t, err)
	res, err := p.SyncOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, res.Resources[0].Records)
	require.Equal(t, 2, n, "the empty page ends the walk")
}

func TestUsageBucketsWithLongDimensionsOnEveryDatabase(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		store, err := sqlstore.New(context.Background(), db.DB, sqlstore.Dialect(db.Dialect))
		require.NoError(t, err)
		hour := testEnd.Add(-2 * time.Hour).Format("2006-01-02T15:04:05.000Z")
		hourEnd := testEnd.Add(-time.Hour).Format("2006-01-02T15:04:05.000Z")
		v := strings.Repeat("v", 256)
		ok := fmt.Sprintf(`{"startAt":%q,"endAt":%q,"granularity":"hour","dimensions":{"model":%q,"assistantId":%q,"userId":%q,"department":%q},"metrics":{"requests":1}}`, hour, hourEnd, v, v, v, v)
		big := fmt.Sprintf(`{"startAt":%q,"endAt":%q,"granularity":"hour","dimensions":{"model":%q,"assistantId":%q,"userId":%q,"department":%q},"metrics":{"requests":3000000000000000}}`, hour, hourEnd, "m", v, v, v)
		w := strings.Repeat("w", 500)
		wide := fmt.Sprintf(`{"startAt":%q,"endAt":%q,"granularity":"hour","dimensions":{"model":%q,"assistantId":%q,"userId":%q,"department":%q},"metrics":{"requests":1}}`, hour, hourEnd, w, w, w, w)
		f := &fakeProvider{pageSize: 10, records: map[string][]string{"/usage": {ok, big, wide}}}
		res := syncFake(t, f, store, func(c *consumer.Config) {
			c.Resources = []consumer.Resource{consumer.Usage}
			c.UsageBackfill = 24 * time.Hour
		})
		require.NoError(t, res.Resources[0].Err)
		require.Equal(t, 1, res.Resources[0].Records)
		require.Equal(t, 2, res.Resources[0].Quarantined)
	})
}
