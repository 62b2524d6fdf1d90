package reviewapi_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/reviewapi"
)

func TestAddressPolicyCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr    string
		allowed bool
	}{
		// Public unicast.
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"93.184.215.14", true},
		{"100.63.255.255", true},  // just below CGNAT
		{"100.128.0.0", true},     // just above CGNAT
		{"172.15.255.255", true},  // just below 172.16/12
		{"172.32.0.0", true},      // just above 172.16/12
		{"192.169.0.1", true},     // just above 192.168/16
		{"198.17.255.255", true},  // just below 198.18/15
		{"198.20.0.0", true},      // just above 198.18/15
		{"223.255.255.255", true}, // last before multicast
		{"2606:4700:4700::1111", true},
		{"2a00:1450:4001:81c::200e", true},
		{"::ffff:8.8.8.8", true},       // IPv4-mapped public
		{"64:ff9b::808:808", true},     // NAT64 of 8.8.8.8
		{"2002:808:808::1", true},      // 6to4 of 8.8.8.8
		{"2001:4860:4860::8888", true}, // 2001::/32 Teredo is 2001:0000::/32 only

		// IPv4 special-purpose ranges.
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"10.0.0.1", false},
		{"10.255.255.255", false},
		{"100.64.0.1", false},
		{"100.127.255.254", false},
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"169.254.169.254", false}, // cloud metadata
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.0.0.8", false},
		{"192.0.2.1", false},
		{"192.88.99.1", false},
		{"192.168.1.1", false},
		{"198.18.0.1", false},
		{"198.19.255.255", false},
		{"198.51.100.7", false},
		{"203.0.113.9", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},

		// IPv6 special-purpose ranges.
		{"::", false},
		{"::1", false},
		{"fc00::1", false},
		{"fd12:3456:789a::1", false},
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"febf:ffff::1", false},
		{"fec0::1", false},
		{"ff02::1", false},
		{"ff05::1:3", false},
		{"100::1", false},
		{"2001::1", false},          // Teredo
		{"2001:2::1", false},        // benchmarking
		{"2001:db8::1", false},      // documentation
		{"3fff::1", false},          // documentation
		{"64:ff9b:1::a00:1", false}, // local-use NAT64

		// IPv4 addresses in IPv6 forms.
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"::ffff:0.0.0.0", false},
		{"::ffff:100.64.0.1", false},
		{"::127.0.0.1", false}, // IPv4-compatible
		{"::10.0.0.1", false},
		{"::8.8.8.8", false},          // IPv4-compatible is deprecated whatever it embeds
		{"64:ff9b::7f00:1", false},    // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", false}, // NAT64 of 169.254.169.254
		{"64:ff9b::c0a8:101", false},  // NAT64 of 192.168.1.1
		{"2002:7f00:1::1", false},     // 6to4 of 127.0.0.1
		{"2002:a00:1::", false},       // 6to4 of 10.0.0.1
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			ip := netip.MustParseAddr(tt.addr)
			err := reviewapi.AddressPolicy{}.Check(ip)
			if tt.allowed {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, reviewapi.ErrForbiddenAddress)
				require.Contains(t, err.Error(), ip.String(), "the error names the address")
			}
			require.NoError(t, reviewapi.AddressPolicy{AllowPrivate: true}.Check(ip))
		})
	}
	require.ErrorIs(t, reviewapi.AddressPolicy{}.Check(netip.Addr{}), reviewapi.ErrForbiddenAddress)
	require.ErrorIs(t, reviewapi.AddressPolicy{AllowPrivate: true}.Check(netip.Addr{}), reviewapi.ErrForbiddenAddress)
	require.ErrorContains(t, reviewapi.AddressPolicy{}.Check(netip.MustParseAddr("169.254.169.254")), "link-local")
}

// whServer is an httptest server on 127.0.0.1 that counts its requests.
func whServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	n := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, n
}

func TestWebhookClientRefusesLoopback(t *testing.T) {
	t.Parallel()
	srv, hits := whServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

	_, err := reviewapi.NewWebhookClient(reviewapi.AddressPolicy{}, time.Second).Get(srv.URL)
	require.ErrorIs(t, err, reviewapi.ErrForbiddenAddress)
	require.ErrorContains(t, err, "127.0.0.1")
	require.Zero(t, hits.Load())

	resp, err := reviewapi.NewWebhookClient(reviewapi.AddressPolicy{AllowPrivate: true}, time.Second).Get(srv.URL)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.EqualValues(t, 1, hits.Load())
}

