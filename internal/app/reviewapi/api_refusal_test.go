package reviewapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/servicetest"
)

// holdDatabase takes every connection db's pool may open (it allows one
// from now on, and the test holds it), so that any query made until release
// waits until its context ends. It shows that a request answered meanwhile
// made no query at all.
func holdDatabase(t testing.TB, db *sqldb.DB) (release func()) {
	t.Helper()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return db.Stats().OpenConnections == 1 }, 10*time.Second, time.Millisecond,
		"connections of the pool still open: %+v", db.Stats())
	return func() {
		_ = conn.Close()
		db.SetMaxOpenConns(0)
	}
}

// TestAPIRefusalsMakeNoQuery: one organisation's clients refused with 429
// (too many in flight, or over the hourly limit) made a database round trip
// or three each (the key's lookup, the organisation, the rate-limit buckets;
// the hourly refusal in a write transaction), so a flood of refusals queued
// other organisations' requests behind it at the database. A refusal now
// makes none: the key's verification and the organisation's rate state are
// kept in the process for a few seconds. The test holds every connection of
// the pool, so a refusal that still made a query would wait for one until
// its client gave up.
func TestAPIRefusalsMakeNoQuery(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		lim := httpx.NewLimiter(1, 0)
		h := startHarness(t, db, func(c *reviewapi.Config) { c.Concurrency = lim })
		busy := h.newTenant("Busy", org.PlanBusiness, 0)
		limited := h.newTenant("Limited", org.PlanEnterprise, 1)

		client := &http.Client{Timeout: 5 * time.Second}
		send := func(path, key string) *http.Response {
			t.Helper()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, h.url+path, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := client.Do(req)
			require.NoError(t, err, "GET %s: a refusal that waits for the database is not cheap", path)
			resp.Body.Close()
			return resp
		}
		// Answered once each: the key is verified, the rate state read.
		require.Equal(t, http.StatusOK, send("/webhooks", busy.key).StatusCode)
		require.Equal(t, http.StatusOK, send("/organisations", busy.key).StatusCode)
		require.Equal(t, http.StatusOK, send("/webhooks", limited.key).StatusCode)
		require.Equal(t, http.StatusTooManyRequests, send("/webhooks", limited.key).StatusCode)

		// The busy key's one slot in flight is taken.
		inFlight, err := lim.Acquire(busy.keyID, busy.org.ID)
		require.NoError(t, err)
		defer inFlight()

		release := holdDatabase(t, db)
		defer release()
		for _, c := range []struct{ path, key, why string }{
			{"/webhooks", busy.key, "in flight"},
			{"/review-tasks", busy.key, "in flight"},
			{"/organisations", busy.key, "in flight"},
			{"/organisations/" + busy.org.ID + "/agents", busy.key, "in flight"},
			{"/webhooks", limited.key, "hourly limit"},
			{"/review-tasks", limited.key, "hourly limit"},
		} {
			resp := send(c.path, c.key)
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s (%s)", c.path, c.why)
			require.NotEmpty(t, resp.Header.Get("Retry-After"), c.path)
			if c.path != "/organisations" && c.path != "/organisations/"+busy.org.ID+"/agents" {
				require.NotEmpty(t, resp.Header.Get("RateLimit"), c.path)
				require.NotEmpty(t, resp.Header.Get("RateLimit-Policy"), c.path)
			}
		}
	})
}

// BenchmarkRefusal measures, in one run, what an answered request of the
// review-task API (GET /webhooks) costs beside the same request refused
// with 429, because the key has too many requests in flight (refused) or
// because its organisation's hourly limit is used up (over-limit). It
// reports each in µs and their ratio to the answer: a refusal must cost
// less than an answer (docs/hardening.md).
func BenchmarkRefusal(b *testing.B) {
	for _, d := range sqldbtest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			db := sqldbtest.Open(b, d)
			ctx := context.Background()
			orgs, err := org.NewStore(ctx, db)
			require.NoError(b, err)
			lim := httpx.NewLimiter(1, 0)
			handler := servicetest.New(b, server.Config{DB: db, Orgs: orgs, Secrets: keyring.Ephemeral(), Concurrency: lim}).Handler()
			newKey := func(name string, plan org.Plan, limit int) org.CreatedKey {
				o, err := orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: name, Plan: plan, HourlyLimit: limit}, admin)
				require.NoError(b, err)
				k, err := orgs.CreateKey(ctx, org.KeyCreate{OrganisationID: o.ID, Name: "k", Type: org.KeyTypeAPI}, admin)
				require.NoError(b, err)
				return k
			}
			answered := newKey("answered", org.PlanEnterprise, 1<<30)
			refused := newKey("refused", org.PlanEnterprise, 1<<30)
			over := newKey("over", org.PlanEnterprise, 1)
			serve := func(key string, want int) time.Duration {
				req := httptest.NewRequest(http.MethodGet, "/webhooks", nil)
				req.Header.Set("Authorization", "Bearer "+key)
				w := httptest.NewRecorder()
				start := time.Now()
				handler.ServeHTTP(w, req)
				d := time.Since(start)
				if w.Code != want {
					b.Fatalf("status %d, want %d: %s", w.Code, want, w.Body)
				}
				return d
			}
			serve(refused.Secret, http.StatusOK)
			serve(over.Secret, http.StatusOK)
			hold, err := lim.Acquire(refused.ID, refused.OrganisationID)
			require.NoError(b, err)
			defer hold()
			var answer, refusal, overLimit time.Duration
			b.ResetTimer()
			for b.Loop() {
				answer += serve(answered.Secret, http.StatusOK)
				refusal += serve(refused.Secret, http.StatusTooManyRequests)
				overLimit += serve(over.Secret, http.StatusTooManyRequests)
			}
			n := float64(b.N)
			b.ReportMetric(float64(answer.Microseconds())/n, "µs/answer")
			b.ReportMetric(float64(refusal.Microseconds())/n, "µs/refused")
			b.ReportMetric(float64(overLimit.Microseconds())/n, "µs/over-limit")
			b.ReportMetric(float64(refusal)/float64(answer), "refused/answer")
			b.ReportMetric(float64(overLimit)/float64(answer), "over-limit/answer")
			b.Logf("%s: answer %s, refused %s, over-limit %s per request", d, time.Duration(float64(answer)/n), time.Duration(float64(refusal)/n), time.Duration(float64(overLimit)/n))
		})
	}
}
