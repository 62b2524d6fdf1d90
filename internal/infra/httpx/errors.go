package httpx

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/aiusage/kit/spec"
)

// DetailTimedOut is the detail of a request that ran out of time ([TimedOut])
// where the error it returned was of no kind.
const DetailTimedOut = "The request ran out of time; retry it shortly."

// ErrorStyle is what differs between the APIs in how [WriteError] answers an
// error: the words of the answers that are not the error's own, the
// headers, where failures are logged and the body format.
type ErrorStyle struct {
	// Logger receives the failures of the server: every 500, every 5xx of
	// an error Busy reports or that carries the failure behind it
	// (spec.Error.Err), with the request id; never a request that ran out of
	// time.
	Logger *slog.Logger
	// Challenge is the WWW-Authenticate header of a 401, such as
	// `Bearer realm="aiusage"`; none when empty.
	Challenge string
	// RetryAfter is the Retry-After header of a 503, unless the handler set
	// one; none when empty.
	RetryAfter string
	// Internal is the detail of a 500 whose error says nothing a client may
	// read (no [*spec.Error] with a Detail); the answer then carries the
	// request id as its requestId extension.
	Internal string
	// TimedOut is the detail of a request that ran out of time with an
	// error of no kind, answered 503; [DetailTimedOut] when empty.
	TimedOut string
	// Fixed holds the statuses whose every answer has the same detail,
	// whatever the error says (one answer for every bad credential). The
	// fields and extensions of the error are kept.
	Fixed map[int]string
	// Detail returns the detail of an error of a kind that is no
	// [*spec.Error] (a bare spec.ErrNotFound); http.StatusText when nil.
	Detail func(status int) string
	// Busy, when set, reports an error of no kind that means the service
	// is busy (a database's retryable conflict): it is answered 503.
	Busy func(err error) bool
	// Body, when set, writes the answer in the API's own body format;
	// problem details (RFC 9457) when nil. See [WriteError] for what a
	// carries.
	Body func(w http.ResponseWriter, status int, a *spec.Error)
}

// WriteError writes err as the answer to r, in style s; it is the one
// writer of every API's errors. The status is [spec.StatusOf] of err,
// except that an error of no kind (500) becomes a 503 when r ran out of time
// ([TimedOut]) or when s.Busy reports it. Nothing is written when the client
// went away ([ClientGone]).
//
// The answer a, which s.Body writes, has the kind answered (nil for a 500)
// and the detail: for a 500, the error's own if it is a [*spec.Error] with
// one, else s.Internal with the request id in a.Extensions["requestId"];
// s.Fixed's for its statuses; the [*spec.Error]'s Detail, Field, Fields and
// Extensions; else s.Detail's. a.Err is err. The words of an error that is
// no [*spec.Error] never reach the client.
func WriteError(w http.ResponseWriter, r *http.Request, err error, s *ErrorStyle) {
	if ClientGone(r, err) {
		return
	}
	status := spec.StatusOf(err)
	timedOut := TimedOut(r, err)
	busy := status == http.StatusInternalServerError && !timedOut && s.Busy != nil && s.Busy(err)
	a := answer(r, err, status, timedOut, busy, s)
	status = spec.StatusOf(a)
	var e *spec.Error
	if !timedOut && status >= 500 && (status == http.StatusInternalServerError || busy || errors.As(err, &e) && e.Err != nil) {
		s.Logger.ErrorContext(r.Context(), "internal error", "request_id", RequestIDFrom(r.Context()),
			"method", r.Method, "path", r.URL.Path, "error", err)
	}
	h := w.Header()
	switch {
	case status == http.StatusUnauthorized && s.Challenge != "":
		h.Set("WWW-Authenticate", s.Challenge)
	case status == http.StatusServiceUnavailable && s.RetryAfter != "" && h.Get("Retry-After") == "":
		h.Set("Retry-After", s.RetryAfter)
	}
	if s.Body != nil {
		s.Body(w, status, a)
		return
	}
	WriteProblem(w, problemOf(status, a))
}

// answer returns what the client is told of err, whose status is status
// (see [WriteError]).
func answer(r *http.Request, err error, status int, timedOut, busy bool, s *ErrorStyle) *spec.Error {
	a := &spec.Error{Err: err}
	var e *spec.Error
	known := errors.As(err, &e)
	switch {
	case status == http.StatusInternalServerError && timedOut:
		a.Kind, a.Detail = spec.ErrUnavailable, s.TimedOut
		if a.Detail == "" {
			a.Detail = DetailTimedOut
		}
		return a
	case busy:
		a.Kind = spec.ErrUnavailable
		status = http.StatusServiceUnavailable
	case status == http.StatusInternalServerError:
		if known && e.Detail != "" {
			a.Detail = e.Detail
			return a
		}
		a.Detail = s.Internal
		a.Extensions = map[string]any{"requestId": RequestIDFrom(r.Context())}
		return a
	default:
		a.Kind = spec.KindOf(status)
	}
	if known && !busy {
		a.Detail, a.Field, a.Fields, a.Extensions = e.Detail, e.Field, e.Fields, e.Extensions
	} else if s.Detail != nil {
		a.Detail = s.Detail(status)
	} else {
		a.Detail = http.StatusText(status)
	}
	if d, ok := s.Fixed[status]; ok {
		a.Detail = d
	}
	return a
}

// problemOf is the problem details body of answer a with status: a field
// to blame comes first in its detail and in its errors.
func problemOf(status int, a *spec.Error) spec.Problem {
	p := spec.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: a.Detail,
		Errors: a.Fields, Extensions: a.Extensions}
	if a.Field != "" {
		p.Detail = a.Field + " " + a.Detail
		p.Errors = append([]spec.ProblemField{{Field: a.Field, Message: a.Detail}}, a.Fields...)
	}
	return p
}
