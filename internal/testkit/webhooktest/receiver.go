// Package webhooktest is a webhook receiver for tests of the service's
// webhook deliveries: a loopback HTTP server that checks every delivery's
// Standard Webhooks signature with its own verifier ([Verify], independent of
// the service's code), records what arrived, and can be told to misbehave.
//
//	rcv := webhooktest.NewReceiver(t, "")
//	hook := registerWebhook(t, rcv.URL()) // the service answers the secret
//	rcv.SetSecret(hook.Secret)
//	rcv.FailFirst(2) // 500 to the first two attempts of every message
//	createTask(t)
//	got, err := rcv.WaitAcknowledged(ctx, 1)
//	// got[0].Attempt == 3, got[0].Type == "task.approved"
//
// A delivery whose signature does not verify is answered 401 and recorded
// with its error, so a sender that signs wrongly never sees success.
package webhooktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// maxBody is the largest delivery body the receiver reads.
const maxBody = 1 << 20

// Delivery is one request the receiver got.
type Delivery struct {
	// ID is the webhook-id header.
	ID string
	// Timestamp is the webhook-timestamp header as a time; zero when it is
	// missing or not an integer.
	Timestamp time.Time
	// Type is the "type" member of the JSON body, "" when there is none.
	Type string
	// Body is the request body as received.
	Body []byte
	// Header is the request's header.
	Header http.Header
	// Attempt counts the requests with this ID so far, from 1.
	Attempt int
	// Duplicate is true when an earlier delivery with this ID had been
	// acknowledged when this one arrived: a receiver deduplicating by
	// webhook-id (as webhook.Verifier does) would not process it again.
	// The receiver still records and answers it like any other.
	Duplicate bool
	// ReceivedAt is when the request arrived.
	ReceivedAt time.Time
	// Status is the status the receiver answered, or chose to answer while
	// it is still waiting (see [Receiver.Slow]).
	Status int
	// Answered is true once the receiver has sent its answer. It stays
	// false while a slow answer is pending and when the sender hung up first.
	Answered bool
	// Abandoned is true when the sender hung up before the answer (see
	// [Receiver.Slow]).
	Abandoned bool
	// Err is nil for a POST whose signature verified (and whose timestamp
	// was within the tolerance, if one is set); otherwise it says why the
	// delivery was refused.
	Err error
}

// Acknowledged reports whether the receiver answered 2xx to this delivery:
// it was authentic and the answer was sent.
func (d Delivery) Acknowledged() bool {
	return d.Err == nil && d.Answered && d.Status >= 200 && d.Status <= 299
}

// Receiver is a test webhook receiver on 127.0.0.1, started by [NewReceiver]
// and closed when the test ends. Its methods are safe for concurrent use;
// settings apply to the deliveries that arrive after they are made.
type Receiver struct {
	srv     *httptest.Server
	closing chan struct{}
	once    sync.Once

	mu         sync.Mutex
	secret     string
	failFirst  int
	status     int
	location   string
	delay      time.Duration
	tolerance  time.Duration
	deliveries []Delivery
	attempts   map[string]int
	changed    chan struct{} // closed and replaced at every change
}

// NewReceiver starts a receiver that verifies deliveries with secret ("" if
// not known yet: see [Receiver.SetSecret]). It answers 200 to authentic
// deliveries until told otherwise, and closes at the end of the test.
func NewReceiver(t testing.TB, secret string) *Receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("webhooktest: listen: %v", err)
	}
	r := &Receiver{
		closing:  make(chan struct{}),
		secret:   secret,
		status:   http.StatusOK,
		attempts: map[string]int{},
		changed:  make(chan struct{}),
	}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	_ = r.srv.Listener.Close()
	r.srv.Listener = ln
	r.srv.Start()
	t.Cleanup(r.Close)
	return r
}

// URL is the receiver's URL, such as "http://127.0.0.1:41234/hooks".
func (r *Receiver) URL() string { return r.srv.URL + "/hooks" }

// Close stops the receiver, ending slow answers at once. It is called at the
// end of the test and may be called before.
func (r *Receiver) Close() {
	r.once.Do(func() {
		close(r.closing)
		r.srv.Close()
	})
}

// SetSecret sets the secret deliveries are verified with, for when the
// service generates it at registration, after the receiver's URL is known.
func (r *Receiver) SetSecret(secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = secret
}

// SetTolerance makes the receiver refuse (401) a delivery whose
// webhook-timestamp is more than d away from the real clock, as a production
// receiver does. 0, the default, does not check the timestamp, for senders
// on a fake clock.
func (r *Receiver) SetTolerance(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tolerance = d
}

// FailFirst makes the receiver answer 500 to the first n attempts of each
// message (counted by webhook-id, from the first delivery the receiver ever
// saw of it), and the usual answer after. 0 turns it off.
func (r *Receiver) FailFirst(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failFirst = n
}

