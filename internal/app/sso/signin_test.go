package sso_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/sso"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

func TestSignInCreatesAndUpdatesUsers(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		st := e.configure(nil)
		require.Equal(t, []string{"example.com"}, st.Domains)
		require.EqualValues(t, 1, st.Version)
		idpActor := org.Actor{Type: org.ActorIdP, Name: e.idp.m.Issuer()}

		route, ok, err := e.svc.Lookup(ctx, " Ann@EXAMPLE.com")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, sso.Route{OrganisationID: e.org.ID}, route)
		_, ok, err = e.svc.Lookup(ctx, "ann@other.com")
		require.NoError(t, err)
		require.False(t, ok)

		ann := &idpUser{sub: "sub-ann", email: "Ann@example.com", verified: true, name: "Ann", groups: []string{"x", "dash-reviewers"}}
		seq := e.lastSeq()
		sess, u, next, err := e.signIn(ann)
		require.NoError(t, err)
		require.Equal(t, "/usage?x=1", next)
		require.Equal(t, "ann@example.com", u.Email)
		require.Equal(t, people.RoleReviewer, u.Role)
		require.True(t, u.SSO)
		_, au, err := e.people.Authenticate(ctx, sess.Token)
		require.NoError(t, err)
		require.Equal(t, u.ID, au.ID)
		recs := e.audit(seq)
		require.Equal(t, []string{people.AuditUserCreated, sso.AuditSignedIn}, actions(recs))
		for _, r := range recs {
			require.Equal(t, idpActor, r.Actor)
		}
		via, err := e.svc.ViaSSO(ctx, e.org.ID, sess.Token)
		require.NoError(t, err)
		require.True(t, via)

		// A later sign-in updates name and role.
		ann.name, ann.groups = "Ann B.", "dash-admins"
		seq = e.lastSeq()
		_, u2, _, err := e.signIn(ann)
		require.NoError(t, err)
		require.Equal(t, u.ID, u2.ID)
		require.Equal(t, "Ann B.", u2.Name)
		require.Equal(t, people.RoleAdministrator, u2.Role)
		require.Equal(t, []string{people.AuditUserRoleChanged, sso.AuditSignedIn}, actions(e.audit(seq)))

		// Unmapped Reviewer admits a person without a mapped group.
		bob := &idpUser{sub: "sub-bob", email: "bob@example.com", verified: true, groups: []string{"other"}}
		seq = e.lastSeq()
		_, _, _, err = e.signIn(bob)
		requireFailure(t, err, sso.ReasonNoRole)
		e.requireRefused(seq, sso.ReasonNoRole)
		e.configure(func(in *sso.SettingsInput) { in.Unmapped = sso.UnmappedReviewer })
		_, ub, _, err := e.signIn(bob)
		require.NoError(t, err)
		require.Equal(t, people.RoleReviewer, ub.Role)
		require.Equal(t, "bob", ub.Name, "no name claim: the email's local part")
	})
}

