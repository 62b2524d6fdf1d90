package dashboard

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/aiusage/kit/internal/app/sso"
	"github.com/aiusage/kit/spec"
)

// Settings → Single sign-on: an organisation's OpenID Connect
// configuration, its test, "Require single sign-on", and its removal.

const ssoSettingsPath = "/settings/sso"

// ssoForm is the settings form as the page holds it: lists one value a line
// (scopes separated by spaces, as OAuth writes them).
type ssoForm struct {
	Issuer, ClientID, Domains, Scopes, RoleClaim string
	AdministratorValues, ReviewerValues          string
	Unmapped                                     string
}

// ssoFormOf is the form filled with st.
func ssoFormOf(st sso.Settings) ssoForm {
	return ssoForm{Issuer: st.Issuer, ClientID: st.ClientID, Domains: strings.Join(st.Domains, "\n"),
		Scopes: strings.Join(st.Scopes, " "), RoleClaim: st.RoleClaim,
		AdministratorValues: strings.Join(st.AdministratorValues, "\n"),
		ReviewerValues:      strings.Join(st.ReviewerValues, "\n"), Unmapped: string(st.Unmapped)}
}

type ssoSettingsData struct {
	// Configured is set when the organisation has settings; Settings are
	// then its stored ones.
	Configured bool
	Settings   sso.Settings
	Form       ssoForm
	// Errors are the field errors of a refused save, by the form's field
	// names (issuer, clientId, ...).
	Errors map[string]string
	// Callback is the redirect URI to register at the identity provider.
	Callback string
	// ViaSSO is set when the viewer's session came through single sign-on
	// under the current settings: only then may they require it.
	ViaSSO bool
	// Unavailable is set when the service has no single sign-on at all.
	Unavailable bool
}

// renderSSOSettings draws the page; form, when not nil, is what the viewer
// sent (kept after a refusal), else the stored settings fill it.
func (d *Dashboard) renderSSOSettings(w http.ResponseWriter, r *http.Request, status int, p *pageData, form *ssoForm, errs map[string]string) error {
	v := viewerOf(r)
	p.Title, p.Nav = "Single sign-on", "sso-settings"
	data := ssoSettingsData{Errors: errs, Callback: d.redirectURL(r), Unavailable: d.cfg.SSO == nil}
	if d.cfg.SSO == nil {
		p.Data = data
		d.render(w, r, status, "ssosettings", p)
		return nil
	}
	st, err := d.cfg.SSO.Settings(r.Context(), v.Organisation.ID)
	switch {
	case errors.Is(err, sso.ErrNotConfigured):
		data.Form = ssoForm{Scopes: "openid email profile", RoleClaim: "groups", Unmapped: string(sso.UnmappedRefuse)}
	case err != nil:
		return err
	default:
		data.Configured, data.Settings, data.Form = true, st, ssoFormOf(st)
		if c, err := r.Cookie(SessionCookie); err == nil {
			if data.ViaSSO, err = d.cfg.SSO.ViaSSO(r.Context(), v.Organisation.ID, c.Value); err != nil {
				return err
			}
		}
	}
	if form != nil {
		data.Form = *form
	}
	p.Data = data
	d.render(w, r, status, "ssosettings", p)
	return nil
}

// ssoSettings shows the organisation's single sign-on settings and the
// form that changes them.
func (d *Dashboard) ssoSettings(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{}
	switch r.URL.Query().Get("done") {
	case "saved":
		p.Notice = "The single sign-on settings are saved. Sign in with your identity provider now to check them."
	case "required":
		p.Notice = "Single sign-on is required: passwords no longer sign anyone of the organisation in."
	case "optional":
		p.Notice = "Single sign-on is no longer required: passwords sign people in again."
	case "deleted":
		p.Notice = "The single sign-on settings are removed: everyone signs in with a password."
	}
	return d.renderSSOSettings(w, r, http.StatusOK, p, nil, nil)
}

