package webhooktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
)

// ErrBadSignature is returned by [Verify] when a delivery is not signed by
// the secret. It is deliberately the only error: [Verify] is a second,
// independent implementation of the Standard Webhooks check, written without
// the service's code, so a bug in either shows up as a disagreement.
var ErrBadSignature = errors.New("webhooktest: bad webhook signature")

// Verify reports whether the headers webhook-id, webhook-timestamp and
// webhook-signature of h sign body under secret ("whsec_" + base64 key),
// following the Standard Webhooks specification: one of the space-separated
// "v1,<base64>" entries must equal the base64 HMAC-SHA256 of
// "id.timestamp.body". It does not look at the timestamp's age.
func Verify(secret string, h http.Header, body []byte) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") || len(key) == 0 {
		return ErrBadSignature
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	if id == "" || ts == "" {
		return ErrBadSignature
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := []byte("v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	for _, sig := range strings.Split(h.Get("webhook-signature"), " ") {
		if hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrBadSignature
}
