package embeddings_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/policy/embeddings"
)

// An endpoint that redirects to another origin gets neither the API key nor
// the texts sent there: Go's own policy would re-send a 307's body with a
// custom key header (Azure's api-key) to any host.
func TestRedirectToAnotherOriginRefused(t *testing.T) {
	t.Parallel()
	api, other := newAPI(t)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/embeddings", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(front.Close)
	for _, header := range []string{"", "api-key"} {
		c := &embeddings.Client{URL: front.URL + "/v1/embeddings", APIKey: "sk-secret", APIKeyHeader: header, HTTPClient: &http.Client{}}
		_, err := c.Match(context.Background(), segments, queries)
		require.ErrorIs(t, err, embeddings.ErrRedirect)
		require.Contains(t, err.Error(), strings.TrimPrefix(other.URL, "http://"))
		require.NotContains(t, err.Error(), "sk-secret")
	}
	require.Empty(t, api.inputs(), "the other origin received the request")
}

// A redirect within the endpoint's origin is followed.
func TestRedirectWithinOriginFollowed(t *testing.T) {
	t.Parallel()
	api := &fakeAPI{}
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)
	mux.Handle("/old", http.RedirectHandler("/v1/embeddings", http.StatusPermanentRedirect))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := &embeddings.Client{URL: srv.URL + "/old", APIKey: "sk-test"}
	_, err := c.Match(context.Background(), segments, queries)
	require.NoError(t, err)
	require.Len(t, api.inputs(), 1)
}
