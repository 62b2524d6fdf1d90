// Package ident reads the identifiers requests carry into their canonical
// form: the UUIDs that name records and the addresses that name clients.
// It is plain Go, for the HTTP plumbing and the domain packages alike.
package ident

import (
	"net"
	"net/netip"
	"strings"
)

// CanonicalUUID returns s in lowercase when it is a UUID in the hyphenated
// 8-4-4-4-12 form (any case), and false otherwise. Path parameters that name
// records by UUID go through it, so any case names the same record.
func CanonicalUUID(s string) (string, bool) {
	if len(s) != 36 {
		return "", false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", false
			}
			continue
		}
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return "", false
		}
	}
	return strings.ToLower(s), true
}

// AddressKey returns the key by which the service counts (httpx.ConnLimits its connections, the sign-in throttle its attempts) the client at
// addr, a "host:port" (http.Request.RemoteAddr, net.Conn.RemoteAddr): the
// IPv4 address, or the /64 network of an IPv6 address ("2001:db8::/64");
// an IPv4-mapped IPv6 address counts as its IPv4 address. An address that
// is not an IP address counts as itself.
func AddressKey(addr string) string {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is4() {
		return ip.String()
	}
	p, _ := ip.Prefix(64)
	return p.String()
}
