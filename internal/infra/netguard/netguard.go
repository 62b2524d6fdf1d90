// Package netguard keeps the service from being made to send requests where
// a tenant tells it (server-side request forgery): webhook receivers and the
// sources it syncs are addresses that clients choose. The guard is the
// address actually connected to: [NewTransport] checks it in the dialer,
// after name resolution, so a host name that resolved to a public address
// when the URL was registered and to 127.0.0.1 later (DNS rebinding) is
// still refused. [CheckURL] repeats the check when a URL is registered, to
// give the client an early, precise error.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxURLLen is the longest URL [CheckURL] accepts, in bytes.
const MaxURLLen = 2048

var (
	// ErrForbiddenAddress: the service may not connect to the address
	// (loopback, private, link-local and other non-public ranges). The error
	// names the address and its range.
	ErrForbiddenAddress = errors.New("forbidden address")
	// ErrInvalidURL: a URL given at registration cannot be used; the error
	// says why, in words for the client. An address the host resolves to
	// that is forbidden wraps [ErrForbiddenAddress] too.
	ErrInvalidURL = errors.New("invalid url")
	// ErrUnreachableHost: the URL's host name does not resolve, resolves
	// to no address, or resolves to an address the policy forbids. It comes
	// with [ErrInvalidURL]. Its detail (what the name resolved to, whether
	// it did) describes the service's network, not the client's request:
	// keep it in the server's log and answer the client
	// [UnreachableHostMessage] instead.
	ErrUnreachableHost = errors.New("host unreachable")
)

// UnreachableHostMessage is what a client is told about a URL whose host
// [ErrUnreachableHost] refuses, the same whatever the reason, so that
// registering URLs cannot map which internal names exist and where they
// point. allowPrivate is the policy's AllowPrivate.
func UnreachableHostMessage(allowPrivate bool) string {
	if allowPrivate {
		return "url must be an http or https URL that this service can reach"
	}
	return "url must be a public https URL that this service can reach"
}

// Policy decides which IP addresses the service may connect to. The zero
// value is the production policy: public unicast addresses only.
type Policy struct {
	// AllowPrivate lets connections go to any valid address, loopback and
	// private networks included, and lets URLs use http. For development,
	// tests and services whose tenants are trusted with the operator's
	// network (aiusage service serve --allow-private-webhooks,
	// --allow-private-sources). Default false.
	AllowPrivate bool
}

type addrRange struct {
	prefix netip.Prefix
	name   string
}

// forbiddenV4 lists the IPv4 ranges that are not public unicast (IANA IPv4
// special-purpose address registry, RFC 6890 and successors), most specific
// first where they overlap.
var forbiddenV4 = []addrRange{
	{netip.MustParsePrefix("0.0.0.0/8"), "this network"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private network"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation (TEST-NET-1)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private network"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation (TEST-NET-2)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation (TEST-NET-3)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
}

// forbiddenV6 lists the IPv6 ranges that are not public unicast (IANA IPv6
// special-purpose address registry). The ranges that embed an IPv4 address
// and can reach it (IPv4-mapped, NAT64, 6to4) are not here: Check looks at
// the embedded address instead.
var forbiddenV6 = []addrRange{
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible IPv6 (deprecated)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2001:2::/48"), "benchmarking"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("3fff::/20"), "documentation"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (private network)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	// nat64Prefix is the well-known NAT64 prefix (RFC 6052): the last 32 bits
	// are the IPv4 address the translator connects to.
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	// sixToFourPrefix is 6to4 (RFC 3056): bits 16 to 47 are an IPv4 address.
	sixToFourPrefix = netip.MustParsePrefix("2002::/16")
)

// Check returns nil when the service may connect to ip, and otherwise an
// error wrapping [ErrForbiddenAddress] that names ip and its range. Unless
// p.AllowPrivate, it refuses loopback, private networks (10/8, 172.16/12,
// 192.168/16, fc00::/7), link-local (169.254/16, fe80::/10), unspecified,
// multicast, broadcast, shared address space (100.64/10), 0/8, benchmarking
// (198.18/15, 2001:2::/48), documentation and other reserved ranges, and an
// IPv6 address embedding any of those IPv4 addresses (IPv4-mapped
// ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16), as well as the
// deprecated IPv4-compatible ::/96 and Teredo 2001::/32 outright. With
// AllowPrivate, only an invalid address is refused.
func (p Policy) Check(ip netip.Addr) error {
	if !ip.IsValid() {
		return fmt.Errorf("%w: invalid address", ErrForbiddenAddress)
	}
	if p.AllowPrivate {
		return nil
	}
	if reason := forbiddenReason(ip.WithZone("")); reason != "" {
		return fmt.Errorf("%w %s: %s", ErrForbiddenAddress, ip, reason)
	}
	return nil
}

// forbiddenReason names the range that forbids ip, or returns "" for a
// public unicast address.
func forbiddenReason(ip netip.Addr) string {
	if ip.Is4In6() {
		if r := forbiddenReason(ip.Unmap()); r != "" {
			return "IPv4-mapped " + r
		}
		return ""
	}
	switch {
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private network"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast(): // includes link-local and interface-local multicast
		return "multicast"
	}
	if ip.Is4() {
		return rangeName(forbiddenV4, ip)
	}
	if nat64Prefix.Contains(ip) {
		b := ip.As16()
		if r := forbiddenReason(netip.AddrFrom4([4]byte(b[12:16]))); r != "" {
			return "NAT64 of " + r
		}
		return ""
	}
	if sixToFourPrefix.Contains(ip) {
		b := ip.As16()
		if r := forbiddenReason(netip.AddrFrom4([4]byte(b[2:6]))); r != "" {
			return "6to4 of " + r
		}
		return ""
	}
	return rangeName(forbiddenV6, ip)
}

func rangeName(ranges []addrRange, ip netip.Addr) string {
	for _, r := range ranges {
		if r.prefix.Contains(ip) {
			return r.name + " " + r.prefix.String()
		}
	}
	return ""
}

// Control is a [net.Dialer]'s Control hook: it runs after name resolution,
// once per address the dialer connects to, so the address checked is the
// one connected to. It refuses any network but TCP.
func (p Policy) Control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("%w: network %s", ErrForbiddenAddress, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse dialled address %q", ErrForbiddenAddress, address)
	}
	return p.Check(ap.Addr())
}

