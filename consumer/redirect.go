package consumer

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// ErrRedirect is wrapped by the error of a request whose answer redirects
// to another origin (scheme, host and port), or from https to http: the
// credential the request carries is meant for the provider's origin only,
// so such a redirect is not followed. Such an error is not retried.
var ErrRedirect = errors.New("redirect to another origin refused")

// maxRedirects is how many same-origin redirects a request follows, as
// net/http's default policy.
const maxRedirects = 10

// SameOriginRedirects returns a shallow copy of c (of a zero http.Client
// when c is nil) that follows a redirect only when it stays on the origin
// (scheme, host and port) of the first request, and so never from https to
// http, at most 10 in a row, and then asks c's own CheckRedirect, if any. A
// redirect elsewhere fails the request with an error wrapping [ErrRedirect]
// that names the target's host, not its credential. Go's own policy forwards
// custom headers such as X-API-Key to any host, and Authorization to a
// subdomain or over a downgrade to http.
//
// [Client] applies it to its HTTPClient; a caller sending a credential with
// its own client may too.
func SameOriginRedirects(c *http.Client) *http.Client {
	var cp http.Client
	if c != nil {
		cp = *c
	}
	next := cp.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := CheckSameOrigin(req, via); err != nil {
			return err
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	return &cp
}

// CheckSameOrigin is the check of [SameOriginRedirects], usable as an
// http.Client's CheckRedirect: nil when req, a redirect of via[0], stays on
// via[0]'s origin and fewer than 10 redirects came before it.
func CheckSameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil
	}
	first := via[0].URL
	if origin(req.URL) != origin(first) {
		what := "another origin"
		if strings.EqualFold(first.Scheme, "https") && strings.EqualFold(req.URL.Scheme, "http") {
			what = "plain http"
		}
		return fmt.Errorf("%w: %s redirected to %s on %s; the credential is sent only to %s",
			ErrRedirect, first.Host, req.URL.Host, what, origin(first))
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// origin is scheme://host:port of u, in lower case, with the scheme's
// default port written out.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
