package push_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/provider/push"
	"github.com/aiusage/kit/spec"
	"github.com/aiusage/kit/spec/webhook"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// receiver is a push receiver that verifies each delivery, answers the
// statuses of fail (by attempt number, then 200) and keeps the records of
// the deliveries it accepted, by resource and id.
type receiver struct {
	mu       sync.Mutex
	attempts map[string]int // by webhook-id
	fail     []int
	refuse   string // a resource answered 400 on every attempt
	records  map[string]map[string]json.RawMessage
	bad      []string
}

func newReceiver(fail ...int) *receiver {
	return &receiver{attempts: map[string]int{}, fail: fail, records: map[string]map[string]json.RawMessage{}}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := webhook.Verify(secret, r.Header, body, time.Now(), 0); err != nil {
		rc.bad = append(rc.bad, err.Error())
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	findings, err := spec.Validate("push-delivery", body)
	if err != nil || !spec.Valid(findings) {
		rc.bad = append(rc.bad, "invalid body")
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	id := r.Header.Get(webhook.HeaderID)
	n := rc.attempts[id]
	rc.attempts[id]++
	if n < len(rc.fail) {
		w.WriteHeader(rc.fail[n])
		return
	}
	var d spec.PushDelivery
	if err := json.Unmarshal(body, &d); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if d.Resource == rc.refuse {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if rc.records[d.Resource] == nil {
		rc.records[d.Resource] = map[string]json.RawMessage{}
	}
	for _, rec := range d.Records {
		var k struct {
			ID         string          `json:"id"`
			StartAt    string          `json:"startAt"`
			Dimensions json.RawMessage `json:"dimensions"`
		}
		_ = json.Unmarshal(rec, &k)
		key := k.ID
		if d.Resource == "usage" {
			key = k.StartAt + string(k.Dimensions)
		}
		rc.records[d.Resource][key] = rec
	}
}

func (rc *receiver) count(resource string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.records[resource])
}

func fill(t *testing.T, conversations int) *memsource.Source {
	t.Helper()
	src := memsource.New()
	require.NoError(t, demodata.Fill(t.Context(), demodata.Config{Seed: 7, Conversations: conversations}, demodata.DefaultTenant, src))
	return src
}

func config(db *sqldb.DB, src *memsource.Source, url string) push.Config {
	return push.Config{DatabaseURL: db.URL(), Source: src, Tenant: demodata.DefaultTenant, URL: url, Secret: secret,
		RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, PollInterval: 20 * time.Millisecond,
		UsageBackfill: demodata.Span + 24*time.Hour, Now: func() time.Time { return demodata.DefaultEnd }}
}

// run scans once, waits for every delivery and returns the outcome.
func run(t *testing.T, cfg push.Config) (push.ScanResult, push.Outcome) {
	t.Helper()
	ctx := t.Context()
	start := time.Now()
	p, err := push.New(ctx, cfg)
	require.NoError(t, err)
	defer p.Close()
	res, err := p.Scan(ctx)
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	o, err := p.Wait(wctx, start, 20*time.Millisecond)
	require.NoError(t, err)
	require.NoError(t, p.Stop(context.WithoutCancel(ctx)))
	return res, o
}

func TestPushDeliversEverythingThroughFailures(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		src := fill(t, 60)
		rc := newReceiver(http.StatusInternalServerError, http.StatusTooManyRequests, http.StatusServiceUnavailable)
		srv := httptest.NewServer(rc)
		defer srv.Close()
		res, o := run(t, config(db, src, srv.URL))
		require.Zero(t, o.GivenUp)
		require.Empty(t, rc.bad)
		for _, r := range spec.PushResources {
			require.Positive(t, res.Records[r], r)
			require.Equal(t, res.Records[r], rc.count(r), "%s: every record read arrives once", r)
		}
		// Every delivery was tried four times: three refusals, then 200.
		for id, n := range rc.attempts {
			require.Equal(t, 4, n, id)
		}

		// A second run finds nothing new but the usage of the open hours.
		res, o = run(t, config(db, src, srv.URL))
		require.Zero(t, o.GivenUp)
		require.Zero(t, res.Records["conversations"]+res.Records["assistants"]+res.Records["events"])

		// A conversation changed after the first run is pushed by the next.
		page, err := src.ListConversations(t.Context(), provider.ConversationQuery{Tenant: demodata.DefaultTenant, Limit: 1})
		require.NoError(t, err)
		c := page.Items[0]
		c.UpdatedAt = spec.NewTime(demodata.DefaultEnd.Add(time.Hour))
		c.Status = "changed"
		require.NoError(t, src.UpsertConversation(t.Context(), demodata.DefaultTenant, c))
		res, _ = run(t, config(db, src, srv.URL))
		require.Equal(t, 1, res.Records["conversations"])
		rc.mu.Lock()
		require.Contains(t, string(rc.records["conversations"][c.ID]), `"changed"`)
		rc.mu.Unlock()
	})
}

