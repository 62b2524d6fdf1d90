package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
)

// One user gets at most MaxPagesPerUser pages drawn at once; past it 429
// with Retry-After, while another user is served; the slots come back.
func TestLimitPagesPerUser(t *testing.T) {
	d := &Dashboard{cfg: Config{MaxPagesPerUser: 2}, limiter: newPageLimiter(2, -1)}
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	d.pages = pages
	hold := make(chan struct{})
	var started sync.WaitGroup
	h := d.limitPages(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			started.Done()
			<-hold
		}
		w.WriteHeader(http.StatusOK)
	}))
	as := func(user, path string) *http.Request {
		v := &viewer{User: people.User{ID: user, Role: people.RoleReviewer}, Organisation: org.Organisation{ID: "org"}}
		return httptest.NewRequest(http.MethodGet, path, nil).WithContext(context.WithValue(context.Background(), viewerKey{}, v))
	}
	var done sync.WaitGroup
	for range 2 {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			h.ServeHTTP(httptest.NewRecorder(), as("rex", "/hold"))
		}()
	}
	started.Wait()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, as("rex", "/review"))
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("third page of rex: %d, Retry-After %q; want 429 with Retry-After 1", w.Code, w.Header().Get("Retry-After"))
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, as("ada", "/review"))
	if w.Code != http.StatusOK {
		t.Fatalf("another user: %d, want 200", w.Code)
	}
	close(hold)
	done.Wait()
	w = httptest.NewRecorder()
	h.ServeHTTP(w, as("rex", "/review"))
	if w.Code != http.StatusOK {
		t.Fatalf("rex after his pages ended: %d, want 200", w.Code)
	}
	if n := len(d.limiter.slots); n != 0 {
		t.Fatalf("%d users still tracked after every page ended", n)
	}
}

// A request past the bound waits up to PageWait for a slot.
func TestLimitPagesWaits(t *testing.T) {
	l := newPageLimiter(1, time.Minute)
	release, ok := l.acquire(context.Background(), "rex")
	if !ok {
		t.Fatal("first slot refused")
	}
	got := make(chan bool)
	go func() {
		r, ok := l.acquire(context.Background(), "rex")
		if ok {
			r()
		}
		got <- ok
	}()
	release()
	if !<-got {
		t.Fatal("the waiting request did not get the slot given back")
	}
	ctx, cancel := context.WithCancel(context.Background())
	release, _ = l.acquire(ctx, "rex")
	go func() { _, ok := l.acquire(ctx, "rex"); got <- ok }()
	cancel()
	if <-got {
		t.Fatal("a request whose client left got a slot")
	}
	release()
}
