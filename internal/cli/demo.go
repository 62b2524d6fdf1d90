package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/internal/app/dashboard"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/app/sso"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/sqlsource"
	"github.com/aiusage/kit/spec"
)

// demoTenant is the provider tenant that holds the demo's generated data.
const demoTenant = "demo"

type demoFlags struct {
	serverFlags
	embeddings                        embeddingsFlags
	judge                             judgeFlags
	databaseURL, accessLog, exportDir string
	openWebUIDB                       string
	conversations                     int
	secrets                           secretFlags
	metrics                           metricsFlags
	otlpGRPC                          otlpGRPCFlags
	otlpRate                          otlpRateFlags
	proxies                           proxyFlags
	idp                               idpFlags
}

func demoCommand() *command {
	f := &demoFlags{}
	return &command{
		name:    "demo",
		summary: "run the whole kit in one process on embedded SQLite, with demo data and keys",
		long: `Runs, in one process and on one port, everything the kit holds:

  - the oversight service: the organisation API and the review-task API,
    with a demo organisation, an agent, instructions showing each trigger type
    and redaction, and an API key;
  - a provider of the AI usage data interface at /provider (its MCP server
    at /provider/mcp), filled with generated conversations, usage, assistants
    and events;
  - the organisation's three sources, one per transport, each with data of
    its own: the provider over REST; a scheduled export the demo writes to
    --export-dir every minute; and a push stream it sends to the service's
    receiver every minute. The organisation's one view shows all three;
  - the telemetry endpoint (OTLP over HTTP at /v1/{logs,metrics,traces}, and
    over gRPC at --otlp-grpc-addr, by default 127.0.0.1:4317 or, when that
    port is taken, a free one), with an Ingestion key "demo telemetry": at
    start the demo sends it generated telemetry of two AI tools with the
    OpenTelemetry Go SDK, Claude Code over HTTP and Gemini CLI over gRPC, and
    the one view's usage shows them as the assistants claude-code and
    gemini-cli.

With --openwebui-db, a fourth source: the Open WebUI database at PATH (its
SQLite webui.db), served read-only at /openwebui by the provider of
adapters/openwebui (which maps its chats, custom models, feedback and token
usage) and synced like the first; a missing file is created with that
adapter's sample data.

The first start creates all of it in the database (default: the SQLite file
aiusage-demo.db in the working directory); later starts reuse it without
duplicating anything. Once ready it prints the URLs, the keys, and commands
to try.

While it runs, the service logs one line per request and per sync of the
source to the file --access-log (appended to), not to the terminal, so that
the commands stay in view; warnings and errors go to standard error too.
Stops on SIGINT or SIGTERM.

Semantic instructions are evaluated by the built-in matcher, or by the
embeddings endpoint at --embeddings-url, and with --judge-url by a model
judge over the sentences that matcher picks, as in 'service serve' (see
docs/policy.md); the access log's first lines name the one in use.

` + metricsHelp + `

The demo's keys, passwords and the sources' secrets are stored encrypted, as
in 'service serve': under $AIUSAGE_SECRET_KEY, else --secret-key-file, else,
for a SQLite file, the key file beside it (aiusage-demo.db.key by default),
created with mode 0600 on first start; PostgreSQL needs one of the first two.`,
		flags: func(fs *flag.FlagSet) {
			f.register(fs, "127.0.0.1:8080", 15*time.Second)
			fs.StringVar(&f.databaseURL, "database-url", "sqlite:aiusage-demo.db", "database `URL`: sqlite:PATH or postgres://...")
			fs.IntVar(&f.conversations, "conversations", 500, "`N` generated conversations of the demo provider (first start only)")
			fs.StringVar(&f.accessLog, "access-log", "aiusage-demo.log", "`FILE` the requests and syncs are logged to (- for standard error)")
			fs.StringVar(&f.exportDir, "export-dir", "aiusage-demo-export", "`DIR` the demo's scheduled export is written to, and read from by its export source")
			fs.StringVar(&f.openWebUIDB, "openwebui-db", "", "`PATH` of an Open WebUI database (webui.db) served read-only at /openwebui as a fourth source; created with sample data when missing")
			f.embeddings.register(fs)
			f.embeddings.registerBudget(fs)
			f.judge.register(fs)
			f.secrets.register(fs)
			f.metrics.register(fs)
			f.otlpGRPC.register(fs, true)
			f.otlpRate.register(fs)
			f.proxies.register(fs)
			f.idp.register(fs, true)
		},
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, _ []string) error {
			f.otlpGRPC.defaulted(fs)
			if err := f.idp.check(e.cmd); err != nil {
				return err
			}
			if f.conversations < 1 {
				return usagef("%s: --conversations must be at least 1, got %d", e.cmd, f.conversations)
			}
			if strings.TrimSpace(f.exportDir) == "" {
				return usagef("%s: --export-dir must name a directory", e.cmd)
			}
			return runDemo(ctx, e, f)
		},
	}
}

