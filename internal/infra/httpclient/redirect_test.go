package httpclient_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/httpclient"
)

func TestCheckSameOrigin(t *testing.T) {
	req := func(u string) *http.Request {
		p, err := url.Parse(u)
		require.NoError(t, err)
		return &http.Request{URL: p}
	}
	for _, tc := range []struct {
		from, to  string
		ok        bool
		downgrade bool
	}{
		{"https://p.example/a", "https://p.example:443/b", true, false},
		{"https://P.example/a", "https://p.EXAMPLE/b", true, false},
		{"http://p.example/a", "http://p.example:80/b", true, false},
		{"https://p.example/a", "http://p.example/b", false, true},
		{"https://p.example/a", "https://p.example:8443/b", false, false},
		{"https://p.example/a", "https://api.p.example/b", false, false},
		{"http://[::1]:8080/a", "http://[::1]:8080/b", true, false},
		{"http://[::1]:8080/a", "http://[::1]:8081/b", false, false},
	} {
		r := httpclient.CheckSameOrigin(req(tc.to), []*http.Request{req(tc.from)})
		if tc.ok {
			require.Nil(t, r, "%s -> %s", tc.from, tc.to)
			continue
		}
		require.NotNil(t, r, "%s -> %s", tc.from, tc.to)
		require.False(t, r.TooMany)
		require.Equal(t, tc.downgrade, r.Downgrade(), "%s -> %s", tc.from, tc.to)
	}
	via := make([]*http.Request, httpclient.MaxRedirects)
	for i := range via {
		via[i] = req("https://p.example/a")
	}
	r := httpclient.CheckSameOrigin(req("https://p.example/b"), via)
	require.NotNil(t, r)
	require.True(t, r.TooMany)
	require.EqualError(t, r, "stopped after 10 redirects")
	require.Nil(t, httpclient.CheckSameOrigin(req("https://p.example/b"), via[:9]))
}

// A redirect within the origin is followed and then put to the client's own
// CheckRedirect; one elsewhere ends the request with refuse's error.
func TestSameOrigin(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the other origin was asked")
	}))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/done", http.StatusFound)
		default:
			_, _ = w.Write([]byte("done"))
		}
	}))
	t.Cleanup(srv.Close)
	asked := 0
	base := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { asked++; return nil }}
	errRefused := errors.New("refused")
	c := httpclient.SameOrigin(base, func(r *httpclient.Refused) error {
		require.Equal(t, strings.TrimPrefix(other.URL, "http://"), r.To.Host)
		return errRefused
	})
	resp, err := c.Get(srv.URL + "/here")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, 1, asked, "the client's own CheckRedirect is asked within the origin")
	_, err = c.Get(srv.URL + "/away")
	require.ErrorIs(t, err, errRefused)

	last := httpclient.SameOrigin(nil, func(*httpclient.Refused) error { return http.ErrUseLastResponse })
	resp, err = last.Get(srv.URL + "/away")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusFound, resp.StatusCode, "the 3xx itself is the answer")
}
