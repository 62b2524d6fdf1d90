package reviewapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/spec"
)

// Owns reports whether path p belongs to the review-task API (/review-tasks,
// /webhooks and the paths below them): the service's router answers its
// unknown paths and methods with [NotFound] and [MethodNotAllowed], in the
// API's error body.
func Owns(p string) bool {
	return p == "/review-tasks" || strings.HasPrefix(p, "/review-tasks/") || p == "/webhooks" || strings.HasPrefix(p, "/webhooks/")
}

// NotFound answers 404 NOT_FOUND to a request for a path of the API that no
// route has.
func NotFound(w http.ResponseWriter, r *http.Request) {
	style := errorStyle(slog.Default())
	httpx.WriteError(w, r, spec.Errorf(spec.ErrNotFound, "No such endpoint."), &style)
}

// MethodNotAllowed answers 405 METHOD_NOT_ALLOWED to r, a request whose
// path routes has but not for its method, with an Allow header listing the
// methods it has.
func MethodNotAllowed(routes chi.Routes, w http.ResponseWriter, r *http.Request) {
	allow := httpx.AllowedMethods(routes, r.URL.Path)
	w.Header().Set("Allow", strings.Join(allow, ", "))
	style := errorStyle(slog.Default())
	httpx.WriteError(w, r, spec.Errorf(spec.ErrMethodNotAllowed, "%s is not allowed here; the path allows %s.", r.Method, strings.Join(allow, ", ")), &style)
}

// Routes registers the review-task API on r.
func (s *Service) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(s.authenticate, s.concurrency, s.rateLimit)
		r.Use(httpx.StrictQuery(func(w http.ResponseWriter, r *http.Request, err *httpx.QueryError) {
			s.fail(w, r, spec.Invalid(err.Param, "%s", err.Message))
		}))
		r.Post("/review-tasks", s.adapt(s.createTask))
		r.Get("/review-tasks", s.adapt(s.listTasks))
		r.Get("/review-tasks/{taskId}", s.adapt(s.getTask))
		r.HandleFunc("/review-tasks/{taskId}/decision", s.adapt(func(http.ResponseWriter, *http.Request) error {
			return spec.Errorf(spec.ErrForbidden, "Decisions are made by a person, in the dashboard's review queue (/review) or with aiusage admin review decide, never with an API key.")
		}))
		r.Post("/webhooks", s.adapt(s.createWebhook))
		r.Get("/webhooks", s.adapt(s.listWebhooks))
		r.Get("/webhooks/{id}", s.adapt(s.getWebhook))
		r.Delete("/webhooks/{id}", s.adapt(s.deleteWebhook))
	})
}

func (s *Service) adapt(fn httpx.HandlerFunc) http.HandlerFunc { return httpx.Adapt(fn, s.fail) }

// fail writes err as the answer to r ([errorStyle]).
func (s *Service) fail(w http.ResponseWriter, r *http.Request, err error) {
	style := errorStyle(s.cfg.Logger)
	httpx.WriteError(w, r, err, &style)
}

type principalKey struct{}