func TestPushGivesUpRefusedBodies(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		src := fill(t, 20)
		rc := newReceiver()
		rc.refuse = "events"
		srv := httptest.NewServer(rc)
		defer srv.Close()
		res, o := run(t, config(db, src, srv.URL))
		require.Equal(t, res.Deliveries["events"], o.GivenUp, "each refused delivery is given up at once")
		require.Zero(t, rc.count("events"))
		require.Equal(t, res.Records["conversations"], rc.count("conversations"))
	})
}

func TestPushGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		src := fill(t, 5)
		rc := newReceiver(500, 500, 500, 500)
		srv := httptest.NewServer(rc)
		defer srv.Close()
		cfg := config(db, src, srv.URL)
		cfg.MaxAttempts = 2
		cfg.Resources = []string{"assistants"}
		res, o := run(t, cfg)
		require.Equal(t, res.Deliveries["assistants"], o.GivenUp)
		for _, n := range rc.attempts {
			require.Equal(t, 2, n)
		}
	})
}

// TestPushSurvivesRestart queues deliveries with a pusher that never starts
// (a process that stopped after its scan); a new pusher on the same
// database sends them, and scans nothing again.
func TestPushSurvivesRestart(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		src := fill(t, 30)
		rc := newReceiver()
		srv := httptest.NewServer(rc)
		defer srv.Close()
		cfg := config(db, src, srv.URL)
		cfg.Resources = []string{"conversations"}
		p, err := push.New(t.Context(), cfg)
		require.NoError(t, err)
		first, err := p.Scan(t.Context())
		require.NoError(t, err)
		p.Close()
		require.Zero(t, rc.count("conversations"))

		res, o := run(t, cfg)
		require.Zero(t, res.Records["conversations"])
		require.Zero(t, o.GivenUp)
		require.Equal(t, first.Records["conversations"], rc.count("conversations"))
	})
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.SQLite)
	src := memsource.New()
	good := config(db, src, "http://127.0.0.1:1/push")
	for name, mod := range map[string]func(*push.Config){
		"no url":         func(c *push.Config) { c.URL = "" },
		"ftp url":        func(c *push.Config) { c.URL = "ftp://x/y" },
		"bad secret":     func(c *push.Config) { c.Secret = "whsec_short" },
		"no tenant":      func(c *push.Config) { c.Tenant = "" },
		"bad resource":   func(c *push.Config) { c.Resources = []string{"users"} },
		"negative":       func(c *push.Config) { c.MaxAttempts = -1 },
		"max below base": func(c *push.Config) { c.RetryBase, c.RetryMax = time.Minute, time.Second },
	} {
		cfg := good
		mod(&cfg)
		_, err := push.New(t.Context(), cfg)
		require.Error(t, err, name)
	}
}

// TestPushLookback commits a conversation late, behind the watermark: a scan
// with a lookback pushes it, a scan without leaves it (to reconciliation).
func TestPushLookback(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.SQLite)
	src := fill(t, 10)
	rc := newReceiver()
	srv := httptest.NewServer(rc)
	defer srv.Close()
	cfg := config(db, src, srv.URL)
	cfg.Resources = []string{"conversations"}
	first, _ := run(t, cfg)
	require.Equal(t, 10, first.Records["conversations"])

	page, err := src.ListConversations(t.Context(), provider.ConversationQuery{Tenant: demodata.DefaultTenant, Limit: 1000})
	require.NoError(t, err)
	last := page.Items[len(page.Items)-1]
	late := last
	late.ID = "conv_late"
	late.UpdatedAt = spec.NewTime(last.UpdatedAt.Add(-time.Minute))
	require.NoError(t, src.UpsertConversation(t.Context(), demodata.DefaultTenant, late))

	res, _ := run(t, cfg)
	require.Zero(t, res.Records["conversations"], "without a lookback the late record is behind the watermark")
	cfg.Lookback = 2 * time.Minute
	res, _ = run(t, cfg)
	require.Positive(t, res.Records["conversations"])
	require.Equal(t, 11, rc.count("conversations"))
	// The watermark did not move back: without the lookback, nothing again.
	cfg.Lookback = 0
	res, _ = run(t, cfg)
	require.Zero(t, res.Records["conversations"])
}