// RespondWith sets the status answered to authentic deliveries (once past
// FailFirst), such as 410 or 503; the default is 200.
func (r *Receiver) RespondWith(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.location = status, ""
}

// RedirectTo makes the receiver answer authentic deliveries with 307
// Temporary Redirect to location.
func (r *Receiver) RedirectTo(location string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.location = http.StatusTemporaryRedirect, location
}

// Slow makes the receiver wait d before answering each delivery, or until
// the sender hangs up (the delivery is then Abandoned) or the receiver
// closes. 0 turns it off.
func (r *Receiver) Slow(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delay = d
}

// Deliveries returns every request received so far, in order of arrival.
func (r *Receiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return clone(r.deliveries)
}

// Acknowledged returns the deliveries answered 2xx so far (see
// [Delivery.Acknowledged]), in order of arrival.
func (r *Receiver) Acknowledged() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return acknowledged(r.deliveries)
}

// Wait waits until at least n requests have arrived and returns them all,
// or returns what arrived and ctx's error when ctx ends first.
func (r *Receiver) Wait(ctx context.Context, n int) ([]Delivery, error) {
	return r.wait(ctx, n, clone)
}

// WaitAcknowledged waits until at least n deliveries have been answered 2xx
// and returns those, or returns them and ctx's error when ctx ends first.
func (r *Receiver) WaitAcknowledged(ctx context.Context, n int) ([]Delivery, error) {
	return r.wait(ctx, n, acknowledged)
}

func (r *Receiver) wait(ctx context.Context, n int, pick func([]Delivery) []Delivery) ([]Delivery, error) {
	for {
		r.mu.Lock()
		got, changed := pick(r.deliveries), r.changed
		r.mu.Unlock()
		if len(got) >= n {
			return got, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return got, fmt.Errorf("webhooktest: %d of %d deliveries: %w", len(got), n, ctx.Err())
		}
	}
}

func clone(ds []Delivery) []Delivery {
	out := make([]Delivery, len(ds))
	copy(out, ds)
	return out
}

func acknowledged(ds []Delivery) []Delivery {
	var out []Delivery
	for _, d := range ds {
		if d.Acknowledged() {
			out = append(out, d)
		}
	}
	return out
}

// notifyLocked wakes the waiters; r.mu is held.
func (r *Receiver) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	arrived := time.Now()
	body, readErr := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	d := Delivery{
		ID:         req.Header.Get("webhook-id"),
		Body:       body,
		Header:     req.Header.Clone(),
		ReceivedAt: arrived,
	}
	if sec, err := strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64); err == nil {
		d.Timestamp = time.Unix(sec, 0)
	}
	var payload struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(body, &payload) == nil {
		d.Type = payload.Type
	}

	r.mu.Lock()
	r.attempts[d.ID]++
	d.Attempt = r.attempts[d.ID]
	for _, prev := range r.deliveries {
		if prev.ID == d.ID && prev.Acknowledged() {
			d.Duplicate = true
			break
		}
	}
	location, delay := "", r.delay
	switch {
	case req.Method != http.MethodPost:
		d.Status, d.Err = http.StatusMethodNotAllowed, fmt.Errorf("webhooktest: method %s, want POST", req.Method)
	case readErr != nil:
		d.Status, d.Err = http.StatusRequestEntityTooLarge, fmt.Errorf("webhooktest: reading body: %w", readErr)
	case r.secret == "":
		d.Status, d.Err = http.StatusUnauthorized, errors.New("webhooktest: no secret set to verify with")
	default:
		d.Err = Verify(r.secret, req.Header, body)
		if d.Err == nil && r.tolerance > 0 {
			if age := arrived.Sub(d.Timestamp); age > r.tolerance || age < -r.tolerance {
				d.Err = fmt.Errorf("webhooktest: webhook-timestamp %s is %s from now", req.Header.Get("webhook-timestamp"), age)
			}
		}
		switch {
		case d.Err != nil:
			d.Status = http.StatusUnauthorized
		case d.Attempt <= r.failFirst:
			d.Status = http.StatusInternalServerError
		default:
			d.Status, location = r.status, r.location
		}
	}
	// Marked answered before the answer is written, so that a sender that
	// has read the answer finds the delivery acknowledged.
	d.Answered = delay <= 0
	i := len(r.deliveries)
	r.deliveries = append(r.deliveries, d)
	r.notifyLocked()
	r.mu.Unlock()

	if delay > 0 {
		timer := time.NewTimer(delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-req.Context().Done():
		case <-r.closing:
		}
		r.mu.Lock()
		if req.Context().Err() != nil {
			r.deliveries[i].Abandoned = true
		} else {
			r.deliveries[i].Answered = true
		}
		r.notifyLocked()
		r.mu.Unlock()
		if req.Context().Err() != nil {
			return
		}
	}
	if location != "" {
		w.Header().Set("Location", location)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(d.Status)
	_, _ = io.WriteString(w, http.StatusText(d.Status)+"\n")
}
