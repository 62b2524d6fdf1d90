package httpx

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// TrustedProxies is the set of addresses (reverse proxies, load balancers,
// TLS terminators) whose X-Forwarded-For and X-Forwarded-Proto headers the
// service believes. The zero value, and nil, trust nobody: every request's
// client is its direct peer, and it is secure only when it came over TLS to
// this process.
//
// A request whose direct peer is trusted has:
//   - as its client address, the right-most address of X-Forwarded-For (all
//     its header lines, in order) that is not itself a trusted proxy, since
//     every trusted proxy appends the address it received the request from
//     and anything left of that may be forged by the client. When every
//     address is trusted, the left-most one; when an entry is not an IP
//     address, the trusted hop right of it (nothing left of a broken entry
//     is believed); without the header, the peer.
//   - as its scheme, the last value of X-Forwarded-Proto (the one set by the
//     proxy nearest this process): "https" makes it secure.
//
// A request from any other peer keeps its peer address and its own TLS
// state whatever headers it carries, so a client cannot forge them.
type TrustedProxies struct {
	prefixes []netip.Prefix
}

// ParseTrustedProxies reads the trusted proxies from items, each a list of
// IP addresses ("10.0.0.7") or CIDR prefixes ("10.0.0.0/8", "fd00::/8")
// separated by commas or spaces. An empty list trusts nobody. A malformed
// entry is an error naming it.
func ParseTrustedProxies(items ...string) (*TrustedProxies, error) {
	t := &TrustedProxies{}
	for _, item := range items {
		for _, s := range strings.FieldsFunc(item, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			if err := t.add(s); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// add adds one address or prefix.
func (t *TrustedProxies) add(s string) error {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("trusted proxy %q is not an IP address or a CIDR prefix such as 10.0.0.0/8", s)
		}
		p = p.Masked()
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		t.prefixes = append(t.prefixes, p)
		return nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return fmt.Errorf("trusted proxy %q is not an IP address or a CIDR prefix such as 10.0.0.0/8", s)
	}
	a = a.Unmap()
	t.prefixes = append(t.prefixes, netip.PrefixFrom(a, a.BitLen()))
	return nil
}

// String lists the trusted prefixes, separated by commas.
func (t *TrustedProxies) String() string {
	if t == nil {
		return ""
	}
	out := make([]string, len(t.prefixes))
	for i, p := range t.prefixes {
		out[i] = p.String()
	}
	return strings.Join(out, ",")
}

// Set adds the addresses or prefixes of s (separated by commas or spaces),
// so that a *TrustedProxies is a flag.Value that may be repeated.
func (t *TrustedProxies) Set(s string) error {
	more, err := ParseTrustedProxies(s)
	if err != nil {
		return err
	}
	t.prefixes = append(t.prefixes, more.prefixes...)
	return nil
}

// Len returns the number of trusted prefixes.
func (t *TrustedProxies) Len() int {
	if t == nil {
		return 0
	}
	return len(t.prefixes)
}

// Trusts says whether addr is a trusted proxy.
func (t *TrustedProxies) Trusts(addr netip.Addr) bool {
	if t == nil || !addr.IsValid() {
		return false
	}
	addr = addr.WithZone("").Unmap()
	for _, p := range t.prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Client is where a request came from, as [TrustedProxies.Client] decides.
type Client struct {
	// Addr is the client's IP address; invalid when the request's
	// RemoteAddr is not an IP address (as in some tests).
	Addr netip.Addr
	// Secure says whether the client spoke TLS: to this process, or to a
	// trusted proxy that said so in X-Forwarded-Proto.
	Secure bool
}

// String is the client address without a port, or "" when unknown.
func (c Client) String() string {
	if !c.Addr.IsValid() {
		return ""
	}
	return c.Addr.String()
}

// peerAddr parses the host of a RemoteAddr ("192.0.2.1:5000", "[::1]:5000",
// or a bare address).
func peerAddr(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().WithZone("").Unmap()
	}
	host := remote
	if h, _, err := net.SplitHostPort(remote); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.WithZone("").Unmap()
}

// forwardedAddr parses one entry of X-Forwarded-For: an address, maybe with
// a port ("192.0.2.1:5000", "[2001:db8::1]:443") or in brackets.
func forwardedAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return a.WithZone("").Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	return netip.Addr{}, false
}

// maxForwardedEntries bounds the X-Forwarded-For entries read, from the
// right: a longer chain of trusted proxies than this is not believed.
const maxForwardedEntries = 32

// Client returns where r came from: its peer, or, when the peer is a
// trusted proxy, the client the forwarded headers name (see
// [TrustedProxies]).
func (t *TrustedProxies) Client(r *http.Request) Client {
	peer := peerAddr(r.RemoteAddr)
	c := Client{Addr: peer, Secure: r.TLS != nil}
	if !t.Trusts(peer) {
		return c
	}
	if protos := headerList(r.Header.Values("X-Forwarded-Proto")); len(protos) > 0 {
		c.Secure = strings.EqualFold(protos[len(protos)-1], "https")
	}
	entries := headerList(r.Header.Values("X-Forwarded-For"))
	for i, n := len(entries)-1, 0; i >= 0 && n < maxForwardedEntries; i, n = i-1, n+1 {
		a, ok := forwardedAddr(entries[i])
		if !ok {
			break // the hop right of a broken entry is the last one believed
		}
		c.Addr = a
		if !t.Trusts(a) {
			break
		}
	}
	return c
}

// headerList splits the comma-separated values of a header's lines into
// their entries, in order, dropping empty ones.
func headerList(lines []string) []string {
	var out []string
	for _, l := range lines {
		for _, v := range strings.Split(l, ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

type clientKey struct{}

// Middleware puts the [Client] of every request into its context, where
// [ClientOf], [ClientAddr] and [IsSecure] find it. It trusts nobody when t
// is nil.
func (t *TrustedProxies) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := t.Client(r)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientKey{}, c)))
	})
}

// ClientOf returns the [Client] of r that [TrustedProxies.Middleware] found,
// or, outside it, the direct peer (nothing forwarded is believed).
func ClientOf(r *http.Request) Client {
	if c, ok := r.Context().Value(clientKey{}).(Client); ok {
		return c
	}
	return (*TrustedProxies)(nil).Client(r)
}

// ClientAddr returns the client address of r, without a port: what the
// service counts per-client limits under. Outside
// [TrustedProxies.Middleware] it is the peer. When RemoteAddr is not an IP
// address it is RemoteAddr as given.
func ClientAddr(r *http.Request) string {
	if c := ClientOf(r); c.Addr.IsValid() {
		return c.String()
	}
	return r.RemoteAddr
}

// IsSecure says whether r reached the service over TLS, directly or through
// a trusted proxy: whether its cookies may be marked Secure and its links be
// https.
func IsSecure(r *http.Request) bool { return ClientOf(r).Secure }
