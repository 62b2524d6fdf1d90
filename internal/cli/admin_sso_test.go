package cli

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/sso"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// testClientSecret is the client secret the tests' SSO settings store; the
// mock provider is given it, so that a sign-in through it works.
const testClientSecret = "client-secret-of-the-tests-0123456789"

// testRedirect is the redirect URI the tests' SSO sign-ins come back to;
// no server answers it: the test reads the provider's redirect.
const testRedirect = "http://dashboard.test" + sso.CallbackPath

// ssoEnv is a real OpenID provider (mockoidc, on loopback) with the
// services of a dashboard process on one database.
type ssoEnv struct {
	idp    *mockoidc.MockOIDC
	sso    *sso.Service
	people *people.Store
	orgs   *org.Store
}

// newSSOEnv starts an OpenID provider and opens the sso service on the
// database at dbURL, as the dashboard would, with the secrets' key ring
// (the tests' key when nil), allowing the loopback issuer. now is the
// clock of the people store (time.Now when nil).
func newSSOEnv(t *testing.T, dbURL string, ring *keyring.Keyring, now func() time.Time) *ssoEnv {
	t.Helper()
	m, err := mockoidc.Run()
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Shutdown() })
	m.ClientSecret = testClientSecret
	db, err := sqldb.Open(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	orgs, err := org.NewStore(t.Context(), db)
	require.NoError(t, err)
	if ring == nil {
		ring, err = keyring.ParseKeys(testSecretKey)
		require.NoError(t, err)
	}
	if now == nil {
		now = time.Now
	}
	env := &ssoEnv{idp: m, orgs: orgs}
	env.people, err = people.New(t.Context(), people.Config{HashCost: people.HashTest, DB: db, Orgs: orgs, Now: now,
		SSORequired: func(ctx context.Context, orgID string) (bool, error) { return env.sso.Required(ctx, orgID) }})
	require.NoError(t, err)
	env.sso, err = sso.New(t.Context(), sso.Config{DB: db, Orgs: orgs, People: env.people, Secrets: ring, AllowPrivate: true})
	require.NoError(t, err)
	return env
}

// configure sets orgID's SSO settings to the provider, covering domain,
// with the group "aiusage-admins" meaning Administrator.
func (e *ssoEnv) configure(t *testing.T, orgID, domain string) sso.Settings {
	t.Helper()
	s, err := e.sso.SetSettings(t.Context(), orgID, sso.SettingsInput{
		Issuer: e.idp.Issuer(), ClientID: e.idp.ClientID, ClientSecret: testClientSecret,
		Domains: []string{domain}, Scopes: []string{"openid", "email", "profile", "groups"},
		AdministratorValues: []string{"aiusage-admins"}, ReviewerValues: []string{"aiusage-reviewers"},
	}, org.Actor{Type: org.ActorAdmin, Name: "test"})
	require.NoError(t, err)
	return s
}

// signIn signs email in through the provider, as the browser would: Begin,
// the provider's authorization endpoint (which answers with a redirect to
// the callback), then Complete with the callback's query.
func (e *ssoEnv) signIn(t *testing.T, email string, groups ...string) (people.Session, people.User) {
	t.Helper()
	e.idp.QueueUser(&mockoidc.MockUser{Subject: "sub-" + email, Email: email, EmailVerified: true,
		PreferredUsername: strings.Split(email, "@")[0], Groups: groups})
	authURL, err := e.sso.Begin(t.Context(), email, "/", testRedirect)
	require.NoError(t, err)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	back, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	sess, u, _, err := e.sso.Complete(t.Context(), back.Query(), testRedirect)
	require.NoError(t, err)
	return sess, u
}

// require turns "Require single sign-on" on for orgID, as its Administrator
// adminEmail does in the dashboard: signed in through the provider first.
func (e *ssoEnv) require(t *testing.T, orgID, adminEmail string) {
	t.Helper()
	sess, u := e.signIn(t, adminEmail, "aiusage-admins")
	require.Equal(t, people.RoleAdministrator, u.Role)
	require.NoError(t, e.sso.SetRequired(t.Context(), orgID, true, sess.Token, org.Actor{Type: org.ActorUser, ID: u.ID, Name: u.Name}))
}

