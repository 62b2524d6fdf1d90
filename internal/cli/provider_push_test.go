package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
	"github.com/aiusage/kit/spec/webhook"
)

const pushTestSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func TestProviderPushUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--secret", pushTestSecret}, "--to is required"},
		{[]string{"--to", "ftp://x/y", "--secret", pushTestSecret}, "is not an http or https URL"},
		{[]string{"--to", "http://127.0.0.1:1/p"}, "--secret is required"},
		{[]string{"--to", "http://127.0.0.1:1/p", "--secret", "whsec_abc"}, "--secret: malformed webhook secret"},
		{[]string{"--to", "http://127.0.0.1:1/p", "--secret", pushTestSecret, "--attempts", "0"}, "--attempts must be at least 1"},
		{[]string{"--to", "http://127.0.0.1:1/p", "--secret", pushTestSecret, "--lookback", "-1s"}, "--lookback must not be negative"},
		{[]string{"--to", "http://127.0.0.1:1/p", "--secret", pushTestSecret, "--resource", "users"}, `--resource "users"`},
	} {
		r := runCLI(t, "", nil, append([]string{"provider", "push", "--database-url", "sqlite::memory:"}, tc.args...)...)
		require.Equal(t, ExitUsage, r.code, tc.args)
		require.Contains(t, r.stderr, tc.want, tc.args)
	}
}

// TestProviderPushOnce pushes a demo database once to a receiver that
// refuses each delivery's first attempt: the command waits for the retries
// and exits 0; a second run pushes no conversation again.
func TestProviderPushOnce(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	_, _, stop := startServe(t, "--database-url", dbURL, "--token", "t", "--demo", "30")
	stop()

	var mu sync.Mutex
	seen := map[string]int{}
	records := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if webhook.Verify(pushTestSecret, r.Header, body, time.Now(), 0) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		id := r.Header.Get(webhook.HeaderID)
		seen[id]++
		if seen[id] == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var d spec.PushDelivery
		require.NoError(t, json.Unmarshal(body, &d))
		records[d.Resource] += len(d.Records)
	}))
	defer srv.Close()
	r := runCLI(t, "", nil, "provider", "push", "--database-url", dbURL, "--to", srv.URL, "--secret", pushTestSecret)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "every delivery acknowledged")
	mu.Lock()
	require.Equal(t, 30, records["conversations"])
	mu.Unlock()

	r = runCLI(t, "", nil, "provider", "push", "--database-url", dbURL, "--to", srv.URL, "--secret", pushTestSecret, "--resource", "conversations")
	require.Equal(t, 0, r.code, r.stderr)
	mu.Lock()
	require.Equal(t, 30, records["conversations"])
	mu.Unlock()
}

// TestProviderPushGivenUp exits 1 when the receiver refuses every delivery
// for good.
func TestProviderPushGivenUp(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	_, _, stop := startServe(t, "--database-url", dbURL, "--token", "t", "--demo", "5")
	stop()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer srv.Close()
	r := runCLI(t, "", nil, "provider", "push", "--database-url", dbURL, "--to", srv.URL, "--secret", pushTestSecret, "--resource", "assistants")
	require.Equal(t, ExitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, "deliveries given up")
}