// demoState is what the first start creates and later starts reuse.
type demoState struct {
	orgID, agentID, apiKey, providerToken string
	sourceID                              string // empty until the provider is connected
	ingestionKey                          string // the telemetry's, once ready
	// The people who sign in to the dashboard, with their passwords.
	adminEmail, adminPassword, reviewerEmail, reviewerPassword string
	// keyCreated and passwordsCreated are set when this start created the
	// API key and the passwords: their values are printed then only, as a
	// key's full value is shown once, at creation.
	keyCreated, passwordsCreated bool
	// afresh says how to start the demo afresh, with a new key and new
	// passwords (printed on a later start).
	afresh string
}

// The demo's people.
const (
	demoAdminEmail    = "admin@demo.example"
	demoReviewerEmail = "reviewer@demo.example"
)

func runDemo(ctx context.Context, e *env, f *demoFlags) error {
	log, err := f.logger(e.cmd, e.stderr)
	if err != nil {
		return err
	}
	candidates, matcherAttrs, err := f.embeddings.matcher(e.cmd)
	if err != nil {
		return err
	}
	matcher, _, judgeAttrs, err := f.judge.cascade(e.cmd, candidates)
	if err != nil {
		return err
	}
	matcherAttrs = append(matcherAttrs, judgeAttrs...)
	if err := f.embeddings.checkBudget(e.cmd); err != nil {
		return err
	}
	serviceLog, accessLog, closeLog, err := f.serviceLogger(e.cmd, e.stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	serviceLog.LogAttrs(ctx, slog.LevelInfo, "semantic matcher", matcherAttrs...)
	db, err := openDB(ctx, e.cmd, f.databaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	ring, keySrc, err := f.secrets.keyring(e.cmd, e, db)
	if err != nil {
		return err
	}
	opsToken, err := metricsToken(e.cmd, e)
	if err != nil {
		return err
	}
	logKeyring(ctx, serviceLog, keySrc, db)
	orgs, err := org.NewStore(ctx, db)
	if err != nil {
		return fmt.Errorf("%s: %w", e.cmd, err)
	}
	src, err := sqlsource.New(ctx, db.DB, sqlsource.Dialect(db.Dialect))
	if err != nil {
		return fmt.Errorf("%s: %w", e.cmd, err)
	}
	ds := &demoStore{db: db, ring: ring}
	st, err := demoSetUp(ctx, ds, orgs, src, f.conversations)
	if err != nil {
		return fmt.Errorf("%s: %w", e.cmd, err)
	}
	st.afresh = demoAfresh(db, keySrc, f.exportDir)
	if err := fillDemoTenants(ctx, src, f.conversations); err != nil {
		return fmt.Errorf("%s: %w", e.cmd, err)
	}
	mountProvider, err := demoProvider(ctx, src, st.providerToken)
	if err != nil {
		return err
	}
	mounts := []func(chi.Router){mountProvider}
	d := &demoServing{e: e, f: f, log: log, serviceLog: serviceLog, ds: ds, orgs: orgs, src: src, st: &st,
		transports: &demoTransports{exportDir: f.exportDir}, accessLog: accessLog, opsToken: opsToken}
	if f.openWebUIDB != "" {
		if d.owui, err = startOpenWebUI(ctx, f.openWebUIDB, st.providerToken, serviceLog); err != nil {
			return fmt.Errorf("%s: %w", e.cmd, err)
		}
		defer d.owui.close()
		mounts = append(mounts, d.owui.mount)
	}
	// The demo's sources are on loopback, and its export source reads its
	// own export directory: that directory is the export root.
	exportRoot, err := filepath.Abs(f.exportDir)
	if err != nil {
		return fmt.Errorf("%s: --export-dir: %w", e.cmd, err)
	}
	d.srv, err = server.New(ctx, server.Config{DB: db, Orgs: orgs, Secrets: ring, Logger: serviceLog,
		Concurrency: httpx.NewLimiter(0, 0), TrustedProxies: &f.proxies.trustedProxies,
		Telemetry:    f.otlpRate.config(),
		MetricsGuard: func(h http.Handler) http.Handler { return guardMetrics(opsToken, h) },
		Mounts:       mounts, Readiness: map[string]fs.FS{sqlsource.Component: sqlsource.Migrations()},
		Review:    reviewapi.Config{AllowPrivateWebhooks: true, Policy: policy.Options{Semantic: matcher, Budget: f.embeddings.budget}},
		Sources:   sources.Config{AllowPrivate: true, ExportRoot: exportRoot},
		SSO:       sso.Config{AllowPrivate: f.idp.allowPrivate},
		Dashboard: dashboard.Config{PublicURL: f.idp.publicURL}})
	if err != nil {
		return fmt.Errorf("%s: %w", e.cmd, err)
	}
	defer d.srv.Close()
	stopMetrics, err := f.metrics.serve(ctx, e.cmd, log, d.srv.MetricsHandler())
	if err != nil {
		return err
	}
	defer stopMetrics()
	stopGRPC, err := f.otlpGRPC.serve(ctx, e.cmd, log, d.srv)
	if err != nil {
		return err
	}
	defer stopGRPC()
	// The export writer and the pusher stop with the server, before the
	// service and the database close.
	var stopTransports context.CancelFunc
	d.tctx, stopTransports = context.WithCancel(ctx)
	defer func() {
		stopTransports()
		d.transports.stop()
		d.telemetry.Wait()
	}()
	if err := demoPeople(ctx, ds, d.srv.People(), &st); err != nil {
		return fmt.Errorf("%s: %w", e.cmd, err)
	}
	return runServer(ctx, d.srv, log, &f.serverFlags, func(base string) { d.ready(ctx, base) }, "demo serving", slog.String("database", db.URL()))
}

// demoProvider returns the mount of the demo's provider of generated data
// at /provider (its MCP server at /provider/mcp), whose token is token.
func demoProvider(ctx context.Context, src *sqlsource.Source, token string) (func(chi.Router), error) {
	key, err := src.CursorKey(ctx)
	if err != nil {
		return nil, err
	}
	m, err := mcp.NewServer(src, mcp.WithCursorKey(key))
	if err != nil {
		return nil, err
	}
	ph, err := provider.NewHandler(src, provider.WithTokens(provider.Token{Secret: token, Tenant: demoTenant}),
		provider.WithCursorKey(key), provider.WithMount("/mcp", m.HTTPHandler()))
	if err != nil {
		return nil, err
	}
	// The provider routes on its own: strip the prefix, and hide the
	// service router's route context, which it would otherwise route by.
	standalone := http.StripPrefix("/provider", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ph.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, (*chi.Context)(nil))))
	}))
	return func(r chi.Router) {
		r.Handle("/provider", standalone)
		r.Handle("/provider/*", standalone)
	}, nil
}

