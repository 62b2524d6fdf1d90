package netguard_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/netguard"
)

// The whole range table and the URL checks are tested through their
// webhook names in internal/app/reviewapi (dialer_test.go); these tests
// check what the sources rely on: the transport and the check by
// themselves.

func TestTransportChecksEveryConnection(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	strict := &http.Client{Transport: netguard.NewTransport(netguard.Policy{}, time.Second)}
	_, err := strict.Get(srv.URL)
	require.ErrorIs(t, err, netguard.ErrForbiddenAddress)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	_, err = strict.Get("http://localhost:" + port + "/") // a name resolving to loopback
	require.ErrorIs(t, err, netguard.ErrForbiddenAddress)
	require.Zero(t, hits.Load())

	open := &http.Client{Transport: netguard.NewTransport(netguard.Policy{AllowPrivate: true}, time.Second)}
	resp, err := open.Get(srv.URL)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, int32(1), hits.Load())
	require.Nil(t, netguard.NewTransport(netguard.Policy{}, 0).Proxy, "no proxy: the address checked is the one connected to")
}

func TestCheckURLAndPolicy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, u := range []string{"https://127.0.0.1/", "https://[fd00::1]/", "https://169.254.169.254/", "https://10.0.0.1/x"} {
		err := netguard.CheckURL(ctx, u, netguard.Policy{}, nil)
		require.ErrorIs(t, err, netguard.ErrInvalidURL, u)
		require.ErrorIs(t, err, netguard.ErrForbiddenAddress, u)
		require.NoError(t, netguard.CheckURL(ctx, u, netguard.Policy{AllowPrivate: true}, nil), u)
	}
	require.ErrorIs(t, netguard.CheckURL(ctx, "http://93.184.216.34/", netguard.Policy{}, nil), netguard.ErrInvalidURL)
	require.NoError(t, netguard.CheckURL(ctx, "https://93.184.216.34/", netguard.Policy{}, nil))
	require.NoError(t, netguard.Policy{}.Check(netip.MustParseAddr("93.184.216.34")))
}
