package consumer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
)

// credentialTrap is a server of another origin that records every
// credential it is sent.
type credentialTrap struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
}

func newCredentialTrap(t *testing.T) *credentialTrap {
	t.Helper()
	c := &credentialTrap{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.seen = append(c.seen, r.Header.Get("Authorization")+r.Header.Get("X-API-Key"))
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":[],"hasMore":false,"nextCursor":null}`))
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *credentialTrap) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

// A provider that redirects to another origin does not get its credential
// carried there: Go's default policy forwards X-API-Key to any host, and
// Authorization to the same host name on another port.
func TestClientRefusesCrossOriginRedirects(t *testing.T) {
	t.Parallel()
	trap := newCredentialTrap(t)
	for _, apiKey := range []bool{false, true} {
		for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, trap.srv.URL+r.URL.RequestURI(), status)
			}))
			t.Cleanup(srv.Close)
			var retries int
			c, err := consumer.NewClient(consumer.ClientConfig{URL: srv.URL, Token: "s3cret-token", APIKeyHeader: apiKey,
				OnRetry: func(consumer.Retry) { retries++ },
				Sleep:   func(context.Context, time.Duration) error { return nil }})
			require.NoError(t, err)
			_, err = c.Fetch(t.Context(), consumer.Conversations, consumer.Query{})
			require.ErrorIs(t, err, consumer.ErrRedirect)
			trapHost := strings.TrimPrefix(trap.srv.URL, "http://")
			require.Contains(t, err.Error(), trapHost, "the error names where the redirect pointed")
			require.NotContains(t, err.Error(), "s3cret-token")
			require.Zero(t, retries, "a refused redirect is not retried")
		}
	}
	require.Empty(t, trap.requests(), "the other origin was never asked, so never saw the credential")
}

// A redirect within the provider's origin is followed, with the credential.
func TestClientFollowsSameOriginRedirects(t *testing.T) {
	t.Parallel()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v2/") {
			http.Redirect(w, r, "/v2"+r.URL.RequestURI(), http.StatusMovedPermanently)
			return
		}
		got = append(got, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":[],"hasMore":false,"nextCursor":null}`))
	}))
	t.Cleanup(srv.Close)
	c, err := consumer.NewClient(consumer.ClientConfig{URL: srv.URL, Token: "tok"})
	require.NoError(t, err)
	_, err = c.Fetch(t.Context(), consumer.Conversations, consumer.Query{})
	require.NoError(t, err)
	require.Equal(t, []string{"Bearer tok"}, got)
}

func TestCheckSameOrigin(t *testing.T) {
	t.Parallel()
	req := func(u string) *http.Request {
		p, err := url.Parse(u)
		require.NoError(t, err)
		return &http.Request{URL: p}
	}
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"https://p.example/a", "https://p.example:443/b", true},
		{"https://P.example/a", "https://p.EXAMPLE/b", true},
		{"http://p.example/a", "http://p.example:80/b", true},
		{"https://p.example/a", "http://p.example/b", false},
		{"https://p.example/a", "https://p.example:8443/b", false},
		{"https://p.example/a", "https://api.p.example/b", false},
		{"https://p.example/a", "https://evil.example/b", false},
		{"http://[::1]:8080/a", "http://[::1]:8080/b", true},
		{"http://[::1]:8080/a", "http://[::1]:8081/b", false},
	} {
		err := consumer.CheckSameOrigin(req(tc.to), []*http.Request{req(tc.from)})
		if tc.ok {
			require.NoError(t, err, "%s -> %s", tc.from, tc.to)
		} else {
			require.ErrorIs(t, err, consumer.ErrRedirect, "%s -> %s", tc.from, tc.to)
		}
	}
	err := consumer.CheckSameOrigin(req("http://p.example/b"), []*http.Request{req("https://p.example/a")})
	require.ErrorContains(t, err, "plain http")
	// The chain of redirects is bounded, as by net/http's own policy.
	via := make([]*http.Request, 10)
	for i := range via {
		via[i] = req("https://p.example/a")
	}
	require.Error(t, consumer.CheckSameOrigin(req("https://p.example/b"), via))
	require.NoError(t, consumer.CheckSameOrigin(req("https://p.example/b"), via[:9]))
}
