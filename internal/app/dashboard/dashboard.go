package dashboard

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/app/sso"
	"github.com/aiusage/kit/internal/infra/httpx"
)

//go:embed templates/*.html templates/*.tmpl
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// SessionCookie is the name of the cookie that carries the session token.
const SessionCookie = "aiusage_session"

// Config is what the dashboard is built from.
type Config struct {
	People  *people.Store
	Orgs    *org.Store
	Review  *reviewapi.Service
	Sources *sources.Service // optional: without it the overview shows no sources
	Logger  *slog.Logger     // 5xx causes; default: discarded
	// PricesChanged is called after an Administrator changed the
	// organisation's prices, to compute its usage again with them.
	// Optional: without it, new prices apply to the hours rolled up after
	// the change.
	PricesChanged func(ctx context.Context, orgID string) error
	Now           func() time.Time // default time.Now
	// MaxPagesPerUser bounds the pages (and form posts) drawn at once for
	// one signed-in user, all their sessions together; a request past it
	// waits up to PageWait for one to finish, then is answered 429 with
	// Retry-After. Default: DefaultMaxPagesPerUser (4).
	MaxPagesPerUser int
	// PageWait is how long a request past MaxPagesPerUser waits. Default:
	// DefaultPageWait (1s); negative: no wait.
	PageWait time.Duration
	// SSO signs people in through their organisation's identity provider
	// (OpenID Connect). Optional: without it no email's domain is covered,
	// everyone signs in with a password, and Settings → Single sign-on
	// says that the service does not offer it.
	SSO *sso.Service
	// PublicURL is the service's address as browsers reach it
	// ("https://oversight.example.com"), the base of the redirect URI the
	// identity providers send people back to. Default: the scheme and host
	// of each request (the scheme as httpx.IsSecure says).
	PublicURL string
	// AllowPrivateIdP says that identity providers may be http addresses
	// (sso.Config.AllowPrivate): the sign-in page then lets its form lead
	// to http addresses too. Default false: https only.
	AllowPrivateIdP bool
}

// Dashboard serves the pages.
type Dashboard struct {
	cfg    Config
	pages  map[string]*template.Template
	static http.Handler
	cop    *http.CrossOriginProtection
	// limiter bounds the pages drawn at once per user.
	limiter *pageLimiter
}

