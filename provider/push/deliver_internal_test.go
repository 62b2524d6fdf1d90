package push

import (
	"testing"
	"time"
)

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
