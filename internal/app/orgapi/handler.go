package orgapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/spec"
)

// Handler serves the organisation API over an [org.Store]:
//
//	GET    /organisations
//	POST   /organisations/{organisationId}/instructions
//	GET    /organisations/{organisationId}/instructions
//	GET    /organisations/{organisationId}/instructions/{instructionId}
//	PATCH  /organisations/{organisationId}/instructions/{instructionId}
//	DELETE /organisations/{organisationId}/instructions/{instructionId}
//	GET    /organisations/{organisationId}/agents
//
// and answers 403 to any request for /organisations/{organisationId}/api-keys:
// keys are managed by a person, never with a key.
type Handler struct {
	store       *org.Store
	logger      *slog.Logger
	concurrency *httpx.Limiter
	router      chi.Router
	style       httpx.ErrorStyle
}

// Option configures a Handler.
type Option func(*Handler)

// WithLogger sets the logger of the access log and of 5xx errors. Default:
// nothing is logged.
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.logger = l } }

// WithConcurrency bounds the requests in flight per API key and per
// organisation with l (share one Limiter among the APIs of a service); a
// request over the bound is answered 429 with Retry-After. Default: no
// bound.
func WithConcurrency(l *httpx.Limiter) Option { return func(h *Handler) { h.concurrency = l } }

// NewHandler returns the organisation API over store.
func NewHandler(store *org.Store, opts ...Option) (*Handler, error) {
	if store == nil {
		return nil, errors.New("orgapi: NewHandler: nil store")
	}
	h := &Handler{store: store, logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(h)
	}
	if h.logger == nil {
		return nil, errors.New("orgapi: WithLogger: nil logger")
	}
	h.style = errorStyle(h.logger)
	h.router = h.routes()
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.router.ServeHTTP(w, r) }

// Routes registers the organisation API's routes on r, for a server that
// mounts several APIs on one router. The caller's router should use
// [Middleware] first.
func (h *Handler) Routes(r chi.Router) {
	// GET /organisations is a route of r itself, not of a subrouter: a
	// subrouter is mounted for every method, which would defeat 405 and HEAD.
	r.With(h.authenticate, h.strictQuery).Get("/organisations", h.adapt(h.listOrganisations))
	r.Route("/organisations/{organisationId}", func(r chi.Router) {
		r.Use(h.authenticate, h.ownOrganisation)
		r.Use(h.strictQuery)
		r.Get("/instructions", h.adapt(h.listInstructions))
		r.Post("/instructions", h.adapt(h.createInstruction))
		r.Get("/instructions/{instructionId}", h.adapt(h.getInstruction))
		r.Patch("/instructions/{instructionId}", h.adapt(h.updateInstruction))
		r.Delete("/instructions/{instructionId}", h.adapt(h.deleteInstruction))
		r.Get("/agents", h.adapt(h.listAgents))
		keys := h.adapt(func(http.ResponseWriter, *http.Request) error {
			return &spec.Error{Kind: spec.ErrForbidden, Detail: "API keys are managed by a person holding the Administrator role (in the dashboard, or with aiusage admin key); a key cannot create, list or revoke keys."}
		})
		r.HandleFunc("/api-keys", keys)
		r.HandleFunc("/api-keys/*", keys)
	})
}

func (h *Handler) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(h.Middleware()...)
	r.NotFound(h.adapt(func(http.ResponseWriter, *http.Request) error {
		return &spec.Error{Kind: spec.ErrNotFound, Detail: "No such endpoint. The organisation API is rooted at /organisations."}
	}))
	r.MethodNotAllowed(h.methodNotAllowed)
	h.Routes(r)
	return r
}

// Middleware returns the middleware every route of the service runs: the
// security headers (nosniff, no-store), request ids, the access log, panic
// recovery and HEAD for GET routes.
func (h *Handler) Middleware() []func(http.Handler) http.Handler {
	return []func(http.Handler) http.Handler{httpx.SecurityHeaders, httpx.RequestID, httpx.AccessLog(h.logger), httpx.Recover(h.writeError), middleware.GetHead}
}

// methodNotAllowed answers 405 with the methods the path allows.
func (h *Handler) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	MethodNotAllowed(h.router, w, r)
}