// New returns the dashboard over c.
func New(c Config) (*Dashboard, error) {
	if c.People == nil || c.Orgs == nil || c.Review == nil {
		return nil, errors.New("dashboard: People, Orgs and Review are required")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxPagesPerUser == 0 {
		c.MaxPagesPerUser = DefaultMaxPagesPerUser
	}
	if c.MaxPagesPerUser < 0 {
		return nil, errors.New("dashboard: MaxPagesPerUser must not be negative")
	}
	if c.PageWait == 0 {
		c.PageWait = DefaultPageWait
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	d := &Dashboard{cfg: c, pages: pages, cop: http.NewCrossOriginProtection(), limiter: newPageLimiter(c.MaxPagesPerUser, c.PageWait)}
	d.cop.SetDenyHandler(http.HandlerFunc(d.crossOrigin))
	d.static = http.StripPrefix("/static/", http.FileServerFS(sub))
	return d, nil
}

// Routes registers the pages on r, at the root of the address. The JSON
// APIs keep their own paths.
func (d *Dashboard) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(securityHeaders, d.cop.Handler)
		r.Get("/static/*", d.static.ServeHTTP)
		r.Get("/signin", d.signinPage)
		r.Post("/signin", d.signin)
		r.Post("/signout", d.signout)
		r.Get(sso.CallbackPath, d.ssoCallback)
		r.Group(func(r chi.Router) {
			r.Use(d.requireSession, d.limitPages)
			r.Get(passwordPath, d.page(d.passwordPage))
			r.Post(passwordPath, d.action(d.changePassword))
			r.Get("/", d.page(d.overview))
			r.Get("/review", d.page(d.reviewQueue))
			r.Get("/review/{taskId}", d.page(d.reviewTask))
			r.Get("/review/{taskId}/request.txt", d.page(d.reviewTaskText))
			r.Post("/review/{taskId}/decision", d.action(d.decide))
			r.Get("/usage", d.page(d.usage))
			r.Get("/conversations", d.page(d.conversations))
			r.Get("/conversations/{conversationId}", d.page(d.conversationPage))
			r.Get("/assistants", d.page(d.assistants))
			r.Get("/assistants/{assistantId}", d.page(d.assistantPage))
			r.Get("/events", d.page(d.events))
			r.Get("/events/{eventId}", d.page(d.eventPage))
			r.Get("/agents", d.page(d.agents))
			r.Get("/instructions", d.page(d.instructions))
			// The Settings area: its index lists the settings pages the
			// viewer may open; /settings/organisation is the organisation's.
			r.Get(settingsPath, d.page(d.settingsIndex))
			r.Group(func(r chi.Router) {
				r.Use(d.requireRole(people.RoleAdministrator))
				r.Get("/settings/api-keys", d.page(d.apiKeys))
				r.Post("/settings/api-keys", d.action(d.createKey))
				r.Post("/settings/api-keys/{keyId}/revoke", d.action(d.revokeKey))
				r.Get("/settings/review", d.page(d.reviewSettings))
				r.Post("/settings/review", d.action(d.saveReviewSettings))
				r.Get("/settings/prices", d.page(d.prices))
				r.Post("/settings/prices", d.action(d.setPrice))
				r.Post("/settings/prices/delete", d.action(d.deletePrice))
				r.Get(telemetrySettingsPath, d.page(d.telemetrySettings))
				r.Post(telemetrySettingsPath, d.action(d.saveTelemetrySettings))
				r.Get("/settings/users", d.page(d.users))
				r.Post("/settings/users", d.action(d.createUser))
				r.Post("/settings/users/{userId}/role", d.action(d.setRole))
				r.Post("/settings/users/{userId}/disable", d.action(d.disableUser))
				r.Post("/settings/users/{userId}/reset-password", d.action(d.resetPassword))
				r.Post("/agents", d.action(d.createAgent))
				r.Get("/instructions/new", d.page(d.newInstruction))
				r.Post("/instructions", d.action(d.createInstruction))
				r.Get("/instructions/{instructionId}/edit", d.page(d.editInstruction))
				r.Post("/instructions/{instructionId}", d.action(d.updateInstruction))
				r.Post("/instructions/{instructionId}/delete", d.action(d.deleteInstruction))
				r.Get("/sources", d.page(d.sourcesPage))
				r.Post("/sources", d.action(d.addSource))
				r.Post("/sources/{sourceId}/sync", d.action(d.syncSource))
				r.Post("/sources/{sourceId}/resume", d.action(d.resumeSource))
				r.Post("/sources/{sourceId}/conformance", d.action(d.checkSource))
				r.Get("/sources/{sourceId}/conformance/{run}", d.page(d.conformanceReport))
				r.Get("/audit", d.page(d.audit))
				r.Get(orgSettingsPath, d.page(d.orgSettings))
				r.Post(orgSettingsPath, d.action(d.saveOrgSettings))
				r.Get(ssoSettingsPath, d.page(d.ssoSettings))
				r.Post(ssoSettingsPath, d.action(d.saveSSOSettings))
				r.Post(ssoSettingsPath+"/test", d.action(d.testSSO))
				r.Post(ssoSettingsPath+"/require", d.action(d.requireSSO))
				r.Post(ssoSettingsPath+"/delete", d.action(d.deleteSSO))
			})
		})
	})
}

// securityHeaders sets the headers every page carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy("'self'"))
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// contentSecurityPolicy is the pages' Content-Security-Policy whose forms
// may post to (and be redirected to) formAction.
func contentSecurityPolicy(formAction string) string {
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"object-src 'none'; base-uri 'none'; form-action " + formAction + "; frame-ancestors 'none'"
}

// idpFormPages are the pages with a form whose answer may be a redirect to
// an identity provider (the sign-in form, the settings' test button):
// browsers hold a redirect after a form to form-action too, so these pages
// let forms lead to https (and, with AllowPrivateIdP, http) addresses.
// Their forms still post to this site only.
var idpFormPages = map[string]bool{"signin": true, "ssosettings": true}