// demoServing is what the demo holds while it serves.
type demoServing struct {
	e               *env
	f               *demoFlags
	log, serviceLog *slog.Logger
	ds              *demoStore
	orgs            *org.Store
	src             *sqlsource.Source
	st              *demoState
	srv             *server.Server
	transports      *demoTransports
	// tctx ends when the export writer and the pusher stop.
	tctx                context.Context
	owui                *demoOpenWebUI
	accessLog, opsToken string
	// telemetry is the sending of the demo's telemetry, in the background.
	telemetry sync.WaitGroup
}

// ready runs once the demo listens at base: the provider becomes the
// organisation's source (connected once, its URL this process's) and is
// synced before the block is printed, so the collected data is there to
// read; a first review task waits for a person; the export and push sources
// start.
func (d *demoServing) ready(ctx context.Context, base string) {
	e, st, log := d.e, d.st, d.log
	if st.sourceID == "" {
		s, err := d.srv.Sources().Add(ctx, st.orgID, sources.SourceCreate{Name: "Demo provider", URL: base + "/provider",
			Token: st.providerToken, Every: time.Minute})
		if err != nil {
			log.Error(e.cmd+": connect the provider as a source", "error", err)
			return
		}
		st.sourceID = s.ID
		if err := d.ds.set(ctx, "source", s.ID); err != nil {
			log.Error(e.cmd+": remember the source", "error", err)
		}
	} else if err := d.srv.Sources().SetURL(ctx, st.orgID, st.sourceID, base+"/provider"); err != nil {
		log.Error(e.cmd+": point the source at this address", "error", err)
	}
	if _, err := d.srv.Sources().SyncNow(ctx, st.sourceID); err != nil {
		log.Error(e.cmd+": first sync", "error", err)
	}
	if err := demoReviewTask(ctx, d.ds, d.orgs, d.srv.Review(), *st); err != nil {
		log.Error(e.cmd+": a first review task", "error", err)
	}
	if err := d.transports.start(d.tctx, base, d.ds, d.src, d.srv.Sources(), st.orgID, d.serviceLog); err != nil {
		log.Error(e.cmd+": the export and push sources", "error", err)
	}
	d.startTelemetry(ctx, base)
	metricsNote := "off: set " + envMetricsToken + " or --metrics-addr"
	switch {
	case d.f.metrics.url != "":
		metricsNote = d.f.metrics.url
	case d.opsToken != "":
		metricsNote = base + "/metrics with Authorization: Bearer $" + envMetricsToken
	}
	printDemo(e.stdout, base, *st, d.transports, d.accessLog, metricsNote, &d.f.otlpGRPC, d.owui != nil)
	if d.owui != nil {
		if err := d.owui.connect(ctx, d.ds, d.srv.Sources(), st.orgID, base, st.providerToken); err != nil {
			log.Error(e.cmd+": the Open WebUI source", "error", err)
		} else {
			d.owui.print(e.stdout, base, st.orgID)
		}
	}
}

