package openaiapi

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var errTestRedirect = errors.New("redirect refused")

func TestPost(t *testing.T) {
	var got http.Header
	var gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, "http://elsewhere.test/x", http.StatusFound)
		case "/busy":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(strings.Repeat("x", 300)))
		default:
			_, _ = w.Write([]byte(`{"ok":true}`))
		}
	}))
	t.Cleanup(srv.Close)
	call := func(ep Endpoint, path string, max int64) (Answer, error) {
		t.Helper()
		ep.URL, ep.Redirect = srv.URL+path, RedirectError(errTestRedirect)
		req, err := ep.NewRequest(t.Context(), []byte(`{"q":1}`))
		require.NoError(t, err)
		return ep.Do(req, max)
	}

	a, err := call(Endpoint{APIKey: "k1"}, "/", 100)
	require.NoError(t, err)
	require.True(t, a.OK())
	require.Equal(t, `{"ok":true}`, string(a.Body))
	require.Equal(t, `{"q":1}`, gotBody)
	require.Equal(t, "Bearer k1", got.Get("Authorization"))
	require.Equal(t, "application/json", got.Get("Content-Type"))
	require.Equal(t, "application/json", got.Get("Accept"))

	_, err = call(Endpoint{APIKey: "k2", APIKeyHeader: "api-key"}, "/", 100)
	require.NoError(t, err)
	require.Equal(t, "k2", got.Get("api-key"))
	require.Empty(t, got.Get("Authorization"), "the key goes in its own header only")

	_, err = call(Endpoint{}, "/", 100)
	require.NoError(t, err)
	require.Empty(t, got.Get("Authorization"))

	a, err = call(Endpoint{}, "/", 3)
	require.NoError(t, err)
	require.Len(t, a.Body, 4, "at most the bound and one byte: longer than the bound")

	a, err = call(Endpoint{}, "/busy", 1000)
	require.NoError(t, err)
	require.False(t, a.OK())
	require.Equal(t, http.StatusServiceUnavailable, a.Status)
	require.Equal(t, "7", a.Header.Get("Retry-After"))
	require.Equal(t, `503 Service Unavailable: "`+strings.Repeat("x", 200)+`"`, a.Detail(), "the body cut at 200 bytes")

	a, err = call(Endpoint{APIKey: "k3"}, "/away", 100)
	require.ErrorIs(t, err, errTestRedirect, "a redirect to another origin is refused")
	require.Zero(t, a.Status)

	_, err = Endpoint{URL: "::not a url"}.NewRequest(t.Context(), nil)
	require.Error(t, err)
}

// TestDoCutBody: a body cut short is an error that says so, with the
// answer's status.
func TestDoCutBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = w.Write([]byte("short"))
	}))
	t.Cleanup(srv.Close)
	ep := Endpoint{URL: srv.URL}
	req, err := ep.NewRequest(t.Context(), nil)
	require.NoError(t, err)
	a, err := ep.Do(req, 1000)
	require.ErrorContains(t, err, "reading the answer")
	require.Equal(t, http.StatusOK, a.Status)
}
