package sqldb

import (
	"fmt"
	"time"
)

// The kit's stores keep times as BIGINT milliseconds since the Unix epoch
// (UTC): exact, and the same on both dialects. These helpers are theirs.

// Millis returns t in milliseconds since the Unix epoch, rounded down.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// MillisCeil returns t in milliseconds since the Unix epoch, rounded up.
func MillisCeil(t time.Time) int64 {
	m := t.UnixMilli()
	if time.UnixMilli(m).Before(t) {
		m++
	}
	return m
}

// FloorTo rounds m down to a multiple of w (w > 0), also for negative m.
func FloorTo(m, w int64) int64 {
	r := m % w
	if r < 0 {
		r += w
	}
	return m - r
}

// CeilTo rounds m up to a multiple of w (w > 0).
func CeilTo(m, w int64) int64 { return -FloorTo(-m, w) }

// KeysetBound returns the condition (" AND ...", or "") that starts a
// keyset page over the index (..., col, id) in (col, id) order. after is
// the position of the previous page's last row (nil for the first page);
// since, when not zero, bounds col from below, inclusive or not. Only one
// range condition constrains the index: whichever of the position and the
// time filter is the tighter. arg adds a query argument and returns its
// placeholder.
func KeysetBound(col string, after *Position, since time.Time, inclusive bool, arg func(any) string) string {
	var lo int64
	hasLo := !since.IsZero()
	if hasLo {
		lo = Millis(since) + 1
		if inclusive {
			lo = MillisCeil(since)
		}
	}
	switch {
	case after != nil && !(hasLo && after.Millis < lo):
		// Rows after the position have col >= its time, >= lo.
		return fmt.Sprintf(" AND (%s, id) > (%s, %s)", col, arg(after.Millis), arg(after.ID))
	case hasLo:
		// Every row with col >= lo follows the position, if any.
		return fmt.Sprintf(" AND %s >= %s", col, arg(lo))
	}
	return ""
}

// Position is a row's place in a keyset order: its time in milliseconds
// and its id.
type Position struct {
	Millis int64
	ID     string
}
