package httpx

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"
)

// SecurityHeaders marks every answer of next X-Content-Type-Options: nosniff
// and Cache-Control: no-store: the APIs answer authenticated requests with
// an organisation's data, which no shared cache may keep and no browser may
// read as anything but what its Content-Type says. A handler that sets its
// own Cache-Control (a static asset) keeps it.
func SecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// Deadlines are the time one request may take to arrive and to be answered,
// set on its connection with http.ResponseController, so a client cannot
// hold a connection (and what the handler holds) by sending its body or
// reading the answer slowly. A zero field takes its default.
type Deadlines struct {
	// Read bounds the time from the start of the handler until the whole
	// request body has arrived. A body still arriving then fails to read
	// (the handler answers 400 or the connection is closed). Default 30 s.
	Read time.Duration
	// Write bounds the time from the start of the handler until the whole
	// answer is written. Default 60 s.
	Write time.Duration
	// Stream bounds the answer of a request for an event stream (a GET
	// accepting text/event-stream, such as MCP's server-to-client stream),
	// which has no body to read. Default 1 h; the client reconnects after.
	Stream time.Duration
	// IsStream tells the requests that get the Stream deadline. Default
	// [IsEventStream].
	IsStream func(*http.Request) bool
}

// Default deadlines of [Deadlines].
const (
	DefaultReadDeadline   = 30 * time.Second
	DefaultWriteDeadline  = 60 * time.Second
	DefaultStreamDeadline = time.Hour
)

// WithDefaults returns d with every zero field set to its default.
func (d Deadlines) WithDefaults() Deadlines {
	if d.Read <= 0 {
		d.Read = DefaultReadDeadline
	}
	if d.Write <= 0 {
		d.Write = DefaultWriteDeadline
	}
	if d.Stream <= 0 {
		d.Stream = DefaultStreamDeadline
	}
	if d.IsStream == nil {
		d.IsStream = IsEventStream
	}
	return d
}

// Handler returns next with the deadlines of d set on each request's
// connection before next runs. It must wrap the server's handler directly
// (before any middleware that wraps the ResponseWriter without Unwrap).
//
// The request's context gets a deadline too, [WorkMargin] before the read
// deadline: when the read deadline of a request still being served passes,
// net/http cancels its context with the same context.Canceled as when the
// client goes away, and the handler could no longer tell the two apart (it
// answered nothing, or a 500). Ending the context first with
// context.DeadlineExceeded lets the handler answer a request whose wait or
// database work ran out of time with 503 and Retry-After ([TimedOut]).
func (d Deadlines) Handler(next http.Handler) http.Handler {
	d = d.WithDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		now := time.Now()
		read := d.Read
		// A writer without deadlines (a test recorder) is served as it is.
		if d.IsStream(r) {
			// No body follows the GET; the read deadline only watches for
			// the client going away, so it lasts as long as the stream.
			read = d.Stream
			_ = rc.SetReadDeadline(now.Add(d.Stream))
			_ = rc.SetWriteDeadline(now.Add(d.Stream))
		} else {
			_ = rc.SetReadDeadline(now.Add(d.Read))
			_ = rc.SetWriteDeadline(now.Add(d.Write))
		}
		ctx, cancel := context.WithDeadline(r.Context(), now.Add(read-WorkMargin(read)))
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// WorkMargin is how long before a request's read deadline [Deadlines.Handler]
// ends its context: a tenth of the read time, at most one second (one
// second of the default 30 s).
func WorkMargin(read time.Duration) time.Duration { return min(time.Second, read/10) }

// TimedOut reports whether err, or the end of r's context, is r running out
// of time (context.DeadlineExceeded, as [Deadlines.Handler] ends a request's
// context before its read deadline), rather than a failure of the server or
// the client going away. A context cancelled once its deadline has passed
// counts too: on a machine too busy to run the deadline's timer at once,
// net/http's cancellation at the read deadline can come first. Such a
// request is answered 503 with Retry-After (or 429 when it was waiting for
// a slot) and is not an internal error.
func TimedOut(r *http.Request, err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	ctx := r.Context()
	switch cerr := ctx.Err(); {
	case cerr == nil:
		return false
	case errors.Is(cerr, context.DeadlineExceeded):
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

// IsEventStream reports whether r asks for a server-sent event stream: a
// GET whose Accept lists text/event-stream.
func IsEventStream(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
				return true
			}
		}
	}
	return false
}