// A host name is checked by the address it resolves to when connecting, not
// by its name: this is what defeats DNS rebinding.
func TestWebhookClientRefusesNameResolvingToLoopback(t *testing.T) {
	t.Parallel()
	srv, hits := whServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	if _, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", "localhost"); err != nil {
		t.Skipf("localhost does not resolve here: %v", err)
	}

	_, err := reviewapi.NewWebhookClient(reviewapi.AddressPolicy{}, time.Second).Get("http://localhost:" + port + "/")
	require.ErrorIs(t, err, reviewapi.ErrForbiddenAddress)
	require.Zero(t, hits.Load())

	resp, err := reviewapi.NewWebhookClient(reviewapi.AddressPolicy{AllowPrivate: true}, time.Second).Get("http://localhost:" + port + "/")
	if err != nil && strings.Contains(err.Error(), "::1") {
		t.Skipf("localhost resolves to ::1 only: %v", err)
	}
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.EqualValues(t, 1, hits.Load())
}

func TestWebhookClientUsesNoProxy(t *testing.T) {
	t.Parallel()
	// The address checked must be the receiver's, never a proxy's: the
	// environment's HTTP_PROXY is not used.
	tr, ok := reviewapi.NewWebhookClient(reviewapi.AddressPolicy{}, 0).Transport.(*http.Transport)
	require.True(t, ok)
	require.Nil(t, tr.Proxy)
}

func TestWebhookClientDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	target, targetHits := whServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		srv, _ := whServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL, status)
		})
		resp, err := reviewapi.NewWebhookClient(reviewapi.AddressPolicy{AllowPrivate: true}, time.Second).Post(srv.URL, "application/json", strings.NewReader(`{}`))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, status, resp.StatusCode)
		require.Equal(t, target.URL, resp.Header.Get("Location"))
	}
	require.Zero(t, targetHits.Load())
}

func TestWebhookClientTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv, _ := whServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	start := time.Now()
	_, err := reviewapi.NewWebhookClient(reviewapi.AddressPolicy{AllowPrivate: true}, 200*time.Millisecond).Get(srv.URL)
	require.Error(t, err)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "err = %v", err)
	require.Less(t, time.Since(start), 2*time.Second)

	require.Equal(t, reviewapi.DefaultWebhookTimeout, reviewapi.NewWebhookClient(reviewapi.AddressPolicy{}, 0).Timeout)
}

func TestCheckWebhookURL(t *testing.T) {
	t.Parallel()
	resolver := whFakeResolver(t, map[string][]string{
		"hooks.example.com":    {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
		"internal.example.com": {"10.1.2.3"},
		"mixed.example.com":    {"93.184.215.14", "192.168.0.10"},
		"v6local.example.com":  {"fd00::1"},
		"metadata.example.com": {"169.254.169.254"},
	})
	ctx := context.Background()
	strict, open := reviewapi.AddressPolicy{}, reviewapi.AddressPolicy{AllowPrivate: true}
	tests := []struct {
		url    string
		p      reviewapi.AddressPolicy
		errMsg string // "" means valid
	}{
		{"https://hooks.example.com/aiusage", strict, ""},
		{"https://hooks.example.com:8443/aiusage?x=1", strict, ""},
		{"https://HOOKS.example.com./aiusage", strict, ""},
		{"https://8.8.8.8/hook", strict, ""},
		{"https://[2606:4700:4700::1111]/hook", strict, ""},
		{"http://127.0.0.1:8080/hook", open, ""},
		{"http://internal.example.com/hook", open, ""},

		{"", strict, "required"},
		{"https://hooks.example.com/" + strings.Repeat("a", 2048), strict, "longer than 2048"},
		{"://missing-scheme", strict, "parsed"},
		{"/relative/path", strict, "absolute"},
		{"hooks.example.com/aiusage", strict, "absolute"},
		{"https:opaque", strict, "absolute"},
		{"http://hooks.example.com/aiusage", strict, "https"},
		{"ftp://hooks.example.com/aiusage", open, "https"},
		{"javascript:alert(1)", strict, "absolute"},
		{"https://user:pass@hooks.example.com/", strict, "user info"},
		{"https://user@hooks.example.com/", strict, "user info"},
		{"https:///path-only", strict, "no host"},
		{"https://:443/", strict, "no host"},
		{"https://hooks.example.com:0/", strict, "port"},
		{"https://hooks.example.com:70000/", strict, "port"},
		{"https://hooks.example.com:/", strict, "empty port"},
		{"https://127.0.0.1/hook", strict, "loopback"},
		{"https://[::1]/hook", strict, "loopback"},
		{"https://[::ffff:127.0.0.1]/hook", strict, "127.0.0.1"},
		{"https://[fe80::1%25eth0]/hook", strict, "link-local"},
		{"https://169.254.169.254/latest/meta-data", strict, "link-local"},
		{"https://10.0.0.8/hook", strict, "private"},
		{"https://internal.example.com/hook", strict, "10.1.2.3"},
		{"https://mixed.example.com/hook", strict, "192.168.0.10"},
		{"https://v6local.example.com/hook", strict, "fd00::1"},
		{"https://metadata.example.com/hook", strict, "169.254.169.254"},
		{"https://nowhere.example.com/hook", strict, "does not resolve"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			err := reviewapi.CheckWebhookURL(ctx, tt.url, tt.p, resolver)
			if tt.errMsg == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, reviewapi.ErrInvalidWebhookURL)
			require.ErrorContains(t, err, tt.errMsg)
		})
	}
	// A forbidden address is both.
	err := reviewapi.CheckWebhookURL(ctx, "https://internal.example.com/", strict, resolver)
	require.ErrorIs(t, err, reviewapi.ErrForbiddenAddress)

	// localhost, through the system resolver.
	err = reviewapi.CheckWebhookURL(ctx, "https://localhost/hook", strict, nil)
	require.ErrorIs(t, err, reviewapi.ErrInvalidWebhookURL)

	// A context that has ended is not the URL's fault.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = reviewapi.CheckWebhookURL(cctx, "https://hooks.example.com/", strict, resolver)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, reviewapi.ErrInvalidWebhookURL)
}

