package httpx

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"sync"
)

// Admit lets a request of key (an API key's id) in organisation org in, in
// three steps, and returns the function that undoes them all (call it once,
// when the handler returns):
//
//  1. it takes a slot of the key's and the organisation's requests in flight
//     ([Limiter.Acquire]; [ErrTooManyConcurrent] when there is none, the
//     answer then closing the connection, its body unread: [CloseUnread]);
//  2. it reads the body, at most [MaxBodyBytes], into memory
//     ([PrefetchBody]), so a client sending its body slowly holds only that
//     slot, never a worker;
//  3. it waits for a worker ([Limiter.Work]), the organisations taking turns,
//     so one organisation's costly requests cannot crowd out the others'.
//     An event stream (MCP's GET), which lasts as long as its client wants,
//     takes no worker.
//
// A body that cannot be read (larger than [MaxBodyBytes], not arrived
// within the read deadline, cut off) ends the request there: Admit gives
// its slot back and returns the [*spec.Error] of [BodyError] (kind
// spec.ErrTooLarge or spec.ErrInvalid, naming "body"), for the caller to
// answer in its API's shape, with nothing to release. r's body then fails
// with the same error, for a handler that answers such a body itself. The
// request does no work past that point: net/http ends a request's context
// when a read of its connection fails, so anything that ran on (a database
// query, the wait for a worker) would fail as if the client had gone away,
// and the client would get no answer at all.
//
// It fails with ctx's error when the request ends while it waits.
func (l *Limiter) Admit(w http.ResponseWriter, r *http.Request, key, org string) (release func(), err error) {
	inFlight, err := l.Acquire(key, org)
	if err != nil {
		CloseUnread(w, r)
		return nil, err
	}
	if err := PrefetchBody(w, r, MaxBodyBytes); err != nil {
		inFlight()
		return nil, BodyError(err)
	}
	if IsEventStream(r) {
		return inFlight, nil
	}
	work, err := l.Work(r.Context(), org)
	if err != nil {
		inFlight()
		return nil, err
	}
	return func() { work(); inFlight() }, nil
}

// PrefetchBody reads the body of r, at most limit bytes, into memory and
// puts it back for the handler. A body it cannot read (too large, too slow,
// cut off) is replaced by one that fails with the same error, so the
// handler answers it as it would have (its 413 or its 400), and that error
// is returned.
func PrefetchBody(w http.ResponseWriter, r *http.Request, limit int64) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	err := BufferBody(w, r, limit)
	if err != nil {
		r.Body = io.NopCloser(errReader{err})
	}
	return err
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// DefaultWorkers is the default of a [Limiter]'s workers: four per CPU the Go
// runtime may use, at least eight. A request holds one while its handler
// runs (database reads and writes, policy evaluation, encoding the answer),
// not while its body arrives.
func DefaultWorkers() int { return max(8, 4*runtime.GOMAXPROCS(0)) }

// fairGate hands out workers to waiting requests, one organisation at a time
// in turn, each holding at most perOrg of them at once.
type fairGate struct {
	workers, perOrg int
	mu              sync.Mutex
	running         int
	byOrg           map[string]int
	waiting         map[string][]*workWaiter // FIFO per organisation
	turn            []string                 // organisations with waiters, in turn order
}

type workWaiter struct {
	org     string
	ready   chan struct{}
	granted bool
}

// SetWorkers sets how many requests the Limiter lets work at once (n, at
// least 1) and how many of them one organisation may hold (perOrg, at least
// 1; the others of that organisation wait even when workers are free, so
// another organisation arriving finds one). Call it before use; the default
// is [DefaultWorkers] and a quarter of them per organisation.
func (l *Limiter) SetWorkers(n, perOrg int) {
	l.gate = &fairGate{workers: max(1, n), perOrg: max(1, perOrg), byOrg: map[string]int{}, waiting: map[string][]*workWaiter{}}
}

// Work waits for a worker for a request of organisation org and returns the
// function that gives it back (call it once). Waiting organisations take
// turns: when a worker is freed, it goes to the next organisation in turn
// that holds fewer than its share, to that organisation's oldest request. A
// nil Limiter has workers without limit.
func (l *Limiter) Work(ctx context.Context, org string) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	g := l.gate
	g.mu.Lock()
	if g.running < g.workers && g.byOrg[org] < g.perOrg && len(g.waiting[org]) == 0 {
		g.take(org)
		g.mu.Unlock()
		return g.releaser(org), nil
	}
	wt := &workWaiter{org: org, ready: make(chan struct{})}
	if len(g.waiting[org]) == 0 {
		g.turn = append(g.turn, org)
	}
	g.waiting[org] = append(g.waiting[org], wt)
	g.mu.Unlock()
	select {
	case <-wt.ready:
		return g.releaser(org), nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if wt.granted { // granted as ctx ended: give it on
		g.mu.Unlock()
		g.releaser(org)()
		return nil, ctx.Err()
	}
	q := g.waiting[org]
	for i, x := range q {
		if x == wt {
			g.waiting[org] = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(g.waiting[org]) == 0 {
		delete(g.waiting, org)
		for i, o := range g.turn {
			if o == org {
				g.turn = append(g.turn[:i:i], g.turn[i+1:]...)
				break
			}
		}
	}
	g.mu.Unlock()
	return nil, errors.Join(ErrTooManyConcurrent, ctx.Err())
}

// take counts a worker of org as running; g.mu is held.
func (g *fairGate) take(org string) {
	g.running++
	g.byOrg[org]++
}

func (g *fairGate) releaser(org string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.running--
			if g.byOrg[org]--; g.byOrg[org] <= 0 {
				delete(g.byOrg, org)
			}
			g.dispatch()
		})
	}
}

// dispatch hands free workers to the waiting organisations in turn; g.mu
// is held.
func (g *fairGate) dispatch() {
	for g.running < g.workers {
		i := -1
		for k, org := range g.turn {
			if g.byOrg[org] < g.perOrg {
				i = k
				break
			}
		}
		if i < 0 {
			return
		}
		org := g.turn[i]
		g.turn = append(g.turn[:i:i], g.turn[i+1:]...)
		q := g.waiting[org]
		wt := q[0]
		if len(q) == 1 {
			delete(g.waiting, org)
		} else {
			g.waiting[org] = q[1:]
			g.turn = append(g.turn, org) // its next request waits for its next turn
		}
		g.take(org)
		wt.granted = true
		close(wt.ready)
	}
}
