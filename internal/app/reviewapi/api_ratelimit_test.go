package reviewapi_test

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

func requireRateHeaders(t *testing.T, r apiResponse, plan string, q, remaining, reset int) {
	t.Helper()
	require.Equal(t, fmt.Sprintf(`"%s";q=%d;w=3600`, plan, q), r.Header.Get("RateLimit-Policy"), "%s", r.Body)
	require.Equal(t, fmt.Sprintf(`"%s";r=%d;t=%d`, plan, remaining, reset), r.Header.Get("RateLimit"), "%s", r.Body)
}

// TestAPIRateLimitEnterprise: an enterprise organisation's custom limit,
// shared by its keys; every answer counts and carries the headers; refusals
// count down to the instant the oldest requests leave the sliding hour.
func TestAPIRateLimitEnterprise(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Big", org.PlanEnterprise, 3)
		// The clock is at 09:29:28: the requests are counted in the bucket
		// of 09:29, whose last request leaves the window at 10:29:28, in
		// 3600 seconds.

		// Every answer counts and carries the headers: a 201, a 404, a 400.
		r := tn.call(t, http.MethodPost, "/review-tasks", tn.taskBody("hello"))
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
		requireRateHeaders(t, r, "enterprise", 3, 2, 3600)
		r = tn.call(t, http.MethodGet, "/review-tasks/6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d", nil)
		requireAPIError(t, r, http.StatusNotFound, spec.CodeTaskNotFound, "")
		requireRateHeaders(t, r, "enterprise", 3, 1, 3600)
		r = tn.call(t, http.MethodGet, "/review-tasks?limit=0", nil)
		requireAPIError(t, r, http.StatusBadRequest, spec.CodeInvalidRequest, "limit")
		requireRateHeaders(t, r, "enterprise", 3, 0, 3600)

		// The fourth is refused, whatever it is.
		for _, req := range []struct {
			method, path string
			body         any
		}{
			{http.MethodGet, "/review-tasks", nil},
			{http.MethodPost, "/review-tasks", tn.taskBody("hello")},
			{http.MethodGet, "/webhooks", nil},
		} {
			t.Run(req.method+" "+strings.TrimPrefix(req.path, "/"), func(t *testing.T) {
				r := tn.call(t, req.method, req.path, req.body)
				e := requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
				require.Contains(t, e.Message, "organisation has made 3 requests")
				require.Contains(t, e.Message, "enterprise plan allows 3")
				require.Equal(t, "3600", r.Header.Get("Retry-After"))
				requireRateHeaders(t, r, "enterprise", 3, 0, 3600)
			})
		}
		list, err := h.service().ListTasks(t.Context(), tn.org.ID, reviewapi.TaskQuery{Limit: 100})
		require.NoError(t, err)
		require.Equal(t, 1, list.Total, "a refused POST creates no task")

		// Later: still refused, Retry-After counts down.
		h.clock.Advance(10 * time.Minute) // 09:39:28
		r = tn.call(t, http.MethodGet, "/review-tasks", nil)
		requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
		require.Equal(t, "3000", r.Header.Get("Retry-After"))

		// Another key of the organisation shares its count.
		second, _ := tn.newKey(org.KeyTypeAPI)
		r = h.send(t, http.MethodGet, "/review-tasks", nil, "Authorization", "Bearer "+second)
		requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
		require.Equal(t, "3000", r.Header.Get("Retry-After"))
		requireRateHeaders(t, r, "enterprise", 3, 0, 3000)

		// Another organisation has its own.
		other := h.newTenant("Other", org.PlanEnterprise, 3)
		r = other.call(t, http.MethodGet, "/review-tasks", nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		requireRateHeaders(t, r, "enterprise", 3, 2, 3600)

		// One second before Retry-After: refused; at it: admitted.
		h.clock.Advance(2999 * time.Second) // 10:29:27
		r = h.send(t, http.MethodGet, "/review-tasks", nil, "Authorization", "Bearer "+second)
		requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
		require.Equal(t, "1", r.Header.Get("Retry-After"))
		h.clock.Advance(time.Second) // 10:29:28
		r = h.send(t, http.MethodGet, "/review-tasks", nil, "Authorization", "Bearer "+second)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		requireRateHeaders(t, r, "enterprise", 3, 2, 3600)
		require.Empty(t, r.Header.Get("Retry-After"))
	})
}