// MethodNotAllowed answers 405 to r, a request whose path routes has but not
// for its method, with an Allow header listing the methods it has.
func MethodNotAllowed(routes chi.Routes, w http.ResponseWriter, r *http.Request) {
	allow := httpx.AllowedMethods(routes, r.URL.Path)
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
	}
	style := errorStyle(slog.New(slog.DiscardHandler)) // a 405 is never logged
	httpx.WriteError(w, r, spec.Errorf(spec.ErrMethodNotAllowed, "%s is not allowed here; the path allows %s.", r.Method, strings.Join(allow, ", ")), &style)
}

// strictQuery answers a query string that url.ParseQuery cannot parse with a
// 400 naming the parameter to blame; r.URL.Query() would drop it silently.
func (h *Handler) strictQuery(next http.Handler) http.Handler {
	return httpx.StrictQuery(func(w http.ResponseWriter, r *http.Request, err *httpx.QueryError) {
		h.writeError(w, r, httpx.FieldError(spec.ErrInvalid, detailQuery, err.Param, "%s", err.Message))
	})(next)
}

func (h *Handler) adapt(fn httpx.HandlerFunc) http.HandlerFunc { return httpx.Adapt(fn, h.writeError) }

// writeError writes err as a problem ([errorStyle]).
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	httpx.WriteError(w, r, err, &h.style)
}

type principalKey struct{}

// PrincipalFrom returns the API key that authenticated the request whose
// context ctx is.
func PrincipalFrom(ctx context.Context) (org.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(org.Principal)
	return p, ok
}

func (h *Handler) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred, _ := httpx.Credential(r, false)
		p, err := h.store.Authenticate(r.Context(), cred)
		if p.KeyID != "" {
			httpx.Annotate(r.Context(), slog.String("key", p.KeyID))
		}
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		release, err := h.concurrency.Admit(w, r, p.KeyID, p.OrganisationID)
		var bodyErr *spec.Error
		if errors.As(err, &bodyErr) { // the body did not arrive: 400 or 413 naming it
			h.writeError(w, r, err)
			return
		}
		if err != nil {
			w.Header().Set("Retry-After", httpx.RetryAfterConcurrent)
			h.writeError(w, r, spec.Errorf(spec.ErrRateLimited, "Too many requests of this key or organisation are in flight; retry when one has finished."))
			return
		}
		defer release()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// ownOrganisation answers 404 for an organisation id in the path that is not
