package orgapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// Error is an error of a kind with a detail safe to show to the client and,
// where fields are to blame, each of them.
type Error struct {
	Kind   error               // one of the sentinel kinds
	Detail string              // for the client
	Fields []spec.ProblemField // the fields (body fields, query parameters, headers) to blame
	// Extensions are extra members of the problem body, such as the agent
	// named by a 409.
	Extensions map[string]any
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%v: %s", e.Kind, e.Detail)
	for _, f := range e.Fields {
		s += fmt.Sprintf("; %s: %s", f.Field, f.Message)
	}
	return s
}

// Unwrap returns the kind, so errors.Is(err, spec.ErrInvalid) works.
func (e *Error) Unwrap() error { return e.Kind }

// fieldError returns an error of kind naming one field.
func fieldError(kind error, detail, field, format string, a ...any) *Error {
	return &Error{Kind: kind, Detail: detail, Fields: []spec.ProblemField{{Field: field, Message: fmt.Sprintf(format, a...)}}}
}

// invalidBody returns a 400 naming one field of the request body.
func invalidBody(field, format string, a ...any) *Error {
	return fieldError(spec.ErrInvalid, detailBody, field, format, a...)
}

const (
	detailBody  = "The request body is invalid."
	detailQuery = "A query parameter is invalid."
)

// statusOf is the one table from error kind to HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, spec.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, spec.ErrUnauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, spec.ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, spec.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, spec.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, spec.ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, spec.ErrUnavailable), sqldb.IsRetryable(err):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// problemOf turns err into the problem body the client sees. The detail of an
// error that is not an [*Error] of a known kind never reaches the client.
func problemOf(err error, requestID string) spec.Problem {
	status := statusOf(err)
	p := spec.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status}
	var e *Error
	switch {
	case status == http.StatusInternalServerError:
		p.Detail = "An unexpected error occurred. Quote the request id to the service's operators."
		p.Extensions = map[string]any{"requestId": requestID}
	case status == http.StatusServiceUnavailable:
		p.Detail = "The service is busy or a deadline passed; retry the request shortly."
	case status == http.StatusUnauthorized:
		// Missing, mistyped, revoked and expired keys get the same answer.
		p.Detail = "A valid API key is required, as X-API-Key or Authorization Bearer."
	case errors.As(err, &e):
		p.Detail = e.Detail
		p.Errors = e.Fields
		if len(e.Extensions) > 0 {
			p.Extensions = e.Extensions
		}
	default:
		p.Detail = http.StatusText(status) + "."
	}
	return p
}

func writeProblem(w http.ResponseWriter, p spec.Problem) {
	b, err := json.Marshal(p)
	if err != nil { // a Problem with sane extensions always encodes
		p = spec.Problem{Type: "about:blank", Title: "Internal Server Error", Status: http.StatusInternalServerError}
		b, _ = json.Marshal(p)
	}
	h := w.Header()
	h.Set("Content-Type", spec.ProblemContentType)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	switch p.Status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="aiusage"`)
	case http.StatusServiceUnavailable:
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(b)
}
