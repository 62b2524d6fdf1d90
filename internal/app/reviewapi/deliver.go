package reviewapi

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/aiusage/kit/spec/webhook"
)

// WebhookUserAgent is the User-Agent of webhook deliveries.
const WebhookUserAgent = "aiusage-webhooks/1"

// Delivery is one attempt to deliver a webhook message.
type Delivery struct {
	// URL is the receiver's URL, as registered.
	URL string
	// Secret is the webhook's signing secret ("whsec_...").
	Secret string
	// MsgID is the message id (webhook-id): the same for every attempt of
	// one message, so receivers can drop duplicates.
	MsgID string
	// Timestamp is the time of this attempt (webhook-timestamp, sent in
	// Unix seconds): a retry is signed anew with its own time.
	Timestamp time.Time
	// Body is the JSON payload ([github.com/aiusage/kit/spec.WebhookDelivery]), sent and signed
	// byte for byte.
	Body []byte
}

// DeliveryError is the error of a failed delivery attempt. [Deliver] returns
// no other error type.
type DeliveryError struct {
	// Status is the receiver's HTTP status, or 0 when there was no response
	// (network error, timeout, forbidden address, bad secret).
	Status int
	// Retryable says whether another attempt may succeed. It is false for
	// 410 Gone (the receiver asks to stop: disable the webhook), a forbidden
	// address, and a delivery that cannot be signed or addressed; true for
	// every other failure, 3xx and 4xx included.
	Retryable bool
	// RetryAfter is the receiver's Retry-After (429, 503 and others), in
	// delta-seconds or as an HTTP date counted from the attempt's Timestamp,
	// at most a day; 0 when absent or malformed. A scheduler should wait at
	// least that long.
	RetryAfter time.Duration
	// Err is the cause when there was no response, else nil.
	Err error
}

func (e *DeliveryError) Error() string {
	if e.Err != nil {
		// A *url.Error names the URL, which may carry a secret token:
		// keep only its operation and cause.
		var ue *url.Error
		if errors.As(e.Err, &ue) {
			return "webhook delivery failed: " + ue.Op + ": " + ue.Err.Error()
		}
		return "webhook delivery failed: " + e.Err.Error()
	}
	return fmt.Sprintf("webhook delivery failed: receiver answered %d %s", e.Status, http.StatusText(e.Status))
}

func (e *DeliveryError) Unwrap() error { return e.Err }

// Deliver makes one delivery attempt with [webhook.Send]: it POSTs d.Body to
// d.URL, an http or https URL, with Content-Type application/json,
// User-Agent [WebhookUserAgent] and the Standard Webhooks headers webhook-id
// (d.MsgID), webhook-timestamp (d.Timestamp in Unix seconds) and
// webhook-signature ([webhook.Sign] under d.Secret).
//
// Any 2xx answer is success: err is nil. At most 64 KiB of the response body
// is read and discarded. Every failure is a [*DeliveryError] with the status
// (0 without a response) and whether to retry; it wraps the cause, such as
// [ErrForbiddenAddress], [webhook.ErrSecret] or [context.DeadlineExceeded].
//
// c should come from [NewWebhookClient], which guards the addresses
// connected to, does not follow redirects and bounds the attempt's time; nil
// means NewWebhookClient(AddressPolicy{}, 0), built once.
func Deliver(ctx context.Context, c *http.Client, d Delivery) (status int, err error) {
	if c == nil {
		c = defaultWebhookClient()
	}
	if u, err := url.Parse(d.URL); err == nil && u.Scheme != "https" && u.Scheme != "http" {
		return 0, &DeliveryError{Err: fmt.Errorf("%w: url scheme must be https, not %q", ErrInvalidWebhookURL, u.Scheme)}
	}
	r := webhook.Send(ctx, c, webhook.Message{URL: d.URL, Secret: d.Secret, ID: d.MsgID, Timestamp: d.Timestamp,
		Body: d.Body, UserAgent: WebhookUserAgent})
	switch r.Outcome {
	case webhook.NotSent:
		return 0, &DeliveryError{Err: r.Err}
	case webhook.NoAnswer:
		return 0, &DeliveryError{Retryable: !errors.Is(r.Err, ErrForbiddenAddress), Err: r.Err}
	case webhook.Delivered:
		return r.Status, nil
	}
	return r.Status, &DeliveryError{Status: r.Status, Retryable: r.Status != http.StatusGone, RetryAfter: r.RetryAfter}
}

// DefaultRetrySchedule is the wait before each retry of a failed webhook
// delivery: the first retry 5 s after the first attempt failed, the last one
// 27 h 35 min 5 s after the first attempt, 8 attempts in all.
var DefaultRetrySchedule = []time.Duration{
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
	10 * time.Hour,
}

// NextRetry returns how long to wait before attempt number attempt+1, after
// attempt attempts (1-based) have failed: schedule[attempt-1], passed through
// jitter when jitter is not nil (such as [RetryJitter]; a negative result
// counts as 0). The bool is false, with 0, when the schedule is exhausted and
// the message should be given up. attempt 0 or less means nothing has failed
// yet: wait 0.
func NextRetry(schedule []time.Duration, attempt int, jitter func(time.Duration) time.Duration) (time.Duration, bool) {
	if attempt <= 0 {
		return 0, true
	}
	if attempt > len(schedule) {
		return 0, false
	}
	d := schedule[attempt-1]
	if jitter != nil {
		d = max(jitter(d), 0)
	}
	return d, true
}

// RetryJitter returns d moved by a random amount of up to 10% either way, so
// that deliveries that failed together do not all retry at the same instant.
// It is safe for concurrent use.
func RetryJitter(d time.Duration) time.Duration {
	span := int64(d / 10)
	if span <= 0 {
		return d
	}
	return d + time.Duration(rand.Int64N(2*span+1)-span)
}