// the key's own, malformed or not: existence elsewhere cannot be probed.
func (h *Handler) ownOrganisation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		id, ok := ident.CanonicalUUID(chi.URLParam(r, "organisationId"))
		if !ok || id != p.OrganisationID {
			h.writeError(w, r, &spec.Error{Kind: spec.ErrNotFound, Detail: "No such organisation. GET /organisations returns your organisation's id."})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func principal(r *http.Request) org.Principal {
	p, _ := PrincipalFrom(r.Context())
	return p
}

// --- endpoints

func (h *Handler) listOrganisations(w http.ResponseWriter, r *http.Request) error {
	o, err := h.store.Organisation(r.Context(), principal(r).OrganisationID)
	if err != nil {
		return err
	}
	return httpx.WriteJSON(w, http.StatusOK, []spec.Organisation{{ID: o.ID, Name: o.Name}})
}

func (h *Handler) listAgents(w http.ResponseWriter, r *http.Request) error {
	agents, err := h.store.Agents(r.Context(), principal(r).OrganisationID)
	if err != nil {
		return err
	}
	return httpx.WriteJSON(w, http.StatusOK, agents)
}

// createInstruction decodes the body strictly (the schema names unknown
// fields and wrong types) into an org.InstructionCreate, then validates it.
func (h *Handler) createInstruction(w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadJSON(w, r)
	if err != nil {
		return err
	}
	var c org.InstructionCreate
	if err := httpx.DecodeJSON("instruction-create", body, &c); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	p := principal(r)
	in, err := h.store.CreateInstruction(r.Context(), p.OrganisationID, c, p.Actor())
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/organisations/"+p.OrganisationID+"/instructions/"+in.ID)
	return httpx.WriteJSON(w, http.StatusCreated, in)
}

// instructionID reads the instruction id of the path; one that is not a
// UUID names no instruction: 404.
func instructionID(r *http.Request) (string, error) {
	raw := chi.URLParam(r, "instructionId")
	id, ok := ident.CanonicalUUID(raw)
	if !ok {
		if u, err := url.PathUnescape(raw); err == nil && utf8.ValidString(u) && len(u) <= 100 {
			raw = u
		} else {
			raw = "(malformed)"
		}
		return "", &spec.Error{Kind: spec.ErrNotFound, Detail: fmt.Sprintf("No instruction %q: instructionId is not a UUID.", raw)}
	}
	return id, nil
}

func (h *Handler) getInstruction(w http.ResponseWriter, r *http.Request) error {
	id, err := instructionID(r)
	if err != nil {
		return err
	}
	in, err := h.store.Instruction(r.Context(), principal(r).OrganisationID, id)
	if err != nil {
		return err
	}
	return httpx.WriteJSON(w, http.StatusOK, in)
}

func (h *Handler) updateInstruction(w http.ResponseWriter, r *http.Request) error {
	id, err := instructionID(r)
	if err != nil {
		return err
	}
	body, err := httpx.ReadJSON(w, r)
	if err != nil {
		return err
	}
	var patch org.InstructionPatch
	if err := httpx.DecodeJSON("instruction-patch", body, &patch); err != nil {
		return err
	}
	if err := patch.Validate(); err != nil {
		return err
	}
	p := principal(r)
	in, err := h.store.UpdateInstruction(r.Context(), p.OrganisationID, id, patch, p.Actor())
	if err != nil {
		return err
	}
	return httpx.WriteJSON(w, http.StatusOK, in)
}

func (h *Handler) deleteInstruction(w http.ResponseWriter, r *http.Request) error {
	id, err := instructionID(r)
	if err != nil {
		return err
	}
	p := principal(r)
	if err := h.store.DeleteInstruction(r.Context(), p.OrganisationID, id, p.Actor()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) listInstructions(w http.ResponseWriter, r *http.Request) error {
	q, err := ParseInstructionQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	// Each instruction is written as it is read: a page of 100
	// instructions of up to 1 MiB each costs the memory of one.
	out := httpx.NewListStream(w, "items")
	var writeErr error
	list, err := h.store.ScanInstructions(r.Context(), principal(r).OrganisationID, q, func(in spec.Instruction) error {
		writeErr = out.Item(in)
		return writeErr
	})
	if err != nil {
		if out.Started() {
			if writeErr == nil { // not the client going away: the server's failure
				h.logger.ErrorContext(r.Context(), "instruction list cut", "request_id", httpx.RequestIDFrom(r.Context()), "error", err)
			}
			out.Abort()
		}
		return err
	}
	return out.Close(struct {
		TotalCount int `json:"totalCount"`
		Page       int `json:"page"`
		PageSize   int `json:"pageSize"`
	}{list.TotalCount, list.Page, list.PageSize})
}

// instructionQueryStyle is how the instruction list words a bad parameter:
// a message about the field it names, under the detail [detailQuery].
var instructionQueryStyle = httpx.QueryStyle{
	Invalid: func(param, message string) error {
		return httpx.FieldError(spec.ErrInvalid, detailQuery, param, "%s", message)
	},
	BadInt: func(lo, hi int, v string) string {
		if hi == math.MaxInt {
			return fmt.Sprintf("must be an integer of at least %d, got %q", lo, v)
		}
		return fmt.Sprintf("must be between %d and %d, got %q", lo, hi, v)
	},
}

// ParseInstructionQuery parses the query string of the instruction list. A
// parameter given twice, or a known parameter with a bad value, is an
// [*spec.Error] of kind spec.ErrInvalid naming it; unknown parameters are ignored.
func ParseInstructionQuery(rawQuery string) (org.InstructionQuery, error) {
	q := org.InstructionQuery{Page: 1, PageSize: org.DefaultPageSize}
	r := httpx.ReadQuery(rawQuery, instructionQueryStyle)
	r.Enum("triggerType", &q.TriggerType, spec.TriggerSemantic, spec.TriggerRegex, spec.TriggerStringMatch)
	r.Enum("action", &q.Action, spec.ActionAllow, spec.ActionBlock)
	r.Enum("agentType", &q.AgentType, spec.AgentTypeDataProtection)
	if v, ok := r.String("agentId"); ok && v != "" {
		if id, valid := ident.CanonicalUUID(v); valid {
			q.AgentID = id
		} else {
			r.Fail("agentId", "must be a UUID, got %q", v)
		}
	}
	search, _ := r.String("search")
	if n := utf8.RuneCountInString(search); n > org.MaxSearchLength {
		r.Fail("search", "is %d characters; at most %d", n, org.MaxSearchLength)
	} else {
		q.Search = search
	}
	r.Int("page", &q.Page, 1, math.MaxInt)
	r.Int("pageSize", &q.PageSize, 1, org.MaxPageSize)
	return q, r.Err()
}
