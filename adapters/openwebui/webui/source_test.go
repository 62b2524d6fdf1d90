package webui

import (
	"testing"
	"time"
)

func TestSecondsBounds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ ms, floor, ceil int64 }{
		{0, 0, 0}, {1000, 1, 1}, {1001, 1, 2}, {1999, 1, 2}, {-1, -1, 0}, {-1000, -1, -1}, {-1001, -2, -1},
	} {
		if got := floorSeconds(c.ms); got != c.floor {
			t.Errorf("floorSeconds(%d) = %d, want %d", c.ms, got, c.floor)
		}
		if got := ceilSeconds(c.ms); got != c.ceil {
			t.Errorf("ceilSeconds(%d) = %d, want %d", c.ms, got, c.ceil)
		}
	}
}

// TestEpochTime checks the units read from the JSON by size.
func TestEpochTime(t *testing.T) {
	t.Parallel()
	want := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for name, v := range map[string]float64{
		"seconds":      float64(want.Unix()),
		"milliseconds": float64(want.UnixMilli()),
		"microseconds": float64(want.UnixMicro()),
		"nanoseconds":  float64(want.UnixNano()),
	} {
		if got := epochTime(v); !got.Equal(want) {
			t.Errorf("%s: epochTime(%.0f) = %v, want %v", name, v, got, want)
		}
	}
	if got := epochTime(float64(want.Unix()) + 0.5); !got.Equal(want.Add(500 * time.Millisecond)) {
		t.Errorf("fractional seconds: %v", got)
	}
	if !epochTime(0).IsZero() {
		t.Error("0 is no time")
	}
}