func TestAPIRateLimitPlans(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		for _, c := range []struct {
			plan org.Plan
			q    int
		}{
			{"", org.StandardHourlyLimit},
			{org.PlanStandard, 1000},
			{org.PlanBusiness, 10000},
		} {
			// newTenant reports to the harness's test, so it stays out of the subtest.
			tn := h.newTenant("Org "+string(c.plan), c.plan, 0)
			t.Run(cmp.Or(string(c.plan), "no plan"), func(t *testing.T) {
				name := string(c.plan)
				if name == "" {
					name = "standard"
				}
				for i := 1; i <= 3; i++ {
					r := tn.call(t, http.MethodGet, "/webhooks", nil)
					require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
					requireRateHeaders(t, r, name, c.q, c.q-i, 3600)
				}
			})
		}
	})
}

// TestAPIRateLimitSharedByProcesses runs two services on one database: an
// organisation's count is the sum of its requests to both.
func TestAPIRateLimitSharedByProcesses(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		one := startHarness(t, db, nil)
		two := startHarness(t, db, nil)
		tn := one.newTenant("Big", org.PlanEnterprise, 4)
		for i, h := range []*harness{one, two, one, two} {
			r := h.send(t, http.MethodGet, "/review-tasks", nil, "Authorization", "Bearer "+tn.key)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			requireRateHeaders(t, r, "enterprise", 4, 3-i, 3600)
		}
		r := two.send(t, http.MethodGet, "/review-tasks", nil, "Authorization", "Bearer "+tn.key)
		requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
	})
}

// TestAPIRateLimitHeadersOnEveryAnswer: the OpenAPI document gives every
// response of a valid key (2xx, 400, 403, 404, 422, 429) the
// RateLimit-Policy and RateLimit headers, and all count against the
// organisation. (A revoked key's 401 has none: TestAPIRateLimitUnauthorised.)
func TestAPIRateLimitHeadersOnEveryAnswer(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		task := tn.submit(t, "Project Falcon")
		ingestion, _ := tn.newKey(org.KeyTypeIngestion)
		for _, c := range []struct {
			name   string
			key    string
			method string
			path   string
			body   any
			status int
			left   int // requests left to the organisation
		}{
			{"201", tn.key, http.MethodPost, "/review-tasks", tn.taskBody("hi"), http.StatusCreated, 998},
			{"200", tn.key, http.MethodGet, "/review-tasks/" + task.ID, nil, http.StatusOK, 997},
			{"400", tn.key, http.MethodGet, "/review-tasks?limit=x", nil, http.StatusBadRequest, 996},
			{"404", tn.key, http.MethodDelete, "/webhooks/" + task.ID, nil, http.StatusNotFound, 995},
			{"403 decision", tn.key, http.MethodPost, "/review-tasks/" + task.ID + "/decision", map[string]any{}, http.StatusForbidden, 994},
			{"403 Ingestion key", ingestion, http.MethodGet, "/review-tasks", nil, http.StatusForbidden, 993},
			{"200", tn.key, http.MethodGet, "/webhooks", nil, http.StatusOK, 992},
		} {
			r := h.send(t, c.method, c.path, c.body, "Authorization", "Bearer "+c.key)
			require.Equal(t, c.status, r.Status, "%s: %s", c.name, r.Body)
			require.NotEmpty(t, r.Header.Get("RateLimit-Policy"), "%s: RateLimit-Policy", c.name)
			require.NotEmpty(t, r.Header.Get("RateLimit"), "%s: RateLimit", c.name)
			requireRateHeaders(t, r, "standard", 1000, c.left, 3600)
		}
	})
}

// getWebhooks makes GET /webhooks with key, the cheapest request to count.
func getWebhooks(t *testing.T, h *harness, key string) apiResponse {
	t.Helper()
	return h.send(t, http.MethodGet, "/webhooks", nil, "Authorization", "Bearer "+key)
}

// countedRequests is the organisation's total in the rate-limit buckets.
func countedRequests(t *testing.T, db *sqldb.DB, orgID string) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(),
		`SELECT COALESCE(SUM(count), 0) FROM reviewapi_rate_buckets WHERE org_id = $1`, orgID).Scan(&n))
	return n
}

// TestAPIRateLimitKeysShareTheOrganisationsLimit: every key of an
// organisation, of either kind, draws on one count; another organisation's
// is its own.
func TestAPIRateLimitKeysShareTheOrganisationsLimit(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", org.PlanEnterprise, 5)
		other := h.newTenant("Other", org.PlanEnterprise, 5)
		second, _ := tn.newKey(org.KeyTypeAPI)
		ingestion, _ := tn.newKey(org.KeyTypeIngestion)
		for i, c := range []struct {
			key    string
			status int
		}{
			{tn.key, http.StatusOK}, {second, http.StatusOK}, {ingestion, http.StatusForbidden},
			{second, http.StatusOK}, {tn.key, http.StatusOK},
		} {
			r := getWebhooks(t, h, c.key)
			require.Equal(t, c.status, r.Status, "request %d: %s", i, r.Body)
			requireRateHeaders(t, r, "enterprise", 5, 4-i, 3600)
		}
		for _, key := range []string{tn.key, second, ingestion} {
			r := getWebhooks(t, h, key)
			requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
			requireRateHeaders(t, r, "enterprise", 5, 0, 3600)
		}
		require.Equal(t, 5, countedRequests(t, db, tn.org.ID))

		for i := range 5 {
			r := getWebhooks(t, h, other.key)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			requireRateHeaders(t, r, "enterprise", 5, 4-i, 3600)
		}
	})
}

