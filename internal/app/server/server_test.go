package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/servicetest"
	"github.com/aiusage/kit/spec"
)

// TestUnknownPathsAndMethods: the service's router answers an unknown path
// or method in the body of the area it falls in: the review-task API's
// error under /review-tasks and /webhooks, the organisation API's problem
// elsewhere; the operations endpoints answer beside them.
func TestUnknownPathsAndMethods(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		orgs, err := org.NewStore(t.Context(), db)
		require.NoError(t, err)
		guard := func(h http.Handler) http.Handler { return h }
		_, srv := servicetest.Serve(t, server.Config{DB: db, Orgs: orgs, Secrets: keyring.Ephemeral(), MetricsGuard: guard})
		do := func(method, path string) (*http.Response, []byte) {
			t.Helper()
			req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, nil)
			require.NoError(t, err)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			return res, b
		}
		reviewCode := func(b []byte) string {
			t.Helper()
			var e spec.ReviewError
			require.NoError(t, json.Unmarshal(b, &e), string(b))
			return e.Error.Code
		}

		res, b := do(http.MethodGet, "/review-tasks/x/y")
		require.Equal(t, http.StatusNotFound, res.StatusCode)
		require.Equal(t, spec.CodeNotFound, reviewCode(b))

		res, b = do(http.MethodPut, "/webhooks")
		require.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
		require.Equal(t, spec.CodeMethodNotAllowed, reviewCode(b))
		require.Equal(t, "GET, HEAD, POST", res.Header.Get("Allow"))

		res, _ = do(http.MethodGet, "/no-such-path")
		require.Equal(t, http.StatusNotFound, res.StatusCode)
		require.Equal(t, "application/problem+json", res.Header.Get("Content-Type"))

		res, _ = do(http.MethodDelete, "/organisations")
		require.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
		require.Equal(t, "application/problem+json", res.Header.Get("Content-Type"))

		res, _ = do(http.MethodGet, "/healthz")
		require.Equal(t, http.StatusOK, res.StatusCode)
		res, b = do(http.MethodGet, "/metrics")
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, string(b), "aiusage_http_requests_total")
	})
}

// TestNoMetricsGuard: without a guard, /metrics is not served on the
// service's address.
func TestNoMetricsGuard(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		orgs, err := org.NewStore(t.Context(), db)
		require.NoError(t, err)
		_, srv := servicetest.Serve(t, server.Config{DB: db, Orgs: orgs, Secrets: keyring.Ephemeral()})
		res, err := http.Get(srv.URL + "/metrics")
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		require.Equal(t, http.StatusNotFound, res.StatusCode)
	})
}

// TestConfigRequired: the service needs its database, organisation store
// and keyring.
func TestConfigRequired(t *testing.T) {
	t.Parallel()
	_, err := server.New(t.Context(), server.Config{})
	require.ErrorContains(t, err, "required")
}
