package httpx

import (
	"net/http"
	"strings"
)

// Credential returns the credential a request carries: the X-API-Key header
// when present (even empty: it wins over Authorization), else the token of
// "Authorization: Bearer <token>" (the scheme is case-insensitive). With bare
// true, an Authorization header without a scheme ("Authorization: <key>") is
// accepted too, as the review-task API does.
//
// present is false when the request carries neither header; a header of
// another form is present with an empty credential, which no credential
// matches.
func Credential(r *http.Request, bare bool) (credential string, present bool) {
	if v := r.Header.Values("X-API-Key"); len(v) > 0 {
		return strings.TrimSpace(v[0]), true
	}
	a := strings.TrimSpace(r.Header.Get("Authorization"))
	if a == "" {
		return "", false
	}
	scheme, token, ok := strings.Cut(a, " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(token), true
	}
	if bare && !ok {
		return a, true
	}
	return "", true
}
