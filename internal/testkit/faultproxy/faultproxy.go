package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// DefaultHangFor is the default of [Config.HangFor].
const DefaultHangFor = 30 * time.Second

// Faults holds the probability, in [0,1], that the proxy injects each kind of
// fault into a request it may fault (see [Config.Only] and [Config.After]).
// The proxy checks them in field order and applies the first that fires, so a
// request suffers at most one fault and a later field fires with probability
// p times the chance that no earlier field fired. The zero value injects no
// random fault.
type Faults struct {
	// Error5xx answers the request itself with 500, 502 or 503 and a short
	// problem+json or plain-text body; a 503 sometimes carries
	// "Retry-After: 0" or "Retry-After: 1". The target never sees the request.
	Error5xx float64
	// RateLimit answers the request itself with 429 Too Many Requests,
	// "Retry-After: 0" or "Retry-After: 1" (seconds) and a problem+json body.
	// The target never sees the request.
	RateLimit float64
	// Reset closes the client's connection without answering, with a TCP
	// reset where the connection allows it: the client sees a transport
	// error such as "connection reset by peer" or EOF. The target never sees
	// the request. Go's transport retries an idempotent request once, by
	// itself, when a reused connection fails before any answer; the retry
	// is one more request to the proxy, faulted or not like any other.
	Reset float64
	// Hang holds the request until the client gives up (the request context
	// ends) or [Config.HangFor] elapses, then closes the connection without
	// answering. The target never sees the request.
	Hang float64
	// Truncate forwards the request, reads the target's whole response, then
	// sends its status and headers with Content-Length set to the full body
	// length, but only part of the body, and closes the connection. The cut
	// is at least one byte short and falls before the last non-blank byte of
	// the content, decoded if the body is gzip-encoded, so a client sees a
	// read error (io.ErrUnexpectedEOF) or invalid JSON, never a shorter valid
	// document, whether it reads the body to the end or stops after one JSON
	// value. An empty body (HEAD, 204, 304), a body over 64 MiB or a
	// target that cannot be reached leaves nothing to cut: the proxy then
	// closes the connection without answering.
	Truncate float64
}

// validate reports the first probability outside [0,1], naming its field.
func (f Faults) validate() error {
	for _, c := range []struct {
		name string
		v    float64
	}{
		{"Error5xx", f.Error5xx},
		{"RateLimit", f.RateLimit},
		{"Reset", f.Reset},
		{"Hang", f.Hang},
		{"Truncate", f.Truncate},
	} {
		if !(c.v >= 0 && c.v <= 1) { // also rejects NaN
			return fmt.Errorf("faultproxy: Faults.%s is %v, want a probability in [0,1]", c.name, c.v)
		}
	}
	return nil
}

// pick draws the fault for one request, checking the probabilities in field
// order.
func (f Faults) pick(rng *rand.Rand) fault {
	for _, c := range []struct {
		p float64
		k fault
	}{
		{f.Error5xx, faultError5xx},
		{f.RateLimit, faultRateLimit},
		{f.Reset, faultReset},
		{f.Hang, faultHang},
		{f.Truncate, faultTruncate},
	} {
		if rng.Float64() < c.p {
			return c.k
		}
	}
	return faultNone
}

