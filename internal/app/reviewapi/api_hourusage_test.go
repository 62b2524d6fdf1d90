package reviewapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestHourUsage: the organisation's use of its hour is the rate limit's
// count, read without counting; it falls to zero when the requests leave
// the window.
func TestHourUsage(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Big", org.PlanEnterprise, 5)
		u, err := h.service().HourUsage(t.Context(), tn.org.ID)
		require.NoError(t, err)
		require.Equal(t, 0, u.Used)
		require.Equal(t, 5, u.Limit)
		require.Zero(t, u.Reset)
		for range 2 {
			r := tn.call(t, http.MethodGet, "/review-tasks", nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		}
		u, err = h.service().HourUsage(t.Context(), tn.org.ID)
		require.NoError(t, err)
		require.Equal(t, 2, u.Used)
		require.Equal(t, 5, u.Limit)
		require.Positive(t, u.Reset)
		r := tn.call(t, http.MethodGet, "/review-tasks", nil)
		require.Equal(t, "\"enterprise\";r=2;t=3600", r.Header.Get("RateLimit"), "reading the count counted nothing")
		h.clock.Advance(2 * time.Hour)
		u, err = h.service().HourUsage(t.Context(), tn.org.ID)
		require.NoError(t, err)
		require.Equal(t, 0, u.Used)
	})
}
