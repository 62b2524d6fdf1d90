package httpx

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// HandlerFunc is an endpoint that returns its error, for one [ErrorWriter]
// to write, instead of writing each error itself.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Adapt returns fn as an http.HandlerFunc whose errors fail writes. An error
// caused by the client going away is not written: nobody reads it, and it is
// not the server's failure.
func Adapt(fn HandlerFunc, fail ErrorWriter) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil && !ClientGone(r, err) {
			fail(w, r, err)
		}
	}
}

// ClientGone reports whether err comes from the client of r going away
// (its request context was cancelled before its deadline), rather than from
// the server or from the request running out of time ([TimedOut]).
func ClientGone(r *http.Request, err error) bool {
	return errors.Is(err, context.Canceled) && errors.Is(r.Context().Err(), context.Canceled) && !TimedOut(r, err)
}

// AllowedMethods returns the methods routes serves for path, in the order
// GET, HEAD, POST, PUT, PATCH, DELETE; HEAD follows GET, which chi's
// middleware.GetHead serves. It is what a 405's Allow header lists.
func AllowedMethods(routes chi.Routes, path string) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if routes.Match(chi.NewRouteContext(), m, path) {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	return allow
}
