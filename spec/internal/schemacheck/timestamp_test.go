package schemacheck

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTimestampPatternMatchers checks the hand-written matchers of the two
// timestamp patterns, and the date-time check, against regexp and the
// library's rules on every one-byte change of a few timestamps.
func TestTimestampPatternMatchers(t *testing.T) {
	t.Parallel()
	ts := regexp.MustCompile(timestampPattern)
	millis := regexp.MustCompile(timestampMillisPattern)
	bases := []string{"2026-03-09T08:15:00Z", "2026-03-09T08:15:00.1Z", "2026-03-09T08:15:00.123Z", "2026-03-09T08:15:00.123456789Z",
		"2024-02-29T23:59:59.999Z", "0000-01-01T00:00:00Z", "2026-03-09T08:15:00+01:00"}
	alphabet := "0123456789-:.TZtz+ é\x00"
	n := 0
	check := func(s string) {
		n++
		require.Equal(t, ts.MatchString(s), matchTimestamp(s), "matchTimestamp(%q)", s)
		require.Equal(t, millis.MatchString(s), matchTimestampMillis(s), "matchTimestampMillis(%q)", s)
		// Where the pattern holds, isDateTimeZ is what the library's
		// date-time format decides: a valid date (time.Parse) and time.
		if matchTimestamp(s) {
			_, derr := time.Parse("2006-01-02", s[:10])
			h, m := num(s[11:13]), num(s[14:16])
			require.Equal(t, derr == nil && h <= 23 && m <= 59, isDateTimeZ(s), "isDateTimeZ(%q)", s)
		}
	}
	for _, b := range bases {
		check(b)
		for i := 0; i <= len(b); i++ {
			if i < len(b) {
				check(b[:i] + b[i+1:])
			}
			for _, r := range alphabet {
				if i < len(b) {
					check(b[:i] + string(r) + b[i+1:])
				}
				check(b[:i] + string(r) + b[i:])
			}
		}
	}
	for _, s := range []string{"", "Z", "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z",
		"2026-00-10T00:00:00Z", "2026-01-00T00:00:00Z", "2026-01-32T00:00:00Z", "2026-01-01T23:60:00Z", "2026-01-01T99:00:00Z"} {
		check(s)
	}
	require.GreaterOrEqual(t, n, 1000, "strings checked")
}

func TestPlainPointer(t *testing.T) {
	t.Parallel()
	for ptr, want := range map[string]bool{
		"": true, "/properties/role": true, "/properties/a~1b/items": true, "/$defs/x_y-z.w": true,
		"/properties/a b": false, "/properties/é": false, "/properties/a%20b": false, "/properties/a?b": false,
	} {
		require.Equal(t, want, plainPointer(ptr), "plainPointer(%q)", ptr)
	}
}
