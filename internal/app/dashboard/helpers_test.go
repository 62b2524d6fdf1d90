package dashboard_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/dashboard"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/app/sso"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/testkit/servicetest"
	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/spec"
)

var admin = org.Actor{Type: org.ActorAdmin, Name: "test"}

const password = "correct horse battery"

// env is a running service with the dashboard, as `aiusage service serve`
// composes it: the JSON APIs and the pages on one router.
type env struct {
	t      *testing.T
	db     *sqldb.DB
	url    string
	orgs   *org.Store
	people *people.Store
	review *reviewapi.Service
	sso    *sso.Service
	org    org.Organisation
	agent  spec.Agent
	admin  people.User // Ada, Administrator
	rev    people.User // Rex, Reviewer
}

func newEnv(t *testing.T, db *sqldb.DB) *env {
	t.Helper()
	e, _ := newEnvWith(t, db, sources.Config{})
	return e
}

// newEnvWith is newEnv with the sources configured by sc; it returns the
// sources' service too.
func newEnvWith(t *testing.T, db *sqldb.DB, sc sources.Config) (*env, *sources.Service) {
	t.Helper()
	return newEnvFull(t, db, sc, sso.Config{})
}

// newEnvFull is newEnvWith with single sign-on configured by ssoc, where
// identity providers on loopback are always allowed (the tests' mockoidc).
// Its people's password sign-ins ask the service's sso whether single
// sign-on is required, as `aiusage service serve` wires them.
func newEnvFull(t *testing.T, db *sqldb.DB, sc sources.Config, ssoc sso.Config) (*env, *sources.Service) {
	t.Helper()
	return newEnvSemantic(t, db, sc, ssoc, nil)
}

// newEnvSemantic is newEnvFull whose review service evaluates Semantic
// instructions with semantic (nil: the built-in matcher).
func newEnvSemantic(t *testing.T, db *sqldb.DB, sc sources.Config, ssoc sso.Config, semantic policy.SemanticMatcher) (*env, *sources.Service) {
	t.Helper()
	// Jobs are polled for every 100 ms: each of the four queues' polls
	// costs a query, which at 20 ms took a fifth of the package's time
	// under the race detector.
	return newEnvPolled(t, db, sc, ssoc, semantic, 100*time.Millisecond)
}

// newEnvIdleJobs is newEnv whose job queue polls for jobs once a minute,
// for a test that runs no job: on SQLite each poll prepares River's fetch
// statement, which under the race detector took a third of the CPU of
// TestReviewQueueLargeTasks (its CPU profile, at 100 ms). PostgreSQL
// notifies River of each insert whatever the interval.
func newEnvIdleJobs(t *testing.T, db *sqldb.DB) *env {
	t.Helper()
	e, _ := newEnvPolled(t, db, sources.Config{}, sso.Config{}, nil, time.Minute)
	return e
}

// newEnvPolled is newEnvSemantic whose job queue polls for jobs every
// poll.
func newEnvPolled(t *testing.T, db *sqldb.DB, sc sources.Config, ssoc sso.Config, semantic policy.SemanticMatcher, poll time.Duration) (*env, *sources.Service) {
	t.Helper()
	ctx := t.Context()
	orgs, err := org.NewStore(ctx, db)
	require.NoError(t, err)
	// A first delay of a minute after the free failed sign-ins: the
	// throttle tests' attempts, on the real clock, are seconds apart under
	// the race detector.
	ssoc.AllowPrivate = true
	var single *sso.Service // set once the service is built, before any request
	ppl, err := people.New(ctx, people.Config{HashCost: people.HashTest, DB: db, Orgs: orgs, BaseDelay: time.Minute,
		SSORequired: func(ctx context.Context, orgID string) (bool, error) { return single.Required(ctx, orgID) }})
	require.NoError(t, err)
	// The test's requests come from loopback, trusted as a proxy (as
	// --trusted-proxy 127.0.0.0/8 would): a test names a client's address
	// with X-Forwarded-For and a TLS proxy with X-Forwarded-Proto.
	loopback, err := httpx.ParseTrustedProxies("127.0.0.0/8,::1")
	require.NoError(t, err)
	full, srv := servicetest.Serve(t, server.Config{DB: db, Orgs: orgs, Secrets: keyring.Ephemeral(), People: ppl,
		TrustedProxies: loopback, PollInterval: poll, Sources: sc, SSO: ssoc,
		Review: reviewapi.Config{AllowPrivateWebhooks: true, SweepInterval: time.Hour, Policy: policy.Options{Semantic: semantic},
			RetrySchedule: []time.Duration{20 * time.Millisecond, 40 * time.Millisecond}},
		Dashboard: dashboard.Config{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}})
	svc := full.Review()
	single = full.SSO()

	e := &env{t: t, db: db, url: srv.URL, orgs: orgs, people: ppl, review: svc, sso: single}
	e.org, err = orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Acme"}, admin)
	require.NoError(t, err)
	e.agent, err = orgs.CreateAgent(ctx, e.org.ID, "Support", admin)
	require.NoError(t, err)
	_, err = orgs.CreateInstruction(ctx, e.org.ID, org.InstructionCreate{AgentType: spec.AgentTypeDataProtection,
		Title: "Mergers", Trigger: spec.StringMatchTrigger([]string{"Project Falcon"}, false),
		Action: spec.ActionBlock, Criticality: spec.CriticalityHigh, UsedBy: []string{e.agent.ID}}, admin)
	require.NoError(t, err)
	e.admin = e.user("ada@acme.test", "Ada", people.RoleAdministrator)
	e.rev = e.user("rex@acme.test", "Rex", people.RoleReviewer)
	return e, full.Sources()
}

func (e *env) user(email, name string, role people.Role) people.User {
	e.t.Helper()
	u, err := e.people.CreateUser(e.t.Context(), people.UserCreate{OrganisationID: e.org.ID, Email: email, Name: name,
		Role: role, Password: password}, admin)
	require.NoError(e.t, err)
	return u
}

// browser is a client with a cookie jar that does not follow redirects,
// sending the Origin a browser sends for a same-origin form.
type browser struct {
	e      *env
	client *http.Client
}

func (e *env) browser() *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(e.t, err)
	return &browser{e: e, client: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	Status int
	Header http.Header
	Body   string
}

func (p page) location() string { return p.Header.Get("Location") }

func (b *browser) do(t *testing.T, method, path string, form url.Values, headers ...string) page {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(t.Context(), method, b.e.url+path, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.e.url)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Less(t, resp.StatusCode, 500, "%s %s: %s", method, path, raw)
	return page{Status: resp.StatusCode, Header: resp.Header, Body: string(raw)}
}

func (b *browser) get(t *testing.T, path string) page { return b.do(t, http.MethodGet, path, nil) }

func (b *browser) post(t *testing.T, path string, form url.Values) page {
	return b.do(t, http.MethodPost, path, form)
}

// signIn signs in and requires the redirect to next.
func (b *browser) signIn(t *testing.T, email, next string) {
	t.Helper()
	p := b.post(t, "/signin", url.Values{"email": {email}, "password": {password}, "next": {next}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, next, p.location())
}

// api calls the JSON API with key.
func (e *env) api(t *testing.T, method, path, key, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.url+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw)
}
