package httpx_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/httpx"
)

func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	tp, err := httpx.ParseTrustedProxies("10.0.0.0/8, 192.0.2.7", "fd00::/8 ::ffff:172.16.0.0/108")
	require.NoError(t, err)
	require.Equal(t, "10.0.0.0/8,192.0.2.7/32,fd00::/8,172.16.0.0/12", tp.String())
	require.Equal(t, 4, tp.Len())
	require.NoError(t, tp.Set("2001:db8::1"))
	require.Equal(t, 5, tp.Len())

	none, err := httpx.ParseTrustedProxies("", " , ")
	require.NoError(t, err)
	require.Zero(t, none.Len())

	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0", "fe80::1%eth0", "10.0.0.1/8/8"} {
		_, err := httpx.ParseTrustedProxies(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), fmt.Sprintf("%q", bad))
	}
}

func TestTrustedProxiesClient(t *testing.T) {
	t.Parallel()
	tp, err := httpx.ParseTrustedProxies("10.0.0.0/8,2001:db8:1::/48")
	require.NoError(t, err)
	for name, c := range map[string]struct {
		remote      string
		tls         bool
		xff, xfp    []string
		addr        string
		secure      bool
		withoutList bool // the answer when nobody is trusted, if not the peer's
	}{
		"untrusted peer, forged headers": {remote: "198.51.100.9:4000", xff: []string{"203.0.113.5"}, xfp: []string{"https"},
			addr: "198.51.100.9"},
		"untrusted peer over tls": {remote: "198.51.100.9:4000", tls: true, xfp: []string{"http"}, addr: "198.51.100.9", secure: true},
		"trusted, no headers":     {remote: "10.1.2.3:4000", addr: "10.1.2.3"},
		"trusted, one hop":        {remote: "10.1.2.3:4000", xff: []string{"203.0.113.5"}, xfp: []string{"https"}, addr: "203.0.113.5", secure: true},
		"client forges the left": {remote: "10.1.2.3:4000", xff: []string{"1.2.3.4, 203.0.113.5"}, xfp: []string{"https"},
			addr: "203.0.113.5", secure: true},
		"two trusted hops, lines": {remote: "10.1.2.3:4000", xff: []string{"1.2.3.4", "203.0.113.5, 10.9.9.9"}, xfp: []string{"http"},
			addr: "203.0.113.5"},
		"all trusted":            {remote: "10.1.2.3:4000", xff: []string{"10.7.7.7, 10.8.8.8"}, addr: "10.7.7.7"},
		"broken entry":           {remote: "10.1.2.3:4000", xff: []string{"203.0.113.5, garbage, 10.8.8.8"}, addr: "10.8.8.8"},
		"ports and brackets":     {remote: "10.1.2.3:4000", xff: []string{"[2001:db8:2::5]:443"}, addr: "2001:db8:2::5"},
		"ipv4 with port":         {remote: "10.1.2.3:4000", xff: []string{"203.0.113.5:5123"}, addr: "203.0.113.5"},
		"mapped trusted peer":    {remote: "[::ffff:10.1.2.3]:4000", xff: []string{"::ffff:203.0.113.5"}, addr: "203.0.113.5"},
		"trusted ipv6 peer":      {remote: "[2001:db8:1::9]:4000", xff: []string{"2001:db8:2::5"}, xfp: []string{"HTTPS"}, addr: "2001:db8:2::5", secure: true},
		"proto of nearest proxy": {remote: "10.1.2.3:4000", xfp: []string{"https, http"}, addr: "10.1.2.3"},
		"not an ip remote":       {remote: "pipe", xff: []string{"203.0.113.5"}, addr: ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = c.remote
			if c.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for _, v := range c.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			for _, v := range c.xfp {
				r.Header.Add("X-Forwarded-Proto", v)
			}
			got := tp.Client(r)
			require.Equal(t, c.addr, got.String())
			require.Equal(t, c.secure, got.Secure)
			// Outside the middleware, nothing forwarded is believed.
			require.Equal(t, c.tls, httpx.IsSecure(r))
		})
	}
}

// TestTrustedProxiesRequests sends real requests through the middleware:
// the forwarded headers count only from a trusted peer.
func TestTrustedProxiesRequests(t *testing.T) {
	t.Parallel()
	echo := func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "%s %t", httpx.ClientAddr(r), httpx.IsSecure(r))
	}
	get := func(t *testing.T, url string, headers map[string]string) string {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		require.NoError(t, err)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	forged := map[string]string{"X-Forwarded-For": "203.0.113.5", "X-Forwarded-Proto": "https"}

	// Nobody trusted (the default): the headers of a client are ignored.
	none, err := httpx.ParseTrustedProxies()
	require.NoError(t, err)
	srv := httptest.NewServer(none.Middleware(http.HandlerFunc(echo)))
	t.Cleanup(srv.Close)
	require.Equal(t, "127.0.0.1 false", get(t, srv.URL, forged))
	require.Equal(t, "127.0.0.1 false", get(t, srv.URL, nil))

	// Another address trusted: still ignored from 127.0.0.1.
	other, err := httpx.ParseTrustedProxies("10.0.0.0/8")
	require.NoError(t, err)
	srv = httptest.NewServer(other.Middleware(http.HandlerFunc(echo)))
	t.Cleanup(srv.Close)
	require.Equal(t, "127.0.0.1 false", get(t, srv.URL, forged))

	// The peer trusted: it names the client and its scheme.
	loop, err := httpx.ParseTrustedProxies("127.0.0.0/8")
	require.NoError(t, err)
	srv = httptest.NewServer(loop.Middleware(http.HandlerFunc(echo)))
	t.Cleanup(srv.Close)
	require.Equal(t, "203.0.113.5 true", get(t, srv.URL, forged))
	require.Equal(t, "198.51.100.1 false", get(t, srv.URL, map[string]string{"X-Forwarded-For": "6.6.6.6, 198.51.100.1", "X-Forwarded-Proto": "http"}))
	require.Equal(t, "127.0.0.1 false", get(t, srv.URL, nil))

	// A TLS server is secure without any header, and a forged "http" from
	// an untrusted peer does not take that away.
	tsrv := httptest.NewTLSServer(none.Middleware(http.HandlerFunc(echo)))
	t.Cleanup(tsrv.Close)
	resp, err := tsrv.Client().Get(tsrv.URL)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.True(t, strings.HasSuffix(string(b), " true"), string(b))
}
