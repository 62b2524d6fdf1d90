package conformance_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/conformance"
)

// notOffering serves the reference provider but for /assistants, which it
// answers 501 (not offered, as docs/provider.md tells vendors to answer),
// and /events, which it answers 404, as a routing bug would.
func notOffering() http.Handler {
	ref := newRefProvider(noDefect)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/assistants"):
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotImplemented)
			_, _ = w.Write([]byte(`{"type":"about:blank","title":"Not Implemented","status":501,"detail":"assistants are not offered"}`))
		case strings.HasPrefix(r.URL.Path, "/events"):
			http.NotFound(w, r)
		default:
			ref.ServeHTTP(w, r)
		}
	})
}

// resultAt returns the result of check id at endpoint ep.
func resultAt(t *testing.T, rep *conformance.Report, id, ep string) conformance.Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.ID == id && r.Endpoint == ep {
			return r
		}
	}
	t.Fatalf("no %s result at %s", id, ep)
	return conformance.Result{}
}

// TestEveryResourceInTheReport: a resource answered 501 is in the report as
// a visible warning (not offered) with the number of checks not run for it,
// a 404 for a resource of the specification is a failure, and the offered
// resources say they were checked; the text report shows all four.
func TestEveryResourceInTheReport(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(notOffering())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rep, err := conformance.Run(ctx, conformance.Config{BaseURL: srv.URL, Token: refToken, UsagelessToken: refUsageless,
		OtherTenantToken: refOtherToken, MaxRate: 5000})
	require.NoError(t, err)

	for _, ep := range []string{"/conversations", "/usage"} {
		r := resultAt(t, rep, "HTTP-04", ep)
		require.Equal(t, conformance.StatusPass, r.Status, "%s: %s", ep, r.Message)
	}
	a := resultAt(t, rep, "HTTP-04", "/assistants")
	require.Equal(t, conformance.StatusWarn, a.Status, a.Message)
	require.Contains(t, a.Message, "not offered (501)")
	require.Contains(t, a.Message, "37 checks not run")
	e := resultAt(t, rep, "HTTP-04", "/events")
	require.Equal(t, conformance.StatusFail, e.Status, e.Message)
	require.Contains(t, e.Message, "404")
	require.Contains(t, e.Message, "35 checks not run")
	require.True(t, rep.Failed(false), "a 404 for /events fails the run")

	var text strings.Builder
	require.NoError(t, rep.WriteText(&text, false))
	for _, ep := range conformance.AllResources {
		require.Contains(t, text.String(), "\n/"+ep+"\n", "every resource has its section")
	}

	// Without the 404, the 501 alone warns and does not fail the run, even
	// in strict mode: not offering a resource is allowed.
	rep, err = conformance.Run(ctx, conformance.Config{BaseURL: srv.URL, Token: refToken, MaxRate: 5000,
		Resources: []string{conformance.Conversations, conformance.Assistants, conformance.Usage}})
	require.NoError(t, err)
	require.False(t, rep.Failed(true), "a resource answered 501 fails no run")
	require.Equal(t, conformance.StatusWarn, resultAt(t, rep, "HTTP-04", "/assistants").Status)
	require.Equal(t, conformance.StatusSkip, resultAt(t, rep, "HTTP-04", "/events").Status, "not selected")

	// With --only, the count is of the checks selected.
	rep, err = conformance.Run(ctx, conformance.Config{BaseURL: srv.URL, Token: refToken, MaxRate: 5000, Only: []string{"PAGE", "HTTP-04"}})
	require.NoError(t, err)
	require.Contains(t, resultAt(t, rep, "HTTP-04", "/assistants").Message, "12 checks not run")
}

// TestChecksNotRunCount: the checks the suite counts as not run for a
// resource not offered are exactly those a full run against a provider that
// offers every resource reports at that resource's endpoint.
func TestChecksNotRunCount(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newRefProvider(noDefect))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rep, err := conformance.Run(ctx, conformance.Config{BaseURL: srv.URL, Token: refToken, UsagelessToken: refUsageless,
		OtherTenantToken: refOtherToken, MaxRate: 5000})
	require.NoError(t, err)
	got := map[string][]string{}
	for _, r := range rep.Results {
		if r.ID != "HTTP-04" {
			got[r.Endpoint] = append(got[r.Endpoint], r.ID)
		}
	}
	for _, res := range conformance.AllResources {
		require.Equal(t, got["/"+res], conformance.ChecksAt(res), res)
	}
}
