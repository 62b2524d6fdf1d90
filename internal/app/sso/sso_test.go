package sso_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/sso"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
)

func (e *env) svcSecrets() *keyring.Keyring { return e.ring }

var admin = org.Actor{Type: org.ActorAdmin, Name: "root"}

// clock is the real time plus an offset the test moves.
type clock struct{ off atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) Advance(d time.Duration) { c.off.Add(int64(d)) }

// idpUser is a person at the mock IdP whose claims the test controls.
type idpUser struct {
	mu       sync.Mutex
	sub      string
	email    string
	verified any
	name     string
	groups   any // nil: no groups claim
}

func (u *idpUser) ID() string { return u.sub }

func (u *idpUser) claims() map[string]any {
	u.mu.Lock()
	defer u.mu.Unlock()
	m := map[string]any{"sub": u.sub, "email": u.email, "name": u.name}
	if u.verified != nil {
		m["email_verified"] = u.verified
	}
	if u.groups != nil {
		m["groups"] = u.groups
	}
	return m
}

func (u *idpUser) setGroups(g any) { u.mu.Lock(); u.groups = g; u.mu.Unlock() }

func (u *idpUser) Userinfo([]string) ([]byte, error) { return json.Marshal(u.claims()) }

func (u *idpUser) Claims(_ []string, base *mockoidc.IDTokenClaims) (jwt.Claims, error) {
	m := jwt.MapClaims{}
	b, _ := json.Marshal(base)
	_ = json.Unmarshal(b, &m)
	for k, v := range u.claims() {
		m[k] = v
	}
	return m, nil
}

// idp is a running mock OpenID provider with a hook on its requests.
type idp struct {
	m    *mockoidc.MockOIDC
	hook atomic.Pointer[func(w http.ResponseWriter, r *http.Request, next http.Handler)]
}

func startIdP(t *testing.T) *idp {
	t.Helper()
	m, err := mockoidc.NewServer(nil)
	require.NoError(t, err)
	p := &idp{m: m}
	require.NoError(t, m.AddMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h := p.hook.Load(); h != nil {
				(*h)(w, r, next)
				return
			}
			next.ServeHTTP(w, r)
		})
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, m.Start(ln, nil))
	t.Cleanup(func() { _ = m.Shutdown() })
	return p
}

func (p *idp) setHook(h func(w http.ResponseWriter, r *http.Request, next http.Handler)) {
	if h == nil {
		p.hook.Store(nil)
		return
	}
	p.hook.Store(&h)
}

