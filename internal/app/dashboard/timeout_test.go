package dashboard_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/dashboard"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/servicetest"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPageOutOfTime: a page whose database work is cut by the request's
// deadline (the server's deadlines end the context before the read
// deadline) is a 503 page with Retry-After, not a 500 logged as an internal
// error. The test holds every connection of the pool, so the page's
// session check waits until the deadline (5 s: a sign-in hashes its
// password first).
func TestPageOutOfTime(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		orgs, err := org.NewStore(ctx, db)
		require.NoError(t, err)
		ppl, err := people.New(ctx, people.Config{HashCost: people.HashTest, DB: db, Orgs: orgs})
		require.NoError(t, err)
		var logs lockedBuffer
		full := servicetest.New(t, server.Config{DB: db, Orgs: orgs, Secrets: keyring.Ephemeral(), People: ppl,
			Dashboard: dashboard.Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}})
		svc := full.Review()
		srv := httptest.NewServer(httpx.Deadlines{Read: 5 * time.Second}.Handler(full.Handler()))
		t.Cleanup(srv.Close)
		e := &env{t: t, url: srv.URL, orgs: orgs, people: ppl, review: svc}
		e.org, err = orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Acme"}, admin)
		require.NoError(t, err)
		e.user("ada@acme.test", "Ada", people.RoleAdministrator)
		b := e.browser()
		b.signIn(t, "ada@acme.test", "/review")
		require.Equal(t, http.StatusOK, b.get(t, "/review").Status)

		db.SetMaxOpenConns(1)
		conn, err := db.Conn(context.Background())
		require.NoError(t, err)
		require.Eventually(t, func() bool { return db.Stats().OpenConnections == 1 }, 10*time.Second, time.Millisecond)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/review", nil)
		require.NoError(t, err)
		resp, err := b.client.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_ = conn.Close()
		db.SetMaxOpenConns(0)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
		require.NotContains(t, logs.String(), "level=ERROR")
	})
}
