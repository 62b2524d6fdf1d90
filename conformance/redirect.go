package conformance

import (
	"net/http"

	"github.com/aiusage/kit/internal/infra/httpclient"
)

// sameOriginOnly returns a shallow copy of a caller's client that does not
// follow a redirect leaving the origin (scheme, host and port) of the first
// request, nor one from https to http, nor more than 10 in a row: the 3xx
// itself is the answer the checks judge, and the credential never travels
// to another origin. Within the origin, c's own CheckRedirect, if any, then
// decides.
func sameOriginOnly(c *http.Client) *http.Client {
	return httpclient.SameOrigin(c, func(*httpclient.Refused) error { return http.ErrUseLastResponse })
}
