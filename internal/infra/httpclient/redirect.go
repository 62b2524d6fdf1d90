package httpclient

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// MaxRedirects is how many redirects in a row [SameOrigin] follows, as
// net/http's default policy.
const MaxRedirects = 10

// Refused is a redirect [SameOrigin] does not follow: one that leaves the
// origin (scheme, host and port) of the first request, or one that comes
// after [MaxRedirects] redirects within it.
type Refused struct {
	// From is the URL of the first request; To is where the redirect
	// points.
	From, To *url.URL
	// TooMany is set when To is on From's origin but MaxRedirects came
	// before it.
	TooMany bool
}

// Downgrade reports whether the redirect goes from https to plain http.
func (r *Refused) Downgrade() bool {
	return strings.EqualFold(r.From.Scheme, "https") && strings.EqualFold(r.To.Scheme, "http")
}

// Error names the hosts, never the URLs: a URL may carry a credential.
func (r *Refused) Error() string {
	if r.TooMany {
		return fmt.Sprintf("stopped after %d redirects", MaxRedirects)
	}
	return fmt.Sprintf("%s redirected to %s", r.From.Host, r.To.Host)
}

// CheckSameOrigin returns nil when req, a redirect of via[0], stays on
// via[0]'s origin and fewer than [MaxRedirects] redirects came before it;
// else why it is not followed.
func CheckSameOrigin(req *http.Request, via []*http.Request) *Refused {
	if len(via) == 0 {
		return nil
	}
	first := via[0].URL
	if Origin(req.URL) != Origin(first) {
		return &Refused{From: first, To: req.URL}
	}
	if len(via) >= MaxRedirects {
		return &Refused{From: first, To: req.URL, TooMany: true}
	}
	return nil
}

// SameOrigin returns a shallow copy of c (of a zero http.Client when c is
// nil) that follows a redirect only when [CheckSameOrigin] allows it, so
// never to another origin nor from https to http, and then asks c's own
// CheckRedirect, if any. A redirect it does not follow ends the request
// with the error refuse returns for it; refuse returning
// [http.ErrUseLastResponse] makes the 3xx itself the answer.
//
// Go's own policy forwards custom headers such as X-API-Key to any host,
// and Authorization to a subdomain or over a downgrade to http: a client
// that sends a credential uses this one.
func SameOrigin(c *http.Client, refuse func(*Refused) error) *http.Client {
	var cp http.Client
	if c != nil {
		cp = *c
	}
	next := cp.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if r := CheckSameOrigin(req, via); r != nil {
			return refuse(r)
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	return &cp
}

// Origin is scheme://host:port of u, in lower case, with the scheme's
// default port written out.
func Origin(u *url.URL) string {
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