func TestRequiredAndBreakGlass(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		e.configure(nil)
		// A password Administrator's session does not prove the settings.
		pw, err := e.people.CreateUser(ctx, people.UserCreate{OrganisationID: e.org.ID, Email: "pat@example.com", Role: people.RoleAdministrator,
			Password: "a long password 1"}, admin)
		require.NoError(t, err)
		psess, _, err := e.people.SignIn(ctx, pw.Email, "a long password 1", people.Client{Addr: "192.0.2.1"})
		require.NoError(t, err)
		err = e.svc.SetRequired(ctx, e.org.ID, true, psess.Token, pw.Actor())
		require.ErrorIs(t, err, spec.ErrConflict)
		err = e.svc.SetRequired(ctx, e.org.ID, true, "", admin)
		require.ErrorIs(t, err, spec.ErrConflict)

		// A Reviewer's SSO session does not either; an Administrator's does.
		rev := &idpUser{sub: "sub-r", email: "rita@example.com", verified: true, groups: []string{"dash-reviewers"}}
		rsess, _, _, err := e.signIn(rev)
		require.NoError(t, err)
		require.ErrorIs(t, e.svc.SetRequired(ctx, e.org.ID, true, rsess.Token, admin), spec.ErrConflict)
		adm := &idpUser{sub: "sub-a", email: "ada@example.com", verified: true, groups: []string{"dash-admins"}}
		asess, au, _, err := e.signIn(adm)
		require.NoError(t, err)
		seq := e.lastSeq()
		require.NoError(t, e.svc.SetRequired(ctx, e.org.ID, true, asess.Token, au.Actor()))
		recs := e.audit(seq)
		require.Equal(t, []string{sso.AuditRequiredSet}, actions(recs))
		require.JSONEq(t, `{"required":false}`, string(recs[0].Before))
		require.JSONEq(t, `{"required":true}`, string(recs[0].After))
		route, _, err := e.svc.Lookup(ctx, "x@example.com")
		require.NoError(t, err)
		require.True(t, route.Required)

		// Passwords stop working; changes of issuer and deletion are refused.
		_, _, err = e.people.SignIn(ctx, pw.Email, "a long password 1", people.Client{Addr: "192.0.2.1"})
		require.ErrorIs(t, err, people.ErrSSORequired)
		_, err = e.svc.SetSettings(ctx, e.org.ID, sso.SettingsInput{Issuer: e.idp.m.Issuer(), ClientID: e.idp.m.ClientID,
			Domains: []string{"example.com", "example.org"}, AdministratorValues: []string{"a"}}, admin)
		require.ErrorIs(t, err, spec.ErrConflict)
		require.ErrorIs(t, e.svc.DeleteSettings(ctx, e.org.ID, admin), spec.ErrConflict)

		// Break glass lets a password through until its time.
		bg := people.NewOneTimePassword()
		_, err = e.people.BreakGlass(ctx, e.org.ID, pw.ID, bg, e.clock.Now().Add(time.Hour), admin)
		require.NoError(t, err)
		_, _, err = e.people.SignIn(ctx, pw.Email, bg, people.Client{Addr: "192.0.2.1"})
		require.NoError(t, err)
		e.clock.Advance(time.Hour + time.Second)
		_, _, err = e.people.SignIn(ctx, pw.Email, bg, people.Client{Addr: "192.0.2.1"})
		require.Error(t, err)

		// Off, by the operator; then deletion works.
		require.NoError(t, e.svc.SetRequired(ctx, e.org.ID, false, "", admin))
		require.NoError(t, e.svc.DeleteSettings(ctx, e.org.ID, admin))
		_, err = e.svc.Settings(ctx, e.org.ID)
		require.ErrorIs(t, err, sso.ErrNotConfigured)
		require.Equal(t, sso.AuditSettingsDeleted, actions(e.audit(0))[len(e.audit(0))-1])
	})
}

