package webhook

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aiusage/kit/internal/infra/httpclient"
)

// Message is one delivery attempt of a webhook message.
type Message struct {
	// URL is the receiver's address.
	URL string
	// Secret is the signing secret ("whsec_...").
	Secret string
	// ID is the message id (webhook-id): the same for every attempt of one
	// message, so that a receiver can drop duplicates.
	ID string
	// Timestamp is the time of this attempt (webhook-timestamp, sent in
	// Unix seconds): each attempt is signed anew with its own time. A
	// Retry-After date is counted from it.
	Timestamp time.Time
	// Body is the payload, sent and signed byte for byte as JSON.
	Body []byte
	// UserAgent is the User-Agent header; empty leaves the client's
	// default.
	UserAgent string
}

// Outcome classifies how one delivery attempt ended.
type Outcome int

// The outcomes of [Send].
const (
	// NotSent: the message could not be signed or its request built (a
	// malformed secret, id or URL); no attempt of it can succeed.
	NotSent Outcome = iota
	// NoAnswer: no response came: the connection failed, the caller's
	// client refused the address, or the time ran out.
	NoAnswer
	// Delivered: the receiver answered 2xx.
	Delivered
	// Redirected: the receiver answered 3xx and the caller's client did not
	// follow it.
	Redirected
	// Refused: the receiver answered any other status, 4xx or 5xx.
	Refused
)

// maxAnswer is how much of a receiver's answer [Result.Answer] keeps;
// maxDrain is how much of it is read in all (the rest is left unread).
const (
	maxAnswer = 512
	maxDrain  = 64 << 10
)

// Result is the end of one delivery attempt, for the caller to map onto its
// own retry policy.
type Result struct {
	Outcome Outcome
	// Status is the receiver's HTTP status; 0 when Outcome is NotSent or
	// NoAnswer.
	Status int
	// RetryAfter is the wait the receiver's Retry-After asks for (see
	// [httpclient.RetryAfter], counted from [Message.Timestamp]), when it
	// did not answer 2xx; 0 when it asked for none.
	RetryAfter time.Duration
	// Location is where a 3xx points, resolved against the request's URL;
	// nil when it sent none.
	Location *url.URL
	// Answer is the start of the receiver's answer body (at most 512 bytes,
	// surrounding white space trimmed), for a log.
	Answer string
	// Err is why the attempt was NotSent (it wraps [ErrSecret], [ErrID],
	// [ErrTimestamp] or the URL's parse error) or got NoAnswer (the
	// client's error, such as one wrapping [context.DeadlineExceeded]);
	// nil otherwise.
	Err error
}

// Send makes one delivery attempt: it signs m ([Sign]) and POSTs m.Body to
// m.URL through c with Content-Type application/json, the User-Agent
// m.UserAgent when set, and the Standard Webhooks headers webhook-id,
// webhook-timestamp and webhook-signature. It reads at most 64 KiB of the
// answer and closes it.
//
// c is the caller's: its dialer (which may guard the addresses connected
// to), its timeout and its redirect policy apply. A client that does not
// follow redirects (CheckRedirect returning [http.ErrUseLastResponse]) gets
// the 3xx back as [Redirected].
func Send(ctx context.Context, c *http.Client, m Message) Result {
	sig, err := Sign(m.Secret, m.ID, m.Timestamp, m.Body)
	if err != nil {
		return Result{Outcome: NotSent, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return Result{Outcome: NotSent, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if m.UserAgent != "" {
		req.Header.Set("User-Agent", m.UserAgent)
	}
	req.Header.Set(HeaderID, m.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(m.Timestamp.Unix(), 10))
	req.Header.Set(HeaderSignature, sig)
	resp, err := c.Do(req)
	if err != nil {
		return Result{Outcome: NoAnswer, Err: err}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain-maxAnswer))
	r := Result{Status: resp.StatusCode, Answer: string(bytes.TrimSpace(answer))}
	switch resp.StatusCode / 100 {
	case 2:
		r.Outcome = Delivered
		return r
	case 3:
		r.Outcome = Redirected
		r.Location, _ = resp.Location()
	default:
		r.Outcome = Refused
	}
	r.RetryAfter, _ = httpclient.RetryAfter(resp.Header.Get("Retry-After"), m.Timestamp)
	return r
}