// lines splits a list the form holds one value a line (commas are taken as
// line breaks too), without blanks.
func lines(s string) []string {
	var out []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' || r == ',' }) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// saveSSOSettings stores the form's settings; a refusal shows each field's
// error beside it.
func (d *Dashboard) saveSSOSettings(w http.ResponseWriter, r *http.Request) error {
	if d.cfg.SSO == nil {
		return d.renderSSOSettings(w, r, http.StatusNotFound, &pageData{}, nil, nil)
	}
	v := viewerOf(r)
	f := r.PostForm
	form := ssoForm{Issuer: strings.TrimSpace(f.Get("issuer")), ClientID: strings.TrimSpace(f.Get("clientId")),
		Domains: f.Get("domains"), Scopes: f.Get("scopes"), RoleClaim: strings.TrimSpace(f.Get("roleClaim")),
		AdministratorValues: f.Get("administratorValues"), ReviewerValues: f.Get("reviewerValues"), Unmapped: f.Get("unmapped")}
	in := sso.SettingsInput{Issuer: form.Issuer, ClientID: form.ClientID, ClientSecret: strings.TrimSpace(f.Get("clientSecret")),
		Domains: lines(form.Domains), Scopes: strings.Fields(form.Scopes), RoleClaim: form.RoleClaim,
		AdministratorValues: lines(form.AdministratorValues), ReviewerValues: lines(form.ReviewerValues),
		Unmapped: sso.Unmapped(form.Unmapped)}
	_, err := d.cfg.SSO.SetSettings(r.Context(), v.Organisation.ID, in, v.User.Actor())
	if msg, status, ok := clientMessage(err); ok {
		p, errs := &pageData{}, fieldErrors(err)
		if len(errs) > 0 {
			p.Error = "The settings were not saved: correct the fields marked below."
		} else {
			p.Error = msg
		}
		return d.renderSSOSettings(w, r, status, p, &form, errs)
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, ssoSettingsPath+"?done=saved", http.StatusSeeOther)
	return nil
}

// fieldErrors are the messages of err by the field they blame, when it is
// a *spec.Error naming fields.
func fieldErrors(err error) map[string]string {
	var e *spec.Error
	if !errors.As(err, &e) {
		return nil
	}
	out := map[string]string{}
	if e.Field != "" {
		out[e.Field] = e.Detail
	}
	for _, f := range e.Fields {
		out[f.Field] = f.Message
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// testSSO starts a single sign-on for the viewer's own email, coming back
// to this page: the check that the settings work, and what "Require single
// sign-on" asks for first.
func (d *Dashboard) testSSO(w http.ResponseWriter, r *http.Request) error {
	if d.cfg.SSO == nil {
		return d.renderSSOSettings(w, r, http.StatusNotFound, &pageData{}, nil, nil)
	}
	d.beginSSO(w, r, viewerOf(r).User.Email, ssoSettingsPath)
	return nil
}

// requireSSO turns "Require single sign-on" on (the form's required is
// "on") or off (absent). Turning it on needs this session to have come
// through single sign-on under the current settings.
func (d *Dashboard) requireSSO(w http.ResponseWriter, r *http.Request) error {
	if d.cfg.SSO == nil {
		return d.renderSSOSettings(w, r, http.StatusNotFound, &pageData{}, nil, nil)
	}
	v := viewerOf(r)
	var on bool
	switch r.PostForm.Get("required") {
	case "on":
		on = true
	case "", "off":
	default:
		return d.renderSSOSettings(w, r, http.StatusBadRequest, &pageData{Error: "The field required must be on or absent."}, nil, nil)
	}
	token := ""
	if c, err := r.Cookie(SessionCookie); err == nil {
		token = c.Value
	}
	err := d.cfg.SSO.SetRequired(r.Context(), v.Organisation.ID, on, token, v.User.Actor())
	if msg, status, ok := clientMessage(err); ok {
		return d.renderSSOSettings(w, r, status, &pageData{Error: msg}, nil, nil)
	}
	if err != nil {
		return err
	}
	done := "optional"
	if on {
		done = "required"
	}
	http.Redirect(w, r, ssoSettingsPath+"?done="+done, http.StatusSeeOther)
	return nil
}

// deleteSSO removes the organisation's single sign-on settings; refused
// while single sign-on is required.
func (d *Dashboard) deleteSSO(w http.ResponseWriter, r *http.Request) error {
	if d.cfg.SSO == nil {
		return d.renderSSOSettings(w, r, http.StatusNotFound, &pageData{}, nil, nil)
	}
	v := viewerOf(r)
	err := d.cfg.SSO.DeleteSettings(r.Context(), v.Organisation.ID, v.User.Actor())
	if msg, status, ok := clientMessage(err); ok {
		return d.renderSSOSettings(w, r, status, &pageData{Error: msg}, nil, nil)
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, ssoSettingsPath+"?done=deleted", http.StatusSeeOther)
	return nil
}

// unmappedChoices are the answers to "a person the identity provider
// admits without a mapped role", in the form's order.
var unmappedChoices = []struct{ Value, Label string }{
	{string(sso.UnmappedRefuse), "Refuse them (the default): only the values above let people in"},
	{string(sso.UnmappedReviewer), "Admit them as Reviewers"},
}

// UnmappedChoices are the choices of the form's unmapped field.
func (ssoSettingsData) UnmappedChoices() []struct{ Value, Label string } { return unmappedChoices }

// HasError reports whether field has an error (for aria-invalid).
func (s ssoSettingsData) HasError(field string) bool { _, ok := s.Errors[field]; return ok }

// OtherErrors are the field errors of fields the form does not show, so
// none is lost.
func (s ssoSettingsData) OtherErrors() []string {
	shown := []string{"issuer", "clientId", "clientSecret", "domains", "scopes", "roleClaim", "administratorValues", "reviewerValues", "unmapped"}
	var out []string
	for f, m := range s.Errors {
		if !slices.Contains(shown, f) {
			out = append(out, f+": "+m)
		}
	}
	slices.Sort(out)
	return out
}
