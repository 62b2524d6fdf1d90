package provider

import (
	"fmt"

	"github.com/aiusage/kit/spec"
)

// The error kinds, re-exported from package spec (provider.ErrNotFound is
// spec.ErrNotFound). Wrap them (or return an [*Error]) and compare with
// errors.Is. The Handler maps each kind to one HTTP status.
var (
	ErrInvalid      = spec.ErrInvalid      // 400
	ErrUnauthorized = spec.ErrUnauthorized // 401
	ErrForbidden    = spec.ErrForbidden    // 403
	ErrNotFound     = spec.ErrNotFound     // 404
	ErrConflict     = spec.ErrConflict     // 409
	ErrUnsupported  = spec.ErrUnsupported  // 501
	ErrUnavailable  = spec.ErrUnavailable  // 503
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
