package dashboard

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/spec"
)

// The formatting of numbers, money and time that every page uses:
//
//	{{num .Count}}              2,917,478 (any integer kind)
//	{{money .Cost}}             USD 12.24 (a float64, *float64 or cost; nil is "—")
//	{{date .CreatedAt}}         2026-11-28 08:43 UTC
//	{{date .CreatedAt $.Zone}}  2026-11-28 09:43 Europe/Berlin, the organisation's zone
//
// $.Zone is the viewer's organisation's zone (pageData.Zone); a page shows
// its times in it, with the zone named.
var funcs = template.FuncMap{
	"date":  date,
	"num":   num,
	"money": moneyOf,
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return strconv.Itoa(n) + " " + many
	},
	"before": func(t *time.Time, now time.Time) bool { return t != nil && t.Before(now) },
	// semantic cuts a Semantic match around its quote (reviewtask.go).
	"semantic": viewSemantic,
}

// num writes an integer with a comma between groups of three digits; a
// value of another kind is written as fmt does.
func num(n any) string {
	switch x := n.(type) {
	case int:
		return thousands(int64(x))
	case int64:
		return thousands(x)
	case int32:
		return thousands(int64(x))
	case uint:
		return thousands(int64(x))
	case uint64:
		return thousands(int64(x))
	case *int64:
		if x == nil {
			return "—"
		}
		return thousands(*x)
	}
	return fmt.Sprint(n)
}

// moneyOf writes an amount of money with its currency ("USD 12.24"): a
// float64, a *float64 (nil is "—") or a summed cost (as cost.String).
func moneyOf(v any) string {
	switch x := v.(type) {
	case float64:
		return money(x)
	case *float64:
		if x == nil {
			return "—"
		}
		return money(*x)
	case cost:
		return x.String()
	}
	return fmt.Sprint(v)
}

// date formats a time of any of the kinds pages hold as "2006-01-02 15:04
// UTC", or in the zone given, named ("2006-01-02 15:04 Europe/Berlin"); the
// zero time and nil are "".
func date(t any, zone ...*time.Location) string {
	var v time.Time
	switch x := t.(type) {
	case time.Time:
		v = x
	case *time.Time:
		if x != nil {
			v = *x
		}
	case spec.Time:
		v = x.Time
	case *spec.Time:
		if x != nil {
			v = x.Time
		}
	default:
		return fmt.Sprint(t)
	}
	if v.IsZero() {
		return ""
	}
	loc := time.UTC
	if len(zone) > 0 && zone[0] != nil {
		loc = zone[0]
	}
	return v.In(loc).Format("2006-01-02 15:04 ") + zoneName(loc)
}

// dateSecond is date to the second, for records in which the order of
// events within a minute matters (the audit log).
func dateSecond(t time.Time, zone *time.Location) string {
	if zone == nil {
		zone = time.UTC
	}
	return t.In(zone).Format("2006-01-02 15:04:05 ") + zoneName(zone)
}

// zoneOf is the zone of the request's viewer's organisation, for times a
// handler formats itself; UTC without a viewer.
func zoneOf(r *http.Request) *time.Location {
	return (&pageData{Viewer: viewerOf(r)}).Zone()
}

// zoneName is the name a page gives a zone: its IANA name, "UTC" for UTC.
func zoneName(loc *time.Location) string {
	if loc == nil || loc == time.UTC || loc.String() == "" {
		return "UTC"
	}
	return loc.String()
}

