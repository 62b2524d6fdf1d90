package push

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                        0,
		"3":                       3 * time.Second,
		"-3":                      0,
		"99999999999999999999999": 0, // out of range: neither form
		"999999999":               24 * time.Hour,
		"soon":                    0,
		now.Add(90 * time.Second).Format(http.TimeFormat):  90 * time.Second,
		now.Add(-90 * time.Second).Format(http.TimeFormat): 0,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}

func TestBackoffBounds(t *testing.T) {
	p := &Pusher{cfg: Config{RetryBase: time.Second, RetryMax: 10 * time.Second}}
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 5: 10 * time.Second, 100: 10 * time.Second} {
		for range 50 {
			if d := p.backoff(attempt); d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %s, want within [%s, %s]", attempt, d, want/2, want)
			}
		}
	}
}
