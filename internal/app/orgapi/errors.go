package orgapi

import (
	"errors"
	"net/http"

	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// detailQuery is the detail of an error about a query parameter.
const detailQuery = "A query parameter is invalid."

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
// error that is not an [*httpx.Error] of a known kind never reaches the client.
func problemOf(err error, requestID string) spec.Problem {
	status := statusOf(err)
	p := spec.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status}
	var e *httpx.Error
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
	switch p.Status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="aiusage"`)
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	httpx.WriteProblem(w, p)
}
