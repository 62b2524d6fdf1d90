package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Default server identity, sent to clients at initialisation.
const (
	DefaultName    = "aiusage"
	DefaultVersion = "1.0.0"
)

// instructions tell a model what the server offers, at initialisation.
const instructions = `This server reports how an organisation uses AI, following the AI usage data specification: ` +
	`conversations with AI assistants (list_conversations, get_conversation), the organisation's custom assistants ` +
	`(list_assistants, get_assistant), an audit trail of events (list_events) and aggregated usage and cost ` +
	`(get_usage). Every tool is read-only. Lists are paged: when hasMore is true, call the tool again with the same ` +
	`arguments and cursor set to nextCursor. Timestamps are RFC 3339 in UTC, for example 2026-01-02T03:04:05Z. ` +
	`To list conversations without their message bodies, pass fields="summary" and fetch single conversations ` +
	`with get_conversation.`

// Option configures a [Server].
type Option func(*config) error

type config struct {
	name, version string
	principal     *provider.Principal
	cursorKey     []byte
	providerOpts  []provider.Option
	logger        *slog.Logger
	anyHost       bool
	maxBody       int64
	// sessions turns on MCP sessions (WithSessions), bounded by
	// idleTimeout and maxSessions; now is their clock.
	sessions    bool
	idleTimeout time.Duration
	maxSessions int
	now         func() time.Time
	// inProcessOnly names the options set that only NewServer accepts.
	inProcessOnly []string
}

// WithName sets the server name sent to clients. The default is
// [DefaultName].
func WithName(name string) Option {
	return func(c *config) error {
		if name == "" {
			return errors.New("mcp: WithName: empty name")
		}
		c.name = name
		return nil
	}
}

// WithVersion sets the server version sent to clients. The default is
// [DefaultVersion].
func WithVersion(v string) Option {
	return func(c *config) error {
		if v == "" {
			return errors.New("mcp: WithVersion: empty version")
		}
		c.version = v
		return nil
	}
}

// WithPrincipal sets the caller of requests that carry none: every request
// over stdio, and requests to [Server.HTTPHandler] when it is not mounted
// behind authentication. Its tenant and scopes decide what the tools read,
// as a token's do over REST (no scopes means all). The default is no
// principal: such requests are refused. Only for [NewServer].
func WithPrincipal(p provider.Principal) Option {
	return func(c *config) error {
		p.Scopes = slices.Clone(p.Scopes)
		for _, s := range p.Scopes {
			if !slices.Contains(provider.Scopes, s) {
				return fmt.Errorf("mcp: WithPrincipal: unknown scope %q", s)
			}
		}
		if p.Name == "" {
			p.Name = "mcp"
		}
		c.principal = &p
		c.inProcessOnly = append(c.inProcessOnly, "WithPrincipal")
		return nil
	}
}

// WithCursorKey sets the 32-byte key that seals the cursors of the lists, as
// [provider.WithCursorKey] does. Give the same key as the REST handler's to
// make cursors interchangeable between REST and MCP, and keep it across
// restarts so a client can resume a walk. The default is a random key. Only
// for [NewServer].
func WithCursorKey(key []byte) Option {
	return func(c *config) error {
		if len(key) != 32 {
			return fmt.Errorf("mcp: WithCursorKey: key has %d bytes, want 32", len(key))
		}
		c.cursorKey = slices.Clone(key)
		c.inProcessOnly = append(c.inProcessOnly, "WithCursorKey")
		return nil
	}
}

// WithProviderOptions passes options to the in-process [provider.Handler]
// the tools call, for example [provider.WithNow] (the clock of the default
// get_usage range) or [provider.WithLogger]. Authentication options are
// the MCP server's own: [provider.WithTokens] and
// [provider.WithAuthenticator] are refused by NewServer. Only for
// [NewServer].
func WithProviderOptions(opts ...provider.Option) Option {
	return func(c *config) error {
		c.providerOpts = append(c.providerOpts, opts...)
		c.inProcessOnly = append(c.inProcessOnly, "WithProviderOptions")
		return nil
	}
}

// WithLogger logs the streamable HTTP transport's own events (a failed
// stream write, a panic in a session) to l. The default logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("mcp: WithLogger(nil)")
		}
		c.logger = l
		return nil
	}
}

// DefaultMaxBodyBytes is the largest request body [Server.HTTPHandler]
// accepts unless [WithMaxBodyBytes] says otherwise: 1 MiB, far more than a
// tool call or a batch of them takes.
const DefaultMaxBodyBytes = 1 << 20

