package dashboard_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/app/sso"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// idp is a real OpenID provider (mockoidc) on loopback, started by the
// test, with switches for the misbehaviours the tests need. Its authorize
// endpoint signs in, without a page, the user queued last (QueueUser).
type idp struct {
	*mockoidc.MockOIDC
	// tokenDown answers the token endpoint 503, as an IdP that is down.
	tokenDown atomic.Bool
	// refuseRefresh answers a refresh-token grant invalid_grant, as an IdP
	// that no longer admits the user.
	refuseRefresh atomic.Bool
	// tamperState changes the state of the next redirect to the callback.
	tamperState atomic.Bool
	// replayCode puts the code of the last redirect into the next one.
	replayCode atomic.Bool
	mu         sync.Mutex
	// rewrite, when set, changes the ID token's claims in the token
	// endpoint's answer and signs it again with key.
	rewrite func(claims jwt.MapClaims)
	key     *mockoidc.Keypair
	// lastCallback is the URL of the last redirect to the callback.
	lastCallback string
	lastCode     string
}

// startIdP starts an OpenID provider for the test.
func startIdP(t *testing.T) *idp {
	t.Helper()
	m, err := mockoidc.NewServer(nil)
	require.NoError(t, err)
	p := &idp{MockOIDC: m}
	require.NoError(t, m.AddMiddleware(p.middleware))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, m.Start(ln, nil))
	t.Cleanup(func() { _ = m.Shutdown() })
	return p
}

// setRewrite makes the token endpoint change the ID token's claims with fn
// and sign it with key (the provider's own when nil); nil fn stops it.
func (p *idp) setRewrite(fn func(jwt.MapClaims), key *mockoidc.Keypair) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if key == nil {
		key = p.Keypair
	}
	p.rewrite, p.key = fn, key
}

func (p *idp) callback() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastCallback
}

func (p *idp) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case mockoidc.TokenEndpoint:
			if p.tokenDown.Load() {
				http.Error(w, "upstream connect error", http.StatusServiceUnavailable)
				return
			}
			if err := r.ParseForm(); err == nil && r.PostForm.Get("grant_type") == "refresh_token" && p.refuseRefresh.Load() {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"the user is no longer assigned to the application"}`))
				return
			}
			p.mu.Lock()
			fn, key := p.rewrite, p.key
			p.mu.Unlock()
			if fn == nil {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			var body map[string]any
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
				w.WriteHeader(rec.Code)
				_, _ = w.Write(rec.Body.Bytes())
				return
			}
			if tok, ok := body["id_token"].(string); ok {
				parts := strings.Split(tok, ".")
				raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
				claims := jwt.MapClaims{}
				_ = json.Unmarshal(raw, &claims)
				fn(claims)
				signed, err := key.SignJWT(claims)
				if err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				body["id_token"] = signed
			}
			out, _ := json.Marshal(body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(out)
		case mockoidc.AuthorizationEndpoint:
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			loc := rec.Header().Get("Location")
			if u, err := url.Parse(loc); err == nil && loc != "" {
				q := u.Query()
				p.mu.Lock()
				if p.tamperState.Swap(false) {
					q.Set("state", q.Get("state")+"x")
				}
				if p.replayCode.Swap(false) {
					q.Set("code", p.lastCode)
				}
				u.RawQuery = q.Encode()
				loc = u.String()
				p.lastCallback, p.lastCode = loc, q.Get("code")
				p.mu.Unlock()
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			if loc != "" {
				w.Header().Set("Location", loc)
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// person is a user the IdP signs in next.
func person(subject, email string, groups ...string) *mockoidc.MockUser {
	return &mockoidc.MockUser{Subject: subject, Email: email, EmailVerified: true,
		PreferredUsername: strings.Split(email, "@")[0], Groups: groups}
}

// ssoClock is the sso service's clock: the real one plus an offset a test
// moves forward (to make a session due for its next check).
type ssoClock struct{ offset atomic.Int64 }

func (c *ssoClock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// newSSOEnv is a service whose single sign-on runs on clock, and an IdP.
func newSSOEnv(t *testing.T, db *sqldb.DB) (*env, *idp, *ssoClock) {
	t.Helper()
	p := startIdP(t)
	clock := &ssoClock{}
	e, _ := newEnvFull(t, db, sources.Config{}, sso.Config{Now: clock.now})
	return e, p, clock
}

// settingsFor are the settings of the IdP p for acme.test: group
// aiusage-admins makes Administrators, aiusage-reviewers Reviewers.
func settingsFor(p *idp) sso.SettingsInput {
	return sso.SettingsInput{Issuer: p.Issuer(), ClientID: p.ClientID, ClientSecret: p.ClientSecret,
		Domains: []string{"acme.test"}, Scopes: []string{"openid", "email", "profile", "groups"}, RoleClaim: "groups",
		AdministratorValues: []string{"aiusage-admins"}, ReviewerValues: []string{"aiusage-reviewers"}}
}

// lastAudit returns the organisation's newest audit record of action.
func (e *env) lastAudit(t *testing.T, action string) org.AuditRecord {
	t.Helper()
	recs, err := e.orgs.Audit(t.Context(), e.org.ID, 0, 1000)
	require.NoError(t, err)
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Action == action {
			return recs[i]
		}
	}
	t.Fatalf("no audit record %s", action)
	return org.AuditRecord{}
}

// ssoSignIn signs email in from the sign-in page: the email, Continue, and
// the IdP sends the browser back.
func ssoSignIn(t *testing.T, ctx context.Context, base, email string) {
	t.Helper()
	do(t, ctx,
		chromedp.Navigate(base+"/signin"),
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), email),
		chromedp.Click(chromedp.CSS(`form[action="/signin"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`h1`)),
	)
	waitLeft(t, ctx, "/signin")
}

