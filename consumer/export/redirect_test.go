package export_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/export"
)

// An export server that redirects to another origin does not get the token
// carried there; the fetch fails at once, naming the target host.
func TestHTTPRedirectToAnotherOriginRefused(t *testing.T) {
	t.Parallel()
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		http.NotFound(rw, r)
	}))
	t.Cleanup(other.Close)
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(rw, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	src, err := export.New(export.Config{URL: srv.URL, Token: "tok-secret", MaxRetries: 3,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	require.NoError(t, err)
	_, err = src.Fetch(context.Background(), consumer.Conversations, consumer.Query{})
	require.ErrorIs(t, err, consumer.ErrRedirect)
	require.Contains(t, err.Error(), strings.TrimPrefix(other.URL, "http://"))
	require.NotContains(t, err.Error(), "tok-secret")
	require.Zero(t, leaked.Load(), "the other origin saw the token")
	require.Equal(t, int32(1), asked.Load(), "a refused redirect is not retried")
}
