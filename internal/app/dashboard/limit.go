package dashboard

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Defaults of [Config.MaxPagesPerUser] and [Config.PageWait].
const (
	DefaultMaxPagesPerUser = 4
	DefaultPageWait        = time.Second
)

// pageLimiter bounds the pages drawn at once for one user: each page reads
// the database and is drawn into memory before it is sent, so one person
// (or a script with their session) asking for many at once would otherwise
// cost the service as many page renders.
type pageLimiter struct {
	max  int
	wait time.Duration
	mu   sync.Mutex
	// slots holds, per user, a semaphore of max and how many requests
	// hold or wait for it; an entry is dropped when none does.
	slots map[string]*userSlots
}

type userSlots struct {
	sem  chan struct{}
	refs int
}

func newPageLimiter(max int, wait time.Duration) *pageLimiter {
	return &pageLimiter{max: max, wait: wait, slots: map[string]*userSlots{}}
}

// acquire takes one of the user's slots, waiting at most the limiter's
// wait, and returns the function that gives it back; false when none came
// free in time or ctx ended.
func (l *pageLimiter) acquire(ctx context.Context, user string) (func(), bool) {
	l.mu.Lock()
	us := l.slots[user]
	if us == nil {
		us = &userSlots{sem: make(chan struct{}, l.max)}
		l.slots[user] = us
	}
	us.refs++
	l.mu.Unlock()
	leave := func() {
		l.mu.Lock()
		if us.refs--; us.refs == 0 {
			delete(l.slots, user)
		}
		l.mu.Unlock()
	}
	release := func() { <-us.sem; leave() }
	select {
	case us.sem <- struct{}{}:
		return release, true
	default:
	}
	if l.wait > 0 {
		t := time.NewTimer(l.wait)
		defer t.Stop()
		select {
		case us.sem <- struct{}{}:
			return release, true
		case <-t.C:
		case <-ctx.Done():
		}
	}
	leave()
	return nil, false
}

// limitPages answers 429, with Retry-After, a request of a signed-in user
// who already has Config.MaxPagesPerUser pages being drawn and none came
// free within Config.PageWait.
func (d *Dashboard) limitPages(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := viewerOf(r)
		if v == nil {
			next.ServeHTTP(w, r)
			return
		}
		release, ok := d.limiter.acquire(r.Context(), v.User.ID)
		if !ok {
			w.Header().Set("Retry-After", "1")
			d.errorPage(w, r, http.StatusTooManyRequests, "You have "+strconv.Itoa(d.cfg.MaxPagesPerUser)+
				" pages of this dashboard loading at once already. Wait for them, then try again.")
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}
