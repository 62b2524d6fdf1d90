package sqldb_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
)

func TestMillisRounding(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 0, 0, 0, 1500, time.UTC)
	require.Equal(t, at.UnixMilli()+1, sqldb.MillisCeil(at))
	require.Equal(t, at.UnixMilli(), sqldb.MillisCeil(at.Truncate(time.Millisecond)))
	require.Equal(t, at.UnixMilli(), sqldb.Millis(at))
	for _, tc := range []struct{ m, floor, ceil int64 }{{0, 0, 0}, {1, 0, 10}, {10, 10, 10}, {-1, -10, 0}, {-10, -10, -10}, {-11, -20, -10}} {
		require.Equal(t, tc.floor, sqldb.FloorTo(tc.m, 10), tc.m)
		require.Equal(t, tc.ceil, sqldb.CeilTo(tc.m, 10), tc.m)
	}
}

func TestKeysetBound(t *testing.T) {
	t.Parallel()
	since := time.UnixMilli(1000).Add(time.Microsecond) // 1000.001 ms
	cases := []struct {
		name      string
		after     *sqldb.Position
		since     time.Time
		inclusive bool
		want      string
		args      []any
	}{
		{"no bound", nil, time.Time{}, false, "", nil},
		{"position only", &sqldb.Position{Millis: 5, ID: "a"}, time.Time{}, false, " AND (t, id) > ($1, $2)", []any{int64(5), "a"}},
		{"inclusive filter rounds up", nil, since, true, " AND t >= $1", []any{int64(1001)}},
		{"exclusive filter", nil, time.UnixMilli(1000), false, " AND t >= $1", []any{int64(1001)}},
		{"filter tighter than the position", &sqldb.Position{Millis: 900, ID: "z"}, time.UnixMilli(1000), true, " AND t >= $1", []any{int64(1000)}},
		{"position tighter than the filter", &sqldb.Position{Millis: 1000, ID: "z"}, time.UnixMilli(1000), true, " AND (t, id) > ($1, $2)", []any{int64(1000), "z"}},
	}
	for _, tc := range cases {
		var args []any
		arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
		require.Equal(t, tc.want, sqldb.KeysetBound("t", tc.after, tc.since, tc.inclusive, arg), tc.name)
		require.Equal(t, tc.args, args, tc.name)
	}
}
