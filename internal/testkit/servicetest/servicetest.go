// Package servicetest runs the whole oversight service (package
// internal/app/server) for the tests of its features, which see their routes
// and jobs as the service serves and works them.
package servicetest

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/server"
)

// New builds the service from c without working its jobs, and closes it
// when the test ends.
func New(t testing.TB, c server.Config) *server.Server {
	t.Helper()
	srv, err := server.New(t.Context(), c)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv
}

// Start builds the service from c and works its jobs until the test ends.
func Start(t testing.TB, c server.Config) *server.Server {
	t.Helper()
	srv := New(t, c)
	require.NoError(t, srv.Start(context.WithoutCancel(t.Context())))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Stop(ctx))
	})
	return srv
}

// Serve builds the service from c, works its jobs and serves it on a test
// server until the test ends.
func Serve(t testing.TB, c server.Config) (*server.Server, *httptest.Server) {
	t.Helper()
	srv := Start(t, c)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return srv, ts
}
