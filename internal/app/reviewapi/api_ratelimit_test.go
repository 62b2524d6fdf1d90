package reviewapi_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/orgapi"
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

func TestAPIRateLimitEnterprise(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Big", orgapi.PlanEnterprise, 3)
		// The clock is at 09:29:28: the window resets in 1832 seconds.

		// Every answer counts and carries the headers: a 201, a 404, a 400.
		r := tn.call(t, http.MethodPost, "/review-tasks", tn.taskBody("hello"))
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
		requireRateHeaders(t, r, "enterprise", 3, 2, 1832)
		r = tn.call(t, http.MethodGet, "/review-tasks/6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d", nil)
		requireAPIError(t, r, http.StatusNotFound, spec.CodeTaskNotFound, "")
		requireRateHeaders(t, r, "enterprise", 3, 1, 1832)
		r = tn.call(t, http.MethodGet, "/review-tasks?limit=0", nil)
		requireAPIError(t, r, http.StatusBadRequest, spec.CodeInvalidRequest, "limit")
		requireRateHeaders(t, r, "enterprise", 3, 0, 1832)

		// The fourth is refused, whatever it is.
		for _, req := range []struct {
			method, path string
			body         any
		}{
			{http.MethodGet, "/review-tasks", nil},
			{http.MethodPost, "/review-tasks", tn.taskBody("hello")},
			{http.MethodGet, "/webhooks", nil},
		} {
			r = tn.call(t, req.method, req.path, req.body)
			requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
			require.Equal(t, "1832", r.Header.Get("Retry-After"))
			requireRateHeaders(t, r, "enterprise", 3, 0, 1832)
		}
		list, err := h.service().ListTasks(t.Context(), tn.org.ID, reviewapi.TaskQuery{Limit: 100})
		require.NoError(t, err)
		require.Equal(t, 1, list.Total, "a refused POST creates no task")

		// Later in the hour: still refused, Retry-After counts down.
		h.clock.Advance(10 * time.Minute)
		r = tn.call(t, http.MethodGet, "/review-tasks", nil)
		requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
		require.Equal(t, "1232", r.Header.Get("Retry-After"))

		// Another key of the organisation has its own count.
		second, _ := tn.newKey(orgapi.KeyTypeAPI)
		r = h.send(t, http.MethodGet, "/review-tasks", nil, "Authorization", "Bearer "+second)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		requireRateHeaders(t, r, "enterprise", 3, 2, 1232)

		// The next hour starts afresh.
		h.clock.Advance(1232 * time.Second) // 10:00:00
		r = tn.call(t, http.MethodGet, "/review-tasks", nil)
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
			plan orgapi.Plan
			q    int
		}{
			{"", orgapi.StandardHourlyLimit},
			{orgapi.PlanStandard, 1000},
			{orgapi.PlanBusiness, 10000},
		} {
			tn := h.newTenant("Org "+string(c.plan), c.plan, 0)
			name := string(c.plan)
			if name == "" {
				name = "standard"
			}
			for i := 1; i <= 3; i++ {
				r := tn.call(t, http.MethodGet, "/webhooks", nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				requireRateHeaders(t, r, name, c.q, c.q-i, 1832)
			}
		}
	})
}

// TestAPIRateLimitSharedByProcesses runs two services on one database: a
// key's count is the sum of its requests to both.
func TestAPIRateLimitSharedByProcesses(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		one := startHarness(t, db, nil)
		two := startHarness(t, db, nil)
		tn := one.newTenant("Big", orgapi.PlanEnterprise, 4)
		for i, h := range []*harness{one, two, one, two} {
			r := h.send(t, http.MethodGet, "/review-tasks", nil, "Authorization", "Bearer "+tn.key)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			requireRateHeaders(t, r, "enterprise", 4, 3-i, 1832)
		}
		r := two.send(t, http.MethodGet, "/review-tasks", nil, "Authorization", "Bearer "+tn.key)
		requireAPIError(t, r, http.StatusTooManyRequests, spec.CodeRateLimitExceeded, "")
	})
}

// TestAPIRateLimitHeadersOnEveryAnswer: the OpenAPI document gives every
// response of an identified key (2xx, 400, 403, 404, 422, 429) the
// RateLimit-Policy and RateLimit headers.
func TestAPIRateLimitHeadersOnEveryAnswer(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		task := tn.submit(t, "Project Falcon")
		ingestion, _ := tn.newKey(orgapi.KeyTypeIngestion)
		for _, c := range []struct {
			name   string
			key    string
			method string
			path   string
			body   any
			status int
			left   int // requests left to the key
		}{
			{"201", tn.key, http.MethodPost, "/review-tasks", tn.taskBody("hi"), http.StatusCreated, 998},
			{"200", tn.key, http.MethodGet, "/review-tasks/" + task.ID, nil, http.StatusOK, 997},
			{"400", tn.key, http.MethodGet, "/review-tasks?limit=x", nil, http.StatusBadRequest, 996},
			{"404", tn.key, http.MethodDelete, "/webhooks/" + task.ID, nil, http.StatusNotFound, 995},
			{"403 decision", tn.key, http.MethodPost, "/review-tasks/" + task.ID + "/decision", map[string]any{}, http.StatusForbidden, 994},
			{"403 Ingestion key", ingestion, http.MethodGet, "/review-tasks", nil, http.StatusForbidden, 999},
		} {
			r := h.send(t, c.method, c.path, c.body, "Authorization", "Bearer "+c.key)
			require.Equal(t, c.status, r.Status, "%s: %s", c.name, r.Body)
			require.NotEmpty(t, r.Header.Get("RateLimit-Policy"), "%s: RateLimit-Policy", c.name)
			require.NotEmpty(t, r.Header.Get("RateLimit"), "%s: RateLimit", c.name)
			requireRateHeaders(t, r, "standard", 1000, c.left, 1832)
		}
	})
}
