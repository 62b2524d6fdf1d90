package sources_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// A source whose provider redirects to another origin fails its sync with
// an error saying so (the redirect's target in the log only), on every transport that sends the
// source's token, and the other origin never sees the token.
func TestSyncRefusesCrossOriginRedirect(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		var leaked atomic.Int32
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization")+r.Header.Get("X-API-Key") != "" {
				leaked.Add(1)
			}
			http.NotFound(w, r)
		}))
		t.Cleanup(other.Close)
		target := strings.TrimPrefix(other.URL, "http://")
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusFound)
		}))
		t.Cleanup(srv.Close)

		for _, tr := range []string{sources.TransportREST, sources.TransportMCP, sources.TransportExport} {
			u := srv.URL
			if tr == sources.TransportMCP {
				u += "/mcp"
			}
			s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "moved " + tr, URL: u, Token: "tok-secret", Transport: tr})
			require.NoError(t, err, tr)
			_, err = e.src.SyncNow(ctx, s.ID)
			require.Error(t, err, tr)
			// The organisation is told of the redirect; where it led (the
			// remote's Location) goes to the log only.
			require.Contains(t, err.Error(), "redirected", tr)
			require.NotContains(t, err.Error(), target, tr)
			var se *sources.SyncError
			require.ErrorAs(t, err, &se, tr)
			require.Contains(t, se.Err.Error(), target, tr)
			require.NotContains(t, se.Err.Error(), "tok-secret", tr)
		}
		listed, err := e.src.Statuses(ctx, e.org.ID)
		require.NoError(t, err)
		require.Len(t, listed, 3)
		for _, s := range listed {
			for name, r := range s.Resources {
				require.Contains(t, r.LastError, "redirected", "%s %s", s.Name, name)
				require.NotContains(t, r.LastError, target, "%s %s", s.Name, name)
			}
		}
		require.Zero(t, leaked.Load(), "the other origin saw the token")
	})
}

// The collected views and the list of sources refuse a malformed query.
func TestViewRefusesMalformedQuery(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		base := e.url + "/organisations/" + e.org.ID
		for _, path := range []string{"/conversations?cursor=%%%", "/sources?x=%zz", "/events?a=1;b=2"} {
			require.Equal(t, http.StatusBadRequest, get(t, base+path, e.key, nil), path)
		}
		require.Equal(t, http.StatusOK, get(t, base+"/sources", e.key, nil))
	})
}