// ssoShown is what the admin sso commands print.
type ssoShown struct {
	OrganisationID      string       `json:"organisationId"`
	Issuer              string       `json:"issuer"`
	ClientID            string       `json:"clientId"`
	HasClientSecret     bool         `json:"hasClientSecret"`
	Domains             []string     `json:"domains"`
	Scopes              []string     `json:"scopes"`
	RoleClaim           string       `json:"roleClaim"`
	AdministratorValues []string     `json:"administratorValues"`
	ReviewerValues      []string     `json:"reviewerValues"`
	Unmapped            sso.Unmapped `json:"unmapped"`
	Required            bool         `json:"required"`
	Version             int64        `json:"version"`
	UpdatedAt           time.Time    `json:"updatedAt"`
	CallbackPath        string       `json:"callbackPath"`
}

func TestAdminSSO(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			var o, other org.Organisation
			adminOK(t, dbURL, &o, "org", "create", "--name", "Acme")
			adminOK(t, dbURL, &other, "org", "create", "--name", "Other")
			createUser(t, dbURL, testPassword, "--org", o.ID, "--email", "ada@acme.test", "--role", "Administrator")
			env := newSSOEnv(t, dbURL, nil, nil)

			// Not configured: each command says so, and how to configure.
			for _, args := range [][]string{
				{"sso", "show", "--org", o.ID},
				{"sso", "require", "--org", o.ID, "--off"},
				{"sso", "delete", "--org", o.ID},
			} {
				r := admin(t, dbURL, nil, args...)
				require.Equal(t, ExitFailure, r.code, "%v: %s", args, r.stderr)
				require.Contains(t, r.stderr, "aiusage: admin sso "+args[1]+": the organisation "+o.ID+" has no single sign-on settings; ", args)
				require.Contains(t, r.stderr, "connects an identity provider in the dashboard (Settings, Single sign-on)", args)
				require.Empty(t, r.stdout)
			}

			set := env.configure(t, o.ID, "ACME.test")
			var shown ssoShown
			r := adminOK(t, dbURL, &shown, "sso", "show", "--org", strings.ToUpper(o.ID))
			require.NotContains(t, r.stdout, testClientSecret)
			require.Equal(t, ssoShown{OrganisationID: o.ID, Issuer: env.idp.Issuer(), ClientID: env.idp.ClientID,
				HasClientSecret: true, Domains: []string{"acme.test"}, Scopes: []string{"openid", "email", "profile", "groups"},
				RoleClaim: "groups", AdministratorValues: []string{"aiusage-admins"}, ReviewerValues: []string{"aiusage-reviewers"},
				Unmapped: sso.UnmappedRefuse, Required: false, Version: set.Version, UpdatedAt: shown.UpdatedAt,
				CallbackPath: "/signin/sso/callback"}, shown)
			require.WithinDuration(t, set.UpdatedAt, shown.UpdatedAt, time.Millisecond)
			// Another organisation has none.
			r = admin(t, dbURL, nil, "sso", "show", "--org", other.ID)
			require.Equal(t, ExitFailure, r.code, r.stderr)

			// The operator may only turn the requirement off.
			r = admin(t, dbURL, nil, "sso", "require", "--org", o.ID)
			require.Equal(t, ExitUsage, r.code, r.stderr)
			require.Contains(t, r.stderr, "--off is required")
			require.Contains(t, r.stderr, "turning it on needs an Administrator of the organisation signed in through the identity provider")
			required, err := env.sso.Required(t.Context(), o.ID)
			require.NoError(t, err)
			require.False(t, required)

			// Required by the Administrator, signed in through the IdP:
			// delete is refused, saying what to run first.
			env.require(t, o.ID, "ada@acme.test")
			adminOK(t, dbURL, &shown, "sso", "show", "--org", o.ID)
			require.True(t, shown.Required)
			r = admin(t, dbURL, nil, "sso", "delete", "--org", o.ID)
			require.Equal(t, ExitFailure, r.code, r.stderr)
			require.Contains(t, r.stderr, "run 'aiusage admin sso require --org "+o.ID+" --off' first")
			require.Empty(t, r.stdout)
			adminOK(t, dbURL, &shown, "sso", "show", "--org", o.ID)
			require.True(t, shown.Required, "still configured and required")

			// Off, by the operator: passwords work again.
			_, _, err = env.people.SignIn(t.Context(), "ada@acme.test", testPassword, people.Client{Addr: "192.0.2.1"})
			require.ErrorIs(t, err, people.ErrSSORequired)
			var off ssoShown
			adminOK(t, dbURL, &off, "sso", "require", "--org", o.ID, "--off", "--actor", "operator-olga")
			require.False(t, off.Required)
			require.Equal(t, shown.Version, off.Version, "the requirement is not a change of the settings")
			required, err = env.sso.Required(t.Context(), o.ID)
			require.NoError(t, err)
			require.False(t, required)
			_, _, err = env.people.SignIn(t.Context(), "ada@acme.test", testPassword, people.Client{Addr: "192.0.2.1"})
			require.NoError(t, err)
			// Again: nothing changes.
			adminOK(t, dbURL, &off, "sso", "require", "--org", o.ID, "--off")
			require.False(t, off.Required)

			// Delete: prints what it deleted; then there is nothing.
			var deleted ssoShown
			adminOK(t, dbURL, &deleted, "sso", "delete", "--org", o.ID, "--actor", "operator-olga")
			require.Equal(t, off, deleted)
			r = admin(t, dbURL, nil, "sso", "show", "--org", o.ID)
			require.Equal(t, ExitFailure, r.code, r.stderr)
			_, ok, err := env.sso.Lookup(t.Context(), "ada@acme.test")
			require.NoError(t, err)
			require.False(t, ok, "the domain is no longer covered")

			// Audited, with the administrator as actor, never the secret.
			olga := org.Actor{Type: org.ActorAdmin, Name: "operator-olga"}
			var seen []string
			for _, rec := range readAudit(t, dbURL, "--org", o.ID) {
				require.NotContains(t, string(rec.Before)+string(rec.After), testClientSecret)
				switch rec.Action {
				case sso.AuditRequiredSet:
					if rec.Actor == olga {
						seen = append(seen, rec.Action+" "+string(rec.After))
					}
				case sso.AuditSettingsDeleted:
					require.Equal(t, olga, rec.Actor)
					require.Equal(t, "sso", rec.ResourceType)
					seen = append(seen, rec.Action)
				}
			}
			require.Equal(t, []string{sso.AuditRequiredSet + ` {"required":false}`, sso.AuditSettingsDeleted}, seen)
		})
	}
}

