package reviewapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// Sentinel errors of the review-task store.
var (
	// ErrTaskNotFound: no such task (in the organisation). The API answers
	// it TASK_NOT_FOUND.
	ErrTaskNotFound error = &spec.Error{Kind: spec.ErrNotFound, Detail: "No such review task."}
	// ErrFinal: the task's state does not allow the change (a final state
	// never changes; only requires_intervention awaits a decision).
	ErrFinal = errors.New("illegal transition")
	// ErrWebhookNotFound: no such webhook (in the organisation).
	ErrWebhookNotFound error = &spec.Error{Kind: spec.ErrNotFound, Detail: "No such webhook."}
)

// CodeUnavailable answers a request the service is too busy for (503); the
// seed names no code for it.
const CodeUnavailable = spec.CodeUnavailable

// CodePayloadTooLarge answers a body over 1 MiB (413).
const CodePayloadTooLarge = spec.CodePayloadTooLarge

// seedCodes is the one table from error kind to the review-task API's error
// code; an error of no kind is INTERNAL_ERROR, and a spec.ErrNotFound about
// a task ([ErrTaskNotFound]) TASK_NOT_FOUND.
var seedCodes = []struct {
	kind error
	code string
}{
	{spec.ErrInvalid, spec.CodeInvalidRequest},
	{spec.ErrUnauthorized, spec.CodeAuthenticationFailed},
	{spec.ErrForbidden, spec.CodeForbidden},
	{spec.ErrNotFound, spec.CodeNotFound},
	{spec.ErrMethodNotAllowed, spec.CodeMethodNotAllowed},
	{spec.ErrTooLarge, CodePayloadTooLarge},
	{spec.ErrUnprocessable, spec.CodePolicyError},
	{spec.ErrRateLimited, spec.CodeRateLimitExceeded},
	{spec.ErrUnavailable, CodeUnavailable},
}

// codeOf returns the error code of answer a (see httpx.WriteError).
func codeOf(a *spec.Error) string {
	if a.Kind == spec.ErrNotFound && errors.Is(a.Err, ErrTaskNotFound) {
		return spec.CodeTaskNotFound
	}
	for _, c := range seedCodes {
		if a.Kind == c.kind {
			return c.code
		}
	}
	return spec.CodeInternalError
}

// fixedMessages are the messages of the statuses whose every answer says
// the same.
var fixedMessages = map[int]string{
	http.StatusUnauthorized:          "A valid API key is required, as Authorization: Bearer KEY, Authorization: KEY or X-API-Key: KEY.",
	http.StatusRequestEntityTooLarge: fmt.Sprintf("The body is larger than %d bytes.", httpx.MaxBodyBytes),
	http.StatusServiceUnavailable:    "The service is busy; retry the request shortly.",
}

// errorStyle is how the review-task API answers errors: in its seed body
// (writeErrorBody). A 5xx is logged once, with the request id; a request
// that ran out of time is UNAVAILABLE, not logged, unless its error says
// more already (a POLICY_ERROR whose semantic matcher timed out names the
// task it kept pending).
func errorStyle(logger *slog.Logger) httpx.ErrorStyle {
	return httpx.ErrorStyle{
		Logger:     logger,
		Challenge:  `Bearer realm="aiusage"`,
		RetryAfter: "1",
		Internal:   "An unexpected error occurred. Quote the request id to the service's operators.",
		Fixed:      fixedMessages,
		Detail: func(status int) string {
			if status == http.StatusForbidden {
				return "The key is not allowed to do this."
			}
			return http.StatusText(status) + "."
		},
		Busy: sqldb.IsRetryable,
		Body: writeErrorBody,
	}
}

// writeErrorBody writes answer a as the review-task API's error body,
// {"error":{"code","message","field"?,"taskId"?}}: the field to blame is
// the error's Field, else its first of Fields (whose message then names it),
// and always "body" for a body too large; the taskId is the extension of
// that name.
func writeErrorBody(w http.ResponseWriter, status int, a *spec.Error) {
	d := spec.ReviewErrorDetail{Code: codeOf(a), Message: a.Detail, Field: a.Field}
	switch {
	case a.Kind == spec.ErrTooLarge:
		d.Field = "body"
	case a.Field == "" && len(a.Fields) > 0:
		d.Field = a.Fields[0].Field
		d.Message = a.Fields[0].Field + " " + a.Fields[0].Message
	}
	d.TaskID, _ = a.Extensions["taskId"].(string)
	b, _ := json.Marshal(spec.ReviewError{Error: d})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