// WithMaxBodyBytes sets the largest request body [Server.HTTPHandler]
// reads. A larger body is answered 413 with a JSON-RPC error before the MCP
// layer reads it, so a client cannot make the server hold a body of any
// size in memory. The default is [DefaultMaxBodyBytes].
func WithMaxBodyBytes(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("mcp: WithMaxBodyBytes: %d is not positive", n)
		}
		c.maxBody = n
		return nil
	}
}

// WithAllowAnyHost turns off mcp-go's DNS rebinding protection of
// [Server.HTTPHandler]. By default a request that arrives on a loopback
// address (127.0.0.1, ::1) with a Host header other than localhost,
// 127.0.0.1 or [::1] is answered 403, so that a web page cannot reach a
// local server through a rebound domain. Turn it off behind a reverse proxy
// on the same machine that keeps the public Host header. The default is
// false (protected).
func WithAllowAnyHost(allow bool) Option {
	return func(c *config) error {
		c.anyHost = allow
		return nil
	}
}

// Server is an MCP server over the AI usage data interface: the tools
// list_conversations, get_conversation, list_assistants, get_assistant,
// list_events and get_usage, and the resource templates
// aiusage://conversations/{id} and aiusage://assistants/{id}. Serve it with
// [Server.HTTPHandler] or [Server.ServeStdio]. It is safe for concurrent use.
type Server struct {
	backend   Backend
	principal *provider.Principal
	mcp       *server.MCPServer
	http      *server.StreamableHTTPServer
	schemas   map[string][]byte
	logger    *slog.Logger
	maxBody   int64
	// sessions is nil when the transport is stateless (the default).
	sessions *sessionTable
	// registered counts the sessions registered with mcp-go (tests).
	registered atomic.Int64
}

