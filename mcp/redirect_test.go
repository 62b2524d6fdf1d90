package mcp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/mcp"
)

// redirectingPair returns a server that redirects every request to a second
// server of another origin, and the count of credentials that second one saw.
func redirectingPair(t *testing.T) (from, to string, leaked *atomic.Int32) {
	t.Helper()
	leaked = new(atomic.Int32)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, strings.TrimPrefix(other.URL, "http://"), leaked
}

// The MCP transport of the consumer does not follow a redirect to another
// origin with its bearer token (mcp-go's default client would).
func TestSourceRefusesCrossOriginRedirect(t *testing.T) {
	t.Parallel()
	from, to, leaked := redirectingPair(t)
	_, err := mcp.NewSource(t.Context(), from+"/mcp", "tok-secret")
	require.Error(t, err)
	require.Contains(t, err.Error(), to)
	require.NotContains(t, err.Error(), "tok-secret")
	require.Zero(t, leaked.Load())
}

// NewRemote's tools do not carry the token across origins either, even
// through a caller's client that follows every redirect.
func TestRemoteRefusesCrossOriginRedirect(t *testing.T) {
	t.Parallel()
	from, to, leaked := redirectingPair(t)
	srv, err := mcp.NewRemote(from, fullToken, &http.Client{})
	require.NoError(t, err)
	c, err := client.NewInProcessClient(srv.MCPServer())
	require.NoError(t, err)
	startClient(t, c)
	res := call(t, c, "list_assistants", nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), to)
	require.Contains(t, text(res), consumer.ErrRedirect.Error())
	require.NotContains(t, text(res), fullToken)
	require.Zero(t, leaked.Load())
}
