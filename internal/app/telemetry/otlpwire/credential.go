package otlpwire

import (
	"net/url"
	"strings"
)

// BearerToken returns the token of an Authorization value (an HTTP header
// or gRPC metadata) with the scheme Bearer, in any case, and whether it
// has one. The value may still be percent-encoded as the OTLP exporter
// configuration writes OTEL_EXPORTER_OTLP_HEADERS ("Bearer%20KEY"), which
// some SDKs send without decoding it.
func BearerToken(v string) (string, bool) {
	scheme, token, ok := strings.Cut(unescape(strings.TrimSpace(v)), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// APIKey returns the key of an X-API-Key value, percent-decoded as
// [BearerToken] decodes its value.
func APIKey(v string) string {
	return strings.TrimSpace(unescape(strings.TrimSpace(v)))
}

// unescape percent-decodes v, or returns it as it is when it holds no
// escape or a malformed one (then the key it holds is unknown anyway).
// A '+' stays a '+': the OTLP header format is not a form encoding.
func unescape(v string) string {
	if !strings.Contains(v, "%") {
		return v
	}
	d, err := url.PathUnescape(v)
	if err != nil {
		return v
	}
	return d
}
