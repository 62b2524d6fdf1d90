package httpx

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

// pendingWork is a Work call under way in a goroutine.
type pendingWork struct {
	release chan func()
	err     chan error
}

func startWork(ctx context.Context, l *Limiter, org string) pendingWork {
	p := pendingWork{release: make(chan func(), 1), err: make(chan error, 1)}
	go func() {
		rel, err := l.Work(ctx, org)
		if err != nil {
			p.err <- err
			return
		}
		p.release <- rel
	}()
	return p
}

func (p pendingWork) wait(t *testing.T) func() {
	t.Helper()
	select {
	case rel := <-p.release:
		return rel
	case err := <-p.err:
		t.Fatalf("Work failed: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Work was not granted")
	}
	return nil
}

func (p pendingWork) notYet(t *testing.T) {
	t.Helper()
	select {
	case <-p.release:
		t.Fatal("Work was granted while it should wait")
	case err := <-p.err:
		t.Fatalf("Work failed: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
}

// waiters counts the requests waiting for a worker.
func waiters(l *Limiter) int {
	l.gate.mu.Lock()
	defer l.gate.mu.Unlock()
	n := 0
	for _, q := range l.gate.waiting {
		n += len(q)
	}
	return n
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, time.Millisecond)
}

// Organisations take turns at the workers: a busy organisation with a queue
// of requests does not make another one wait behind that queue.
func TestWorkTakesTurns(t *testing.T) {
	t.Parallel()
	l := NewLimiter(-1, -1)
	l.SetWorkers(1, 1)
	ctx := t.Context()
	a1 := startWork(ctx, l, "a").wait(t)
	// a2 queues before a3 is started: two started at once may queue in
	// either order.
	a2 := startWork(ctx, l, "a")
	waitFor(t, func() bool { return waiters(l) == 1 })
	a3 := startWork(ctx, l, "a")
	waitFor(t, func() bool { return waiters(l) == 2 })
	b1 := startWork(ctx, l, "b")
	waitFor(t, func() bool { return waiters(l) == 3 })
	a2.notYet(t)
	b1.notYet(t)

	a1()
	a2rel := a2.wait(t) // a's turn came first
	a3.notYet(t)
	a2rel()
	b1rel := b1.wait(t) // then b's, before a's third
	a3.notYet(t)
	b1rel()
	a3.wait(t)()
	require.Equal(t, 0, l.gate.running)
}

// One organisation holds at most its share of the workers, even when more
// are free, so another organisation arriving finds one at once.
func TestWorkShare(t *testing.T) {
	t.Parallel()
	l := NewLimiter(-1, -1)
	l.SetWorkers(4, 2)
	ctx := t.Context()
	a1, a2 := startWork(ctx, l, "a").wait(t), startWork(ctx, l, "a").wait(t)
	a3 := startWork(ctx, l, "a")
	a3.notYet(t)
	startWork(ctx, l, "b").wait(t)()
	a1()
	a3.wait(t)()
	a2()
	require.Equal(t, 0, l.gate.running)
	require.Empty(t, l.gate.byOrg)
}

// A request that ends while it waits leaves the queue, and one granted as
// it ended gives its worker on.
func TestWorkCancelled(t *testing.T) {
	t.Parallel()
	l := NewLimiter(-1, -1)
	l.SetWorkers(1, 1)
	hold := startWork(t.Context(), l, "a").wait(t)
	ctx, cancel := context.WithCancel(t.Context())
	gone := startWork(ctx, l, "b")
	waitFor(t, func() bool { return waiters(l) == 1 })
	cancel()
	select {
	case err := <-gone.err:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled wait did not end")
	}
	require.Equal(t, 0, waiters(l))
	require.Empty(t, l.gate.turn)
	hold()
	startWork(t.Context(), l, "c").wait(t)()

	// Many waiters cancelled at random while workers come and go: every
	// worker is given back.
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(t.Context(), time.Duration(i%7)*time.Millisecond)
			defer cancel()
			if rel, err := l.Work(ctx, string(rune('a'+i%5))); err == nil {
				time.Sleep(time.Millisecond)
				rel()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 0, l.gate.running)
	require.Equal(t, 0, waiters(l))
}

// Admit reads the body before the request takes a worker, and a body it
// cannot read reaches the handler as the same error.
func TestAdmitPrefetchesBody(t *testing.T) {
	t.Parallel()
	l := NewLimiter(-1, -1)
	l.SetWorkers(1, 1)
	r := httptest.NewRequest(http.MethodPost, "/x", strings.NewReader(`{"a":1}`))
	w := httptest.NewRecorder()
	rel, err := l.Admit(w, r, "k", "o")
	require.NoError(t, err)
	b, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	require.Equal(t, `{"a":1}`, string(b))
	rel()

	// A body it cannot read ends the request: Admit returns the error to
	// answer, holds nothing, and the handler sees the same error.
	big := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(make([]byte, MaxBodyBytes+1)))
	_, err = l.Admit(httptest.NewRecorder(), big, "k", "o")
	var e *spec.Error
	require.ErrorAs(t, err, &e)
	require.ErrorIs(t, err, spec.ErrTooLarge)
	require.Equal(t, "body", e.Fields[0].Field)
	_, err = io.ReadAll(big.Body)
	require.True(t, IsTooLarge(err), "the handler sees the body as too large: %v", err)
	slow := httptest.NewRequest(http.MethodPost, "/x", io.NopCloser(timeoutReader{}))
	_, err = l.Admit(httptest.NewRecorder(), slow, "k", "o")
	require.ErrorIs(t, err, spec.ErrInvalid)
	require.Contains(t, err.Error(), "did not arrive within the request's read deadline")
	require.Equal(t, 0, l.gate.running, "no worker taken")
	l.mu.Lock()
	require.Empty(t, l.keys, "no slot kept")
	l.mu.Unlock()

	// An event stream takes no worker.
	hold, err := l.Work(t.Context(), "o")
	require.NoError(t, err)
	sse := httptest.NewRequest(http.MethodGet, "/mcp", nil)
	sse.Header.Set("Accept", "text/event-stream")
	rel, err = l.Admit(httptest.NewRecorder(), sse, "k", "o")
	require.NoError(t, err)
	rel()
	hold()

	// Over the requests in flight: refused, nothing taken.
	l2 := NewLimiter(1, -1)
	rel, err = l2.Admit(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/x", nil), "k", "o")
	require.NoError(t, err)
	_, err = l2.Admit(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/x", nil), "k", "o")
	require.True(t, errors.Is(err, ErrTooManyConcurrent))
	rel()
}

// timeoutReader fails as a body whose read deadline passed.
type timeoutReader struct{}

func (timeoutReader) Read([]byte) (int, error) { return 0, os.ErrDeadlineExceeded }

// A request Admit refuses is answered at once, its body unread, and its
// connection closed without waiting for the body. Without CloseUnread,
// net/http reads the body before it answers, and the 429 to a client
// sending its body slowly waits for the body (here, for ever: this client
// sends none). A request without a body keeps its connection.
func TestAdmitRefusesBeforeTheBody(t *testing.T) {
	t.Parallel()
	l := NewLimiter(1, -1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rel, err := l.Admit(w, r, "k", "o")
		if err != nil {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		defer rel()
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	held, err := l.Acquire("k", "o")
	require.NoError(t, err)
	defer held()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
	require.NoError(t, err)
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.True(t, resp.Close, "the connection is closed: %v", resp.Header)
	require.NoError(t, resp.Body.Close())
	_, err = rd.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the server reads no more of the connection")

	w := httptest.NewRecorder()
	_, err = l.Admit(w, httptest.NewRequest(http.MethodGet, "/", nil), "k", "o")
	require.ErrorIs(t, err, ErrTooManyConcurrent)
	require.Empty(t, w.Header().Get("Connection"), "a request without a body keeps its connection")
}