// TestAPIRateLimitSlidingWindow: a burst just before an hour boundary and
// another just after it cannot exceed the limit, and no 3600-second window
// of a long run of requests ever holds more admitted requests than the
// limit.
func TestAPIRateLimitSlidingWindow(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		const limit = 5
		h := startHarness(t, db, nil)
		tn := h.newTenant("Burst", org.PlanEnterprise, limit)
		var admitted []time.Time
		request := func() apiResponse {
			t.Helper()
			r := getWebhooks(t, h, tn.key)
			switch r.Status {
			case http.StatusOK:
				require.Empty(t, r.Header.Get("Retry-After"))
				admitted = append(admitted, h.clock.Now())
			case http.StatusTooManyRequests:
				requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
				require.NotEmpty(t, r.Header.Get("Retry-After"))
			default:
				require.FailNow(t, "unexpected status", "%d: %s", r.Status, r.Body)
			}
			return r
		}

		// A burst at minute 59, 09:59:00 to 10:00:00: the first five are
		// admitted.
		h.clock.Advance(29*time.Minute + 32*time.Second)
		for range limit + 2 {
			request()
			h.clock.Advance(10 * time.Second)
		}
		require.Len(t, admitted, limit)

		// Minute 61, 10:01:00: a new clock hour, but the burst is still in
		// the window until its bucket's last request leaves it at 10:59:40.
		h.clock.Advance(50 * time.Second)
		for range limit {
			r := request()
			require.Equal(t, http.StatusTooManyRequests, r.Status)
			require.Equal(t, "3520", r.Header.Get("Retry-After"))
		}
		require.Len(t, admitted, limit)
		// (Checked now: later, the harness's sweep may delete buckets the
		// advanced clock makes over two hours old.)
		require.Equal(t, limit, countedRequests(t, db, tn.org.ID), "refused requests are not counted")

		// Three requests every seven minutes for three hours.
		for range 26 {
			h.clock.Advance(7 * time.Minute)
			for range 3 {
				request()
			}
		}
		// The burst, then a full limit in each of the two hours after 11:00:00.
		require.Len(t, admitted, 3*limit, "requests are admitted again as old ones leave the window")
		for i, end := range admitted {
			n := 0
			for _, at := range admitted[:i+1] {
				if at.After(end.Add(-time.Hour)) {
					n++
				}
			}
			require.LessOrEqual(t, n, limit, "the hour up to %s holds %d admitted requests", end.Format(time.TimeOnly), n)
		}
	})
}

// TestAPIRateLimitRetryAfterIsExact: Retry-After is the wait until the oldest
// bucket's last request leaves the window, rounded up to the second; a request one second
// earlier is refused and one at it admitted. Refused requests do not extend
// the wait.
func TestAPIRateLimitRetryAfterIsExact(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Exact", org.PlanEnterprise, 5)

		// 09:29:28: two requests, in the bucket of 09:29 (leaves at 10:29:28).
		for i := range 2 {
			requireRateHeaders(t, getWebhooks(t, h, tn.key), "enterprise", 5, 4-i, 3600)
		}
		// 09:45:10: three more, in the bucket of 09:45 (leaves at 10:45:10).
		h.clock.Advance(15*time.Minute + 42*time.Second)
		for i := range 3 {
			requireRateHeaders(t, getWebhooks(t, h, tn.key), "enterprise", 5, 2-i, 2658)
		}

		// 09:50:00.5: refused, 2367.5 seconds before 10:29:28, rounded up.
		h.clock.Advance(4*time.Minute + 50*time.Second + 500*time.Millisecond)
		for range 10 {
			r := getWebhooks(t, h, tn.key)
			requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
			require.Equal(t, "2368", r.Header.Get("Retry-After"), "a refusal does not extend the wait")
			requireRateHeaders(t, r, "enterprise", 5, 0, 2368)
		}
		require.Equal(t, 5, countedRequests(t, db, tn.org.ID))

		// One second less than Retry-After: 10:29:27.5, refused.
		h.clock.Advance(2367 * time.Second)
		r := getWebhooks(t, h, tn.key)
		requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
		require.Equal(t, "1", r.Header.Get("Retry-After"))

		// Retry-After: 10:29:28.5, admitted. The bucket of 09:29 has left
		// the window; that of 09:45 leaves it in 941.5 seconds.
		h.clock.Advance(time.Second)
		r = getWebhooks(t, h, tn.key)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		requireRateHeaders(t, r, "enterprise", 5, 1, 942)
		r = getWebhooks(t, h, tn.key)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		requireRateHeaders(t, r, "enterprise", 5, 0, 942)
		r = getWebhooks(t, h, tn.key)
		requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
		require.Equal(t, "942", r.Header.Get("Retry-After"))
	})
}

