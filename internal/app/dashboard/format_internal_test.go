package dashboard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

// TestFormatting: the one formatting of counts, money and times that the
// pages' templates use.
func TestFormatting(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   any
		want string
	}{
		{2917478, "2,917,478"}, {int64(-1234567), "-1,234,567"}, {0, "0"}, {999, "999"}, {int64(1000), "1,000"},
		{uint64(12345), "12,345"}, {(*int64)(nil), "—"},
	} {
		require.Equal(t, c.want, num(c.in), "%v", c.in)
	}
	v := 1234.5
	for _, c := range []struct {
		in   any
		want string
	}{
		{12.24, "USD 12.24"}, {0.0, "USD 0.00"}, {0.999, "USD 1.00"}, {&v, "USD 1,234.50"}, {(*float64)(nil), "—"},
		{cost{Sum: &v, Complete: false}, "≥ USD 1,234.50"}, {cost{}, "—"},
	} {
		require.Equal(t, c.want, moneyOf(c.in), "%v", c.in)
	}

	at := time.Date(2026, 11, 28, 8, 43, 10, 0, time.UTC)
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	require.Equal(t, "2026-11-28 08:43 UTC", date(at))
	require.Equal(t, "2026-11-28 08:43 UTC", date(at, time.UTC))
	require.Equal(t, "2026-11-28 08:43 UTC", date(at, nil))
	require.Equal(t, "2026-11-28 09:43 Europe/Berlin", date(at, berlin))
	require.Equal(t, "2026-11-28 09:43 Europe/Berlin", date(spec.NewTime(at), berlin))
	require.Equal(t, "2026-11-28 09:43 Europe/Berlin", date(&at, berlin))
	require.Equal(t, "", date((*time.Time)(nil), berlin))
	require.Equal(t, "", date(time.Time{}, berlin))

	p := &pageData{}
	require.Equal(t, time.UTC, p.Zone(), "no viewer: UTC")
	p.Viewer = &viewer{Zone: berlin}
	require.Equal(t, "Europe/Berlin", p.ZoneName())
}
