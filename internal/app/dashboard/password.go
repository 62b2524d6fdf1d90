package dashboard

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/aiusage/kit/internal/app/people"
)

// passwordPath is the page where a user changes their own password; the only
// page of a session whose password is a one-time one.
const passwordPath = "/account/password"

type passwordData struct {
	// Forced is set while the user holds a one-time password.
	Forced bool
}

func (d *Dashboard) renderPassword(w http.ResponseWriter, r *http.Request, status int, p *pageData) {
	v := viewerOf(r)
	forced := v.User.MustChangePassword()
	p.Title, p.Nav, p.Data, p.Restricted = "Change your password", "password", passwordData{Forced: forced}, forced
	if forced {
		p.Title = "Choose your password"
	}
	d.render(w, r, status, "password", p)
}

func (d *Dashboard) passwordPage(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{}
	if r.URL.Query().Get("done") == "changed" {
		p.Notice = "Your password is changed. Your other sessions are signed out."
	}
	d.renderPassword(w, r, http.StatusOK, p)
	return nil
}

// changePassword changes the viewer's password: the current one (or the
// one-time one) and the new one twice. The other sessions of the user end.
func (d *Dashboard) changePassword(w http.ResponseWriter, r *http.Request) error {
	f := r.PostForm
	current, next := f.Get("current"), f.Get("new")
	if next != f.Get("confirm") {
		d.renderPassword(w, r, http.StatusBadRequest, &pageData{Error: "The new password and its confirmation differ."})
		return nil
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		d.toSignin(w, r)
		return nil
	}
	_, err = d.cfg.People.ChangePassword(r.Context(), c.Value, current, next)
	var te *people.ThrottledError
	switch {
	case errors.As(err, &te):
		w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(te.RetryAfter)))
		d.renderPassword(w, r, http.StatusTooManyRequests, &pageData{Error: "Too many wrong current passwords. Try again in " + waitText(te.RetryAfter) + "."})
		return nil
	case errors.Is(err, people.ErrNoSession):
		clearCookie(w, r)
		d.toSignin(w, r)
		return nil
	}
	if msg, status, ok := clientMessage(err); ok {
		d.renderPassword(w, r, status, &pageData{Error: passwordMessage(msg)})
		return nil
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, passwordPath+"?done=changed", http.StatusSeeOther)
	return nil
}

// passwordMessage words the store's field messages for the form's labels.
func passwordMessage(msg string) string {
	switch msg {
	case "currentPassword is wrong":
		return "The current password is wrong."
	case "currentPassword is required":
		return "Enter your current password."
	}
	if rest, ok := strings.CutPrefix(msg, "newPassword "); ok {
		return "The new password " + rest + "."
	}
	return msg
}
