package provider

import (
	"errors"
	"fmt"
)

// Sentinel error kinds. Wrap them (or return an [*Error]) and compare with
// errors.Is. The Handler maps each kind to one HTTP status.
var (
	ErrInvalid      = errors.New("invalid argument")     // 400
	ErrUnauthorized = errors.New("unauthorized")         // 401
	ErrForbidden    = errors.New("forbidden")            // 403
	ErrNotFound     = errors.New("not found")            // 404
	ErrConflict     = errors.New("conflict")             // 409
	ErrUnsupported  = errors.New("unsupported resource") // 501
	ErrUnavailable  = errors.New("unavailable")          // 503
)

// Error is an error of a kind, with a detail for the client and, where a field
// (a query parameter, a header, a path segment) is to blame, its name.
type Error struct {
	Kind   error  // one of the sentinel kinds
	Field  string // the parameter to blame, if any
	Detail string // safe to show to the client
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%v: %s: %s", e.Kind, e.Field, e.Detail)
	}
	return fmt.Sprintf("%v: %s", e.Kind, e.Detail)
}

// Unwrap returns the kind, so errors.Is(err, ErrInvalid) works.
func (e *Error) Unwrap() error { return e.Kind }

// Invalid returns an ErrInvalid error naming field.
func Invalid(field, format string, a ...any) *Error {
	return &Error{Kind: ErrInvalid, Field: field, Detail: fmt.Sprintf(format, a...)}
}
