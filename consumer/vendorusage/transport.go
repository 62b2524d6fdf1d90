package vendorusage

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/infra/httpclient"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

var cursorEncoding = base64.RawURLEncoding

// maxBody bounds an answer's body: a page of 168 hourly buckets grouped by
// every dimension stays far below it.
const maxBody = 64 << 20

// get sends GET path?q to the vendor, waiting for the rate limiter before
// every attempt, and retries a 429 (after its retry-after), a 5xx and a
// network error with exponential backoff, at most MaxAttempts attempts in
// all. It returns the body of a 2xx answer.
func (s *Source) get(ctx context.Context, path string, q url.Values) ([]byte, error) {
	u := *s.base
	u.Path = s.base.Path + path
	u.RawQuery = q.Encode()
	target := u.String()
	for attempt := 1; ; attempt++ {
		if err := s.limiter.Wait(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, spec.Errorf(provider.ErrUnavailable, "%s: the request rate allows no request: %v", s.v.title, err)
		}
		body, status, retryAfter, err := s.attempt(ctx, target)
		if err == nil && status/100 == 2 {
			return body, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !httpclient.Transient(status, err, consumer.ErrRedirect, errTooLarge) || attempt >= s.cfg.MaxAttempts {
			if err != nil {
				return nil, &spec.Error{Kind: provider.ErrUnavailable, Err: err,
					Detail: fmt.Sprintf("%s: GET %s failed after %d attempts", s.v.title, path, attempt)}
			}
			return nil, s.statusError(path, status, body, attempt)
		}
		wait := s.backoff.Wait(attempt-1, retryAfter)
		if s.cfg.OnRetry != nil {
			rs, rerr := status, err
			if err != nil {
				rs = 0
			} else {
				rerr = fmt.Errorf("HTTP %d", status)
			}
			s.cfg.OnRetry(consumer.Retry{Resource: consumer.Usage, Attempt: attempt, Wait: wait, Status: rs, Err: rerr})
		}
		s.cfg.Logger.Debug("vendor usage retry", "vendor", s.v.name, "path", path, "status", status, "wait", wait)
		if err := httpclient.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

var errTooLarge = errors.New("answer too large")

// attempt sends one request. retryAfter is -1 when the answer named none.
func (s *Source) attempt(ctx context.Context, target string) (body []byte, status int, retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, 0, -1, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "aiusage-kit")
	s.v.authorize(req.Header, s.cfg.Key)
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, -1, scrub(err, s.cfg.Key)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, resp.StatusCode, -1, fmt.Errorf("reading the body: %w", scrub(err, s.cfg.Key))
	}
	if len(body) > maxBody {
		return nil, resp.StatusCode, -1, fmt.Errorf("%w: more than %d bytes", errTooLarge, maxBody)
	}
	retryAfter = -1
	if d, ok := httpclient.RetryAfter(resp.Header.Get("Retry-After"), s.cfg.Now()); ok {
		retryAfter = d
	}
	return body, resp.StatusCode, retryAfter, nil
}

// scrub keeps the key out of an error's text (a transport error may quote
// a URL or header; the key travels in neither, but an error must never
// show it).
func scrub(err error, key string) error {
	if err == nil || !strings.Contains(err.Error(), key) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), key, "[key]"))
}

// statusError is the error of a final non-2xx answer: its kind from the
// status (401 ErrUnauthorized, 403 ErrForbidden, 429 and 5xx
// ErrUnavailable, ...), its text naming the vendor's own message.
func (s *Source) statusError(path string, status int, body []byte, attempts int) error {
	kind := spec.KindOf(status)
	hint := ""
	switch {
	case status == http.StatusTooManyRequests:
		kind = provider.ErrUnavailable
	case errors.Is(kind, provider.ErrNotFound):
		// The endpoints always exist at the vendor: a 404 is a wrong
		// BaseURL, not a resource the source lacks (which a poller
		// would skip quietly).
		kind = provider.ErrInvalid
		hint = fmt.Sprintf(" (is %s the vendor's API address?)", httpclient.Origin(s.base)+s.base.Path)
	}
	msg := vendorMessage(body)
	if msg == "" {
		msg = "no message"
	}
	msg = strings.ReplaceAll(msg, s.cfg.Key, "[key]")
	after := ""
	if attempts > 1 {
		after = fmt.Sprintf(" (after %d attempts)", attempts)
	}
	return spec.Errorf(kind, "%s answered GET %s with HTTP %d%s: %s%s", s.v.title, path, status, after, msg, hint)
}

// maxMessage bounds the vendor's message quoted in an error.
const maxMessage = 300

// vendorMessage reads the message of an error body: OpenAI's
// {"error":{"message":...}}, Anthropic's {"type":"error","error":{"type":...,
// "message":...}}; "" when there is none.
func vendorMessage(body []byte) string {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	msg := strings.Join(strings.Fields(e.Error.Message), " ")
	if e.Error.Type != "" && msg != "" {
		msg = e.Error.Type + ": " + msg
	}
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
		for !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
		msg += "…"
	}
	return msg
}
