package httpx_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/httpx"
)

// TestDeadlinesEndTheContextFirst: net/http cancels the context of a
// request still served when its read deadline passes, with the
// context.Canceled of a client that went away, so a handler whose wait or
// query was cut by the deadline took it for the client leaving (answered
// nothing: a 200 with no body) or for a failure (500). The deadlines now
// end the context first, with context.DeadlineExceeded: TimedOut, not
// ClientGone. A client that really goes away is still ClientGone.
func TestDeadlinesEndTheContextFirst(t *testing.T) {
	t.Parallel()
	type seen struct {
		err            error
		timedOut, gone bool
		hasDeadln      bool
	}
	got := make(chan seen, 1)
	read := 400 * time.Millisecond
	srv := httptest.NewServer(httpx.Deadlines{Read: read}.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		err := r.Context().Err()
		_, ok := r.Context().Deadline()
		got <- seen{err: err, timedOut: httpx.TimedOut(r, err), gone: httpx.ClientGone(r, err), hasDeadln: ok}
		if httpx.TimedOut(r, err) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})))
	t.Cleanup(srv.Close)

	start := time.Now()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	s := <-got
	require.ErrorIs(t, s.err, context.DeadlineExceeded, "the context ended by the read deadline")
	require.True(t, s.hasDeadln)
	require.True(t, s.timedOut)
	require.False(t, s.gone)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Less(t, time.Since(start), read, "the context ends before the read deadline")
	require.GreaterOrEqual(t, time.Since(start), read-httpx.WorkMargin(read))

	// The client goes away: ClientGone, not TimedOut.
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err = http.DefaultClient.Do(req)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	s = <-got
	require.ErrorIs(t, s.err, context.Canceled)
	require.False(t, s.timedOut)
	require.True(t, s.gone)
}

func TestWorkMargin(t *testing.T) {
	t.Parallel()
	require.Equal(t, time.Second, httpx.WorkMargin(httpx.DefaultReadDeadline))
	require.Equal(t, 40*time.Millisecond, httpx.WorkMargin(400*time.Millisecond))
}
