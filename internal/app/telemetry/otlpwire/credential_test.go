package otlpwire_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/telemetry/otlpwire"
)

func TestBearerToken(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"Bearer k1", "k1", true},
		{"  bearer   k1 ", "k1", true},
		{"BEARER k1", "k1", true},
		{"Bearer%20k1", "k1", true},
		{"Bearer%20k%31", "k1", true},
		{"%42earer%20k1", "k1", true},
		{"Bearer%2520k1", "", false}, // decoded once only: "Bearer%20k1"
		{"Bearer%2k1", "", false},    // malformed: left as it is, one word
		{"Bearer+k1", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer%20", "", false},
		{"Basic k1", "", false},
		{"Basic%20k1", "", false},
		{"", "", false},
	} {
		got, ok := otlpwire.BearerToken(c.in)
		require.Equal(t, c.ok, ok, c.in)
		require.Equal(t, c.want, got, c.in)
	}
	require.Equal(t, "k1", otlpwire.APIKey("k1"))
	require.Equal(t, "k1", otlpwire.APIKey(" k%31 "))
	require.Equal(t, "k%", otlpwire.APIKey("k%"))
	require.Empty(t, otlpwire.APIKey("%20"))
}
