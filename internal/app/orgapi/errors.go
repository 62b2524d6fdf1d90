package orgapi

import (
	"log/slog"
	"net/http"

	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/sqldb"
)

// detailQuery is the detail of an error about a query parameter.
const detailQuery = "A query parameter is invalid."

// detailBusy is the detail of every 503 of the organisation API.
const detailBusy = "The service is busy or a deadline passed; retry the request shortly."

// errorStyle is how the organisation API answers errors, as problem
// details: a 5xx is logged once, with the request id, and shows the client
// nothing of its cause; a request that ran out of time or met a busy
// database is a 503 with Retry-After.
func errorStyle(logger *slog.Logger) httpx.ErrorStyle {
	return httpx.ErrorStyle{
		Logger:     logger,
		Challenge:  `Bearer realm="aiusage"`,
		RetryAfter: "1",
		Internal:   "An unexpected error occurred. Quote the request id to the service's operators.",
		TimedOut:   detailBusy,
		Fixed: map[int]string{
			http.StatusServiceUnavailable: detailBusy,
			// Missing, mistyped, revoked and expired keys get the same answer.
			http.StatusUnauthorized: "A valid API key is required, as X-API-Key or Authorization Bearer.",
		},
		Detail: func(status int) string { return http.StatusText(status) + "." },
		Busy:   sqldb.IsRetryable,
	}
}