// TestAPIRateLimitConcurrentProcesses: requests racing at the limit through
// two services on one database (two processes) are admitted exactly up to
// the limit.
func TestAPIRateLimitConcurrentProcesses(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		const limit, n = 7, 24
		one := startHarness(t, db, nil)
		two := startHarness(t, db, nil)
		tn := one.newTenant("Race", org.PlanEnterprise, limit)
		second, _ := tn.newKey(org.KeyTypeAPI)
		type result struct {
			status int
			body   []byte
			err    error
		}
		results := make([]result, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				url, key := one.url, tn.key
				if i%2 == 1 {
					url, key = two.url, second
				}
				<-start
				req, err := http.NewRequest(http.MethodGet, url+"/webhooks", nil)
				if err != nil {
					results[i].err = err
					return
				}
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					results[i].err = err
					return
				}
				defer resp.Body.Close()
				results[i].status = resp.StatusCode
				results[i].body, results[i].err = io.ReadAll(resp.Body)
			})
		}
		close(start)
		wg.Wait()
		counts := map[int]int{}
		for i, r := range results {
			require.NoError(t, r.err, "request %d", i)
			require.Contains(t, []int{http.StatusOK, http.StatusTooManyRequests}, r.status, "request %d: %s", i, r.body)
			counts[r.status]++
		}
		require.Equal(t, map[int]int{http.StatusOK: limit, http.StatusTooManyRequests: n - limit}, counts)
		require.Equal(t, limit, countedRequests(t, db, tn.org.ID))
	})
}

// TestAPIRateLimitUnauthorised: the 401 of a revoked or expired key is the
// 401 of an unknown key, headers and body: no rate-limit headers, which
// would tell that the key was once valid and its organisation's plan; and it
// is not counted, so a leaked revoked key cannot use up the plan, nor is it
// refused 429 when the organisation is at its limit.
func TestAPIRateLimitUnauthorised(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Leaky", org.PlanEnterprise, 5)
		revoked, revokedID := tn.newKey(org.KeyTypeAPI)
		_, err := h.orgs.RevokeKey(t.Context(), tn.org.ID, revokedID, admin)
		require.NoError(t, err)
		soon := h.clock.Now().Add(time.Minute)
		expiring, err := h.orgs.CreateKey(t.Context(), org.KeyCreate{OrganisationID: tn.org.ID, Name: "short", Type: org.KeyTypeAPI, ExpiresAt: &soon}, admin)
		require.NoError(t, err)

		require.Equal(t, http.StatusOK, getWebhooks(t, h, tn.key).Status)
		require.Equal(t, http.StatusOK, getWebhooks(t, h, expiring.Secret).Status)
		h.clock.Advance(time.Minute) // 09:30:28: the short key has expired
		unknown := getWebhooks(t, h, "aiu_0000000000000000000000000000000000000000000000")
		requireAPIError(t, unknown, http.StatusUnauthorized, spec.CodeAuthenticationFailed, "")
		requireSame401 := func(r apiResponse, what string) {
			t.Helper()
			requireAPIError(t, r, http.StatusUnauthorized, spec.CodeAuthenticationFailed, "")
			require.Equal(t, string(unknown.Body), string(r.Body), "%s: body", what)
			for _, name := range []string{"RateLimit-Policy", "RateLimit", "Retry-After"} {
				require.Empty(t, r.Header.Get(name), "%s: %s", what, name)
			}
			require.Equal(t, unknown.Header.Get("WWW-Authenticate"), r.Header.Get("WWW-Authenticate"), "%s", what)
		}
		for _, key := range []string{revoked, expiring.Secret} {
			for range 10 {
				requireSame401(getWebhooks(t, h, key), "revoked or expired key")
			}
		}
		require.Equal(t, 2, countedRequests(t, db, tn.org.ID), "the 401s are not counted")
		for _, key := range []string{tn.key + "x", ""} {
			requireSame401(getWebhooks(t, h, key), fmt.Sprintf("unknown key %q", key))
		}

		// At the limit, the 401 of a revoked key is still that same 401.
		for range 3 {
			require.Equal(t, http.StatusOK, getWebhooks(t, h, tn.key).Status)
		}
		require.Equal(t, http.StatusTooManyRequests, getWebhooks(t, h, tn.key).Status)
		requireSame401(getWebhooks(t, h, revoked), "revoked key at the limit")
		require.Equal(t, 5, countedRequests(t, db, tn.org.ID))
	})
}

