package embeddings

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// ErrRedirect is wrapped by the error of a request the endpoint redirected
// to another origin (scheme, host and port), or from https to http. Such a
// redirect is not followed: it would carry the API key and the texts to a
// server the URL does not name.
var ErrRedirect = errors.New("embeddings: redirect to another origin refused")

// sameOriginOnly returns a shallow copy of c whose CheckRedirect refuses a
// redirect leaving the origin of the first request, and otherwise asks c's
// own CheckRedirect (or applies net/http's limit of 10).
func sameOriginOnly(c *http.Client) *http.Client {
	cp := *c
	next := cp.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && originOf(req.URL) != originOf(via[0].URL) {
			return fmt.Errorf("%w: %s redirected to %s", ErrRedirect, via[0].URL.Host, req.URL.Host)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
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