// down makes every endpoint answer 503 (or only paths with the suffix).
func (p *idp) down(suffix string) {
	p.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if strings.HasSuffix(r.URL.Path, suffix) {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// rewriteIDToken changes the ID token of token responses: edit changes its
// claims, and it is signed by kp.
func (p *idp) rewriteIDToken(kp *mockoidc.Keypair, edit func(jwt.MapClaims)) {
	p.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if !strings.HasSuffix(r.URL.Path, "/token") {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var body map[string]any
		if json.Unmarshal(rec.Body.Bytes(), &body) == nil {
			if raw, ok := body["id_token"].(string); ok {
				parts := strings.Split(raw, ".")
				payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
				claims := jwt.MapClaims{}
				_ = json.Unmarshal(payload, &claims)
				edit(claims)
				body["id_token"], _ = kp.SignJWT(claims)
			}
		}
		out, _ := json.Marshal(body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(out)
	})
}

// env is the service over a database, with an organisation and an IdP.
type env struct {
	t      *testing.T
	db     *sqldb.DB
	orgs   *org.Store
	people *people.Store
	svc    *sso.Service
	clock  *clock
	org    org.Organisation
	idp    *idp
	logs   *bytes.Buffer
	ring   *keyring.Keyring
}

const redirect = "https://dash.example.com" + sso.CallbackPath

func newEnv(t *testing.T, db *sqldb.DB) *env {
	t.Helper()
	ctx := t.Context()
	clk := &clock{}
	orgs, err := org.NewStore(ctx, db, org.WithNow(clk.Now))
	require.NoError(t, err)
	o, err := orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Acme"}, admin)
	require.NoError(t, err)
	e := &env{t: t, db: db, orgs: orgs, clock: clk, org: o, idp: startIdP(t), logs: &bytes.Buffer{}}
	var svc atomic.Pointer[sso.Service]
	e.people, err = people.New(ctx, people.Config{DB: db, Orgs: orgs, Now: clk.Now, HashCost: people.HashTest,
		SSORequired: func(ctx context.Context, orgID string) (bool, error) { return svc.Load().Required(ctx, orgID) }})
	require.NoError(t, err)
	e.ring = keyring.Ephemeral()
	e.svc, err = sso.New(ctx, sso.Config{DB: db, Orgs: orgs, People: e.people, Secrets: e.ring, AllowPrivate: true,
		Now: clk.Now, Logger: slogTo(e.logs)})
	require.NoError(t, err)
	svc.Store(e.svc)
	return e
}

// configure sets the organisation's settings for the env's IdP.
func (e *env) configure(edit func(*sso.SettingsInput)) sso.Settings {
	e.t.Helper()
	in := sso.SettingsInput{Issuer: e.idp.m.Issuer(), ClientID: e.idp.m.ClientID, ClientSecret: e.idp.m.ClientSecret,
		Domains: []string{"Example.com"}, Scopes: []string{"openid", "email", "profile", "groups"},
		AdministratorValues: []string{"dash-admins"}, ReviewerValues: []string{"dash-reviewers"}}
	if edit != nil {
		edit(&in)
	}
	st, err := e.svc.SetSettings(e.t.Context(), e.org.ID, in, admin)
	require.NoError(e.t, err)
	return st
}

// callback runs Begin for email and follows the IdP's redirect, returning
// the callback's query.
func (e *env) callback(email string, u *idpUser) url.Values {
	e.t.Helper()
	if u != nil {
		e.idp.m.QueueUser(u)
	}
	to, err := e.svc.Begin(e.t.Context(), email, "/usage?x=1", redirect)
	require.NoError(e.t, err)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(to)
	require.NoError(e.t, err)
	resp.Body.Close()
	require.Equal(e.t, http.StatusFound, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(e.t, err)
	require.True(e.t, strings.HasPrefix(loc.String(), redirect))
	return loc.Query()
}

// signIn completes a sign-in of u.
func (e *env) signIn(u *idpUser) (people.Session, people.User, string, error) {
	e.t.Helper()
	login := u.email
	if !strings.HasSuffix(login, "@example.com") { // the IdP answers with an address of another domain
		login = u.sub + "@example.com"
	}
	return e.svc.Complete(e.t.Context(), e.callback(login, u), redirect)
}

// requireFailure checks err is a *sso.Failure of reason.
func requireFailure(t *testing.T, err error, reason sso.Reason) *sso.Failure {
	t.Helper()
	var f *sso.Failure
	require.True(t, errors.As(err, &f), "%v (%T) is not a *sso.Failure", err, err)
	require.Equal(t, reason, f.Reason, "%+v", f)
	require.NotEmpty(t, f.Message)
	require.Contains(t, []int{400, 403, 502}, f.Status)
	return f
}

// audit returns the organisation's audit records after seq.
func (e *env) audit(after int64) []org.AuditRecord {
	e.t.Helper()
	recs, err := e.orgs.Audit(e.t.Context(), e.org.ID, after, 1000)
	require.NoError(e.t, err)
	return recs
}

func (e *env) lastSeq() int64 {
	recs := e.audit(0)
	if len(recs) == 0 {
		return 0
	}
	return recs[len(recs)-1].Seq
}

// actions lists the actions of records.
func actions(recs []org.AuditRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Action)
	}
	return out
}

// refusedReason returns the reason of the last sso.refused record after
// seq, checking it is the only record.
func (e *env) requireRefused(after int64, reason sso.Reason) {
	e.t.Helper()
	recs := e.audit(after)
	require.Equal(e.t, []string{sso.AuditRefused}, actions(recs))
	var a map[string]string
	require.NoError(e.t, json.Unmarshal(recs[0].After, &a))
	require.Equal(e.t, string(reason), a["reason"])
	require.Equal(e.t, org.Actor{Type: org.ActorIdP, Name: e.idp.m.Issuer()}, recs[0].Actor)
}
