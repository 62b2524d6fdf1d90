package dashboard

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/httpx"
)

// DeviceCookie is the name of the cookie that carries the device token of
// a browser that signed in before: its failed sign-ins are counted apart
// from everyone else's, so that nobody else's failures keep its owner out.
const DeviceCookie = "aiusage_device"

type signinData struct {
	Next  string
	Email string
	// Step is what the form asks for: "" the email alone (then Continue),
	// "password" the password of the email kept, "both" email and password
	// at once (a password from the operator: break-glass), "sso" nothing
	// but to go to the identity provider of an organisation that requires
	// it.
	Step string
}

// signinPage shows the sign-in form: the email first. ?with=password
// asks for email and password at once; ?ended=sso says that the identity
// provider ended the previous session.
func (d *Dashboard) signinPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	next := safeNext(q.Get("next"))
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		if _, _, err := d.cfg.People.Authenticate(r.Context(), c.Value); err == nil {
			http.Redirect(w, r, next, http.StatusSeeOther) // already signed in
			return
		}
	}
	p := &pageData{Title: "Sign in", Data: signinData{Next: next}}
	if q.Get("with") == "password" {
		p.Data = signinData{Next: next, Step: "both"}
	}
	if q.Get("ended") == "sso" {
		p.Error = "Your organisation's identity provider no longer admits you, so your session has ended. " +
			"Ask your organisation's identity provider administrator if that is wrong."
	}
	d.render(w, r, http.StatusOK, "signin", p)
}

// signin is the sign-in form's post. The email alone: an email of a domain
// an organisation's single sign-on covers goes to its identity provider
// (303), any other gets the form again asking for its password. Email and
// password: the password sign-in, except for an email whose organisation
// requires single sign-on, which goes to the identity provider without the
// password being checked (unless the user holds a break-glass password).
//
// Unknown email, wrong password and disabled user get one answer; an
// expired one-time password its own; too many failures get 429 with
// Retry-After. The browser's device cookie, if any, goes with the attempt;
// a success sets it (anew or refreshed) and goes to the password form when
// the password is a one-time one.
func (d *Dashboard) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		formError(d, w, r, err)
		return
	}
	email, password := strings.TrimSpace(r.PostForm.Get("email")), r.PostForm.Get("password")
	next := safeNext(r.PostForm.Get("next"))
	_, withPassword := r.PostForm["password"]
	step := ""
	if withPassword {
		step = "both"
	}
	data := &pageData{Title: "Sign in", Data: signinData{Next: next, Email: email, Step: step}}
	if email == "" {
		data.Error = "Enter your email."
		if withPassword {
			data.Error = "Enter your email and your password."
		}
		d.render(w, r, http.StatusBadRequest, "signin", data)
		return
	}
	route, covered, err := d.lookupSSO(r, email)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if password == "" {
		if covered {
			d.beginSSO(w, r, email, next)
			return
		}
		data.Data = signinData{Next: next, Email: email, Step: "password"}
		if withPassword {
			data.Error = "Enter your password."
			d.render(w, r, http.StatusBadRequest, "signin", data)
			return
		}
		d.render(w, r, http.StatusOK, "signin", data)
		return
	}
	if covered && route.Required {
		glass, err := d.holdsBreakGlass(r, email)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if !glass {
			d.beginSSO(w, r, email, next)
			return
		}
	}
	client := people.Client{Addr: httpx.ClientAddr(r)}
	if c, err := r.Cookie(DeviceCookie); err == nil {
		client.Device = c.Value
	}
	sess, u, err := d.cfg.People.SignIn(r.Context(), email, password, client)
	var te *people.ThrottledError
	switch {
	case errors.As(err, &te):
		w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(te.RetryAfter)))
		data.Error = "Too many failed sign-ins. Try again in " + waitText(te.RetryAfter) +
			"; each further failure doubles the wait, up to " + waitText(d.cfg.People.MaxDelay()) + "."
		d.render(w, r, http.StatusTooManyRequests, "signin", data)
		return
	case errors.Is(err, people.ErrSSORequired):
		data.Error = "Your organisation signs in through its identity provider: passwords do not work for it."
		data.Data = signinData{Next: next, Email: email, Step: "sso"}
		d.render(w, r, http.StatusForbidden, "signin", data)
		return
	case errors.Is(err, people.ErrOneTimePasswordExpired):
		data.Error = "Your one-time password has expired. Ask an Administrator of your organisation for a new one."
		d.render(w, r, http.StatusUnauthorized, "signin", data)
		return
	case errors.Is(err, people.ErrBadCredentials):
		data.Error = "The email or the password is wrong."
		d.render(w, r, http.StatusUnauthorized, "signin", data)
		return
	case err != nil:
		d.fail(w, r, err)
		return
	}
	setSessionCookie(w, r, sess.Token, sess.ExpiresAt)
	setDeviceCookie(w, r, sess.Device, d.cfg.People.DeviceLifetime())
	if u.MustChangePassword() {
		next = passwordPath
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// retrySeconds is d in whole seconds, rounded up: the Retry-After of a
// throttled attempt.
func retrySeconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

// waitText says how long d is, in seconds under two minutes and in whole
// minutes (rounded up) from there: "1 second", "16 seconds", "5 minutes".
func waitText(d time.Duration) string {
	n, unit := retrySeconds(d), "second"
	if n >= 120 {
		n, unit = (n+59)/60, "minute"
	}
	if n != 1 {
		unit += "s"
	}
	return strconv.Itoa(n) + " " + unit
}

// setDeviceCookie gives the browser its device token for lifetime. It is
// sent only to the sign-in form.
func setDeviceCookie(w http.ResponseWriter, r *http.Request, token string, lifetime time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: DeviceCookie, Value: token, Path: "/signin", MaxAge: int(lifetime / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: httpx.IsSecure(r)})
}

// signout ends the session server-side.
func (d *Dashboard) signout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		if err := d.cfg.People.SignOut(r.Context(), c.Value); err != nil {
			d.fail(w, r, err)
			return
		}
	}
	clearCookie(w, r)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}