// BufferBody reads the body of r, at most limit bytes, into memory and puts
// it back as r.Body, for a handler (mcp-go's) that reads bodies without a
// limit of its own. A body declared or found larger than limit
// is an error for which [IsTooLarge] is true, without reading it; a body
// that cannot be read (the client went away, the read deadline passed) is
// the read's error.
func BufferBody(w http.ResponseWriter, r *http.Request, limit int64) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	if r.ContentLength > limit {
		return &http.MaxBytesError{Limit: limit}
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	return nil
}

// IsTooLarge reports whether err is a body over its limit
// (*http.MaxBytesError).
func IsTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// Default concurrency limits of [NewLimiter].
const (
	DefaultConcurrentPerKey          = 16
	DefaultConcurrentPerOrganisation = 64
)

// Limiter bounds the requests in flight per API key and per organisation,
// so one client cannot take every connection, database connection and
// byte of memory the service has. It counts in the process: each process
// of a service bounds its own share. It is safe for concurrent use.
type Limiter struct {
	perKey, perOrg int
	mu             sync.Mutex
	keys, orgs     map[string]int
	gate           *fairGate // the workers of Work
}

// NewLimiter returns a Limiter letting at most perKey requests of one key
// and perOrg requests of one organisation run at once. Zero takes the
// default ([DefaultConcurrentPerKey], [DefaultConcurrentPerOrganisation]); a
// negative value turns that limit off.
func NewLimiter(perKey, perOrg int) *Limiter {
	if perKey == 0 {
		perKey = DefaultConcurrentPerKey
	}
	if perOrg == 0 {
		perOrg = DefaultConcurrentPerOrganisation
	}
	l := &Limiter{perKey: perKey, perOrg: perOrg, keys: map[string]int{}, orgs: map[string]int{}}
	n := DefaultWorkers()
	l.SetWorkers(n, n/4)
	return l
}

// ErrTooManyConcurrent is what [Limiter.Acquire] returns when a limit is
// reached.
var ErrTooManyConcurrent = errors.New("too many requests in flight")

// Acquire takes a slot for a request of key (an API key's id) in
// organisation org. It returns the function that gives the slot back (call
// it once, when the handler returns), or [ErrTooManyConcurrent] naming
// nothing taken when the key or the organisation has no slot left. A nil
// Limiter limits nothing.
func (l *Limiter) Acquire(key, org string) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perKey > 0 && l.keys[key] >= l.perKey || l.perOrg > 0 && l.orgs[org] >= l.perOrg {
		return nil, ErrTooManyConcurrent
	}
	l.keys[key]++
	l.orgs[org]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.keys[key]--; l.keys[key] <= 0 {
				delete(l.keys, key)
			}
			if l.orgs[org]--; l.orgs[org] <= 0 {
				delete(l.orgs, org)
			}
		})
	}, nil
}

// CloseUnread makes the answer to r, a request refused before its body is
// read, the last of its connection ("Connection: close") and stops reading
// the connection (its read deadline passes now), so that the answer is sent
// at once and the connection and its goroutine are freed. Otherwise
// net/http reads up to 256 KiB of the unread body before it sends the
// answer, and again before it lets the connection go: a client sending its
// body slowly would get its refusal only when the body had arrived or the
// read deadline had passed, and hold the connection until then. A request
// without a body keeps its connection. Call it before the answer is
// written, and read no more of r's body.
func CloseUnread(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	w.Header().Set("Connection", "close")
	// A writer without deadlines (a test recorder, a wrapper without
	// Unwrap) still closes the connection after the answer.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// RetryAfterConcurrent is the Retry-After, in seconds, of an answer refused
// by a [Limiter]: requests in flight end within seconds.
const RetryAfterConcurrent = "1"