// waitLeft waits until the browser's page is no longer at path.
func waitLeft(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	require.Eventually(t, func() bool {
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			return false
		}
		u, err := url.Parse(loc)
		return err == nil && u.Path != path && !strings.HasPrefix(u.Path, "/oidc/")
	}, 10*time.Second, 50*time.Millisecond)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`h1`)))
}

// TestBrowserSSO: an Administrator connects the organisation's identity
// provider on the settings page (a refused save first), signs in through it
// with the test button, and requires single sign-on; a Reviewer and an
// Administrator of the covered domain sign in by email with the roles their
// groups give; passwords stop working, but a break-glass password works.
// Every step is in the audit trail.
func TestBrowserSSO(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e, p, _ := newSSOEnv(t, db)
		ctx := newBrowser(t, 1280, 900)

		// The sign-in page asks for the email first, then the password of
		// an email no identity provider covers.
		do(t, ctx, chromedp.Navigate(e.url+"/signin"), chromedp.WaitVisible(chromedp.CSS(`#email`)))
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#password').length`))
		require.NoError(t, err)
		require.Zero(t, n, "the first step asks for the email only")
		shot(t, ctx, "signin-email")
		do(t, ctx,
			chromedp.SendKeys(chromedp.CSS(`#email`), "ada@acme.test"),
			chromedp.Click(chromedp.CSS(`form[action="/signin"] button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`#password`)),
		)
		email, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#email`)))
		require.NoError(t, err)
		require.Equal(t, "ada@acme.test", email, "the email is kept")
		require.Equal(t, "Use another email", text(t, ctx, `#other-email a`))
		shot(t, ctx, "signin-password")
		do(t, ctx,
			chromedp.SendKeys(chromedp.CSS(`#password`), password),
			chromedp.Click(chromedp.CSS(`form[action="/signin"] button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`.who a[href="/account/password"]`)),
		)

		// The same pages at a phone's width.
		ph := newBrowser(t, 390, 844)
		do(t, ph, chromedp.Navigate(e.url+"/signin"), chromedp.WaitVisible(chromedp.CSS(`#email`)))
		shot(t, ph, "phone-signin-email")
		do(t, ph, chromedp.SendKeys(chromedp.CSS(`#email`), "ada@acme.test"),
			chromedp.Click(chromedp.CSS(`form[action="/signin"] button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`#password`)))
		shot(t, ph, "phone-signin-password")
		do(t, ph, chromedp.SendKeys(chromedp.CSS(`#password`), password),
			chromedp.Click(chromedp.CSS(`form[action="/signin"] button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`.who a[href="/account/password"]`)),
			chromedp.Navigate(e.url+"/settings/sso"), chromedp.WaitVisible(chromedp.CSS(`#issuer`)))
		shot(t, ph, "phone-sso-settings-empty")

		// Settings → Single sign-on, empty.
		do(t, ctx,
			chromedp.Navigate(e.url+"/settings"),
			chromedp.Click(chromedp.CSS(`a[href="/settings/sso"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#issuer`)),
		)
		require.Equal(t, "Single sign-on", text(t, ctx, "h1"))
		cb, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#callback`)))
		require.NoError(t, err)
		require.Equal(t, e.url+"/signin/sso/callback", cb)
		shot(t, ctx, "sso-settings-empty")

		// A save the service refuses: an issuer that is no OpenID provider.
		fill := func(issuer, secret string) {
			do(t, ctx,
				chromedp.SetValue(chromedp.CSS(`#issuer`), issuer),
				chromedp.SetValue(chromedp.CSS(`#clientId`), p.ClientID),
				chromedp.SetValue(chromedp.CSS(`#clientSecret`), secret),
				chromedp.SetValue(chromedp.CSS(`#domains`), "acme.test"),
				chromedp.SetValue(chromedp.CSS(`#scopes`), "openid email profile groups"),
				chromedp.SetValue(chromedp.CSS(`#roleClaim`), "groups"),
				chromedp.SetValue(chromedp.CSS(`#administratorValues`), "aiusage-admins"),
				chromedp.SetValue(chromedp.CSS(`#reviewerValues`), "aiusage-reviewers"),
			)
			clickThrough(t, ctx, `#sso-save`)
			do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`p[role=alert], p[role=status]`)))
		}
		fill(p.Addr()+"/nothing-here", p.ClientSecret)
		require.Contains(t, text(t, ctx, `p.error[role=alert]`), "not saved")
		require.NotEmpty(t, text(t, ctx, `#e-issuer`), "the issuer's error beside it")
		invalid, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`#issuer`), "aria-invalid"))
		require.NoError(t, err)
		require.Equal(t, "true", invalid.Value)
		shot(t, ctx, "sso-settings-errors")

		fill(p.Issuer(), p.ClientSecret)
		require.Contains(t, text(t, ctx, `.notice`), "saved")
		require.Contains(t, text(t, ctx, `#sso-required`), "optional")
		require.Contains(t, text(t, ctx, `#require-why`), "First sign in with your identity provider")
		disabled, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#sso-require').disabled`))
		require.NoError(t, err)
		require.True(t, disabled, "Require waits for a sign-in through the IdP")
		shot(t, ctx, "sso-settings")
		do(t, ph, chromedp.Navigate(e.url+"/settings/sso"), chromedp.WaitVisible(chromedp.CSS(`#sso-test`)))
		shot(t, ph, "phone-sso-settings")
		set := e.lastAudit(t, sso.AuditSettingsSet)
		require.NotContains(t, string(set.After), p.ClientSecret, "the secret is never in the trail")
		require.Contains(t, string(set.After), `"clientSecretChanged":true`)

		// The test button: Ada signs in through the IdP and comes back.
		p.QueueUser(person("sub-ada", "ada@acme.test", "aiusage-admins"))
		clickThrough(t, ctx, `#sso-test`)
		require.Eventually(t, func() bool {
			loc, err := chromedp.Run(ctx, chromedp.Location())
			return err == nil && loc == e.url+"/settings/sso"
		}, 10*time.Second, 50*time.Millisecond)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#sso-require`)))
		require.Equal(t, e.admin.ID, e.lastAudit(t, sso.AuditSignedIn).ResourceID)
		clickThrough(t, ctx, `#sso-require`)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`.notice`)))
		require.Contains(t, text(t, ctx, `.notice`), "Single sign-on is required")
		require.Contains(t, text(t, ctx, `#sso-required`), "required")
		req := e.lastAudit(t, sso.AuditRequiredSet)
		require.JSONEq(t, `{"required":true}`, string(req.After))
		require.Equal(t, e.admin.ID, req.Actor.ID)

		// A Reviewer of the covered domain: email, then the IdP, then the
		// dashboard, created with the role of her groups.
		rita := newBrowser(t, 1280, 900)
		p.QueueUser(person("sub-rita", "rita@acme.test", "aiusage-reviewers"))
		ssoSignIn(t, rita, e.url, "rita@acme.test")
		require.Equal(t, "Overview", text(t, rita, "h1"))
		require.Contains(t, text(t, rita, ".who .me"), "Reviewer")
		created := e.lastAudit(t, people.AuditUserCreated)
		require.Equal(t, org.ActorIdP, created.Actor.Type)
		require.Equal(t, p.Issuer(), created.Actor.Name)
		require.Contains(t, string(created.After), "rita@acme.test")

		// An Administrator by group opens the Administrators' pages.
		alan := newBrowser(t, 1280, 900)
		p.QueueUser(person("sub-alan", "alan@acme.test", "aiusage-reviewers", "aiusage-admins"))
		ssoSignIn(t, alan, e.url, "alan@acme.test")
		require.Contains(t, text(t, alan, ".who .me"), "Administrator")
		do(t, alan, chromedp.Navigate(e.url+"/audit"), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		require.Equal(t, "Audit trail", text(t, alan, "h1"))
		// The audit page words the new actions and the IdP as actor.
		do(t, alan, chromedp.Navigate(e.url+"/audit?actorType=identityProvider"), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		trail := text(t, alan, "main")
		require.Contains(t, trail, "added user")
		require.Contains(t, trail, "identity provider")

		// Required: Rex's password no longer signs him in; the form sends
		// him to the IdP without checking it.
		b := e.browser()
		pg := b.post(t, "/signin", url.Values{"email": {"rex@acme.test"}, "password": {password}})
		require.Equal(t, http.StatusSeeOther, pg.Status)
		require.True(t, strings.HasPrefix(pg.location(), p.AuthorizationEndpoint()), pg.location())
		_, _, err = e.people.SignIn(t.Context(), "rex@acme.test", password, people.Client{Addr: "192.0.2.1"})
		require.ErrorIs(t, err, people.ErrSSORequired)
		// Break-glass: the operator's one-time password works.
		_, err = e.people.BreakGlass(t.Context(), e.org.ID, e.rev.ID, "break the glass 2026", time.Now().Add(time.Hour), admin)
		require.NoError(t, err)
		require.Equal(t, people.AuditUserBreakGlass, e.lastAudit(t, people.AuditUserBreakGlass).Action)
		rex := newBrowser(t, 1280, 900)
		do(t, rex, chromedp.Navigate(e.url+"/signin?with=password"), chromedp.WaitVisible(chromedp.CSS(`#password`)),
			chromedp.SendKeys(chromedp.CSS(`#email`), "rex@acme.test"),
			chromedp.SendKeys(chromedp.CSS(`#password`), "break the glass 2026"),
			chromedp.Click(chromedp.CSS(`form[action="/signin"] button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`#confirm`)),
		)
		require.Equal(t, "Choose your password", text(t, rex, "h1"))
	})
}

// TestBrowserSSOFailures: each way a sign-in through the IdP fails shows a
// page that says what went wrong (and, where it is theirs to fix, what to
// tell the IdP's administrator), and the refusals are in the audit trail.
func TestBrowserSSOFailures(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e, p, _ := newSSOEnv(t, db)
	_, err := e.sso.SetSettings(t.Context(), e.org.ID, settingsFor(p), admin)
	require.NoError(t, err)
	other, err := mockoidc.RandomKeypair(2048)
	require.NoError(t, err)
	dora := e.user("dora@acme.test", "Dora", people.RoleReviewer)
	_, err = e.people.DisableUser(t.Context(), e.org.ID, dora.Email, admin)
	require.NoError(t, err)

	// refusal starts a sign-in of email in a new browser after setup, and
	// requires the failure page with the words given; reason is the one
	// the audit trail records ("" for a refusal before the state was
	// known).
	refusal := func(t *testing.T, name, email string, setup func(), says, advice string, reason sso.Reason) context.Context {
		t.Helper()
		b := newBrowser(t, 1280, 900)
		setup()
		ssoSignIn(t, b, e.url, email)
		require.Equal(t, "Single sign-on did not work", text(t, b, "h1"), name)
		require.Contains(t, text(t, b, "#sso-message"), says, name)
		if advice != "" {
			require.Equal(t, "Tell your identity provider's administrator", text(t, b, "#h-advice"))
			require.Contains(t, text(t, b, "#sso-advice"), advice, name)
		}
		require.NotEmpty(t, text(t, b, "#request-id"))
		if reason != "" {
			rec := e.lastAudit(t, sso.AuditRefused)
			var after struct{ Reason, Email string }
			require.NoError(t, json.Unmarshal(rec.After, &after))
			require.Equal(t, string(reason), after.Reason, name)
			require.Equal(t, email, after.Email, name)
		}
		return b
	}

	t.Run("no mapped role", func(t *testing.T) {
		b := refusal(t, "refused", "nina@acme.test", func() { p.QueueUser(person("sub-nina", "nina@acme.test", "contractors")) },
			"does not give you a role", "aiusage-admins", sso.ReasonNoRole)
		shot(t, b, "sso-refused")
		phone := newBrowser(t, 390, 844)
		p.QueueUser(person("sub-nina", "nina@acme.test", "contractors"))
		ssoSignIn(t, phone, e.url, "nina@acme.test")
		require.Contains(t, text(t, phone, "#sso-message"), "does not give you a role")
		shot(t, phone, "phone-sso-refused")
		_, err := e.people.UserByEmail(t.Context(), "nina@acme.test")
		require.Error(t, err, "no account for a refused person")
	})
	t.Run("disabled user", func(t *testing.T) {
		b := refusal(t, "disabled", "dora@acme.test", func() { p.QueueUser(person("sub-dora", "dora@acme.test", "aiusage-reviewers")) },
			"dora@acme.test is disabled", "", sso.ReasonDisabled)
		require.Equal(t, "What to do", text(t, b, "#h-advice"), "the organisation's Administrator, not the IdP's, can help")
		require.Contains(t, text(t, b, "#sso-advice"), "Administrator of your organisation")
	})
	t.Run("tampered state", func(t *testing.T) {
		refusal(t, "state", "rita@acme.test", func() {
			p.QueueUser(person("sub-rita", "rita@acme.test", "aiusage-reviewers"))
			p.tamperState.Store(true)
		}, "did not start here", "", "")
		// Its status, and that of a callback with neither state nor code.
		b := e.browser()
		for _, q := range []string{"?state=forged&code=forged", "", "?error=access_denied"} {
			pg := b.get(t, "/signin/sso/callback"+q)
			require.Equal(t, http.StatusBadRequest, pg.Status, q)
			require.Contains(t, pg.Body, "Start again from the sign-in page", q)
		}
	})
	t.Run("callback sent to another browser", func(t *testing.T) {
		// Mallory starts a sign-in to her own account and stops at the
		// callback; its URL, opened by Vera's browser, must not sign Vera
		// in as Mallory (login CSRF).
		mallory := e.browser()
		p.QueueUser(person("sub-mallory", "mallory@acme.test", "aiusage-reviewers"))
		toIdP := mallory.post(t, "/signin", url.Values{"email": {"mallory@acme.test"}})
		require.Equal(t, http.StatusSeeOther, toIdP.Status)
		resp, err := mallory.client.Get(toIdP.location())
		require.NoError(t, err)
		_ = resp.Body.Close()
		forged := resp.Header.Get("Location")
		require.Contains(t, forged, sso.CallbackPath)
		vera := newBrowser(t, 1280, 900)
		do(t, vera, chromedp.Navigate(forged), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		require.Equal(t, "Single sign-on did not work", text(t, vera, "h1"))
		require.Contains(t, text(t, vera, "#sso-message"), "did not start here")
		_, err = e.people.UserByEmail(t.Context(), "mallory@acme.test")
		require.Error(t, err, "no sign-in happened: Mallory's account was not even created")
		// Mallory's own browser, which holds the state, completes it.
		u, err := url.Parse(forged)
		require.NoError(t, err)
		done := mallory.get(t, u.RequestURI())
		require.Equal(t, http.StatusSeeOther, done.Status, done.Body)
	})
	t.Run("replayed callback and code", func(t *testing.T) {
		b := newBrowser(t, 1280, 900)
		p.QueueUser(person("sub-rita", "rita@acme.test", "aiusage-reviewers"))
		ssoSignIn(t, b, e.url, "rita@acme.test")
		require.Equal(t, "Overview", text(t, b, "h1"))
		used := p.callback()
		// The same callback URL again: its state was used.
		again := newBrowser(t, 1280, 900)
		do(t, again, chromedp.Navigate(used), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		require.Equal(t, "Single sign-on did not work", text(t, again, "h1"))
		require.Contains(t, text(t, again, "#sso-message"), "already completed")
		// A new sign-in carrying the used code.
		refusal(t, "code", "rita@acme.test", func() {
			p.QueueUser(person("sub-rita", "rita@acme.test", "aiusage-reviewers"))
			p.replayCode.Store(true)
		}, "refused the sign-in code", "", sso.ReasonCode)
	})
	tokens := []struct {
		name    string
		rewrite func(jwt.MapClaims)
		key     *mockoidc.Keypair
	}{
		{"signed with another key", func(jwt.MapClaims) {}, other},
		{"expired", func(c jwt.MapClaims) {
			c["iat"], c["nbf"], c["exp"] = time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-time.Hour).Unix()
		}, nil},
		{"wrong audience", func(c jwt.MapClaims) { c["aud"] = []string{"another-client"} }, nil},
	}
	for _, tc := range tokens {
		t.Run(tc.name, func(t *testing.T) {
			defer p.setRewrite(nil, nil)
			refusal(t, tc.name, "rita@acme.test", func() {
				p.QueueUser(person("sub-rita", "rita@acme.test", "aiusage-reviewers"))
				p.setRewrite(tc.rewrite, tc.key)
			}, "could not be verified", p.ClientID, sso.ReasonToken)
		})
	}
	t.Run("IdP down", func(t *testing.T) {
		defer p.tokenDown.Store(false)
		b := refusal(t, "down", "rita@acme.test", func() {
			p.QueueUser(person("sub-rita", "rita@acme.test", "aiusage-reviewers"))
			p.tokenDown.Store(true)
		}, "cannot be reached", "does not answer", sso.ReasonUnreachable)
		shot(t, b, "sso-idp-down")
	})
	t.Run("wrong client secret", func(t *testing.T) {
		in := settingsFor(p)
		in.ClientSecret = "not-the-secret"
		_, err := e.sso.SetSettings(t.Context(), e.org.ID, in, admin)
		require.NoError(t, err)
		defer func() {
			_, err := e.sso.SetSettings(t.Context(), e.org.ID, settingsFor(p), admin)
			require.NoError(t, err)
		}()
		refusal(t, "secret", "rita@acme.test", func() { p.QueueUser(person("sub-rita", "rita@acme.test", "aiusage-reviewers")) },
			"client id or secret", "client secret", sso.ReasonClient)
	})
}

// TestBrowserSSOSessionEnds: a session started through the IdP ends at its
// next request once the IdP refuses its refresh token; the sign-in page
// says why.
func TestBrowserSSOSessionEnds(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e, p, clock := newSSOEnv(t, db)
	_, err := e.sso.SetSettings(t.Context(), e.org.ID, settingsFor(p), admin)
	require.NoError(t, err)
	b := newBrowser(t, 1280, 900)
	p.QueueUser(person("sub-rita", "rita@acme.test", "aiusage-reviewers"))
	ssoSignIn(t, b, e.url, "rita@acme.test")
	require.Equal(t, "Overview", text(t, b, "h1"))
	rita, err := e.people.UserByEmail(t.Context(), "rita@acme.test")
	require.NoError(t, err)

	// Checked again after RecheckEvery: the IdP still admits her.
	clock.offset.Store(int64(sso.DefaultRecheckEvery + time.Minute))
	do(t, b, chromedp.Navigate(e.url+"/review"), chromedp.WaitVisible(chromedp.CSS(`h1`)))
	require.Equal(t, "Review", text(t, b, "h1"))

	p.refuseRefresh.Store(true)
	clock.offset.Store(int64(2*sso.DefaultRecheckEvery + 2*time.Minute))
	do(t, b, chromedp.Navigate(e.url+"/usage"), chromedp.WaitVisible(chromedp.CSS(`h1`)))
	require.Equal(t, "Sign in", text(t, b, "h1"))
	require.Contains(t, text(t, b, `p.error[role=alert]`), "identity provider no longer admits you")
	rec := e.lastAudit(t, sso.AuditSessionEnded)
	require.Equal(t, rita.ID, rec.ResourceID)
}
