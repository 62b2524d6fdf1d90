package reviewapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// Sentinel errors of the review-task store.
var (
	// ErrTaskNotFound: no such task (in the organisation).
	ErrTaskNotFound = errors.New("review task not found")
	// ErrFinal: the task's state does not allow the change (a final state
	// never changes; only requires_intervention awaits a decision).
	ErrFinal = errors.New("illegal transition")
	// ErrWebhookNotFound: no such webhook (in the organisation).
	ErrWebhookNotFound = errors.New("webhook not found")
)

// Error is an error of the review-task API: an error code of the review-task
// API (or one the kit adds), a message for the client and, where one is to blame, the field.
type Error struct {
	Code    string
	Message string
	Field   string
	TaskID  string // POLICY_ERROR: the task kept pending
	cause   error
}

func (e *Error) Error() string {
	s := e.Code + ": " + e.Message
	if e.Field != "" {
		s += " (" + e.Field + ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.cause }

// CodeUnavailable answers a request the service is too busy for (503); the
// seed names no code for it.
const CodeUnavailable = spec.CodeUnavailable

// CodePayloadTooLarge answers a body over 1 MiB (413).
const CodePayloadTooLarge = spec.CodePayloadTooLarge

// statusOfCode is the one table from error code to HTTP status.
func statusOfCode(code string) int {
	switch code {
	case spec.CodeInvalidRequest:
		return http.StatusBadRequest
	case spec.CodeAuthenticationFailed:
		return http.StatusUnauthorized
	case spec.CodeForbidden:
		return http.StatusForbidden
	case spec.CodeTaskNotFound, spec.CodeNotFound:
		return http.StatusNotFound
	case spec.CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case spec.CodePolicyError:
		return http.StatusUnprocessableEntity
	case spec.CodeRateLimitExceeded:
		return http.StatusTooManyRequests
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func invalid(field, format string, a ...any) *Error {
	return &Error{Code: spec.CodeInvalidRequest, Field: field, Message: fmt.Sprintf(format, a...)}
}

// apiError turns any error into the error the client sees. Errors of
// orgapi (authentication, body checks) map onto the review-task codes.
func apiError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var oe *httpx.Error
	switch {
	case errors.Is(err, ErrTaskNotFound):
		return &Error{Code: spec.CodeTaskNotFound, Message: "No such review task.", cause: err}
	case errors.Is(err, ErrWebhookNotFound):
		return &Error{Code: spec.CodeNotFound, Message: "No such webhook.", cause: err}
	case errors.Is(err, spec.ErrUnauthorized):
		return &Error{Code: spec.CodeAuthenticationFailed, Message: "A valid API key is required, as Authorization: Bearer KEY, Authorization: KEY or X-API-Key: KEY.", cause: err}
	case errors.Is(err, spec.ErrForbidden):
		msg := "The key is not allowed to do this."
		if errors.As(err, &oe) {
			msg = oe.Detail
		}
		return &Error{Code: spec.CodeForbidden, Message: msg, cause: err}
	case errors.Is(err, spec.ErrTooLarge):
		return &Error{Code: CodePayloadTooLarge, Field: "body", Message: fmt.Sprintf("The body is larger than %d bytes.", httpx.MaxBodyBytes), cause: err}
	case errors.Is(err, spec.ErrInvalid) && errors.As(err, &oe):
		out := &Error{Code: spec.CodeInvalidRequest, Message: oe.Detail, cause: err}
		if len(oe.Fields) > 0 {
			out.Field = oe.Fields[0].Field
			out.Message = oe.Fields[0].Field + " " + oe.Fields[0].Message
		}
		return out
	case errors.Is(err, spec.ErrUnavailable), sqldb.IsRetryable(err):
		return &Error{Code: CodeUnavailable, Message: "The service is busy; retry the request shortly.", cause: err}
	}
	return &Error{Code: spec.CodeInternalError, Message: "An unexpected error occurred. Quote the request id to the service's operators.", cause: err}
}

func writeError(w http.ResponseWriter, e *Error) {
	body := spec.ReviewError{Error: spec.ReviewErrorDetail{Code: e.Code, Message: e.Message, Field: e.Field, TaskID: e.TaskID}}
	b, _ := json.Marshal(body)
	status := statusOfCode(e.Code)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	switch status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="aiusage"`)
	case http.StatusServiceUnavailable:
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