// whFakeResolver is a net.Resolver answering from hosts through an in-process
// DNS server (DNS over a stream: each message has a 2-byte length prefix).
// Other names are NXDOMAIN.
func whFakeResolver(t *testing.T, hosts map[string][]string) *net.Resolver {
	t.Helper()
	answers := map[string][]netip.Addr{}
	for name, addrs := range hosts {
		for _, a := range addrs {
			answers[strings.ToLower(name)] = append(answers[strings.ToLower(name)], netip.MustParseAddr(a))
		}
	}
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			client, server := net.Pipe()
			go whServeFakeDNS(server, answers)
			return client, nil
		},
	}
}

func whServeFakeDNS(c net.Conn, answers map[string][]netip.Addr) {
	defer c.Close()
	for {
		var n uint16
		if err := binary.Read(c, binary.BigEndian, &n); err != nil {
			return
		}
		q := make([]byte, n)
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		resp := whFakeDNSAnswer(q, answers)
		if resp == nil {
			return
		}
		if err := binary.Write(c, binary.BigEndian, uint16(len(resp))); err != nil {
			return
		}
		if _, err := c.Write(resp); err != nil {
			return
		}
	}
}

// whFakeDNSAnswer answers a single-question query for A or AAAA records.
func whFakeDNSAnswer(q []byte, answers map[string][]netip.Addr) []byte {
	if len(q) < 12 {
		return nil
	}
	// The question: labels up to the root, then type and class.
	i := 12
	var labels []string
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	end := i + 5 // root label, type, class
	if end > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1 : i+3])
	name := strings.ToLower(strings.Join(labels, "."))

	addrs, known := answers[name]
	var rrs [][]byte
	for _, a := range addrs {
		var rtype uint16
		switch {
		case a.Is4() && qtype == 1:
			rtype = 1
		case a.Is6() && qtype == 28:
			rtype = 28
		default:
			continue
		}
		rr := []byte{0xc0, 12} // name: pointer to the question
		rr = binary.BigEndian.AppendUint16(rr, rtype)
		rr = binary.BigEndian.AppendUint16(rr, 1) // class IN
		rr = binary.BigEndian.AppendUint32(rr, 60)
		rr = binary.BigEndian.AppendUint16(rr, uint16(a.BitLen()/8))
		rr = append(rr, a.AsSlice()...)
		rrs = append(rrs, rr)
	}
	flags := uint16(0x8180) // response, recursion desired and available
	if !known {
		flags |= 3 // NXDOMAIN
	}
	resp := append([]byte{}, q[0:2]...) // id
	resp = binary.BigEndian.AppendUint16(resp, flags)
	resp = binary.BigEndian.AppendUint16(resp, 1) // questions
	resp = binary.BigEndian.AppendUint16(resp, uint16(len(rrs)))
	resp = binary.BigEndian.AppendUint16(resp, 0) // authority
	resp = binary.BigEndian.AppendUint16(resp, 0) // additional
	resp = append(resp, q[12:end]...)
	for _, rr := range rrs {
		resp = append(resp, rr...)
	}
	return resp
}
