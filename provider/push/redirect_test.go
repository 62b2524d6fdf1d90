package push_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// lockedBuffer is a log sink safe for the pusher's workers.
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

// A receiver that redirects does not get its deliveries re-sent wherever it
// points: the attempts fail, naming the redirect's target, and nothing
// reaches the other origin.
func TestPushFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		src := fill(t, 5)
		rc := newReceiver()
		other := httptest.NewServer(rc)
		defer other.Close()
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
		}))
		defer front.Close()
		var logs lockedBuffer
		cfg := config(db, src, front.URL)
		cfg.MaxAttempts = 2
		cfg.Resources = []string{"assistants"}
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		res, o := run(t, cfg)
		require.Equal(t, res.Deliveries["assistants"], o.GivenUp)
		require.Zero(t, rc.count("assistants"), "the deliveries were re-sent to the redirect's target")
		require.Contains(t, logs.String(), "a redirect to "+strings.TrimPrefix(other.URL, "http://"))
	})
}
