package mcp

import (
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/server"

	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/provider"
)

// Defaults of the sessions of [WithSessions].
const (
	// DefaultSessionIdleTimeout is how long a session of [WithSessions]
	// lives without a request unless [WithSessionIdleTimeout] says
	// otherwise: 10 minutes.
	DefaultSessionIdleTimeout = 10 * time.Minute
	// DefaultMaxSessionsPerCredential is how many sessions of
	// [WithSessions] one credential holds at once unless
	// [WithMaxSessionsPerCredential] says otherwise: 64.
	DefaultMaxSessionsPerCredential = 64
)

// WithSessions turns on the sessions of MCP's streamable HTTP transport
// (the Mcp-Session-Id header) in [Server.HTTPHandler].
//
// By default (false) the transport is stateless, as the tools need no state
// between requests and the server sends nothing unasked: initialize answers
// without a session id, every request stands on its own, a GET for an event
// stream is answered 405 (there is nothing to stream), and nothing is kept
// between requests, whoever sends them and however often. Several processes
// behind one load balancer then serve any client alike.
//
// With sessions, initialize answers a session id that the client sends with
// its next requests. A session ends when the client DELETEs it, after
// [WithSessionIdleTimeout] without a request, or when its credential opens
// more than [WithMaxSessionsPerCredential] sessions: then the session of
// that credential used least recently is ended to make room, so that a
// client looping on initialize holds a bounded number of sessions. A
// request naming a session that ended, that never existed or that another
// credential opened is answered 404, on which clients initialize again.
// Sessions live in the process: several processes need a load balancer that
// keeps a client on one process.
func WithSessions(on bool) Option {
	return func(c *config) error {
		c.sessions = on
		return nil
	}
}

// WithSessionIdleTimeout sets how long a session of [WithSessions] lives
// without a request; the next request naming it then gets 404. The default
// is [DefaultSessionIdleTimeout]. It has no effect without sessions.
func WithSessionIdleTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("mcp: WithSessionIdleTimeout: %s is not positive", d)
		}
		c.idleTimeout = d
		return nil
	}
}

// WithMaxSessionsPerCredential sets how many sessions of [WithSessions] one
// credential (one token or API key; the principal of [WithPrincipal] for
// requests without one) holds at once. An initialize past it ends the
// credential's session used least recently. The default is
// [DefaultMaxSessionsPerCredential]. It has no effect without sessions.
func WithMaxSessionsPerCredential(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("mcp: WithMaxSessionsPerCredential: %d is not positive", n)
		}
		c.maxSessions = n
		return nil
	}
}

// withNow sets the clock of the session table (tests).
func withNow(now func() time.Time) Option {
	return func(c *config) error {
		c.now = now
		return nil
	}
}

// sessionIDPrefix starts the ids of the sessions the table issues.
const sessionIDPrefix = "aiusage-mcp-"

// errNoSession is a session id the table does not hold (never issued,
// ended, or another credential's); mcp-go answers 404.
var errNoSession = errors.New("mcp: no such session")

// sessionTable holds the sessions of [WithSessions]: which credential
// opened each and when it was last used. It is mcp-go's SessionIdManager
// (through sessionResolver, which knows the request's credential): mcp-go
// asks it for an id at initialize and to validate the id of every other
// POST, and answers 404 when it refuses one. A session the table ends (idle
// or past the credential's bound) is queued in ended, and [Server]
// releases mcp-go's own state of it with mcp-go's DELETE handling once the
// request that ended it is answered.
type sessionTable struct {
	idle time.Duration
	max  int
	now  func() time.Time

	mu    sync.Mutex
	byID  map[string]*sessionEntry
	byUse list.List // of *sessionEntry, least recently used first
	creds map[string]*list.List
	ended []string
}

type sessionEntry struct {
	id, cred  string
	last      time.Time
	use, mine *list.Element // in byUse and in creds[cred]
}

func newSessionTable(idle time.Duration, max int, now func() time.Time) *sessionTable {
	return &sessionTable{idle: idle, max: max, now: now, byID: map[string]*sessionEntry{}, creds: map[string]*list.List{}}
}

// open issues a new session of cred, ending cred's least recently used
// session when it holds the most already.
func (t *sessionTable) open(cred string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.expireLocked(now)
	e := &sessionEntry{id: sessionIDPrefix + uuid.NewString(), cred: cred, last: now}
	mine := t.creds[cred]
	if mine == nil {
		mine = list.New()
		t.creds[cred] = mine
	}
	e.use = t.byUse.PushBack(e)
	e.mine = mine.PushBack(e)
	t.byID[e.id] = e
	for mine.Len() > t.max {
		t.endLocked(mine.Front().Value.(*sessionEntry))
	}
	return e.id
}

// use reports whether id is a live session of cred, and marks it used.
func (t *sessionTable) use(id, cred string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.expireLocked(now)
	e := t.byID[id]
	if e == nil || e.cred != cred {
		return false
	}
	e.last = now
	t.byUse.MoveToBack(e.use)
	t.creds[cred].MoveToBack(e.mine)
	return true
}