// NewTransport returns an HTTP transport whose every connection is checked
// against p after name resolution (in the dialer's Control hook) and
// refused with an error wrapping [ErrForbiddenAddress] (through
// [*url.Error] and [*net.OpError]). It uses no proxy: HTTP_PROXY and
// friends are ignored, since the address checked must be the one the
// request goes to. timeout bounds dialling and the TLS handshake; 0 or less
// means 30 s. Responses are decompressed as http.Transport does by default.
func NewTransport(p Policy, timeout time.Duration) *http.Transport {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	dialer := &net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		Control:   p.Control,
	}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// CheckURL checks a URL at registration. raw must be an
// absolute URL of at most [MaxURLLen] bytes with scheme https (http
// too when p.AllowPrivate), a host, no user info and a valid port if any, and
// every address the host resolves to (or the host itself, when it is an IP
// literal) must pass p.Check. resolver nil means [net.DefaultResolver].
//
// An unusable URL gives an error wrapping [ErrInvalidURL] (and
// [ErrForbiddenAddress] for a forbidden address) whose message says what is
// wrong. The message is for the client, except when the error also wraps
// [ErrUnreachableHost] (the host name resolves badly or not at all): then it
// is for the server's log only. When ctx ends during resolution, the error
// is ctx's.
//
// Passing this check does not make later requests safe by itself: the name
// may resolve elsewhere later. [NewTransport] checks again at every
// connection.
func CheckURL(ctx context.Context, raw string, p Policy, resolver *net.Resolver) error {
	if raw == "" {
		return fmt.Errorf("%w: url is required", ErrInvalidURL)
	}
	if len(raw) > MaxURLLen {
		return fmt.Errorf("%w: url is longer than %d bytes", ErrInvalidURL, MaxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: url cannot be parsed", ErrInvalidURL)
	}
	if !u.IsAbs() || u.Opaque != "" {
		return fmt.Errorf("%w: url must be absolute, such as https://example.com/hooks", ErrInvalidURL)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && p.AllowPrivate:
	default:
		return fmt.Errorf("%w: url scheme must be https, not %s", ErrInvalidURL, u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("%w: url must not contain user info", ErrInvalidURL)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: url has no host", ErrInvalidURL)
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: url port %s is not 1 to 65535", ErrInvalidURL, port)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("%w: url has an empty port", ErrInvalidURL)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := p.Check(ip); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidURL, err)
		}
		return nil
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	if err := ctx.Err(); err != nil {
		// A lookup under an ended context may still answer: it shares the
		// result of a lookup of the same name already in flight.
		return err
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %w: url host %s does not resolve", ErrInvalidURL, ErrUnreachableHost, host)
	}
	if len(addrs) == 0 {
		return fmt.Errorf("%w: %w: url host %s has no address", ErrInvalidURL, ErrUnreachableHost, host)
	}
	for _, ip := range addrs {
		if err := p.Check(ip); err != nil {
			return fmt.Errorf("%w: %w: url host %s resolves to %w", ErrInvalidURL, ErrUnreachableHost, host, err)
		}
	}
	return nil
}