// idpFormAction is the form-action of idpFormPages.
func (d *Dashboard) idpFormAction() string {
	if d.cfg.AllowPrivateIdP {
		return "'self' https: http:"
	}
	return "'self' https:"
}

// --- sessions

type viewerKey struct{}

// viewer is the signed-in user of a request.
type viewer struct {
	User         people.User
	Organisation org.Organisation
	// Zone is the zone the organisation shows its times in (its settings'
	// time zone, UTC by default).
	Zone *time.Location
}

func viewerOf(r *http.Request) *viewer {
	v, _ := r.Context().Value(viewerKey{}).(*viewer)
	return v
}

// requireSession loads the session of the cookie; without one it answers
// 303 to the sign-in page, which comes back here after. A single sign-on
// session whose user the identity provider no longer admits (sso.Check)
// ends: the sign-in page says why. A user who holds a
// one-time password is sent to the password form (303) from every other
// page: the session can do nothing else until it is changed.
func (d *Dashboard) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(SessionCookie)
		if err != nil || c.Value == "" {
			d.toSignin(w, r)
			return
		}
		_, u, err := d.cfg.People.Authenticate(r.Context(), c.Value)
		if errors.Is(err, people.ErrNoSession) {
			clearCookie(w, r)
			d.toSignin(w, r)
			return
		}
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if d.cfg.SSO != nil {
			// A session started through single sign-on lasts as long as
			// the identity provider still admits its user.
			err := d.cfg.SSO.Check(r.Context(), c.Value)
			if errors.Is(err, people.ErrNoSession) {
				d.signinEnded(w, r)
				return
			}
			if err != nil {
				d.fail(w, r, err)
				return
			}
		}
		org, err := d.cfg.Orgs.Organisation(r.Context(), u.OrganisationID)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		settings, err := d.cfg.Orgs.OrgSettings(r.Context(), u.OrganisationID)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		httpx.Annotate(r.Context(), slog.String("user", u.ID))
		if u.MustChangePassword() && r.URL.Path != passwordPath {
			http.Redirect(w, r, passwordPath, http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, &viewer{User: u, Organisation: org, Zone: settings.Location()})))
	})
}

func (d *Dashboard) toSignin(w http.ResponseWriter, r *http.Request) {
	next := r.URL.Path
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		next = "/" // a form sent after the session ended: start over
	}
	http.Redirect(w, r, "/signin?next="+url.QueryEscape(next), http.StatusSeeOther)
}

// requireRole answers 403 to a user without role.
func (d *Dashboard) requireRole(role people.Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if v := viewerOf(r); v == nil || v.User.Role != role {
				d.errorPage(w, r, http.StatusForbidden, "Only an "+string(role)+" may open this page. Ask one of your organisation's Administrators.")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func setSessionCookie(w http.ResponseWriter, r *http.Request, token string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: token, Path: "/", Expires: expires,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: httpx.IsSecure(r)})
}

func clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: httpx.IsSecure(r)})
}

// safeNext returns next when it is a path of this site ("/review"), else "/":
// the sign-in page never sends anyone elsewhere.
func safeNext(next string) string {
	// Browsers drop tabs and line breaks from URLs ("/\t/x" is "//x"), so
	// no control character is followed at all.
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") ||
		strings.IndexFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return next
}

// --- errors

func (d *Dashboard) crossOrigin(w http.ResponseWriter, r *http.Request) {
	d.errorPage(w, r, http.StatusForbidden, "This request came from another site and was refused; nothing was changed.")
}

// fail answers an unexpected error with a 500 page, logged with the request
// id; a request that ran out of time (httpx.TimedOut) gets a 503 page with
// Retry-After, not logged.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case httpx.ClientGone(r, err):
		return
	case httpx.TimedOut(r, err):
		w.Header().Set("Retry-After", "1")
		d.errorPage(w, r, http.StatusServiceUnavailable, "The page took too long to prepare; reload it shortly.")
		return
	}
	id := httpx.RequestIDFrom(r.Context())
	d.cfg.Logger.ErrorContext(r.Context(), "dashboard: internal error", "request_id", id, "path", r.URL.Path, "error", err)
	d.errorPage(w, r, http.StatusInternalServerError, fmt.Sprintf("Something went wrong on our side. Quote the request id %s to the service's operators.", id))
}
