package provider

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func testSealer(t testing.TB) *sealer {
	t.Helper()
	s, err := newSealer([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	return s
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	s := testSealer(t)
	at := time.Date(2026, 3, 1, 10, 0, 0, 123e6, time.UTC)
	cases := []cursor{
		{endpoint: endpointConversations, tenant: tenantDigest("t1"), filters: filterDigest("a", "b"), key: Key{Time: at, ID: "conv_1"}},
		{endpoint: endpointEvents, tenant: tenantDigest(""), key: Key{Time: at, ID: strings.Repeat("é", 100)}},
		{endpoint: endpointAssistants, key: Key{Time: time.UnixMilli(0).UTC(), ID: ""}},
		{endpoint: endpointUsage, tenant: tenantDigest("t2"), filters: filterDigest("granularity", "day"),
			start: at.Truncate(24 * time.Hour), end: at.Truncate(24 * time.Hour).Add(72 * time.Hour),
			usageKey: UsageKey{Start: at.Truncate(time.Hour), Model: "gpt-4o", Department: "Sales"}},
	}
	for _, c := range cases {
		t.Run(strings.TrimPrefix(c.endpoint.path(), "/"), func(t *testing.T) {
			text := s.seal(c)
			require.NotContains(t, text, "=", "no padding")
			got, err := s.open(text)
			require.NoError(t, err)
			require.Equal(t, c, got)
			// Opaque: the id does not appear in the cursor or its base64 decoding.
			raw, _ := base64.RawURLEncoding.DecodeString(text)
			if c.key.ID != "" {
				require.NotContains(t, string(raw), c.key.ID)
			}
		})
	}
}

func TestCursorRejectsTampering(t *testing.T) {
	t.Parallel()
	s := testSealer(t)
	text := s.seal(cursor{endpoint: endpointConversations, key: Key{Time: time.Now().UTC().Truncate(time.Millisecond), ID: "c1"}})
	other, err := newSealer([]byte("another key of thirty-two bytes!"))
	require.NoError(t, err)
	bad := []string{
		"", "garbage", text[:len(text)-1], text[:10], text + "A", strings.Repeat("A", 8192), "%00", `"quoted"`,
		base64.RawURLEncoding.EncodeToString([]byte(`{"offset":100}`)), "MTAw",
	}
	for i := range text { // every single flipped character
		b := []byte(text)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		bad = append(bad, string(b))
	}
	for _, b := range bad {
		_, err := s.open(b)
		require.True(t, errors.Is(err, errCursorMalformed), "%q accepted", b)
	}
	_, err = other.open(text)
	require.ErrorIs(t, err, errCursorMalformed, "a cursor of another key")
}

func FuzzCursorOpen(f *testing.F) {
	s := testSealer(f)
	f.Add(s.seal(cursor{endpoint: endpointConversations, key: Key{Time: time.UnixMilli(1e12).UTC(), ID: "x"}}))
	f.Add(s.seal(cursor{endpoint: endpointUsage, start: time.UnixMilli(0).UTC(), end: time.UnixMilli(86400000).UTC()}))
	f.Add("")
	f.Add("AAAA")
	f.Add(strings.Repeat("_", 100))
	f.Fuzz(func(t *testing.T, text string) {
		c, err := s.open(text)
		if err != nil {
			if !errors.Is(err, errCursorMalformed) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		// Only sealed cursors open, and they re-seal to an equal cursor.
		again, err := s.open(s.seal(c))
		if err != nil || again != c {
			t.Fatalf("round trip of an accepted cursor: %v %+v %+v", err, again, c)
		}
	})
}