// TestAPIRateLimitSweep: the sweep deletes buckets that have left the window
// (with a margin), and keeps the others.
func TestAPIRateLimitSweep(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Swept", org.PlanEnterprise, 5)
		require.Equal(t, http.StatusOK, getWebhooks(t, h, tn.key).Status) // 09:29
		h.clock.Advance(time.Hour + 11*time.Minute)                       // 10:40:28
		require.Equal(t, http.StatusOK, getWebhooks(t, h, tn.key).Status)
		require.Equal(t, 2, countedRequests(t, db, tn.org.ID))

		h.clock.Advance(55 * time.Minute) // 11:35:28: 09:29 is over two hours old
		_, err := h.service().Sweep(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, countedRequests(t, db, tn.org.ID))
		var start int64
		require.NoError(t, db.QueryRowContext(t.Context(), `SELECT bucket_start FROM reviewapi_rate_buckets WHERE org_id = $1`, tn.org.ID).Scan(&start))
		require.Equal(t, time.Date(2027, 3, 2, 10, 40, 0, 0, time.UTC), time.UnixMilli(start).UTC())
	})
}

// TestAPIRateLimitRetryAfterWithinTheHour: a refusal's Retry-After is never
// longer than the hour and exact to the second: one second before it the
// request is refused, at it admitted, wherever in its minute the requests
// that fill the window were made.
func TestAPIRateLimitRetryAfterWithinTheHour(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Busy", org.PlanEnterprise, 3)
		// 09:29:58.500: late in the minute of 09:29, the worst case when
		// the minute is counted whole (it leaves at 10:30:00).
		h.clock.Advance(30*time.Second + 500*time.Millisecond)
		require.Equal(t, http.StatusOK, getWebhooks(t, h, tn.key).Status) // 09:29:58.500
		h.clock.Advance(10 * time.Second)
		require.Equal(t, http.StatusOK, getWebhooks(t, h, tn.key).Status) // 09:30:08.500
		require.Equal(t, http.StatusOK, getWebhooks(t, h, tn.key).Status)

		// At the limit at once: the first request leaves the window an hour
		// after it was made, 3600 s from now.
		r := getWebhooks(t, h, tn.key)
		requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
		require.Equal(t, "3590", r.Header.Get("Retry-After"), "the first request is 10 s old")
		requireRateHeaders(t, r, "enterprise", 3, 0, 3590)

		h.clock.Advance(200 * time.Millisecond) // 09:30:08.700: 3589.8 s to wait
		r = getWebhooks(t, h, tn.key)
		require.Equal(t, "3590", r.Header.Get("Retry-After"), "rounded up")

		// One second before it: refused, told 1; at it: admitted.
		h.clock.Advance(3588*time.Second + 800*time.Millisecond) // 10:29:57.500
		r = getWebhooks(t, h, tn.key)
		requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
		require.Equal(t, "1", r.Header.Get("Retry-After"))
		h.clock.Advance(999 * time.Millisecond) // 10:29:58.499
		requireAPIError(t, getWebhooks(t, h, tn.key), http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
		h.clock.Advance(time.Millisecond) // 10:29:58.500
		r = getWebhooks(t, h, tn.key)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)

		// Now full again with the two of 09:30:08.500 and this one: the next
		// request is admitted when those two leave, in 10 s, never later
		// than the hour.
		r = getWebhooks(t, h, tn.key)
		requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
		require.Equal(t, "10", r.Header.Get("Retry-After"))

		// Requests made all at once: the wait is the whole hour, not more.
		other := h.newTenant("Burst", org.PlanEnterprise, 2)
		h.clock.Advance(1500 * time.Millisecond) // 10:30:00.000 + ...
		for range 2 {
			require.Equal(t, http.StatusOK, getWebhooks(t, h, other.key).Status)
		}
		r = getWebhooks(t, h, other.key)
		requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
		require.Equal(t, "3600", r.Header.Get("Retry-After"))
		requireRateHeaders(t, r, "enterprise", 2, 0, 3600)
	})
}
