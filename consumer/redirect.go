package consumer

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/aiusage/kit/internal/infra/httpclient"
)

// ErrRedirect is wrapped by the error of a request whose answer redirects
// to another origin (scheme, host and port), or from https to http: the
// credential the request carries is meant for the provider's origin only,
// so such a redirect is not followed. Such an error is not retried.
var ErrRedirect = errors.New("redirect to another origin refused")

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
	return httpclient.SameOrigin(c, redirectError)
}

// CheckSameOrigin is the check of [SameOriginRedirects], usable as an
// http.Client's CheckRedirect: nil when req, a redirect of via[0], stays on
// via[0]'s origin and fewer than 10 redirects came before it.
func CheckSameOrigin(req *http.Request, via []*http.Request) error {
	if r := httpclient.CheckSameOrigin(req, via); r != nil {
		return redirectError(r)
	}
	return nil
}

// redirectError is the error of a redirect [SameOriginRedirects] refuses.
func redirectError(r *httpclient.Refused) error {
	if r.TooMany {
		return r
	}
	what := "another origin"
	if r.Downgrade() {
		what = "plain http"
	}
	return fmt.Errorf("%w: %s redirected to %s on %s; the credential is sent only to %s",
		ErrRedirect, r.From.Host, r.To.Host, what, httpclient.Origin(r.From))
}
