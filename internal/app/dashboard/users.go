package dashboard

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/internal/app/people"
)

type usersData struct {
	Users []people.User
	// Invited is the user just created, or whose password was just reset
	// (Reset), with its one-time password.
	Invited  *people.User
	Password string
	Reset    bool
	// Now tells one-time passwords that have expired.
	Now time.Time
}

func (d *Dashboard) renderUsers(w http.ResponseWriter, r *http.Request, status int, p *pageData) error {
	users, err := d.cfg.People.Users(r.Context(), viewerOf(r).Organisation.ID)
	if err != nil {
		return err
	}
	data, _ := p.Data.(usersData)
	data.Users, data.Now = users, d.cfg.Now()
	p.Title, p.Nav, p.Data = "Users", "users", data
	d.render(w, r, status, "users", p)
	return nil
}

func (d *Dashboard) users(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{}
	switch r.URL.Query().Get("done") {
	case "role":
		p.Notice = "The role is changed."
	case "disabled":
		p.Notice = "The user is disabled and signed out everywhere."
	}

	return d.renderUsers(w, r, http.StatusOK, p)
}

// createUser invites a user: it creates them with a one-time password,
// shown once, for the Administrator to hand over.
func (d *Dashboard) createUser(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	f := r.PostForm
	p := &pageData{Fields: map[string]string{"email": f.Get("email"), "name": f.Get("name"), "role": f.Get("role")}}
	role, err := people.ParseRole(f.Get("role"))
	if err != nil {
		p.Error = "Role must be Administrator or Reviewer."
		return d.renderUsers(w, r, http.StatusBadRequest, p)
	}
	password := people.NewOneTimePassword()
	u, err := d.cfg.People.CreateUser(r.Context(), people.UserCreate{OrganisationID: v.Organisation.ID,
		Email: f.Get("email"), Name: strings.TrimSpace(f.Get("name")), Role: role, Password: password, OneTime: true}, v.User.Actor())
	if msg, status, ok := clientMessage(err); ok {
		p.Error = msg
		return d.renderUsers(w, r, status, p)
	}
	if err != nil {
		return err
	}
	p.Fields = nil
	p.Data = usersData{Invited: &u, Password: password}
	p.Notice = u.Email + " can now sign in with the one-time password below, until " + date(u.OneTimePasswordUntil, zoneOf(r)) +
		", and must then choose their own. Hand it over safely: it is shown only this once."
	return d.renderUsers(w, r, http.StatusCreated, p)
}

func (d *Dashboard) setRole(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	id := chi.URLParam(r, "userId")
	role, err := people.ParseRole(r.PostForm.Get("role"))
	if err != nil {
		return d.renderUsers(w, r, http.StatusBadRequest, &pageData{Error: "Role must be Administrator or Reviewer."})
	}
	if id == v.User.ID && role != people.RoleAdministrator {
		return d.renderUsers(w, r, http.StatusConflict, &pageData{Error: "You cannot take the Administrator role from yourself; ask another Administrator."})
	}
	_, err = d.cfg.People.SetRole(r.Context(), v.Organisation.ID, id, role, v.User.Actor())
	if msg, status, ok := clientMessage(err); ok {
		return d.renderUsers(w, r, status, &pageData{Error: msg})
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/settings/users?done=role", http.StatusSeeOther)
	return nil
}

func (d *Dashboard) disableUser(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	u, err := d.cfg.People.User(r.Context(), v.Organisation.ID, chi.URLParam(r, "userId"))
	if msg, status, ok := clientMessage(err); ok {
		return d.renderUsers(w, r, status, &pageData{Error: msg})
	}
	if err != nil {
		return err
	}
	if u.ID == v.User.ID {
		return d.renderUsers(w, r, http.StatusConflict, &pageData{Error: "You cannot disable yourself; ask another Administrator."})
	}
	if _, err := d.cfg.People.DisableUser(r.Context(), v.Organisation.ID, u.Email, v.User.Actor()); err != nil {
		if msg, status, ok := clientMessage(err); ok {
			return d.renderUsers(w, r, status, &pageData{Error: msg})
		}
		return err
	}
	http.Redirect(w, r, "/settings/users?done=disabled", http.StatusSeeOther)
	return nil
}

// resetPassword gives a user of the organisation a new one-time password,
// shown once, and ends all their sessions. An Administrator changes their
// own password on the password page instead.
func (d *Dashboard) resetPassword(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	id := chi.URLParam(r, "userId")
	if id == v.User.ID {
		return d.renderUsers(w, r, http.StatusConflict, &pageData{Error: "Change your own password on the password page; a reset is for other users."})
	}
	password := people.NewOneTimePassword()
	u, err := d.cfg.People.ResetPassword(r.Context(), v.Organisation.ID, id, password, true, v.User.Actor())
	if msg, status, ok := clientMessage(err); ok {
		return d.renderUsers(w, r, status, &pageData{Error: msg})
	}
	if err != nil {
		return err
	}
	p := &pageData{Data: usersData{Invited: &u, Password: password, Reset: true}}
	p.Notice = u.Email + " is signed out everywhere and can sign in with the one-time password below, until " + date(u.OneTimePasswordUntil, zoneOf(r)) +
		", and must then choose their own. Hand it over safely: it is shown only this once."
	return d.renderUsers(w, r, http.StatusOK, p)
}
