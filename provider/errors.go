package provider

import (
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

// Error is an error of a kind, with a detail for the client and, where a
// field (a query parameter, a header, a path segment) is to blame, its
// name. It is the kit's one client-facing error, [spec.Error].
type Error = spec.Error

// Invalid returns an ErrInvalid error naming field.
func Invalid(field, format string, a ...any) *Error { return spec.Invalid(field, format, a...) }