// Config configures a [Proxy]. Only Target is required.
type Config struct {
	// Target is the provider the proxy forwards to, such as
	// http://127.0.0.1:8080 or https://provider.example/api. Its path, if
	// any, prefixes every forwarded path; its query, if any, is joined to
	// every forwarded query. Required; the scheme must be http or https.
	Target *url.URL

	// Seed seeds every random choice: which requests are faulted, how, the
	// status codes, Retry-After values and cut points. Requests that arrive
	// one at a time meet the same faults in the same order for the same
	// Seed. Default 0, itself a valid seed.
	Seed int64

	// Faults holds the initial fault probabilities; [Proxy.SetFaults]
	// changes them at run time. Default: all zero, no random fault.
	Faults

	// HangFor bounds how long a [Faults.Hang] fault holds a request when the
	// client does not give up first. Default [DefaultHangFor] (30s).
	HangFor time.Duration

	// RejectCursorOnce answers the first request that may be faulted and
	// carries a non-empty "cursor" query parameter with 400 and the
	// problem+json body {"type":"about:blank","title":"Bad Request",
	// "status":400,"detail":"The cursor is not valid.","instance":<path>},
	// before any random fault is considered. Later requests are not
	// affected by it. Default false.
	RejectCursorOnce bool

	// Only, when non-nil, decides whether a request may be faulted, for
	// example only list pages; other requests are always forwarded
	// unchanged. It is called once per request, concurrently, and must not
	// read the request body. Default nil: every request may be faulted.
	Only func(*http.Request) bool

	// After exempts the first After requests the proxy receives, whatever
	// Only says of them, from every fault, RejectCursorOnce included.
	// Default 0: faults may start with the first request.
	After int
}

// fault is the kind of fault applied to one request.
type fault int

const (
	faultNone fault = iota
	faultRejectCursor
	faultError5xx
	faultRateLimit
	faultReset
	faultHang
	faultTruncate
)

// Stats counts the requests a [Proxy] received and what it did with them.
// Each request is counted once, under the fault chosen for it, when it
// arrives: a fault that is still under way (a hang) is already counted.
type Stats struct {
	// Requests counts every request received.
	Requests int
	// Passed counts requests forwarded unchanged.
	Passed int
	// RejectCursor counts requests answered 400 by [Config.RejectCursorOnce]
	// (0 or 1).
	RejectCursor int
	// Error5xx counts [Faults.Error5xx] faults.
	Error5xx int
	// RateLimit counts [Faults.RateLimit] faults.
	RateLimit int
	// Reset counts [Faults.Reset] faults.
	Reset int
	// Hang counts [Faults.Hang] faults.
	Hang int
	// Truncate counts [Faults.Truncate] faults.
	Truncate int
}

// Faulted returns the number of requests that were not forwarded unchanged.
func (s Stats) Faulted() int { return s.Requests - s.Passed }

func (s *Stats) count(f fault) {
	s.Requests++
	switch f {
	case faultNone:
		s.Passed++
	case faultRejectCursor:
		s.RejectCursor++
	case faultError5xx:
		s.Error5xx++
	case faultRateLimit:
		s.RateLimit++
	case faultReset:
		s.Reset++
	case faultHang:
		s.Hang++
	case faultTruncate:
		s.Truncate++
	}
}

// Proxy is a fault-injecting reverse proxy, an [http.Handler]. Create it with
// [New]; it is safe for concurrent use. A request that is not faulted but
// cannot reach the target is answered 502 with an empty body, as
// [httputil.ReverseProxy] does; the proxy logs nothing.
//
// Faults that close the connection (Reset, Hang, Truncate) hijack it, which
// needs the ResponseWriter of an HTTP/1 [http.Server]. Elsewhere, such as
// under HTTP/2, they panic with [http.ErrAbortHandler], which net/http
// servers turn into an aborted response without logging.
type Proxy struct {
	target           *url.URL
	hangFor          time.Duration
	rejectCursorOnce bool
	only             func(*http.Request) bool
	after            int
	transport        *http.Transport
	forward          *httputil.ReverseProxy

	mu             sync.Mutex
	rng            *rand.Rand // per-request seeds; guarded by mu
	faults         Faults
	cursorRejected bool
	stats          Stats
}

var _ http.Handler = (*Proxy)(nil)

