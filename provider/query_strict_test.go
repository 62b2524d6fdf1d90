package provider_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// A malformed query string is a 400 naming the parameter, on every endpoint:
// r.URL.Query() would drop "cursor=%%%" silently and serve the first page.
func TestMalformedQueryIsRefused(t *testing.T) {
	t.Parallel()
	srv := newServer(t, seeded(t, 5))
	for _, tc := range []struct{ target, field string }{
		{"/conversations?limit=2&cursor=%%%", "cursor"},
		{"/assistants?updatedSince=%zz", "updatedSince"},
		{"/events?category=Other;limit=1", "query"},
		{"/usage?%gg=day", "query"},
		{"/conversations/a?x=%", "x"},
		{"/assistants/a?cursor=%%%", "cursor"},
	} {
		resp, body := do(t, http.MethodGet, srv.URL+tc.target, auth)
		p := problemOf(t, resp, body, http.StatusBadRequest)
		require.Len(t, p.Errors, 1, tc.target)
		require.Equal(t, tc.field, p.Errors[0].Field, tc.target)
		require.Contains(t, p.Detail, tc.field, tc.target)
	}
	// A well-formed query is still served.
	resp, body := do(t, http.MethodGet, srv.URL+"/conversations?limit=2&updatedSince=2026-01-01T00%3A00%3A00Z", auth)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
}
