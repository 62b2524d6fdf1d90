package provider

import (
	"errors"
	"net/http"

	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/spec"
)

// statusOf is the one table from error kind to HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, ErrUnsupported):
		return http.StatusNotImplemented
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeError writes err as a problem details body. Details of errors that
// are not an [*Error] of a known kind never reach the client. An error
// of no known kind of a request that ran out of time (its context's
// deadline passed, as the kit's servers set it before the connection's read
// deadline) is a 503 with Retry-After, not logged: the request may be
// retried, and nothing failed.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	if status == http.StatusInternalServerError && httpx.TimedOut(r, err) {
		err = &Error{Kind: ErrUnavailable, Detail: "The request ran out of time; retry it shortly."}
		status = http.StatusServiceUnavailable
	}
	p := spec.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status}
	var e *Error
	switch {
	case status == http.StatusInternalServerError:
		h.cfg.logger.ErrorContext(r.Context(), "internal error", "request_id", httpx.RequestIDFrom(r.Context()),
			"method", r.Method, "path", r.URL.Path, "error", err)
		p.Detail = "The provider failed to answer; the request may be retried. Quote the request id to the provider."
		p.Extensions = map[string]any{"requestId": httpx.RequestIDFrom(r.Context())}
	case errors.As(err, &e):
		p.Detail = e.Detail
		if e.Field != "" {
			p.Detail = e.Field + " " + e.Detail
			p.Errors = []spec.ProblemField{{Field: e.Field, Message: e.Detail}}
		}
	default:
		p.Detail = defaultDetail(status)
	}
	switch status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="aiusage"`)
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "5")
	}
	httpx.WriteProblem(w, p)
}

func defaultDetail(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "Send a valid credential as Authorization: Bearer <token> or X-API-Key: <token>."
	case http.StatusForbidden:
		return "The credential lacks the scope of this endpoint."
	case http.StatusNotFound:
		return "No such record."
	case http.StatusNotImplemented:
		return "This provider does not serve this resource."
	case http.StatusServiceUnavailable:
		return "The provider is temporarily unavailable; retry later."
	}
	return http.StatusText(status)
}
