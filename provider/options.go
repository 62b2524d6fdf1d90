package provider

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/infra/httpx"
)

// Option configures a [Handler].
type Option func(*config) error

type config struct {
	auth      Authenticator
	tokens    []Token
	logger    *slog.Logger
	cursorKey []byte
	now       func() time.Time
	gzipLevel int
	mounts    []mount
	maxPage   int
	inFlight  *httpx.Limiter // nil: no bound
}

// mount is a handler served under a path prefix behind authentication.
type mount struct {
	pattern string
	h       http.Handler
}

// WithMount serves h at path (and below it), behind the same authentication
// as the REST endpoints: a request without a valid credential gets the 401
// problem with WWW-Authenticate before h runs, and h finds the caller with
// [PrincipalFrom]. Scopes are h's to enforce. It is how the MCP binding is
// mounted at /mcp beside the REST interface. path starts with "/" and must
// not be one of the REST paths.
func WithMount(path string, h http.Handler) Option {
	return func(c *config) error {
		switch {
		case h == nil:
			return errors.New("provider: WithMount: nil handler")
		case !strings.HasPrefix(path, "/") || path == "/" || strings.HasSuffix(path, "/") || strings.ContainsAny(path, "{}*"):
			return fmt.Errorf("provider: WithMount: path %q must look like /mcp", path)
		}
		for _, rest := range []string{"/conversations", "/assistants", "/events", "/usage"} {
			if path == rest || strings.HasPrefix(path, rest+"/") {
				return fmt.Errorf("provider: WithMount: path %q is a REST path", path)
			}
		}
		c.mounts = append(c.mounts, mount{pattern: path, h: h})
		return nil
	}
}

// WithTokens accepts the given static tokens (see [NewStaticTokens]). It may
// be combined with neither another WithTokens nor [WithAuthenticator].
func WithTokens(tokens ...Token) Option {
	return func(c *config) error {
		if len(tokens) == 0 {
			return errors.New("provider: WithTokens needs at least one token")
		}
		c.tokens = append(c.tokens, tokens...)
		return nil
	}
}

// WithAuthenticator authenticates requests with a. Exactly one of
// WithAuthenticator and [WithTokens] is required.
func WithAuthenticator(a Authenticator) Option {
	return func(c *config) error {
		if a == nil {
			return errors.New("provider: WithAuthenticator(nil)")
		}
		c.auth = a
		return nil
	}
}

// WithLogger logs one line per request (and each 5xx with its cause) to l.
// The default logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("provider: WithLogger(nil)")
		}
		c.logger = l
		return nil
	}
}

// WithCursorKey sets the 32-byte key that seals cursors (AES-256-GCM).
// Handlers that share a key accept each other's cursors: give every instance
// behind one address the same key, and keep it across restarts, so clients can
// resume a walk. The default is a random key per Handler.
func WithCursorKey(key []byte) Option {
	return func(c *config) error {
		if len(key) != 32 {
			return fmt.Errorf("provider: WithCursorKey: key has %d bytes, want 32", len(key))
		}
		c.cursorKey = append([]byte(nil), key...)
		return nil
	}
}

// WithNow sets the clock, which decides the default /usage range. The default
// is time.Now.
func WithNow(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return errors.New("provider: WithNow(nil)")
		}
		c.now = now
		return nil
	}
}

// WithGzipLevel sets the gzip level of compressed responses, 1 (fastest) to
// 9 (smallest). The default is 1: at the size of a page, compressing costs
// more than reading the database.
func WithGzipLevel(level int) Option {
	return func(c *config) error {
		if level < 1 || level > 9 {
			return fmt.Errorf("provider: WithGzipLevel(%d): want 1..9", level)
		}
		c.gzipLevel = level
		return nil
	}
}

// DefaultMaxPageBytes is the byte budget of a list page unless
// [WithMaxPageBytes] says otherwise: 8 MiB, some fifty times a page of 100
// realistic conversations.
const DefaultMaxPageBytes = 8 << 20

// WithMaxPageBytes bounds the JSON of the records of one list page: a page
// stops at the first record that takes it past n bytes (it always holds one
// record), with hasMore true and a nextCursor after its last record, so a
// client asking limit=1000 of large records cannot make one answer cost
// without bound. The Handler passes n to the DataSource as the list
// query's MaxBytes, so that a source that honours it (sqlsource and the
// consumer's collected views do) reads no more than about n bytes of
// records per request; it trims the page of a source that does not. The
// default is [DefaultMaxPageBytes].
func WithMaxPageBytes(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("provider: WithMaxPageBytes(%d): want at least 1", n)
		}
		c.maxPage = n
		return nil
	}
}

// WithMaxConcurrent bounds the requests in flight at once per credential
// (perCredential) and per tenant, all its credentials together
// (perTenant), counted in this process after authentication; a request over
// a bound is answered 429 with Retry-After: 1 before the DataSource is
// asked. An MCP event stream mounted with [WithMount] holds its slot while
// it is open. Zero or less turns that bound off. The default is no bound.
func WithMaxConcurrent(perCredential, perTenant int) Option {
	return func(c *config) error {
		c.inFlight = httpx.NewLimiter(boundOrOff(perCredential), boundOrOff(perTenant))
		return nil
	}
}

// boundOrOff returns n, or httpx.NewLimiter's "off" (-1) for zero or less.
func boundOrOff(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

func newConfig(opts []Option) (*config, error) {
	c := &config{now: time.Now, gzipLevel: 1, maxPage: DefaultMaxPageBytes}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	switch {
	case c.auth != nil && len(c.tokens) > 0:
		return nil, errors.New("provider: use WithTokens or WithAuthenticator, not both")
	case len(c.tokens) > 0:
		a, err := NewStaticTokens(c.tokens...)
		if err != nil {
			return nil, err
		}
		c.auth = a
	case c.auth == nil:
		return nil, errors.New("provider: no credentials: use WithTokens or WithAuthenticator")
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.cursorKey == nil {
		c.cursorKey = make([]byte, 32)
		if _, err := rand.Read(c.cursorKey); err != nil {
			return nil, err
		}
	}
	return c, nil
}