func TestSignInRefusals(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		e.configure(nil)
		good := func(sub string) *idpUser {
			return &idpUser{sub: sub, email: sub + "@example.com", verified: true, groups: []string{"dash-reviewers"}}
		}
		refused := func(u *idpUser, reason sso.Reason) *sso.Failure {
			t.Helper()
			seq := e.lastSeq()
			_, _, _, err := e.signIn(u)
			f := requireFailure(t, err, reason)
			e.requireRefused(seq, reason)
			return f
		}

		// Claims.
		f := refused(&idpUser{sub: "nog", email: "nog@example.com", verified: true}, sso.ReasonClaimMissing)
		require.Contains(t, f.Message, "groups")
		refused(&idpUser{sub: "unv", email: "unv@example.com", verified: false, groups: "dash-admins"}, sso.ReasonEmailUnverified)
		refused(&idpUser{sub: "dom", email: "dom@elsewhere.com", verified: true, groups: "dash-admins"}, sso.ReasonDomain)

		// A disabled user.
		dis := good("dis")
		_, du, _, err := e.signIn(dis)
		require.NoError(t, err)
		_, err = e.people.DisableUser(ctx, e.org.ID, du.Email, admin)
		require.NoError(t, err)
		refused(dis, sso.ReasonDisabled)

		// A user of another organisation.
		o2, err := e.orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Other"}, admin)
		require.NoError(t, err)
		_, err = e.people.CreateUser(ctx, people.UserCreate{OrganisationID: o2.ID, Email: "oth@example.com", Role: people.RoleReviewer,
			Password: "a long password 1"}, admin)
		require.NoError(t, err)
		refused(good("oth"), sso.ReasonOtherOrg)

		// A tampered state: not audited (no organisation known), logged.
		q := e.callback("t@example.com", good("t"))
		q.Set("state", q.Get("state")+"x")
		seq := e.lastSeq()
		_, _, _, err = e.svc.Complete(ctx, q, redirect)
		f = requireFailure(t, err, sso.ReasonState)
		require.Equal(t, http.StatusBadRequest, f.Status)
		require.Empty(t, f.Advice)
		require.Empty(t, e.audit(seq))
		require.Contains(t, e.logs.String(), "reason=state")

		// A replayed callback: the state is used once.
		q = e.callback("r@example.com", good("r"))
		_, _, _, err = e.svc.Complete(ctx, q, redirect)
		require.NoError(t, err)
		_, _, _, err = e.svc.Complete(ctx, q, redirect)
		requireFailure(t, err, sso.ReasonState)

		// A replayed code with a fresh state: the IdP refuses the code
		// (PKCE and single use), audited.
		q2 := e.callback("r@example.com", good("r"))
		q2.Set("code", q.Get("code"))
		seq = e.lastSeq()
		_, _, _, err = e.svc.Complete(ctx, q2, redirect)
		requireFailure(t, err, sso.ReasonCode)
		e.requireRefused(seq, sso.ReasonCode)

		// An expired state.
		q = e.callback("s@example.com", good("s"))
		e.clock.Advance(sso.DefaultStateTTL + time.Second)
		_, _, _, err = e.svc.Complete(ctx, q, redirect)
		requireFailure(t, err, sso.ReasonState)
		e.clock.Advance(-(sso.DefaultStateTTL + time.Second))

		// The IdP's error.
		q = e.callback("i@example.com", good("i"))
		q.Del("code")
		q.Set("error", "access_denied")
		seq = e.lastSeq()
		_, _, _, err = e.svc.Complete(ctx, q, redirect)
		f = requireFailure(t, err, sso.ReasonIdPError)
		require.Contains(t, f.Advice, "access_denied")
		e.requireRefused(seq, sso.ReasonIdPError)

		// Tokens: another key, wrong audience, expired beyond the skew.
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		require.NoError(t, err)
		other, err := mockoidc.NewKeypair(key) // nil would be the server's default key
		require.NoError(t, err)
		e.idp.rewriteIDToken(other, func(jwt.MapClaims) {})
		refused(good("k"), sso.ReasonToken)
		e.idp.rewriteIDToken(e.idp.m.Keypair, func(c jwt.MapClaims) { c["aud"] = "someone-else" })
		refused(good("a"), sso.ReasonToken)
		e.idp.rewriteIDToken(e.idp.m.Keypair, func(c jwt.MapClaims) { c["nonce"] = "another" })
		refused(good("n"), sso.ReasonToken)
		e.idp.rewriteIDToken(e.idp.m.Keypair, func(c jwt.MapClaims) {
			c["exp"] = time.Now().Add(-3 * time.Minute).Unix()
			c["iat"] = time.Now().Add(-13 * time.Minute).Unix()
		})
		f = refused(good("x"), sso.ReasonToken)
		require.Contains(t, f.Detail, "expired")
		// Within the skew (2 min): accepted.
		e.idp.rewriteIDToken(e.idp.m.Keypair, func(c jwt.MapClaims) {
			c["exp"] = time.Now().Add(-time.Minute).Unix()
			c["iat"] = time.Now().Add(-11 * time.Minute).Unix()
		})
		_, _, _, err = e.signIn(good("w"))
		require.NoError(t, err)

		// The IdP down at Complete (token endpoint) and at Begin (discovery,
		// once the cached discovery is old).
		e.idp.down("/token")
		refused(good("d"), sso.ReasonUnreachable)
		e.idp.down("/openid-configuration")
		e.clock.Advance(6 * time.Minute)
		_, err = e.svc.Begin(ctx, "d@example.com", "/", redirect)
		f = requireFailure(t, err, sso.ReasonUnreachable)
		require.Equal(t, http.StatusBadGateway, f.Status)
		e.idp.setHook(nil)

		// A wrong client secret.
		e.configure(func(in *sso.SettingsInput) { in.ClientSecret = "not-the-secret" })
		f = refused(good("c"), sso.ReasonClient)
		require.Equal(t, http.StatusBadGateway, f.Status)
		require.Contains(t, f.Advice, "Settings → Single sign-on")

		// A domain no settings cover, at Begin.
		_, err = e.svc.Begin(ctx, "z@nowhere.example", "/", redirect)
		requireFailure(t, err, sso.ReasonNotConfigured)
	})
}