func TestAdminSSOErrors(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	const missing = "00000000-0000-4000-8000-000000000000"
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"sso", "show"}, ExitUsage, "--org is required"},
		{[]string{"sso", "show", "--org", "acme"}, ExitUsage, "--org must be a UUID"},
		{[]string{"sso", "show", "--org", missing}, ExitFailure, "'aiusage admin org list' lists the organisations"},
		{[]string{"sso", "require", "--org", missing}, ExitUsage, "--off is required"},
		{[]string{"sso", "require", "--org", missing, "--off"}, ExitFailure, "'aiusage admin org list' lists the organisations"},
		{[]string{"sso", "require", "--org", missing, "--off=false"}, ExitUsage, "--off is required"},
		{[]string{"sso", "delete", "--org", missing}, ExitFailure, "'aiusage admin org list' lists the organisations"},
		{[]string{"sso", "delete", "--org", missing, "extra"}, ExitUsage, "takes no arguments"},
	} {
		r := admin(t, dbURL, nil, c.args...)
		require.Equal(t, c.code, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
		require.Empty(t, r.stdout, c.args)
	}
}

// breakGlassOut is what "admin user break-glass" prints.
type breakGlassOut struct {
	User            people.User `json:"user"`
	OneTimePassword string      `json:"oneTimePassword"`
	Until           time.Time   `json:"until"`
}

