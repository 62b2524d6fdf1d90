package conformance

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// sameOriginOnly returns a shallow copy of a caller's client that does not
// follow a redirect leaving the origin (scheme, host and port) of the first
// request, nor one from https to http: the 3xx itself is the answer the
// checks judge, and the credential never travels to another origin. Within
// the origin, c's own CheckRedirect (or net/http's default) decides.
func sameOriginOnly(c *http.Client) *http.Client {
	cp := *c
	next := cp.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && originOf(req.URL) != originOf(via[0].URL) {
			return http.ErrUseLastResponse
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return http.ErrUseLastResponse
		}
		return nil
	}
	return &cp
}

// originOf is scheme://host:port of u in lower case, with the scheme's
// default port written out.
func originOf(u *url.URL) string {
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