func TestCheck(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		e.configure(nil)
		u := &idpUser{sub: "c1", email: "c1@example.com", verified: true, groups: []string{"dash-reviewers"}}
		sess, pu, _, err := e.signIn(u)
		require.NoError(t, err)

		// Checked recently: no request.
		e.idp.down("")
		require.NoError(t, e.svc.Check(ctx, sess.Token))
		// Due, but the IdP is down: kept, logged, asked again.
		e.clock.Advance(sso.DefaultRecheckEvery + time.Second)
		require.NoError(t, e.svc.Check(ctx, sess.Token))
		require.Contains(t, e.logs.String(), "is kept")
		e.idp.setHook(nil)

		// Groups changed to Administrator: applied, audited.
		u.setGroups([]string{"dash-admins"})
		seq := e.lastSeq()
		require.NoError(t, e.svc.Check(ctx, sess.Token))
		require.Equal(t, []string{people.AuditUserRoleChanged}, actions(e.audit(seq)))
		got, err := e.people.User(ctx, e.org.ID, pu.ID)
		require.NoError(t, err)
		require.Equal(t, people.RoleAdministrator, got.Role)

		// Groups no longer map: the session ends.
		u.setGroups([]string{"gone"})
		e.clock.Advance(sso.DefaultRecheckEvery + time.Second)
		seq = e.lastSeq()
		require.ErrorIs(t, e.svc.Check(ctx, sess.Token), people.ErrNoSession)
		require.Equal(t, []string{sso.AuditSessionEnded}, actions(e.audit(seq)))
		_, _, err = e.people.Authenticate(ctx, sess.Token)
		require.ErrorIs(t, err, people.ErrNoSession)

		// The IdP refuses the refresh token: the session ends.
		u.setGroups([]string{"dash-reviewers"})
		sess, _, _, err = e.signIn(u)
		require.NoError(t, err)
		e.idp.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
			if r.ParseForm() == nil && r.Form.Get("grant_type") == "refresh_token" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": "revoked"})
				return
			}
			next.ServeHTTP(w, r)
		})
		e.clock.Advance(sso.DefaultRecheckEvery + time.Second)
		seq = e.lastSeq()
		require.ErrorIs(t, e.svc.Check(ctx, sess.Token), people.ErrNoSession)
		recs := e.audit(seq)
		require.Equal(t, []string{sso.AuditSessionEnded}, actions(recs))
		require.Contains(t, string(recs[0].After), "refresh_refused")

		// A password session is not checked.
		require.NoError(t, e.svc.Check(ctx, "not-an-sso-session"))
	})
}

