package dashboard

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/app/sso"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/spec"
)

// Single sign-on through an organisation's identity provider (OpenID
// Connect): where the sign-in form sends a covered email, the callback the
// identity provider sends the browser back to, and the page of a sign-in it
// refused. The protocol is package sso's; this file is its pages.

// lookupSSO reports whether email's domain is covered by an organisation's
// single sign-on, and where its sign-in goes. Without an sso.Service no
// domain is covered. An email that is not one (no "@") is not covered.
func (d *Dashboard) lookupSSO(r *http.Request, email string) (sso.Route, bool, error) {
	if d.cfg.SSO == nil || !strings.Contains(email, "@") {
		return sso.Route{}, false, nil
	}
	route, ok, err := d.cfg.SSO.Lookup(r.Context(), email)
	if _, _, client := clientMessage(err); client {
		return sso.Route{}, false, nil // not an email sso can route: the password form answers it
	}
	return route, ok, err
}

// holdsBreakGlass reports whether the user of email holds a break-glass
// password that is still good: only they sign in with a password while
// their organisation requires single sign-on.
func (d *Dashboard) holdsBreakGlass(r *http.Request, email string) (bool, error) {
	u, err := d.cfg.People.UserByEmail(r.Context(), email)
	if errors.Is(err, spec.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		if _, _, client := clientMessage(err); client {
			return false, nil
		}
		return false, err
	}
	return u.BreakGlassUntil != nil && u.BreakGlassUntil.After(d.cfg.Now()), nil
}

// redirectURL is the absolute URL of the callback, as registered at the
// identity provider: the service's public URL (Config.PublicURL) or the
// request's scheme and host, then sso.CallbackPath.
func (d *Dashboard) redirectURL(r *http.Request) string {
	if d.cfg.PublicURL != "" {
		return strings.TrimSuffix(d.cfg.PublicURL, "/") + sso.CallbackPath
	}
	scheme := "http"
	if httpx.IsSecure(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host + sso.CallbackPath
}

// beginSSO starts the sign-in of email at its organisation's identity
// provider and sends the browser there (303), to come back to next.
func (d *Dashboard) beginSSO(w http.ResponseWriter, r *http.Request, email, next string) {
	to, err := d.cfg.SSO.Begin(r.Context(), email, next, d.redirectURL(r))
	if err != nil {
		d.ssoError(w, r, err)
		return
	}
	u, err := url.Parse(to)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	// The browser keeps the state it is sent with, and the callback takes
	// only that one: a callback URL of someone else's sign-in, sent to
	// this browser, cannot sign it in as them.
	http.SetCookie(w, &http.Cookie{Name: SSOStateCookie, Value: u.Query().Get("state"), Path: sso.CallbackPath,
		MaxAge: int(sso.DefaultStateTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: httpx.IsSecure(r)})
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// SSOStateCookie is the name of the cookie that binds a single sign-on to
// the browser that started it: it holds the state the identity provider
// was sent, and is sent back only to sso.CallbackPath.
const SSOStateCookie = "aiusage_sso_state"

// sameBrowser reports whether the callback's state is the one this browser
// was given at the start of its sign-in.
func sameBrowser(r *http.Request) bool {
	c, err := r.Cookie(SSOStateCookie)
	state := r.URL.Query().Get("state")
	return err == nil && c.Value != "" && subtle.ConstantTimeCompare([]byte(c.Value), []byte(state)) == 1
}

// ssoCallback is sso.CallbackPath: the identity provider sends the browser
// back here with the state and the code (or an error). A sign-in that
// succeeds gets its session cookie and goes to the page it started from; a
// refused one gets the page that says why and what to tell the identity
// provider's administrator.
func (d *Dashboard) ssoCallback(w http.ResponseWriter, r *http.Request) {
	if d.cfg.SSO == nil {
		d.errorPage(w, r, http.StatusNotFound, "Single sign-on is not set up on this service.")
		return
	}
	if !sameBrowser(r) {
		d.ssoError(w, r, sso.ForeignState("the callback's state is not the one this browser started with (no "+SSOStateCookie+" cookie, or another)"))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SSOStateCookie, Value: "", Path: sso.CallbackPath, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: httpx.IsSecure(r)})
	sess, _, next, err := d.cfg.SSO.Complete(r.Context(), r.URL.Query(), d.redirectURL(r))
	if err != nil {
		d.ssoError(w, r, err)
		return
	}
	setSessionCookie(w, r, sess.Token, sess.ExpiresAt)
	http.Redirect(w, r, safeNext(next), http.StatusSeeOther)
}

// ssoFailureData is the page of a refused single sign-on.
type ssoFailureData struct {
	Failure   *sso.Failure
	RequestID string
}

// ssoError answers an error of Begin or Complete: a *sso.Failure is its
// page, with its status, and a log line with the detail; a client error the
// error page; anything else a 500.
func (d *Dashboard) ssoError(w http.ResponseWriter, r *http.Request, err error) {
	var f *sso.Failure
	if errors.As(err, &f) {
		id := httpx.RequestIDFrom(r.Context())
		d.cfg.Logger.WarnContext(r.Context(), "dashboard: single sign-on refused", "request_id", id,
			"reason", string(f.Reason), "status", f.Status, "detail", f.Detail)
		d.render(w, r, f.Status, "ssofailure", &pageData{Title: "Single sign-on did not work",
			Data: ssoFailureData{Failure: f, RequestID: id}})
		return
	}
	if msg, status, ok := clientMessage(err); ok {
		d.errorPage(w, r, status, msg)
		return
	}
	d.fail(w, r, err)
}

// signinEnded sends the browser of a session the identity provider no
// longer admits to the sign-in page, which says so.
func (d *Dashboard) signinEnded(w http.ResponseWriter, r *http.Request) {
	clearCookie(w, r)
	next := r.URL.Path
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		next = "/"
	}
	http.Redirect(w, r, "/signin?ended=sso&next="+url.QueryEscape(next), http.StatusSeeOther)
}
