package spec

import "errors"

// The error kinds of the kit. Every API of the kit (the provider, the
// organisation API, the review-task API) wraps one of them in the errors it
// returns, compares with errors.Is, and maps each kind to one HTTP status in
// a table of its own; the body format differs per API, the kinds do not.
// Public packages re-export them (provider.ErrNotFound is ErrNotFound).
var (
	ErrInvalid      = errors.New("invalid")              // 400: the request is wrong; the detail names what
	ErrUnauthorized = errors.New("unauthorized")         // 401: no valid credential
	ErrForbidden    = errors.New("forbidden")            // 403: a valid credential that may not do this
	ErrNotFound     = errors.New("not found")            // 404
	ErrConflict     = errors.New("conflict")             // 409: the request clashes with stored state
	ErrTooLarge     = errors.New("body too large")       // 413: a request body over the limit
	ErrUnsupported  = errors.New("unsupported resource") // 501: a provider that does not serve a resource
	ErrUnavailable  = errors.New("unavailable")          // 503: busy or a deadline passed; retry
)
