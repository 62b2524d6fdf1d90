package httpclient

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter bounds the wait [RetryAfter] returns: a day. It only keeps a
// receiver's or provider's answer from naming an absurd wait (or one that
// overflows a time.Duration); each caller then applies its own, shorter
// bound, the one its retry policy needs.
const MaxRetryAfter = 24 * time.Hour

// RetryAfter reads a Retry-After value (RFC 9110, section 10.2.3): either
// delay-seconds, decimal digits only, or an HTTP date, counted from now. A
// date in the past is a wait of 0; a wait longer than [MaxRetryAfter] is
// MaxRetryAfter. Surrounding white space is ignored. ok is false, with 0,
// when v is empty or neither form: a sign, a fraction, or more seconds than
// an int64 holds.
func RetryAfter(v string, now time.Time) (wait time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if strings.Trim(v, "0123456789") == "" {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false
		}
		return time.Duration(min(secs, int64(MaxRetryAfter/time.Second))) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(at.Sub(now), 0), MaxRetryAfter), true
}
