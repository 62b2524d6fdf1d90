package embeddings

import (
	"errors"
	"fmt"

	"github.com/aiusage/kit/internal/infra/httpclient"
)

// ErrRedirect is wrapped by the error of a request the endpoint redirected
// to another origin (scheme, host and port), or from https to http. Such a
// redirect is not followed: it would carry the API key and the texts to a
// server the URL does not name.
var ErrRedirect = errors.New("embeddings: redirect to another origin refused")

// redirectError is the error of a redirect [httpclient.SameOrigin] refuses.
func redirectError(r *httpclient.Refused) error {
	if r.TooMany {
		return r
	}
	return fmt.Errorf("%w: %s", ErrRedirect, r)
}