func TestSetSettingsValidation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		ok := sso.SettingsInput{Issuer: e.idp.m.Issuer(), ClientID: e.idp.m.ClientID, ClientSecret: "s",
			Domains: []string{"example.com"}, AdministratorValues: []string{"a"}}
		for field, edit := range map[string]func(*sso.SettingsInput){
			"issuer":              func(in *sso.SettingsInput) { in.Issuer = "ftp://x" },
			"clientId":            func(in *sso.SettingsInput) { in.ClientID = "a b" },
			"clientSecret":        func(in *sso.SettingsInput) { in.ClientSecret = "" },
			"domains":             func(in *sso.SettingsInput) { in.Domains = []string{"not a domain"} },
			"scopes":              func(in *sso.SettingsInput) { in.Scopes = []string{"bad\"scope"} },
			"roleClaim":           func(in *sso.SettingsInput) { in.RoleClaim = "has space" },
			"administratorValues": func(in *sso.SettingsInput) { in.AdministratorValues = nil },
			"reviewerValues":      func(in *sso.SettingsInput) { in.ReviewerValues = []string{"bad\x00"} },
			"unmapped":            func(in *sso.SettingsInput) { in.Unmapped = "Owner" },
		} {
			in := ok
			edit(&in)
			_, err := e.svc.SetSettings(ctx, e.org.ID, in, admin)
			var he *spec.Error
			require.ErrorAs(t, err, &he, field)
			require.ErrorIs(t, err, spec.ErrInvalid, field)
			require.Equal(t, field, he.Field, "%v", err)
		}
		// Not an OpenID provider.
		in := ok
		in.Issuer = e.idp.m.Addr() + "/nothing"
		_, err := e.svc.SetSettings(ctx, e.org.ID, in, admin)
		require.ErrorIs(t, err, spec.ErrInvalid)
		require.Contains(t, err.Error(), "openid-configuration")

		// Saved; the secret is kept when not given; audit without it.
		st, err := e.svc.SetSettings(ctx, e.org.ID, ok, admin)
		require.NoError(t, err)
		require.Equal(t, []string{"openid", "email", "profile"}, st.Scopes)
		require.Equal(t, "groups", st.RoleClaim)
		require.Equal(t, sso.UnmappedRefuse, st.Unmapped)
		recs := e.audit(0)
		last := recs[len(recs)-1]
		require.Equal(t, sso.AuditSettingsSet, last.Action)
		require.Contains(t, string(last.After), `"clientSecretChanged":true`)
		require.NotContains(t, string(last.After), `"s"`)
		in = ok
		in.ClientSecret = ""
		in.ReviewerValues = []string{"r"}
		st2, err := e.svc.SetSettings(ctx, e.org.ID, in, admin)
		require.NoError(t, err)
		require.True(t, st2.HasClientSecret)
		require.EqualValues(t, 2, st2.Version)
		recs = e.audit(0)
		require.Contains(t, string(recs[len(recs)-1].After), `"clientSecretChanged":false`)
		ids, err := e.svc.SecretKeyIDs(ctx)
		require.NoError(t, err)
		require.Len(t, ids, 1)

		// Another organisation cannot take the domain.
		o2, err := e.orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Other"}, admin)
		require.NoError(t, err)
		_, err = e.svc.SetSettings(ctx, o2.ID, ok, admin)
		require.ErrorIs(t, err, spec.ErrConflict)
		require.Contains(t, err.Error(), "example.com")

		// The guard refuses a loopback issuer unless private IdPs are allowed.
		strict, err := sso.New(ctx, sso.Config{DB: db, Orgs: e.orgs, People: e.people, Secrets: e.svcSecrets()})
		require.NoError(t, err)
		_, err = strict.SetSettings(ctx, e.org.ID, ok, admin)
		require.ErrorIs(t, err, spec.ErrInvalid)
		var he *spec.Error
		require.ErrorAs(t, err, &he)
		require.Equal(t, "issuer", he.Field)
		https := ok
		https.Issuer = "https://" + mustHost(t, e.idp.m.Issuer()) + "/oidc"
		_, err = strict.SetSettings(ctx, e.org.ID, https, admin)
		require.ErrorAs(t, err, &he)
		require.Equal(t, "issuer", he.Field)
		require.Contains(t, he.Detail, "public")

		// New refuses a clock skew over 5 minutes.
		_, err = sso.New(ctx, sso.Config{DB: db, Orgs: e.orgs, People: e.people, Secrets: e.svcSecrets(), ClockSkew: 6 * time.Minute})
		require.Error(t, err)
	})
}

func mustHost(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Host
}

// TestUserInfoFallback: an IdP that leaves the email and the role claim out
// of the ID token (as Okta's org server does with groups) is asked its
// UserInfo endpoint; the person is mapped from there.
func TestUserInfoFallback(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		e.configure(nil)
		e.idp.rewriteIDToken(e.idp.m.Keypair, func(c jwt.MapClaims) {
			delete(c, "groups")
			delete(c, "email")
		})
		u := &idpUser{sub: "ui1", email: "ui1@example.com", verified: true, name: "Uma", groups: []string{"dash-admins"}}
		_, pu, _, err := e.signIn(u)
		require.NoError(t, err)
		require.Equal(t, "ui1@example.com", pu.Email)
		require.Equal(t, people.RoleAdministrator, pu.Role, "the role comes from UserInfo's groups")

		// Neither the ID token nor UserInfo names a role: the claim is missing.
		v := &idpUser{sub: "ui2", email: "ui2@example.com", verified: true}
		seq := e.lastSeq()
		_, _, _, err = e.signIn(v)
		requireFailure(t, err, sso.ReasonClaimMissing)
		e.requireRefused(seq, sso.ReasonClaimMissing)
	})
}