// serviceLogger returns the logger of the service the demo runs, and where
// its access log goes. The service's info lines (one per request, one per
// sync) go to the --access-log file, its warnings and errors to that file
// and to w too. With --access-log - all of it goes to w.
func (f *demoFlags) serviceLogger(cmd string, w io.Writer) (_ *slog.Logger, where string, closeLog func() error, _ error) {
	switch f.accessLog {
	case "":
		return nil, "", nil, usagef("%s: --access-log must name a file, or - for standard error", cmd)
	case "-":
		l, err := newLogger(cmd, w, f.logFormat)
		return l, "standard error", func() error { return nil }, err
	}
	file, err := os.OpenFile(f.accessLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, "", nil, usagef("%s: --access-log: %v", cmd, err)
	}
	toFile, err := newLogHandler(cmd, file, f.logFormat, slog.LevelInfo)
	if err != nil {
		_ = file.Close()
		return nil, "", nil, err
	}
	toW, _ := newLogHandler(cmd, w, f.logFormat, slog.LevelWarn)
	where = f.accessLog
	if abs, err := filepath.Abs(where); err == nil {
		where = abs
	}
	return slog.New(teeHandler{toFile, toW}), where, file.Close, nil
}

// teeHandler hands each record to every one of its handlers that takes the
// record's level.
type teeHandler []slog.Handler

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range t {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var errs []error
	for _, h := range t {
		if h.Enabled(ctx, r.Level) {
			errs = append(errs, h.Handle(ctx, r.Clone()))
		}
	}
	return errors.Join(errs...)
}