func TestAdminUserBreakGlass(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			var o, other org.Organisation
			adminOK(t, dbURL, &o, "org", "create", "--name", "Acme")
			adminOK(t, dbURL, &other, "org", "create", "--name", "Other")
			ada, _ := createUser(t, dbURL, testPassword, "--org", o.ID, "--email", "ada@acme.test", "--role", "Administrator")
			var clock struct{ skew time.Duration }
			env := newSSOEnv(t, dbURL, nil, func() time.Time { return time.Now().Add(clock.skew) })
			env.configure(t, o.ID, "acme.test")
			env.require(t, o.ID, "ada@acme.test")
			// A person the IdP created, without a password of their own.
			_, grace := env.signIn(t, "grace@acme.test", "aiusage-reviewers")
			require.True(t, grace.SSO)
			sess, _, err := env.people.StartSSOSession(t.Context(), ada.ID)
			require.NoError(t, err)

			// The IdP is down: passwords are refused while SSO is required.
			client := people.Client{Addr: "192.0.2.1"}
			_, _, err = env.people.SignIn(t.Context(), "ada@acme.test", testPassword, client)
			require.ErrorIs(t, err, people.ErrSSORequired)

			// Break glass, for two hours, with the email in any case.
			before := time.Now()
			r := adminOK(t, dbURL, nil, "user", "break-glass", "--email", " ADA@acme.test ", "--for", "2h", "--actor", "operator-olga")
			var out breakGlassOut
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
			require.Equal(t, ada.ID, out.User.ID)
			require.Len(t, out.OneTimePassword, 26)
			require.WithinRange(t, out.Until, before.Add(2*time.Hour-time.Second), time.Now().Add(2*time.Hour))
			require.NotNil(t, out.User.BreakGlassUntil)
			require.True(t, out.User.BreakGlassUntil.Equal(out.Until), "%v %v", out.User.BreakGlassUntil, out.Until)
			require.True(t, out.User.MustChangePassword())
			require.Contains(t, r.stderr, "shown only this once")
			require.Contains(t, r.stderr, "ada@acme.test may sign in with it until "+out.Until.UTC().Format("2006-01-02T15:04:05.000Z"))
			require.Contains(t, r.stderr, "must change it at sign-in")
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
			// Her sessions ended.
			_, _, err = env.people.Authenticate(t.Context(), sess.Token)
			require.ErrorIs(t, err, people.ErrNoSession)

			// The old password no longer works; the new one does, even
			// while SSO is required, and must be changed first.
			_, _, err = env.people.SignIn(t.Context(), "ada@acme.test", testPassword, client)
			require.Error(t, err)
			_, u, err := env.people.SignIn(t.Context(), "ada@acme.test", out.OneTimePassword, client)
			require.NoError(t, err)
			require.True(t, u.MustChangePassword())
			// Past --for, it no longer signs in.
			clock.skew = 2*time.Hour + time.Minute
			_, _, err = env.people.SignIn(t.Context(), "ada@acme.test", out.OneTimePassword, client)
			require.Error(t, err)
			clock.skew = 0

			// A user the IdP created gets one too (--org checked when
			// given); the other organisation's users are not reached.
			r = admin(t, dbURL, nil, "user", "break-glass", "--org", other.ID, "--email", "grace@acme.test")
			require.Equal(t, ExitFailure, r.code, r.stderr)
			require.Contains(t, r.stderr, "No user with email grace@acme.test in this organisation.")
			var g breakGlassOut
			adminOK(t, dbURL, &g, "user", "break-glass", "--org", o.ID, "--email", "grace@acme.test", "--for", "1m")
			require.Equal(t, grace.ID, g.User.ID)
			require.WithinRange(t, g.Until, before.Add(time.Minute-time.Second), time.Now().Add(time.Minute))
			_, _, err = env.people.SignIn(t.Context(), "grace@acme.test", g.OneTimePassword, client)
			require.NoError(t, err)

			// The default is one hour.
			var def breakGlassOut
			adminOK(t, dbURL, &def, "user", "break-glass", "--email", "ada@acme.test")
			require.WithinRange(t, def.Until, before.Add(time.Hour-time.Second), time.Now().Add(time.Hour))
			require.NotEqual(t, out.OneTimePassword, def.OneTimePassword)

			// Audited with the administrator as actor, never the password.
			var recs []org.AuditRecord
			for _, rec := range readAudit(t, dbURL, "--org", o.ID) {
				for _, p := range []string{out.OneTimePassword, g.OneTimePassword, def.OneTimePassword} {
					require.NotContains(t, string(rec.Before)+string(rec.After), p)
				}
				if rec.Action == people.AuditUserBreakGlass {
					recs = append(recs, rec)
				}
			}
			require.Len(t, recs, 3)
			require.Equal(t, org.Actor{Type: org.ActorAdmin, Name: "operator-olga"}, recs[0].Actor)
			require.Equal(t, "user", recs[0].ResourceType)
			require.Equal(t, ada.ID, recs[0].ResourceID)
			require.Equal(t, grace.ID, recs[1].ResourceID)
		})
	}
}

