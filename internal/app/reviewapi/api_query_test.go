package reviewapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// A query string url.ParseQuery cannot parse is a 400 naming the parameter
// on every endpoint of both APIs, in each API's own error body; without the
// check, r.URL.Query() drops the malformed pair and the request is served
// as if it had not been sent.
func TestMalformedQueryIsRefused(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		task := tn.submit(t, "hello")

		for _, tc := range []struct{ path, field string }{
			{"/review-tasks?status=%%%", "status"},
			{"/review-tasks?limit=5;offset=1", "query"},
			{"/review-tasks/" + task.ID + "?x=%zz", "x"},
			{"/webhooks?%gg=1", "query"},
		} {
			requireAPIError(t, tn.call(t, http.MethodGet, tc.path, nil), http.StatusBadRequest, spec.CodeInvalidRequest, tc.field)
		}

		org := "/organisations/" + tn.org.ID
		for _, tc := range []struct{ path, field string }{
			{"/organisations?x=%", "x"},
			{org + "/instructions?search=%%%", "search"},
			{org + "/agents?a=1;b=2", "query"},
		} {
			r := tn.call(t, http.MethodGet, tc.path, nil)
			require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", tc.path, r.Body)
			require.Equal(t, spec.ProblemContentType, r.Header.Get("Content-Type"), tc.path)
			var p spec.Problem
			require.NoError(t, json.Unmarshal(r.Body, &p))
			require.Len(t, p.Errors, 1, "%s: %s", tc.path, r.Body)
			require.Equal(t, tc.field, p.Errors[0].Field, "%s: %s", tc.path, r.Body)
		}
	})
}
