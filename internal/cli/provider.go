package cli

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/ops"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/sqlsource"
)

func providerCommand() *command {
	return &command{
		name:    "provider",
		summary: "serve the AI usage data interface from the kit's own tables, export it, or push it",
		subs:    []*command{providerServeCommand(), providerExportCommand(), providerPushCommand()},
	}
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, " ") }

func (s *stringList) Set(v string) error {
	for _, part := range strings.Fields(v) { // the environment form holds several, space-separated
		*s = append(*s, part)
	}
	return nil
}

type providerServeFlags struct {
	serverFlags
	databaseURL, tenant  string
	tokens, tenantTokens stringList
	demo                 int
	seed                 uint64
	metrics              metricsFlags
	maxPerToken          int
	maxPerTenant         int
	mcpSessions          mcpSessionFlags
}

func providerServeCommand() *command {
	f := &providerServeFlags{}
	return &command{
		name:    "serve",
		summary: "serve /conversations, /assistants, /events and /usage over HTTP",
		long: `Serves the AI usage data interface (REST) from the kit's tables in the database,
at the root of ADDR. Every request needs one of the --token credentials, sent as
"Authorization: Bearer TOKEN" or "X-API-Key: TOKEN". A token may be limited to
scopes: --token s3cret=read:usage,read:events. Repeat --token for several; in
AIUSAGE_PROVIDER_TOKENS separate them with spaces (AIUSAGE_TOKEN is the
credential clients such as 'aiusage mcp' send, never one this server accepts).
--token credentials read the data of --tenant; --tenant-token other:s3cret2
reads the data of tenant "other".

--demo N fills an empty database with N generated conversations and the
matching assistants, events and usage (deterministic for a --seed). A database
that already holds conversations is served as it is.

The same data is served over MCP (streamable HTTP) at /mcp, with the same
credentials and scopes: tools list_conversations, get_conversation,
list_assistants, get_assistant, list_events and get_usage. MCP is stateless:
nothing is kept between requests. --mcp-sessions gives clients sessions, each
token holding at most --mcp-max-sessions-per-credential of them (the one used
least recently ends first) for --mcp-session-idle-timeout without a request;
a request naming an ended session is answered 404 and the client initializes
again.

Cursors are sealed with a key kept in the database, so several processes
serving one PostgreSQL database accept each other's cursors.

` + metricsHelp + `

Logs one line with the base URL when ready, then one line per request. Stops
cleanly on SIGINT or SIGTERM, letting requests in flight finish.`,
		flags: func(fs *flag.FlagSet) {
			f.register(fs, "127.0.0.1:8080", 15*time.Second)
			fs.StringVar(&f.databaseURL, "database-url", "sqlite:aiusage-provider.db", "database `URL`: sqlite:PATH, sqlite::memory: or postgres://...")
			fs.Var(&f.tokens, "token", "credential `TOKEN[=SCOPE,SCOPE...]` accepted by the interface (repeatable; required)")
			fs.StringVar(&f.tenant, "tenant", "default", "`NAME` of the tenant whose data the --token credentials read (and --demo fills)")
			fs.Var(&f.tenantTokens, "tenant-token", "credential `TENANT:TOKEN[=SCOPE,SCOPE...]` reading another tenant's data (repeatable), e.g. for the conformance suite's --other-tenant-token")
			fs.IntVar(&f.demo, "demo", 0, "fill an empty database with `N` generated conversations")
			fs.Uint64Var(&f.seed, "seed", 1, "`SEED` of the --demo data")
			f.metrics.register(fs)
			fs.IntVar(&f.maxPerToken, "max-concurrent-per-token", httpx.DefaultConcurrentPerKey, "most requests of one token in flight at once; more are answered 429 with Retry-After")
			fs.IntVar(&f.maxPerTenant, "max-concurrent-per-tenant", httpx.DefaultConcurrentPerOrganisation, "most requests of one tenant's tokens in flight at once; more are answered 429 with Retry-After")
			f.mcpSessions.register(fs)
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			return providerServe(ctx, e, f)
		},
	}
}

