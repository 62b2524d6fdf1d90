package telemetry

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/telemetry/otlpwire"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/spec"
)

// The messages of the refusals of the authentication. The 401 is one for
// every reason (no key, an unknown, revoked or expired key), so that it
// tells nothing of the keys that exist.
const (
	msgUnauthorized = "A valid Ingestion key is required, as Authorization: Bearer KEY or X-API-Key: KEY."
	msgBusy         = "Too many requests of this key are in flight; retry when one has finished."
	msgUnavailable  = "The service cannot authenticate the key now; retry shortly."
)

// principalKey is the context key of the authenticated Ingestion key.
type principalKey struct{}

// principalOf returns the Ingestion key that authenticated the request of
// ctx.
func principalOf(ctx context.Context) (org.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(org.Principal)
	return p, ok
}

// secretOf returns the key a request sends: Authorization: Bearer, else
// X-API-Key, either percent-encoded or not ([otlpwire.BearerToken]). An
// Authorization of another scheme sends no key.
func secretOf(r *http.Request) string {
	if a := r.Header.Get("Authorization"); a != "" {
		token, _ := otlpwire.BearerToken(a)
		return token
	}
	return otlpwire.APIKey(r.Header.Get("X-API-Key"))
}

// authenticate runs next for a request with a valid Ingestion key, with the
// key's principal in its context, and within the key's bound of requests in
// flight. It refuses the others before their body is read, with a
// google.rpc.Status in the request's encoding: 401 for a missing, unknown,
// revoked or expired key, 403 for an API key, 429 with Retry-After when the
// key is past its rate limit or the key or its organisation has too many
// requests in flight.
func (s *Service) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.cfg.Orgs.AuthenticateIngestion(r.Context(), secretOf(r))
		var se *spec.Error
		switch {
		case err == nil:
		case errors.Is(err, spec.ErrUnauthorized):
			w.Header().Set("WWW-Authenticate", `Bearer realm="aiusage"`)
			writeStatus(w, r, http.StatusUnauthorized, msgUnauthorized)
			return
		case errors.Is(err, spec.ErrForbidden) && errors.As(err, &se):
			writeStatus(w, r, http.StatusForbidden, se.Detail)
			return
		default:
			s.log.ErrorContext(r.Context(), "telemetry: authenticate", "error", err)
			w.Header().Set("Retry-After", "1")
			writeStatus(w, r, http.StatusServiceUnavailable, msgUnavailable)
			return
		}
		if wait := s.rate.allow(p.KeyID); wait > 0 {
			s.throttle("http", throttleRate)
			w.Header().Set("Retry-After", retryAfterSeconds(wait))
			writeStatus(w, r, http.StatusTooManyRequests, msgRate)
			return
		}
		release, err := s.cfg.Concurrency.Acquire(p.KeyID, p.OrganisationID)
		if err != nil {
			s.throttle("http", throttleInFlight)
			w.Header().Set("Retry-After", httpx.RetryAfterConcurrent)
			writeStatus(w, r, http.StatusTooManyRequests, msgBusy)
			return
		}
		defer release()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// writeStatus answers a refusal made before the body is read as the
// endpoint answers its other errors ([otlpwire.WriteStatus]). The body is
// not read: the connection is closed after the answer.
func writeStatus(w http.ResponseWriter, r *http.Request, st int, msg string) {
	httpx.CloseUnread(w, r)
	otlpwire.WriteStatus(w, r, st, msg)
}

// retryAfterSeconds returns the Retry-After of a wait: whole seconds,
// rounded up, at least 1.
func retryAfterSeconds(wait time.Duration) string {
	return strconv.FormatInt(max(1, int64(math.Ceil(wait.Seconds()))), 10)
}