func TestAdminUserBreakGlassErrors(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	var o org.Organisation
	adminOK(t, dbURL, &o, "org", "create", "--name", "Acme")
	createUser(t, dbURL, testPassword, "--org", o.ID, "--email", "ada@acme.test", "--role", "Administrator")
	createUser(t, dbURL, testPassword, "--org", o.ID, "--email", "bob@acme.test", "--role", "Reviewer")
	adminOK(t, dbURL, nil, "user", "disable", "--org", o.ID, "--email", "bob@acme.test")
	const missing = "00000000-0000-4000-8000-000000000000"
	bg := func(extra ...string) []string { return append([]string{"user", "break-glass"}, extra...) }
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{bg(), ExitUsage, "--email is required"},
		{bg("--email", "ada@acme.test", "--for", "59s"), ExitUsage, "--for must be at least 1m and at most 24h, got 59s"},
		{bg("--email", "ada@acme.test", "--for", "24h0m1s"), ExitUsage, "--for must be at least 1m and at most 24h, got 24h0m1s"},
		{bg("--email", "ada@acme.test", "--for", "-1h"), ExitUsage, "--for must be at least 1m"},
		{bg("--email", "ada@acme.test", "--for", "soon"), ExitUsage, "invalid value \"soon\" for flag -for"},
		{bg("--email", "ada@acme.test", "--org", "acme"), ExitUsage, "--org must be a UUID"},
		{bg("--email", "ada@acme.test", "--org", missing), ExitFailure, "'aiusage admin org list' lists the organisations"},
		{bg("--email", "carol@acme.test"), ExitFailure, "carol@acme.test"},
		{bg("--email", "bob@acme.test"), ExitFailure, "disabled"},
	} {
		r := admin(t, dbURL, nil, c.args...)
		require.Equal(t, c.code, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
		require.Contains(t, r.stderr, "admin user break-glass", c.args)
		require.Empty(t, r.stdout, c.args)
	}
	// The bounds themselves are accepted.
	for _, d := range []string{"1m", "24h"} {
		adminOK(t, dbURL, nil, "user", "break-glass", "--email", "ada@acme.test", "--for", d)
	}
	var breaks int
	for _, rec := range readAudit(t, dbURL, "--org", o.ID) {
		if rec.Action == people.AuditUserBreakGlass {
			breaks++
		}
	}
	require.Equal(t, 2, breaks, "a refused command changes nothing")
}

// TestRotateSecretKeySSO: the client secrets of the SSO settings and the
// refresh tokens of the sessions started through SSO are resealed under
// the new key and counted in keysInUse, and the provider still accepts the
// client secret read back under the new key alone.
func TestRotateSecretKeySSO(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			oldKey, newKey := keyring.NewKey(), keyring.NewKey()
			oldEnv := map[string]string{envSecretKey: oldKey.String()}
			r := admin(t, dbURL, oldEnv, "org", "create", "--name", "Acme")
			require.Equal(t, ExitOK, r.code, r.stderr)
			var o org.Organisation
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &o))
			oldRing, err := keyring.New(oldKey)
			require.NoError(t, err)
			before := newSSOEnv(t, dbURL, oldRing, nil)
			before.configure(t, o.ID, "acme.test")
			before.signIn(t, "ada@acme.test", "aiusage-admins") // a session with a refresh token
			ids, err := before.sso.SecretKeyIDs(t.Context())
			require.NoError(t, err)
			require.Equal(t, map[string]int{oldKey.ID: 2}, ids, "the client secret and the refresh token")

			bothEnv := map[string]string{envSecretKey: newKey.String() + "," + oldKey.String()}
			out, r := rotate(t, dbURL, bothEnv)
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.Equal(t, 2, out.Resealed[ssoSecretTable])
			require.Zero(t, out.Remaining)
			require.Equal(t, map[string]int{newKey.ID: 2}, out.KeysInUse)
			require.Equal(t, []string{oldKey.ID}, out.UnusedKeys)
			out, r = rotate(t, dbURL, bothEnv)
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.Zero(t, out.Resealed[ssoSecretTable], "resumed: nothing left")
			// The old key alone no longer opens them.
			_, r = rotate(t, dbURL, oldEnv)
			require.Equal(t, ExitFailure, r.code, r.stdout)
			require.Contains(t, r.stderr, newKey.ID)

			// Under the new key alone, the client secret reads back: a
			// sign-in through the provider exchanges its code with it.
			newRing, err := keyring.New(newKey)
			require.NoError(t, err)
			env := newSSOEnv(t, dbURL, newRing, nil)
			_, err = env.sso.SetSettings(t.Context(), o.ID, sso.SettingsInput{
				Issuer: env.idp.Issuer(), ClientID: env.idp.ClientID, Domains: []string{"acme.test"},
				Scopes: []string{"openid", "email", "profile", "groups"}, AdministratorValues: []string{"aiusage-admins"},
			}, org.Actor{Type: org.ActorAdmin, Name: "test"}) // the stored secret kept
			require.NoError(t, err)
			_, u := env.signIn(t, "bea@acme.test", "aiusage-admins") // ada is linked to the first provider
			require.Equal(t, people.RoleAdministrator, u.Role)
			ids, err = env.sso.SecretKeyIDs(t.Context())
			require.NoError(t, err)
			require.Equal(t, []string{newKey.ID}, slices.Collect(maps.Keys(ids)))
		})
	}
}
