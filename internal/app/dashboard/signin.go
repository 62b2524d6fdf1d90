package dashboard

import (
	"errors"
	"net"
	"net/http"
	"strconv"

	"github.com/aiusage/kit/internal/app/people"
)

type signinData struct {
	Next  string
	Email string
}

func (d *Dashboard) signinPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		if _, _, err := d.cfg.People.Authenticate(r.Context(), c.Value); err == nil {
			http.Redirect(w, r, next, http.StatusSeeOther) // already signed in
			return
		}
	}
	d.render(w, r, http.StatusOK, "signin", &pageData{Title: "Sign in", Data: signinData{Next: next}})
}

// signin checks the form's email and password. Unknown email, wrong password
// and disabled user get one answer; too many failures get 429 with
// Retry-After.
func (d *Dashboard) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		formError(d, w, r, err)
		return
	}
	email, password := r.PostForm.Get("email"), r.PostForm.Get("password")
	next := safeNext(r.PostForm.Get("next"))
	data := &pageData{Title: "Sign in", Data: signinData{Next: next, Email: email}}
	if email == "" || password == "" {
		data.Error = "Enter your email and your password."
		d.render(w, r, http.StatusBadRequest, "signin", data)
		return
	}
	sess, _, err := d.cfg.People.SignIn(r.Context(), email, password, clientAddr(r))
	var te *people.ThrottledError
	switch {
	case errors.As(err, &te):
		secs := int(te.RetryAfter.Seconds() + 0.999)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		data.Error = "Too many failed sign-ins. Try again in " + strconv.Itoa((secs+59)/60) + " minutes."
		d.render(w, r, http.StatusTooManyRequests, "signin", data)
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
	http.Redirect(w, r, next, http.StatusSeeOther)
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

// clientAddr is the address the request came from, without its port: what
// failed sign-ins are counted per. Forwarded headers are not trusted.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