// owns reports whether id is a live session of cred, without using it.
func (t *sessionTable) owns(id, cred string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked(t.now())
	e := t.byID[id]
	return e != nil && e.cred == cred
}

// live reports whether id is a live session of any credential.
func (t *sessionTable) live(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id] != nil
}

// remove forgets id (the client DELETEd it, or mcp-go's idle sweeper ended
// it); mcp-go releases its own state itself.
func (t *sessionTable) remove(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.byID[id]; e != nil {
		t.unlinkLocked(e)
	}
}

// requeue queues id for release again: mcp-go registered it after the
// table had ended it (its initialize was still being answered).
func (t *sessionTable) requeue(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ended = append(t.ended, id)
}

// takeEnded returns and forgets the sessions ended since the last call,
// whose mcp-go state is to be released.
func (t *sessionTable) takeEnded() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := t.ended
	t.ended = nil
	return ids
}

// len is the number of live sessions.
func (t *sessionTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}

// expireLocked ends the sessions unused for the idle timeout.
func (t *sessionTable) expireLocked(now time.Time) {
	for f := t.byUse.Front(); f != nil; f = t.byUse.Front() {
		e := f.Value.(*sessionEntry)
		if now.Sub(e.last) < t.idle {
			return
		}
		t.endLocked(e)
	}
}

func (t *sessionTable) endLocked(e *sessionEntry) {
	t.unlinkLocked(e)
	t.ended = append(t.ended, e.id)
}

func (t *sessionTable) unlinkLocked(e *sessionEntry) {
	delete(t.byID, e.id)
	t.byUse.Remove(e.use)
	mine := t.creds[e.cred]
	mine.Remove(e.mine)
	if mine.Len() == 0 {
		delete(t.creds, e.cred)
	}
}

// sessionResolver gives mcp-go, for each request, a SessionIdManager bound
// to the request's credential.
type sessionResolver struct {
	t        *sessionTable
	fallback *provider.Principal
}

func (r sessionResolver) ResolveSessionIdManager(req *http.Request) server.SessionIdManager {
	return sessionManager{t: r.t, cred: credentialKey(req, r.fallback)}
}

// internalRequest marks the requests [Server] makes of mcp-go itself (to
// release an ended session), and mcp-go's own calls without a request (its
// idle sweeper, CloseSessions).
type internalRequest struct{}

// credentialKey names the credential of req: a digest of the token it
// carries, else its principal's tenant and name (the one of WithPrincipal
// when it has none). It is "" for [Server]'s and mcp-go's own requests.
func credentialKey(req *http.Request, fallback *provider.Principal) string {
	if req == nil || req.Context().Value(internalRequest{}) != nil {
		return ""
	}
	if cred, _ := httpx.Credential(req, false); cred != "" {
		d := sha256.Sum256([]byte(cred))
		return "token:" + string(d[:])
	}
	if p := principalFrom(req.Context(), fallback); p != nil {
		return "principal:" + p.Tenant + "\x00" + p.Name
	}
	return "none:"
}

// sessionManager is mcp-go's SessionIdManager over the table, for the
// requests of one credential ("" for mcp-go's and Server's own).
type sessionManager struct {
	t    *sessionTable
	cred string
}

func (m sessionManager) Generate() string { return m.t.open(m.cred) }

func (m sessionManager) Validate(id string) (isTerminated bool, err error) {
	if !m.t.use(id, m.cred) {
		return false, errNoSession
	}
	return false, nil
}

func (m sessionManager) Terminate(id string) (isNotAllowed bool, err error) {
	// A client's DELETE reaches mcp-go only for its own live session
	// (Server.HTTPHandler answers 404 otherwise); mcp-go's sweeper and
	// Server's releases come without a credential.
	if m.cred == "" || m.t.owns(id, m.cred) {
		m.t.remove(id)
		return false, nil
	}
	return true, nil
}

// releaseEnded releases mcp-go's state of the sessions the table ended, by
// mcp-go's own DELETE handling, which unregisters the session and drops
// everything the transport keeps for it.
func (s *Server) releaseEnded() {
	for _, id := range s.sessions.takeEnded() {
		ctx := context.WithValue(context.Background(), internalRequest{}, true)
		r, err := http.NewRequestWithContext(ctx, http.MethodDelete, "/", nil)
		if err != nil {
			continue
		}
		r.Header.Set(server.HeaderKeySessionID, id)
		s.http.ServeHTTP(discardWriter{h: http.Header{}}, r)
	}
}

// sessionHooks keeps the table and mcp-go agreeing: a session mcp-go
// registers after the table ended it (its initialize was still being
// answered) is released again.
func (s *Server) sessionHooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) {
		s.registered.Add(1)
		if id := cs.SessionID(); s.sessions != nil && strings.HasPrefix(id, sessionIDPrefix) && !s.sessions.live(id) {
			s.sessions.requeue(id)
		}
	})
	h.AddOnUnregisterSession(func(context.Context, server.ClientSession) {
		s.registered.Add(-1)
	})
	return h
}

// discardWriter is the response writer of Server's own requests to mcp-go.
type discardWriter struct{ h http.Header }

func (w discardWriter) Header() http.Header         { return w.h }
func (w discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w discardWriter) WriteHeader(int)             {}