func (t teeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(attrs)
	}
	return out
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}

// demoSetUp creates the demo's organisation, agent, instructions, key,
// provider token and data the first time, and reads them back afterwards.
func demoSetUp(ctx context.Context, ds *demoStore, orgs *org.Store, src *sqlsource.Source, conversations int) (demoState, error) {
	if err := ds.init(ctx); err != nil {
		return demoState{}, err
	}
	var st demoState
	fields := map[string]*string{"org": &st.orgID, "agent": &st.agentID, "api_key": &st.apiKey, "provider_token": &st.providerToken}
	complete := true
	for name, dst := range fields {
		v, err := ds.get(ctx, name)
		if err != nil {
			return st, err
		}
		complete = complete && v != ""
		*dst = v
	}
	var err error
	if st.sourceID, err = ds.get(ctx, "source"); err != nil {
		return st, err
	}
	if !complete {
		if st, err = demoCreate(ctx, orgs); err != nil {
			return st, err
		}
		st.keyCreated = true
		for name, v := range map[string]string{"org": st.orgID, "agent": st.agentID, "api_key": st.apiKey, "provider_token": st.providerToken} {
			if err := ds.set(ctx, name, v); err != nil {
				return st, err
			}
		}
	}
	page, err := src.ListConversations(ctx, provider.ConversationQuery{Tenant: demoTenant, Limit: 1})
	if err != nil {
		return st, err
	}
	if len(page.Items) == 0 {
		cfg := demodata.Config{Seed: 1, Conversations: conversations, Tenant: demoTenant, End: time.Now().UTC().Truncate(time.Hour)}
		if err := src.WriteBatch(ctx, func(w provider.Writer) error { return demodata.Fill(ctx, cfg, demoTenant, w) }); err != nil {
			return st, fmt.Errorf("generate the provider's data: %w", err)
		}
	}
	return st, nil
}

