package spec

import (
	"errors"
	"fmt"
	"net/http"
)

// The error kinds of the kit. Every API of the kit (the provider, the
// organisation API, the review-task API, the dashboard) wraps one of them in
// the errors it returns and compares with errors.Is. [StatusOf] maps each
// kind to its one HTTP status and [KindOf] maps a status back; the body
// format differs per API, the kinds do not. Public packages re-export them
// (provider.ErrNotFound is ErrNotFound).
var (
	ErrInvalid          = errors.New("invalid")              // 400: the request is wrong; the detail names what
	ErrUnauthorized     = errors.New("unauthorized")         // 401: no valid credential
	ErrForbidden        = errors.New("forbidden")            // 403: a valid credential that may not do this
	ErrNotFound         = errors.New("not found")            // 404
	ErrMethodNotAllowed = errors.New("method not allowed")   // 405: the path exists, the method does not
	ErrConflict         = errors.New("conflict")             // 409: the request clashes with stored state
	ErrTooLarge         = errors.New("body too large")       // 413: a request body over the limit
	ErrUnprocessable    = errors.New("unprocessable")        // 422: a valid request the service could not act on (the review-task API's POLICY_ERROR)
	ErrRateLimited      = errors.New("rate limited")         // 429: over a rate limit; retry after the time said
	ErrUnsupported      = errors.New("unsupported resource") // 501: a provider that does not serve a resource
	ErrUnavailable      = errors.New("unavailable")          // 503: busy or a deadline passed; retry
)

// kinds is the one table between error kinds and HTTP statuses, both ways.
var kinds = []struct {
	kind   error
	status int
}{
	{ErrInvalid, http.StatusBadRequest},
	{ErrUnauthorized, http.StatusUnauthorized},
	{ErrForbidden, http.StatusForbidden},
	{ErrNotFound, http.StatusNotFound},
	{ErrMethodNotAllowed, http.StatusMethodNotAllowed},
	{ErrConflict, http.StatusConflict},
	{ErrTooLarge, http.StatusRequestEntityTooLarge},
	{ErrUnprocessable, http.StatusUnprocessableEntity},
	{ErrRateLimited, http.StatusTooManyRequests},
	{ErrUnsupported, http.StatusNotImplemented},
	{ErrUnavailable, http.StatusServiceUnavailable},
}

// StatusOf returns the HTTP status of err's kind: for an [*Error] (or an
// error wrapping one), the status of its Kind (500 when it has none);
// otherwise the first kind in the table that errors.Is finds in err. An error
// of no kind is 500.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		err = e.Kind
	}
	for _, k := range kinds {
		if errors.Is(err, k.kind) {
			return k.status
		}
	}
	return http.StatusInternalServerError
}

// KindOf returns the kind of an HTTP error status, as a client reads an
// answer: nil for a status below 400 and for one no kind has (a 5xx other
// than 501 and 503 is ErrUnavailable: a server failure is worth retrying).
// 410 Gone reads as ErrNotFound and 408 Request Timeout as ErrUnavailable.
func KindOf(status int) error {
	switch {
	case status < 400:
		return nil
	case status == http.StatusGone:
		return ErrNotFound
	case status == http.StatusRequestTimeout:
		return ErrUnavailable
	}
	for _, k := range kinds {
		if k.status == status {
			return k.kind
		}
	}
	if status >= 500 {
		return ErrUnavailable
	}
	return ErrInvalid
}

// Error is the kit's one client-facing error: a kind, a detail safe to show
// to the client and, where something the client sent is to blame, its name.
// Each API writes it in its own body format, with the status [StatusOf]
// gives its kind. An error that is not an *Error (or does not wrap one) is
// never shown to a client: its words stay in the server's log.
type Error struct {
	// Kind is one of the error kinds above, or nil for a failure of the
	// server (500) whose Detail says, for the client, what could not be
	// done.
	Kind error
	// Detail is the sentence the client reads.
	Detail string
	// Field names the one query parameter, header, path segment or body
	// field to blame, if any; Detail then says what is wrong with it.
	Field string
	// Fields names several fields to blame, each with its message (a body
	// with more than one wrong field).
	Fields []ProblemField
	// Extensions are extra members of a problem details body, such as the
	// agent named by a 409 of the organisation API.
	Extensions map[string]any
	// Err is the failure behind the answer, if any: the writer of an API
	// logs it with the request and never shows it to the client.
	Err error
}

func (e *Error) Error() string {
	var s string
	if e.Kind != nil {
		s = fmt.Sprintf("%v: ", e.Kind)
	}
	if e.Field != "" {
		s += e.Field + ": "
	}
	s += e.Detail
	for _, f := range e.Fields {
		s += fmt.Sprintf("; %s: %s", f.Field, f.Message)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the kind and the failure behind the answer (Err), so
// errors.Is(err, ErrInvalid) works, and so does errors.Is(err,
// context.Canceled) for a failure caused by the client going away.
func (e *Error) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.Kind, e.Err} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Invalid returns an ErrInvalid error naming field.
func Invalid(field, format string, a ...any) *Error {
	return &Error{Kind: ErrInvalid, Field: field, Detail: fmt.Sprintf(format, a...)}
}

// Errorf returns an error of kind whose detail is the formatted text.
func Errorf(kind error, format string, a ...any) *Error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, a...)}
}
