// Package openaiapi is what the clients of OpenAI-compatible endpoints
// (policy/embeddings, policy/judge) share of one call: the API key in
// Authorization or in a header of its own (Azure OpenAI's api-key), a JSON
// body, redirects followed only within the URL's origin, and an answer read
// up to a bound. It imports nothing of the kit but httpclient, so that the
// public packages may import it.
package openaiapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/aiusage/kit/internal/infra/httpclient"
)

// Endpoint is where one call goes and how it is authorised.
type Endpoint struct {
	// URL is the full endpoint.
	URL string
	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>", or in
	// the header APIKeyHeader names, as it is.
	APIKey, APIKeyHeader string
	// Client sends the request, through [httpclient.SameOrigin].
	Client *http.Client
	// Redirect is the error of a redirect SameOrigin refuses (see
	// [RedirectError]).
	Redirect func(*httpclient.Refused) error
}

// Answer is an answer to [Endpoint.Post].
type Answer struct {
	// Status is the HTTP status code; StatusText the status line's text
	// ("503 Service Unavailable").
	Status     int
	StatusText string
	// Header is the answer's header.
	Header http.Header
	// Body is at most the bound Post was given plus one byte: a longer
	// body is longer than the bound.
	Body []byte
}

// OK reports whether the status is 2xx.
func (a Answer) OK() bool { return a.Status >= 200 && a.Status <= 299 }

// Detail describes an answer that is not OK: its status line and the first
// 200 bytes of its body, quoted.
func (a Answer) Detail() string {
	const show = 200
	detail := a.Body
	if len(detail) > show {
		detail = detail[:show]
	}
	return fmt.Sprintf("%s: %q", a.StatusText, detail)
}

// NewRequest returns the POST of body (JSON) to the endpoint, with its key.
func (e Endpoint) NewRequest(ctx context.Context, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	switch {
	case e.APIKey == "":
	case e.APIKeyHeader != "":
		req.Header.Set(e.APIKeyHeader, e.APIKey)
	default:
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	return req, nil
}

// Do sends req (from [Endpoint.NewRequest]) and reads at most max+1 bytes
// of the answer. An error without an answer (the network, a refused
// redirect) comes back as the client returned it, with a zero Answer; an
// error reading the body says so, with the Answer's status and header.
func (e Endpoint) Do(req *http.Request, max int64) (Answer, error) {
	resp, err := httpclient.SameOrigin(e.Client, e.Redirect).Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	a := Answer{Status: resp.StatusCode, StatusText: resp.Status, Header: resp.Header}
	a.Body, err = io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return a, fmt.Errorf("reading the answer: %w", err)
	}
	return a, nil
}

// RedirectError returns the error of a redirect [httpclient.SameOrigin]
// refuses: one after too many redirects as it is, one to another origin
// wrapping sentinel (the client's ErrRedirect).
func RedirectError(sentinel error) func(*httpclient.Refused) error {
	return func(r *httpclient.Refused) error {
		if r.TooMany {
			return r
		}
		return fmt.Errorf("%w: %s", sentinel, r)
	}
}
