package sources_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestSyncFairness: syncs of every organisation shared the service's ten
// workers, so ten sources of one organisation at a provider that hangs
// held all of them and another organisation's sources were never synced.
// Syncs now run on a queue of their own, at most Config.OrgSyncLimit of one
// organisation at once.
func TestSyncFairness(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)

		// A provider that answers nothing until the test ends.
		release := make(chan struct{})
		hung := make(chan struct{}, 100)
		hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hung <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
			http.Error(w, "gone", http.StatusServiceUnavailable)
		}))
		t.Cleanup(hanging.Close)
		for i := range 10 {
			_, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: fmt.Sprintf("hangs %d", i), URL: hanging.URL,
				Token: providerToken, Every: time.Hour})
			require.NoError(t, err)
		}
		jobsCtx, stop := context.WithCancel(context.Background())
		defer stop()
		require.NoError(t, e.srv.Start(jobsCtx))
		defer func() {
			close(release)
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = e.srv.Stop(sctx)
		}()
		// The hanging syncs have started before the other organisation's
		// source is added.
		select {
		case <-hung:
		case <-time.After(30 * time.Second):
			t.Fatal("no sync of the hanging sources started")
		}

		added := time.Now()
		fast, err := e.src.Add(ctx, e.other.ID, sources.SourceCreate{Name: "vendor", URL: newProvider(t, 5),
			Token: providerToken, Every: time.Hour})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			l, err := e.src.Statuses(ctx, e.other.ID)
			require.NoError(t, err)
			return len(l) == 1 && l[0].ID == fast.ID && l[0].Resources["usage"].LastSuccess != nil
		}, 20*time.Second, 50*time.Millisecond, "the other organisation's source was not synced")
		t.Logf("%s: the other organisation's source synced %s after it was added", db.Dialect, time.Since(added).Round(time.Millisecond))
	})
}