// NewServer returns a Server over ds. The tools call an in-process
// [provider.Handler] over ds, so their answers, checks and errors are exactly
// those of the REST interface. The caller of each request is the principal of
// the request's context ([provider.PrincipalFrom], set when
// [Server.HTTPHandler] is mounted with [provider.WithMount]), else the one of
// [WithPrincipal].
func NewServer(ds provider.DataSource, opts ...Option) (*Server, error) {
	if ds == nil {
		return nil, errors.New("mcp: NewServer: nil DataSource")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	popts := append(slices.Clone(cfg.providerOpts), provider.WithAuthenticator(contextAuthenticator{fallback: cfg.principal}))
	if cfg.cursorKey != nil {
		popts = append(popts, provider.WithCursorKey(cfg.cursorKey))
	}
	h, err := provider.NewHandler(ds, popts...)
	if err != nil {
		return nil, fmt.Errorf("mcp: NewServer: %w", err)
	}
	return newServer(&handlerBackend{h: h}, cfg)
}

// NewRemote returns a Server whose tools GET the REST provider at baseURL
// (for example https://vendor.example/aiusage/v1) with "Authorization: Bearer
// token", through httpClient (http.DefaultClient when nil), following
// redirects only within baseURL's origin. Every caller
// reads with that one token: serve it over stdio, as aiusage mcp does, so an
// AI tool can reach a provider written in any language.
func NewRemote(baseURL, token string, httpClient *http.Client, opts ...Option) (*Server, error) {
	b, err := newRemoteBackend(baseURL, token, httpClient)
	if err != nil {
		return nil, err
	}
	return New(b, opts...)
}

// New returns a Server over any Backend. [NewServer] and [NewRemote] are the
// usual constructors.
func New(b Backend, opts ...Option) (*Server, error) {
	if b == nil {
		return nil, errors.New("mcp: New: nil Backend")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if len(cfg.inProcessOnly) > 0 {
		return nil, fmt.Errorf("mcp: %s only applies to NewServer", cfg.inProcessOnly[0])
	}
	return newServer(b, cfg)
}

func newConfig(opts []Option) (*config, error) {
	c := &config{name: DefaultName, version: DefaultVersion, maxBody: DefaultMaxBodyBytes,
		idleTimeout: DefaultSessionIdleTimeout, maxSessions: DefaultMaxSessionsPerCredential, now: time.Now}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("mcp: nil Option")
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

func newServer(b Backend, cfg *config) (*Server, error) {
	schemas, err := outputSchemas()
	if err != nil {
		return nil, err
	}
	s := &Server{backend: b, principal: cfg.principal, logger: cfg.logger, maxBody: cfg.maxBody}
	if cfg.sessions {
		s.sessions = newSessionTable(cfg.idleTimeout, cfg.maxSessions, cfg.now)
	}
	s.schemas = map[string][]byte{}
	for k, v := range schemas {
		s.schemas[k] = v
	}
	s.mcp = server.NewMCPServer(cfg.name, cfg.version,
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithInstructions(instructions),
		server.WithRecovery(),
		server.WithResourceRecovery(),
		server.WithHooks(s.sessionHooks()),
	)
	if err := s.addTools(); err != nil {
		return nil, err
	}
	s.addResources()
	// Stateless unless WithSessions: mcp-go then keeps nothing between
	// requests, and a GET (an event stream, which would carry nothing) is
	// 405. With sessions, the table issues and checks the ids, and mcp-go's
	// sweeper also ends idle sessions while no request comes.
	transport := []server.StreamableHTTPOption{server.WithStateLess(true), server.WithDisableStreaming(true)}
	if s.sessions != nil {
		transport = []server.StreamableHTTPOption{
			server.WithSessionIdManagerResolver(sessionResolver{t: s.sessions, fallback: cfg.principal}),
			server.WithSessionIdleTTL(cfg.idleTimeout),
		}
	}
	s.http = server.NewStreamableHTTPServer(s.mcp, append(transport,
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			if p, ok := provider.PrincipalFrom(r.Context()); ok && p != nil {
				ctx = withPrincipal(ctx, p)
			}
			return ctx
		}),
		server.WithStreamableHTTPLogger(cfg.logger),
		server.WithDisableLocalhostProtection(cfg.anyHost),
	)...)
	return s, nil
}

// MCPServer returns the underlying mcp-go server, for in-process clients
// (client.NewInProcessClient) and tests.
func (s *Server) MCPServer() *server.MCPServer { return s.mcp }

// HTTPHandler returns the MCP streamable HTTP transport. Mount it behind the
// REST authentication, so that MCP clients use the same tokens and scopes:
//
//	h, err := provider.NewHandler(ds, provider.WithTokens(tokens...),
//		provider.WithMount("/mcp", srv.HTTPHandler()))
//
// The handler reads the caller with [provider.PrincipalFrom]. A request
// without a principal, when [WithPrincipal] gave no default either, is
// answered 401 with WWW-Authenticate before the MCP layer. See
// [WithAllowAnyHost] for the Host check on loopback addresses. A body over
// [WithMaxBodyBytes] is answered 413 with a JSON-RPC error. Every answer is
// marked X-Content-Type-Options: nosniff and Cache-Control: no-store.
//
// The transport is stateless unless [WithSessions]: it keeps nothing between
// requests and answers a GET 405. With sessions, a request naming a session
// that ended (DELETE, [WithSessionIdleTimeout], [WithMaxSessionsPerCredential])
// or that another credential opened is answered 404.
func (s *Server) HTTPHandler() http.Handler {
	return httpx.SecurityHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if principalFrom(r.Context(), s.principal) == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="aiusage"`)
			w.Header().Set("Content-Type", spec.ProblemContentType)
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"type":"about:blank","title":"Unauthorized","status":401,"detail":"Send a valid credential as Authorization: Bearer <token> or X-API-Key: <token>."}`)
			return
		}
		// mcp-go reads a body whole and without a limit: read it here
		// first, within the limit.
		if err := httpx.BufferBody(w, r, s.maxBody); err != nil {
			if httpx.IsTooLarge(err) {
				writeRPCError(w, http.StatusRequestEntityTooLarge,
					fmt.Sprintf("The request body is larger than %d bytes, the most this server reads.", s.maxBody))
				return
			}
			writeRPCError(w, http.StatusBadRequest, "The request body could not be read in time.")
			return
		}
		if s.sessions == nil {
			s.http.ServeHTTP(w, r)
			return
		}
		// mcp-go checks the session of a POST (Validate); a GET or DELETE
		// naming a session must name a live one of this credential too.
		if id := r.Header.Get(server.HeaderKeySessionID); id != "" && r.Method != http.MethodPost &&
			!s.sessions.owns(id, credentialKey(r, s.principal)) {
			http.Error(w, "Session not found: it ended or never existed; send initialize again.", http.StatusNotFound)
			return
		}
		s.http.ServeHTTP(w, r)
		s.releaseEnded()
	}))
}

// writeRPCError answers a request the MCP layer never saw with status and a
// JSON-RPC error (invalid request, no id) carrying msg.
func writeRPCError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32600, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// ServeStdio serves MCP over stdio (newline-delimited JSON-RPC) on in and
// out until in ends or ctx is done. Calls run as the principal of
// [WithPrincipal] (for [NewServer]) or the token of [NewRemote]. mcp-go keeps
// one stdio session per process: run one ServeStdio at a time.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	std := server.NewStdioServer(s.mcp)
	std.SetErrorLogger(slog.NewLogLogger(s.logger.Handler(), slog.LevelError))
	err := std.Listen(ctx, in, out)
	if errors.Is(err, io.EOF) || ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}
