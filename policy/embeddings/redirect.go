package embeddings

import (
	"errors"

	"github.com/aiusage/kit/internal/infra/openaiapi"
)

// ErrRedirect is wrapped by the error of a request the endpoint redirected
// to another origin (scheme, host and port), or from https to http. Such a
// redirect is not followed: it would carry the API key and the texts to a
// server the URL does not name.
var ErrRedirect = errors.New("embeddings: redirect to another origin refused")

// redirectError is the error of a redirect the client refuses.
var redirectError = openaiapi.RedirectError(ErrRedirect)