// New returns a Proxy in front of cfg.Target. It reports which field of cfg
// is invalid: a missing Target, a probability outside [0,1], a negative
// HangFor or After.
func New(cfg Config) (*Proxy, error) {
	switch {
	case cfg.Target == nil:
		return nil, errors.New("faultproxy: Config.Target is required")
	case cfg.Target.Scheme != "http" && cfg.Target.Scheme != "https":
		return nil, fmt.Errorf("faultproxy: Config.Target %q: scheme must be http or https", cfg.Target.Redacted())
	case cfg.Target.Host == "":
		return nil, fmt.Errorf("faultproxy: Config.Target %q has no host", cfg.Target.Redacted())
	case cfg.HangFor < 0:
		return nil, fmt.Errorf("faultproxy: Config.HangFor is %v, want >= 0", cfg.HangFor)
	case cfg.After < 0:
		return nil, fmt.Errorf("faultproxy: Config.After is %d, want >= 0", cfg.After)
	}
	if err := cfg.Faults.validate(); err != nil {
		return nil, err
	}
	target := *cfg.Target
	p := &Proxy{
		target:           &target,
		hangFor:          cfg.HangFor,
		rejectCursorOnce: cfg.RejectCursorOnce,
		only:             cfg.Only,
		after:            cfg.After,
		transport:        newTransport(),
		rng:              rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6661756c7470726f)), // "faultpro"
		faults:           cfg.Faults,
	}
	if p.hangFor == 0 {
		p.hangFor = DefaultHangFor
	}
	p.forward = &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(p.target) },
		Transport: p.transport,
		ErrorLog:  log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	return p, nil
}

// newTransport returns the transport to the target. Compression is off so
// that bodies pass through as the target encoded them: the client's own
// Accept-Encoding is forwarded and decides.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}

// SetFaults replaces the fault probabilities from the next request on, for
// example with the zero Faults to let a final sync run clean. It does not
// touch Config.RejectCursorOnce, Only or After. SetFaults panics if a
// probability is outside [0,1], as [New] would have rejected it.
func (p *Proxy) SetFaults(f Faults) {
	if err := f.validate(); err != nil {
		panic(err)
	}
	p.mu.Lock()
	p.faults = f
	p.mu.Unlock()
}

// Stats returns a snapshot of the counts so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// CloseIdleConnections closes the proxy's idle connections to the target.
// [Server.Close] calls it.
func (p *Proxy) CloseIdleConnections() { p.transport.CloseIdleConnections() }

// ServeHTTP forwards r to the target or injects a fault, as [Config]
// describes.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, rng := p.decide(r)
	switch f {
	case faultNone:
		p.forward.ServeHTTP(w, r)
	case faultRejectCursor:
		writeProblem(w, r, http.StatusBadRequest, "The cursor is not valid.")
	case faultError5xx:
		serveError5xx(w, r, rng)
	case faultRateLimit:
		serveRateLimit(w, r, rng)
	case faultReset:
		abort(w, true)
	case faultHang:
		p.hang(w, r)
	case faultTruncate:
		p.truncate(w, r, rng)
	}
}

// decide counts r and chooses its fault. Each request takes its own random
// source, seeded from the shared one, so that with requests arriving one at a
// time the k-th request's fate depends only on k, Seed and the probabilities.
func (p *Proxy) decide(r *http.Request) (fault, *rand.Rand) {
	eligible := p.only == nil || p.only(r)
	hasCursor := p.rejectCursorOnce && r.URL.Query().Get("cursor") != ""

	p.mu.Lock()
	defer p.mu.Unlock()
	rng := rand.New(rand.NewPCG(p.rng.Uint64(), p.rng.Uint64()))
	f := faultNone
	if eligible && p.stats.Requests >= p.after {
		if hasCursor && !p.cursorRejected {
			p.cursorRejected = true
			f = faultRejectCursor
		} else {
			f = p.faults.pick(rng)
		}
	}
	p.stats.count(f)
	return f, rng
}

// hang holds the request until the client gives up or HangFor elapses, then
// closes the connection without answering.
func (p *Proxy) hang(w http.ResponseWriter, r *http.Request) {
	t := time.NewTimer(p.hangFor)
	defer t.Stop()
	select {
	case <-r.Context().Done():
	case <-t.C:
	}
	abort(w, false)
}