func providerServe(ctx context.Context, e *env, f *providerServeFlags) error {
	if len(f.tokens) == 0 {
		return usagef("%s: at least one --token is required", e.cmd)
	}
	var tokens []provider.Token
	for _, s := range f.tokens {
		t, err := provider.ParseToken(s)
		if err != nil {
			return usagef("%s: --token: %v", e.cmd, err)
		}
		t.Tenant = f.tenant
		tokens = append(tokens, t)
	}
	for _, s := range f.tenantTokens {
		tenant, rest, ok := strings.Cut(s, ":")
		if !ok || tenant == "" {
			return usagef("%s: --tenant-token %q: want TENANT:TOKEN[=SCOPE,...]", e.cmd, s)
		}
		t, err := provider.ParseToken(rest)
		if err != nil {
			return usagef("%s: --tenant-token: %v", e.cmd, err)
		}
		t.Tenant = tenant
		tokens = append(tokens, t)
	}
	if f.demo < 0 {
		return usagef("%s: --demo must be 0 or more, got %d", e.cmd, f.demo)
	}
	if f.maxPerToken < 1 || f.maxPerTenant < 1 {
		return usagef("%s: --max-concurrent-per-token and --max-concurrent-per-tenant must be at least 1, got %d and %d", e.cmd, f.maxPerToken, f.maxPerTenant)
	}
	mcpOpts, err := f.mcpSessions.options(e.cmd)
	if err != nil {
		return err
	}
	log, err := f.logger(e.cmd, e.stderr)
	if err != nil {
		return err
	}
	opsToken, err := metricsToken(e.cmd, e)
	if err != nil {
		return err
	}
	db, err := sqldb.Open(ctx, f.databaseURL)
	if err != nil {
		return usagef("%s: --database-url: %v", e.cmd, err)
	}
	defer db.Close()
	src, err := sqlsource.New(ctx, db.DB, sqlsource.Dialect(db.Dialect))
	if err != nil {
		return err
	}
	if f.demo > 0 {
		if err := fillDemo(ctx, log, src, f); err != nil {
			return err
		}
	}
	key, err := src.CursorKey(ctx)
	if err != nil {
		return err
	}
	// The MCP binding at /mcp: the same data, credentials and scopes.
	m, err := mcp.NewServer(src, append(mcpOpts, mcp.WithCursorKey(key))...)
	if err != nil {
		return err
	}
	h, err := provider.NewHandler(src, provider.WithTokens(tokens...), provider.WithLogger(log), provider.WithCursorKey(key),
		provider.WithMount("/mcp", m.HTTPHandler()), provider.WithMaxConcurrent(f.maxPerToken, f.maxPerTenant))
	if err != nil {
		return err
	}
	// Operations beside the interface: /healthz, /readyz, /metrics. The
	// provider routes on its own, so it is reached through a catch-all that
	// hides this router's route context.
	metrics := ops.NewMetrics()
	r := chi.NewRouter()
	r.Use(metrics.Middleware)
	r.Group(ops.Health(ops.DBCheck(db, map[string]fs.FS{sqlsource.Component: sqlsource.Migrations()})))
	r.Method(http.MethodGet, "/metrics", guardMetrics(opsToken, metrics.Handler()))
	r.Handle("/*", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), chi.RouteCtxKey, (*chi.Context)(nil))))
	}))
	stopMetrics, err := f.metrics.serve(ctx, e.cmd, log, metrics.Handler())
	if err != nil {
		return err
	}
	defer stopMetrics()
	return f.serve(ctx, log, r, serveHooks{}, "provider serving",
		slog.String("database", db.URL()), slog.Int("tokens", len(tokens)), slog.String("mcp", "/mcp"))
}

// fillDemo loads generated data into an empty database.
func fillDemo(ctx context.Context, log *slog.Logger, src *sqlsource.Source, f *providerServeFlags) error {
	page, err := src.ListConversations(ctx, provider.ConversationQuery{Tenant: f.tenant, Limit: 1})
	if err != nil {
		return err
	}
	if len(page.Items) > 0 {
		log.Info("database already holds conversations; --demo leaves it as it is", "tenant", f.tenant)
		return nil
	}
	start := time.Now()
	// The data ends now, so that the default /usage range (the last 7 days)
	// shows it.
	cfg := demodata.Config{Seed: f.seed, Conversations: f.demo, Tenant: f.tenant, End: time.Now().UTC().Truncate(time.Hour)}
	err = src.WriteBatch(ctx, func(w provider.Writer) error { return demodata.Fill(ctx, cfg, f.tenant, w) })
	if err != nil {
		return fmt.Errorf("load demo data: %w", err)
	}
	log.Info("demo data loaded", "conversations", f.demo, "seed", f.seed, "end", cfg.End.Format(time.RFC3339),
		"took", time.Since(start).Round(time.Millisecond))
	return nil
}