func demoCreate(ctx context.Context, orgs *org.Store) (demoState, error) {
	actor := org.Actor{Type: org.ActorAdmin, Name: "aiusage demo"}
	o, err := orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Demo organisation"}, actor)
	if err != nil {
		return demoState{}, err
	}
	agent, err := orgs.CreateAgent(ctx, o.ID, "Support assistant", actor)
	if err != nil {
		return demoState{}, err
	}
	for _, c := range []org.InstructionCreate{
		{Title: "Redact IBANs", Trigger: spec.RegexTrigger(`\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b`, true), Action: spec.ActionBlock, Criticality: spec.CriticalityLow, AllowRedaction: true},
		{Title: "No salary questions", Trigger: spec.StringMatchTrigger([]string{"salary", "payroll", "bonus"}, false), Action: spec.ActionBlock, Criticality: spec.CriticalityLow},
		{Title: "Unannounced mergers go to a person", Trigger: spec.SemanticTrigger("discussion of an unannounced merger or acquisition of a company"), Action: spec.ActionBlock, Criticality: spec.CriticalityHigh},
		{Title: "Project Falcon is confidential", Trigger: spec.StringMatchTrigger([]string{"Project Falcon"}, false), Action: spec.ActionBlock, Criticality: spec.CriticalityHigh},
		{Title: "Public product names are fine", Trigger: spec.StringMatchTrigger([]string{"Aurora", "Borealis"}, true), Action: spec.ActionAllow, Criticality: spec.CriticalityLow},
	} {
		c.AgentType = spec.AgentTypeDataProtection
		c.UsedBy = []string{agent.ID}
		if _, err := orgs.CreateInstruction(ctx, o.ID, c, actor); err != nil {
			return demoState{}, err
		}
	}
	key, err := orgs.CreateKey(ctx, org.KeyCreate{OrganisationID: o.ID, Name: "demo", Type: org.KeyTypeAPI, NoExpiry: true}, actor)
	if err != nil {
		return demoState{}, err
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return demoState{orgID: o.ID, agentID: agent.ID, apiKey: key.Secret, providerToken: "demo-" + hex.EncodeToString(b[:])}, nil
}

// demoPeople creates, the first time, an Administrator and a Reviewer of
// the demo organisation with random passwords, and reads them back after.
func demoPeople(ctx context.Context, ds *demoStore, ppl *people.Store, st *demoState) error {
	st.adminEmail, st.reviewerEmail = demoAdminEmail, demoReviewerEmail
	for _, u := range []struct {
		state, email, name string
		role               people.Role
		password           *string
	}{
		{"admin_password", demoAdminEmail, "Demo administrator", people.RoleAdministrator, &st.adminPassword},
		{"reviewer_password", demoReviewerEmail, "Demo reviewer", people.RoleReviewer, &st.reviewerPassword},
	} {
		v, err := ds.get(ctx, u.state)
		if err != nil {
			return err
		}
		if v != "" {
			*u.password = v
			continue
		}
		*u.password = rand.Text()
		st.passwordsCreated = true
		if _, err := ppl.CreateUser(ctx, people.UserCreate{OrganisationID: st.orgID, Email: u.email, Name: u.name,
			Role: u.role, Password: *u.password}, org.Actor{Type: org.ActorAdmin, Name: "aiusage demo"}); err != nil {
			return fmt.Errorf("create the demo's %s: %w", u.role, err)
		}
		if err := ds.set(ctx, u.state, *u.password); err != nil {
			return err
		}
	}
	return nil
}

// demoReviewTask submits, the first time, a request that waits for a
// person, so that the dashboard's review queue has a task to decide.
func demoReviewTask(ctx context.Context, ds *demoStore, orgs *org.Store, svc *reviewapi.Service, st demoState) error {
	done, err := ds.get(ctx, "review_task")
	if err != nil || done != "" {
		return err
	}
	p, err := orgs.Authenticate(ctx, st.apiKey)
	if err != nil {
		return err
	}
	t, err := svc.CreateTask(ctx, p, spec.ReviewTaskCreate{AgentID: st.agentID, Request: spec.ReviewRequest{
		Messages: []spec.ReviewMessage{{Role: "user", Content: "Draft the press release announcing Project Falcon for Monday."}}}})
	if err != nil {
		return err
	}
	return ds.set(ctx, "review_task", t.ID)
}

// printDemo prints the block a newcomer reads: URLs, keys, commands.
func printDemo(w io.Writer, base string, st demoState, tr *demoTransports, accessLog, metricsNote string, grpc *otlpGRPCFlags, openWebUI bool) {
	sources := "three"
	if openWebUI {
		sources = "four" // the Open WebUI source, printed after this block
	}
	bin := "aiusage"
	if exe, err := os.Executable(); err == nil && !strings.Contains(exe, "go-build") {
		bin = exe
	}
	// The API key's value and the passwords are printed when they are
	// created; a later start points at that first print.
	key, keyLine := st.apiKey, st.apiKey
	if !st.keyCreated {
		key = "$API_KEY"
		keyLine = "printed at the first start (a key's full value is shown once, at creation);\n" +
			"                 the commands below read it from $API_KEY: export API_KEY=aiu_..."
	}
	signIn := fmt.Sprintf("sign in as %s with password %s; reviewer: %s / %s",
		st.adminEmail, st.adminPassword, st.reviewerEmail, st.reviewerPassword)
	if !st.passwordsCreated {
		signIn = fmt.Sprintf("sign in as %s or %s with the password printed at the first start",
			st.adminEmail, st.reviewerEmail)
	}
	fmt.Fprintf(w, `
aiusage demo is ready at %[1]s/

  organisation   %[2]s  (Demo organisation)
  agent          %[3]s  (Support assistant, 5 instructions)
  API key        %[9]s
                 organisation API at %[1]s/organisations, review tasks at %[1]s/review-tasks
  provider       %[1]s/provider  (token %[5]s; MCP at %[1]s/provider/mcp)
  source         %[7]s  (the provider over REST, synced every minute; its collected data at
                 %[1]s/organisations/%[2]s/sources/%[7]s/)
  export source  %[11]s  (tenant %[12]s, exported every minute to %[13]s)
  push source    %[14]s  (tenant %[15]s, pushed every minute to %[1]s/push/%[14]s)
%[18]s  one view       %[1]s/organisations/%[2]s/conversations  (all %[17]s sources, each record naming its own)
  dashboard      %[1]s/  (%[10]s)
  operations     %[1]s/healthz, %[1]s/readyz; metrics %[16]s
  access log     %[8]s  (one line per request and per sync)

Try:

  # 1. the demo organisation's instructions
  curl -s -H "X-API-Key: %[4]s" %[1]s/organisations/%[2]s/instructions

  # 2. a review task whose IBAN gets redacted
  curl -s -H "X-API-Key: %[4]s" -H 'Content-Type: application/json' %[1]s/review-tasks \
    -d '{"agentId":"%[3]s","request":{"messages":[{"role":"user","content":"Refund to IBAN DE89 3704 0044 0532 0130 00 please"}]}}'

  # 3. conversations collected from the provider (the organisation's source)
  curl -s -H "X-API-Key: %[4]s" "%[1]s/organisations/%[2]s/sources/%[7]s/conversations?limit=2"

  # 4. the conformance suite against the provider
  %[6]s conformance --url %[1]s/provider --token %[5]s

  # 5. MCP client configuration (Claude Desktop: claude_desktop_config.json)
  {"mcpServers": {"aiusage-demo": {"command": "%[6]s", "args": ["mcp", "--url", "%[1]s/provider", "--token", "%[5]s"]}}}

`, base, st.orgID, st.agentID, key, st.providerToken, bin, st.sourceID, accessLog,
		keyLine, signIn,
		tr.exportID, demoExportTenant, tr.exportDir, tr.pushID, demoPushTenant, metricsNote, sources,
		demoTelemetryLine(base, grpc, st.ingestionKey))
	fmt.Fprint(w, demoAfreshNote(st))
}

// demoAfreshNote is the paragraph a later start prints under its block:
// the key and the passwords are those of the first start, and how to start
// afresh; "" on the start that created them.
func demoAfreshNote(st demoState) string {
	if st.keyCreated && st.passwordsCreated {
		return ""
	}
	return "The API key and the passwords were printed when they were created, at the first start.\n" +
		"To start afresh, with a new organisation, key and passwords: " + st.afresh + "\n\n"
}

// demoAfresh says how to start the demo on db afresh: for a SQLite file,
// stop the demo and delete it, the files beside it, the key file keySrc
// generated and the export directory; for PostgreSQL, point it at an empty
// database.
func demoAfresh(db *sqldb.DB, keySrc keySource, exportDir string) string {
	path := db.SQLitePath()
	if path == "" {
		return "stop the demo and start it with --database-url naming an empty database."
	}
	files := []string{path, path + "-wal", path + "-shm"}
	if keySrc.kind == "file" && keySrc.path == path+".key" {
		files = append(files, keySrc.path)
	}
	files = append(files, exportDir)
	for i, f := range files {
		files[i] = shellQuote(f)
	}
	return "stop the demo, run  rm -rf " + strings.Join(files, " ") + "  and start it again."
}

// shellQuote quotes s for a POSIX shell when it holds more than letters,
// digits and -_./:+=@,.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:+=@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
