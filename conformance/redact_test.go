package conformance

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedactURL(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"access_token among other parameters", "http://h/conversations?access_token=s3cret&limit=1", "http://h/conversations?access_token=$TOKEN&limit=1"},
		{"api_key escaped", "http://h/x?api_key=a%2Fb", "http://h/x?api_key=$TOKEN"},
		{"no credential", "http://t/t?limit=1", "http://t/t?limit=1"},
		{"no query", "http://h/x", "http://h/x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, redactURL(c.in), c.in)
		})
	}
}

// TestNoSecretInReports runs checks against a server that answers every
// request with a credential in the query string by a 429 in text/plain,
// and every other one with a 500: the token must appear in no report.
func TestNoSecretInReports(t *testing.T) {
	t.Parallel()
	const secret = "SuperSecret123"
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Query().Has("access_token") || r.URL.Query().Has("api_key") {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte("slow down")) // ENV-04 reports this text/plain answer, URL included
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+secret {
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"type":"about:blank","title":"Unauthorized","status":401}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":[],"hasMore":false,"nextCursor":null}`))
	}))
	t.Cleanup(srv.Close)
	rep, err := Run(context.Background(), Config{BaseURL: srv.URL, Token: secret, MaxRate: 5000, Only: []string{"AUTH-05", "ENV-04", "HTTP"}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"json", func(b *bytes.Buffer) error { return rep.WriteJSON(b) }},
		{"junit", func(b *bytes.Buffer) error { return rep.WriteJUnit(b) }},
		{"text", func(b *bytes.Buffer) error { return rep.WriteText(b, false) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, tc.write(&b))
			require.NotContains(t, b.String(), secret)
		})
	}
	// A request still rate limited after the retries is an ERROR, not a
	// verdict on the provider's answer.
	for _, r := range rep.Results {
		if r.ID == "AUTH-05" {
			require.Equal(t, StatusError, r.Status, r.Message)
			require.True(t, strings.Contains(r.Message, "rate limited") || r.Evidence != nil && strings.Contains(r.Evidence.Response, "rate limited"), r.Message)
		}
	}
}

func TestBaselinePrefix(t *testing.T) {
	t.Parallel()
	s := newSession(Config{Baseline: []string{"PAGE"}})
	s.fail("PAGE-10", "/events", "readable cursor", nil)
	s.pass("ENV-01", "/events", "ok")
	s.finish()
	for _, r := range s.results {
		if r.ID == "PAGE-10" {
			require.True(t, r.Baselined)
		}
	}
	require.Empty(t, s.stale())
}