// parsePages parses every templates/NAME.html but the layout: each defines
// "content" for the layout, and renders as page NAME. The parts in
// templates/*.tmpl are parsed into every page.
func parsePages() (map[string]*template.Template, error) {
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := make(map[string]*template.Template, len(files))
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/*.tmpl", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// pageData is what every page gets.
type pageData struct {
	Title  string
	Nav    string  // the navigation entry to mark as current
	Viewer *viewer // nil on the sign-in and error pages without a session
	Notice string  // a message of success
	Error  string  // a message of failure, shown above the form
	Fields map[string]string
	Data   any
	// Restricted hides the navigation: the session may open only the page
	// shown (a one-time password to change).
	Restricted bool
}

// IsAdmin reports whether the viewer is an Administrator.
func (p *pageData) IsAdmin() bool {
	return p.Viewer != nil && p.Viewer.User.Role == people.RoleAdministrator
}

// Zone is the zone the viewer's organisation shows its times in; UTC
// without a viewer.
func (p *pageData) Zone() *time.Location {
	if p.Viewer == nil || p.Viewer.Zone == nil {
		return time.UTC
	}
	return p.Viewer.Zone
}

// ZoneName is the name of Zone, as pages print it.
func (p *pageData) ZoneName() string { return zoneName(p.Zone()) }

// render writes page with status. It renders into a buffer first, so a
// template error is still a clean 500.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, page string, p *pageData) {
	if p.Viewer == nil {
		p.Viewer = viewerOf(r)
	}
	var buf bytes.Buffer
	if err := d.pages[page].ExecuteTemplate(&buf, "layout.html", p); err != nil {
		d.cfg.Logger.ErrorContext(r.Context(), "dashboard: render", "page", page, "error", err)
		http.Error(w, "The page could not be drawn. Quote the request id "+httpx.RequestIDFrom(r.Context())+".", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	if idpFormPages[page] && d.cfg.SSO != nil {
		h.Set("Content-Security-Policy", contentSecurityPolicy(d.idpFormAction()))
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// errorPage writes a page that says what went wrong.
func (d *Dashboard) errorPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d.render(w, r, status, "error", &pageData{Title: http.StatusText(status), Error: msg, Data: status})
}

// page adapts a GET handler that returns its error.
func (d *Dashboard) page(fn func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			d.fail(w, r, err)
		}
	}
}

// action adapts a form handler. A client error (a *spec.Error of a kind
// other than unavailable) re-renders through onError when the handler gave
// one; anything else is a 500 page.
func (d *Dashboard) action(fn func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			formError(d, w, r, err)
			return
		}
		if err := fn(w, r); err != nil {
			d.fail(w, r, err)
		}
	}
}

// formError answers a form that could not be read: 413 when it is over its
// limit, else 400.
func formError(d *Dashboard, w http.ResponseWriter, r *http.Request, err error) {
	if httpx.IsTooLarge(err) {
		d.errorPage(w, r, http.StatusRequestEntityTooLarge, "The form is larger than this page accepts.")
		return
	}
	d.errorPage(w, r, http.StatusBadRequest, "The form could not be read: "+err.Error())
}

// clientMessage returns the message and status of a client error (one of
// the spec error kinds a person can act on), and false for any other error.
func clientMessage(err error) (string, int, bool) {
	if err == nil {
		return "", 0, false
	}
	status := spec.StatusOf(err)
	if status != http.StatusBadRequest && status != http.StatusNotFound && status != http.StatusConflict && status != http.StatusForbidden {
		return "", 0, false // not a mistake a person can mend on the page
	}
	var e *spec.Error
	if !errors.As(err, &e) {
		return err.Error(), status, true
	}
	msg := e.Detail
	var parts []string
	for _, f := range e.Fields {
		parts = append(parts, f.Field+" "+f.Message)
	}
	if len(parts) > 0 {
		msg = strings.Join(parts, "; ")
	}
	return msg, status, true
}

// settingsNav are the navigation entries of the Settings area's pages.
var settingsNav = map[string]bool{
	"settings": true, "org-settings": true, "keys": true, "users": true,
	"review-settings": true, "prices": true, "telemetry-settings": true, "sso-settings": true,
}

// InSettings reports whether the page is one of the Settings area's: the
// navigation marks Settings, and the page links back to its index.
func (p *pageData) InSettings() bool { return settingsNav[p.Nav] }
