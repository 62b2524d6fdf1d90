package push_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider/push"
)

// TestPushKilledHelper is the pushing process TestPushTakesOverKilledDeliveries
// kills: it runs only when that test starts it.
func TestPushKilledHelper(t *testing.T) {
	dbURL, target := os.Getenv("AIUSAGE_PUSH_HELPER_DB"), os.Getenv("AIUSAGE_PUSH_HELPER_URL")
	if dbURL == "" {
		t.Skip("the process TestPushTakesOverKilledDeliveries starts and kills")
	}
	db, err := sqldb.Open(t.Context(), dbURL)
	require.NoError(t, err)
	cfg := config(db, fill(t, 30), target)
	cfg.Resources = []string{"conversations"}
	require.NoError(t, db.Close())
	p, err := push.New(t.Context(), cfg)
	require.NoError(t, err)
	_, err = p.Scan(t.Context())
	require.NoError(t, err)
	require.NoError(t, p.Start(t.Context()))
	time.Sleep(time.Minute) // killed long before
}

// TestPushTakesOverKilledDeliveries: the deliveries a pusher killed with
// SIGKILL had in flight are sent by the next process within seconds, not
// when the job queue gives them up (90 s after their start).
func TestPushTakesOverKilledDeliveries(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		// The receiver holds every request of the first process open;
		// then it answers as rc.
		var held atomic.Int32
		var answer atomic.Pointer[receiver]
		release := make(chan struct{})
		hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rc := answer.Load(); rc != nil {
				rc.ServeHTTP(w, r)
				return
			}
			held.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		defer hang.Close()
		defer close(release)

		cmd := exec.Command(os.Args[0], "-test.run=^TestPushKilledHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "AIUSAGE_PUSH_HELPER_DB="+db.URL(), "AIUSAGE_PUSH_HELPER_URL="+hang.URL)
		require.NoError(t, cmd.Start())
		deadline := time.Now().Add(30 * time.Second)
		for held.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		require.Positive(t, held.Load(), "the first process sent deliveries")
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()

		// The next process, the receiver now answering, to the same target
		// (the queue is the target's): the held deliveries are sent at once.
		rc := newReceiver()
		answer.Store(rc)
		src := fill(t, 30)
		cfg := config(db, src, hang.URL)
		cfg.Resources = []string{"conversations"}
		start := time.Now()
		p, err := push.New(t.Context(), cfg)
		require.NoError(t, err)
		defer p.Close()
		require.NoError(t, p.Start(t.Context()))
		defer func() { _ = p.Stop(context.WithoutCancel(t.Context())) }()
		wctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		o, err := p.Wait(wctx, start, 20*time.Millisecond)
		require.NoError(t, err, "the deliveries of the killed process are still pending after %s", time.Since(start).Round(time.Millisecond))
		require.Zero(t, o.GivenUp)
		require.Equal(t, 30, rc.count("conversations"))
		t.Logf("the killed process's deliveries were sent %s after the next process started", time.Since(start).Round(time.Millisecond))
	})
}
