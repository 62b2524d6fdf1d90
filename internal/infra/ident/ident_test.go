package ident

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAddressKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"192.0.2.7:4431":                 "192.0.2.7",
		"[::ffff:192.0.2.7]:80":          "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443":     "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1%eth0]:80": "2001:db8:1:2::/64",
		"[::1]:8080":                     "::/64",
		"192.0.2.7":                      "192.0.2.7",
		"@":                              "@", // a Unix socket's peer
	} {
		require.Equal(t, want, AddressKey(in), in)
	}
}

func TestCanonicalUUID(t *testing.T) {
	for in, want := range map[string]string{
		"0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B":  "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
		"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b":  "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
		"0190a1b2c3d47e5f8a9b0c1d2e3f4a5b":      "",
		"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5g":  "",
		"0190a1b2-c3d4-7e5f-8a9b_0c1d2e3f4a5b":  "",
		"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5bc": "",
	} {
		t.Run(in, func(t *testing.T) {
			got, ok := CanonicalUUID(in)
			require.Equal(t, want, got)
			require.Equal(t, want != "", ok)
		})
	}
}