func (s *Service) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred, _ := httpx.Credential(r, true)
		p, err := s.orgs.AuthenticateFor(r.Context(), cred, org.UseReviewAPI)
		switch {
		case err != nil && errors.Is(err, spec.ErrForbidden) && p.KeyID != "":
			// A known key of the wrong kind: its 403 is counted and carries
			// the rate-limit headers, as every answer to a key does.
			refuse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.fail(w, r, err) })
			s.rateLimit(refuse).ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
			return
		}
		if err != nil {
			// A missing, unknown, revoked or expired key: one 401, the same
			// status, body and headers for all (no rate-limit headers, not
			// counted), as on every API of the service, so the answer tells
			// neither that a key was once valid nor its organisation; and a
			// leaked revoked key cannot use up the organisation's plan.
			s.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// concurrency takes a slot of the key's and the organisation's requests in
// flight for the request, and gives it back when the request is answered.
// A request over the bound is refused before the hourly count, which it
// does not use up, with the rate-limit headers and Retry-After. A request
// whose body does not arrive (too large, too slow) is answered there, 413
// or 400 naming body, and not counted either.
func (s *Service) concurrency(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principal(r)
		release, err := s.cfg.Concurrency.Admit(w, r, p.KeyID, p.OrganisationID)
		var bodyErr *spec.Error
		if errors.As(err, &bodyErr) { // the body did not arrive: 400 or 413 naming it
			s.fail(w, r, err)
			return
		}
		if err != nil {
			s.reportRate(w, r, p)
			w.Header().Set("Retry-After", httpx.RetryAfterConcurrent)
			s.fail(w, r, spec.Errorf(spec.ErrRateLimited, "Too many requests of this key or organisation are in flight; retry when one has finished."))
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

func principal(r *http.Request) org.Principal {
	p, _ := r.Context().Value(principalKey{}).(org.Principal)
	return p
}

// --- endpoints

func (s *Service) createTask(w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadJSON(w, r)
	if err != nil {
		return err
	}
	var c spec.ReviewTaskCreate
	if err := httpx.DecodeJSON("review-task-create", body, &c); err != nil {
		return err
	}
	c.AgentID = strings.ToLower(c.AgentID)
	t, err := s.CreateTask(r.Context(), principal(r), c)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/review-tasks/"+t.ID)
	return httpx.WriteJSON(w, http.StatusCreated, t)
}

func (s *Service) getTask(w http.ResponseWriter, r *http.Request) error {
	id, ok := ident.CanonicalUUID(chi.URLParam(r, "taskId"))
	if !ok {
		return &spec.Error{Kind: spec.ErrNotFound, Detail: "No such review task: taskId is not a UUID.", Err: ErrTaskNotFound}
	}
	t, err := s.Task(r.Context(), principal(r).OrganisationID, id)
	if err != nil {
		return err
	}
	return httpx.WriteJSON(w, http.StatusOK, t)
}

func (s *Service) listTasks(w http.ResponseWriter, r *http.Request) error {
	q, err := ParseTaskQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	page, err := s.taskPageOf(r.Context(), principal(r).OrganisationID, q, MaxPageBytes)
	if err != nil {
		return err
	}
	// The tasks' JSON as read, in the envelope of spec.ReviewTaskList.
	if page.items == nil {
		page.items = []json.RawMessage{}
	}
	return httpx.WriteJSON(w, http.StatusOK, struct {
		Data       []json.RawMessage `json:"data"`
		Total      int               `json:"total"`
		Limit      int               `json:"limit"`
		Offset     int               `json:"offset"`
		NextOffset *int              `json:"nextOffset"`
	}{page.items, page.total, q.Limit, q.Offset, page.nextOffset})
}

// taskQueryStyle is how GET /review-tasks words a bad parameter: a message
// that starts with the parameter's name, in an error naming it.
var taskQueryStyle = httpx.QueryStyle{
	Invalid:    func(param, message string) error { return spec.Invalid(param, "%s", message) },
	NamePrefix: true,
	BadInt: func(lo, hi int, v string) string {
		if hi == math.MaxInt {
			return fmt.Sprintf("must be an integer of %d or more, got %q", lo, v)
		}
		return fmt.Sprintf("must be an integer from %d to %d, got %q", lo, hi, v)
	},
	BadEnum: func(allowed []string, v string) string {
		return fmt.Sprintf("must be one of %s; got %q", strings.Join(allowed, ", "), v)
	},
}

// queryDay is the layout of a plain date in from or to: a whole UTC day.
const queryDay = "2006-01-02"

// readBound reads the from or to parameter of GET /review-tasks: an RFC 3339
// timestamp, or a plain date (2026-11-27), the whole UTC day. A date stands
// for the day's start (00:00:00Z) in from and for the next day's start in
// to, which is exclusive, so from=D&to=D is the day D. A bad value is
// INVALID_REQUEST naming the parameter, worded as both forms are accepted.
func readBound(r *httpx.QueryReader, name string, dst *time.Time, endOfDay bool) {
	v, ok := r.String(name)
	if !ok || v == "" {
		return
	}
	if d, err := time.Parse(queryDay, v); err == nil {
		if endOfDay {
			d = d.AddDate(0, 0, 1)
		}
		*dst = d
		return
	}
	t, err := spec.ParseTime(v)
	if err != nil {
		r.Fail(name, "must be an RFC 3339 time such as 2026-03-02T09:00:00Z or a date such as 2026-03-02 (the whole UTC day), got %q", v)
		return
	}
	*dst = t
}

// ParseTaskQuery parses the query of GET /review-tasks. A repeated or bad
// parameter is INVALID_REQUEST naming it; unknown ones are ignored. An empty
// status, include, from or to is no filter. From and to are RFC 3339
// timestamps or plain dates, whole UTC days (see readBound).
func ParseTaskQuery(raw string) (TaskQuery, error) {
	q := TaskQuery{Limit: 20}
	r := httpx.ReadQuery(raw, taskQueryStyle)
	r.Enum("status", &q.Status, spec.StatusPending, spec.StatusProcessing, spec.StatusApproved,
		spec.StatusRequiresIntervention, spec.StatusRejected, spec.StatusChangeRequested)
	r.Int("limit", &q.Limit, 1, 100)
	r.Int("offset", &q.Offset, 0, math.MaxInt)
	if v, ok := r.String("include"); ok && v != "" {
		q.IncludeRequest = true
		for _, part := range strings.Split(v, ",") {
			if strings.TrimSpace(part) != "request" {
				r.Fail("include", "may only be request (each task's request and redactedRequest), got %q", v)
				break
			}
		}
	}
	readBound(r, "from", &q.From, false)
	readBound(r, "to", &q.To, true)
	if !q.From.IsZero() && !q.To.IsZero() && !q.To.After(q.From) {
		r.Fail("to", "must be after from")
	}
	return q, r.Err()
}

func (s *Service) createWebhook(w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadJSON(w, r)
	if err != nil {
		return err
	}
	var c spec.WebhookCreate
	if err := httpx.DecodeJSON("webhook-create", body, &c); err != nil {
		return err
	}
	wh, err := s.CreateWebhook(r.Context(), principal(r).OrganisationID, c)
	if err != nil {
		return err
	}
	return httpx.WriteJSON(w, http.StatusCreated, wh)
}

func (s *Service) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	hooks, err := s.Webhooks(r.Context(), principal(r).OrganisationID)
	if err != nil {
		return err
	}
	return httpx.WriteJSON(w, http.StatusOK, spec.WebhookList{Data: hooks})
}

// getWebhook answers GET /webhooks/{id}: the webhook as GET /webhooks lists
// it, never its secret; 404 as DELETE for an id that is malformed, unknown,
// deleted or another organisation's.
func (s *Service) getWebhook(w http.ResponseWriter, r *http.Request) error {
	id, ok := ident.CanonicalUUID(chi.URLParam(r, "id"))
	if !ok {
		return spec.Errorf(spec.ErrNotFound, "No such webhook: the id is not a UUID.")
	}
	wh, err := s.Webhook(r.Context(), principal(r).OrganisationID, id)
	if err != nil {
		return err
	}
	return httpx.WriteJSON(w, http.StatusOK, wh)
}

func (s *Service) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id, ok := ident.CanonicalUUID(chi.URLParam(r, "id"))
	if !ok {
		return spec.Errorf(spec.ErrNotFound, "No such webhook: the id is not a UUID.")
	}
	if err := s.DeleteWebhook(r.Context(), principal(r).OrganisationID, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
