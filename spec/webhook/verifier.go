package webhook

import (
	"container/list"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ErrDuplicate is returned by [Verifier.Verify] for an authentic, timely
// delivery whose webhook-id the verifier has already accepted: a retry of a
// delivery whose answer the sender did not get, or a replay of a captured
// one. Answer it with a 2xx, so the sender stops retrying, without
// processing it again.
var ErrDuplicate = errors.New("duplicate webhook id")

// DefaultMaxIDs is how many message ids a [Verifier] remembers when
// [VerifierOptions.MaxIDs] is 0.
const DefaultMaxIDs = 10000

// VerifierOptions configures [NewVerifier]. The zero value is the default.
type VerifierOptions struct {
	// Tolerance is how far a delivery's webhook-timestamp may be from now,
	// in either direction. Default (0): [DefaultTolerance].
	Tolerance time.Duration
	// MaxIDs bounds the message ids remembered; when full, the id
	// remembered first is forgotten. Default (0): [DefaultMaxIDs].
	// Negative is an error.
	MaxIDs int
	// Now is the clock. Default: time.Now.
	Now func() time.Time
}

// Verifier is the receiving side of webhook deliveries signed with one
// secret: it checks each delivery as [Verify] does and, for authentic ones,
// remembers the webhook-id in a bounded memory, so that a delivery whose id
// it has seen is reported as [ErrDuplicate]. It is safe for concurrent use:
// of two concurrent deliveries of one id, exactly one is accepted.
//
// The memory holds at most MaxIDs ids, and an id is kept only while the
// latest timestamp it came with is within the tolerance: past it, the
// timestamp check refuses a replay of that delivery anyway. So a sender's
// retry with a fresh timestamp long after the first attempt is accepted
// again; a receiver whose processing must not run twice keeps the ids it
// processed in its own storage as well.
type Verifier struct {
	secret    string
	tolerance time.Duration
	max       int
	now       func() time.Time

	mu    sync.Mutex
	seen  map[string]*list.Element // of order
	order *list.List               // of *seenID, oldest accepted first
}

// seenID is a remembered message id with the latest webhook-timestamp it
// came with (Unix seconds).
type seenID struct {
	id string
	ts int64
}

// NewVerifier returns a Verifier for deliveries signed with secret. It fails
// with [ErrSecret] on a malformed secret, and on a negative MaxIDs.
func NewVerifier(secret string, opts *VerifierOptions) (*Verifier, error) {
	if _, err := webhookKey(secret); err != nil {
		return nil, err
	}
	var o VerifierOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxIDs < 0 {
		return nil, fmt.Errorf("webhook: VerifierOptions.MaxIDs %d is negative", o.MaxIDs)
	}
	if o.MaxIDs == 0 {
		o.MaxIDs = DefaultMaxIDs
	}
	if o.Tolerance <= 0 {
		o.Tolerance = DefaultTolerance
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Verifier{secret: secret, tolerance: o.Tolerance, max: o.MaxIDs, now: o.Now,
		seen: map[string]*list.Element{}, order: list.New()}, nil
}

// Verify checks a delivery as [Verify] does, then remembers its
// webhook-id. It returns nil for a new authentic delivery, an error wrapping
// [ErrDuplicate] for an authentic one whose id is remembered, and the errors
// of [Verify] otherwise (nothing is remembered of those).
//
// When processing an accepted delivery fails and the receiver answers
// other than 2xx, it should call [Verifier.Forget] with the id, so that the
// sender's retry is processed rather than reported as a duplicate.
func (v *Verifier) Verify(header http.Header, body []byte) error {
	now := v.now()
	if err := Verify(v.secret, header, body, now, v.tolerance); err != nil {
		return err
	}
	id := header.Get(HeaderID)
	ts, _ := strconv.ParseInt(header.Get(HeaderTimestamp), 10, 64) // Verify parsed it
	v.mu.Lock()
	defer v.mu.Unlock()
	v.expire(now)
	if e, ok := v.seen[id]; ok {
		s := e.Value.(*seenID)
		if !v.expired(s.ts, now) {
			s.ts = max(s.ts, ts) // a replay of the newer delivery is a duplicate too
			return fmt.Errorf("%w: %s was accepted already", ErrDuplicate, id)
		}
		v.order.Remove(e) // expired, not yet at the front: accepted anew below
		delete(v.seen, id)
	}
	if v.order.Len() >= v.max {
		oldest := v.order.Front()
		v.order.Remove(oldest)
		delete(v.seen, oldest.Value.(*seenID).id)
	}
	v.seen[id] = v.order.PushBack(&seenID{id: id, ts: ts})
	return nil
}

// Forget drops id from the memory, so that its next delivery is accepted
// again: call it when the processing of an accepted delivery failed.
func (v *Verifier) Forget(id string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if e, ok := v.seen[id]; ok {
		v.order.Remove(e)
		delete(v.seen, id)
	}
}

// Len returns how many message ids are remembered.
func (v *Verifier) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.seen)
}

// expired reports whether a delivery stamped ts would now be refused by the
// timestamp check, and so cannot be replayed.
func (v *Verifier) expired(ts int64, now time.Time) bool {
	return now.Sub(time.Unix(ts, 0)) > v.tolerance
}

// expire forgets the oldest ids while they have expired.
func (v *Verifier) expire(now time.Time) {
	for e := v.order.Front(); e != nil && v.expired(e.Value.(*seenID).ts, now); e = v.order.Front() {
		v.order.Remove(e)
		delete(v.seen, e.Value.(*seenID).id)
	}
}
