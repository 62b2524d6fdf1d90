package judge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Defaults of [Client].
const (
	// DefaultTimeout bounds one judge call when Client.Timeout is 0.
	DefaultTimeout = 30 * time.Second
	// MaxResponseBytes bounds the body of an answer.
	MaxResponseBytes = 1 << 20
)

// Verdict is the judge's answer about one sentence.
type Verdict struct {
	// Match is true when the judge said the sentence says what the
	// instruction describes.
	Match bool
	// Quote is, when Match, the words the judge quoted: a substring of the
	// sentence.
	Quote string
	// Answered is false when the answer did not parse, or quoted words that
	// are not in the sentence: "no answer". Match and Quote are then unset.
	Answered bool
}

// UnavailableError is the error of a judge call that could not be answered:
// a network error, a timeout, a 5xx or a 429. The evaluation cannot run; it
// is to be tried again later, never to be approved.
type UnavailableError struct {
	// URL is the endpoint called.
	URL string
	// Status is the HTTP status of the answer; 0 when there was none
	// (network error, timeout).
	Status int
	// RetryAfter is the wait the endpoint asked for (Retry-After of a 429 or
	// 503); 0 when it named none.
	RetryAfter time.Duration
	// Err is the underlying error.
	Err error
}

// Error implements error.
func (e *UnavailableError) Error() string {
	msg := "judge: " + e.URL + " is unavailable"
	if e.Status != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(", retry after %s", e.RetryAfter)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// ErrRedirect is wrapped by the error of a call the endpoint redirected to
// another origin (scheme, host and port), or from https to http. Such a
// redirect is not followed: it would carry the API key and the request's text
// to a server the URL does not name.
var ErrRedirect = errors.New("judge: redirect to another origin refused")

// Client asks an OpenAI-compatible chat completions endpoint (OpenAI, Azure
// OpenAI, Ollama, vLLM, llama.cpp's server) whether a sentence says what an
// instruction describes. It is safe for concurrent use.
type Client struct {
	// URL is the full chat completions endpoint, for example
	// http://localhost:11434/v1/chat/completions. Required.
	URL string
	// Model is sent as "model".
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>", or in
	// the header APIKeyHeader names.
	APIKey string
	// APIKeyHeader, when set, is the header that carries APIKey as it is,
	// instead of Authorization with Bearer: "api-key" for Azure OpenAI.
	APIKeyHeader string
	// HTTPClient sends the requests. Default: http.DefaultClient's
	// transport. Either way, a redirect is followed only within the origin
	// of URL; one elsewhere fails the call with [ErrRedirect].
	HTTPClient *http.Client
	// Timeout bounds one call. Default (0): DefaultTimeout (30 s).
	Timeout time.Duration
	// Now is the clock that reads a Retry-After date. Default: time.Now.
	Now func() time.Time
}

// Decide asks the judge whether sentence says what instruction describes.
// The sentence is sent between random markers, declared data in the system
// message; the answer must follow a JSON schema {match, quote}. A quote is
// checked to occur in the sentence, after trimming white space, comparing
// case-sensitively. An answer that does not parse or quotes what is not
// there is a Verdict with Answered false and no error. An error is a
// [*UnavailableError] (network, timeout, 5xx, 429), or a configuration error
// (no URL, a redirect to another origin, a 4xx other than 429).
func (c *Client) Decide(ctx context.Context, instruction, sentence string) (Verdict, error) {
	return Verdict{}, errors.New("judge: not implemented yet")
}
