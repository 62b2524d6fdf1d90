package provider

import (
	"net/http"

	"github.com/aiusage/kit/internal/infra/httpx"
)

// writeError writes err as a problem details body ([httpx.WriteError]).
// Details of errors that are not an [*Error] of a known kind never reach the
// client. An error of no known kind of a request that ran out of time (its
// context's deadline passed, as the kit's servers set it before the
// connection's read deadline) is a 503 with Retry-After, not logged: the
// request may be retried, and nothing failed.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	httpx.WriteError(w, r, err, &h.style)
}

// errorStyle is how the provider interface answers errors.
func errorStyle(cfg *config) httpx.ErrorStyle {
	return httpx.ErrorStyle{
		Logger:     cfg.logger,
		Challenge:  `Bearer realm="aiusage"`,
		RetryAfter: "5",
		Internal:   "The provider failed to answer; the request may be retried. Quote the request id to the provider.",
		Detail:     defaultDetail,
	}
}

func defaultDetail(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "Send a valid credential as Authorization: Bearer <token> or X-API-Key: <token>."
	case http.StatusForbidden:
		return "The credential lacks the scope of this endpoint."
	case http.StatusNotFound:
		return "No such record."
	case http.StatusNotImplemented:
		return "This provider does not serve this resource."
	case http.StatusServiceUnavailable:
		return "The provider is temporarily unavailable; retry later."
	}
	return http.StatusText(status)
}
