package httpclient

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestTransient(t *testing.T) {
	t.Parallel()
	permanent := errors.New("refused for good")
	for _, tc := range []struct {
		status int
		err    error
		want   bool
	}{
		{0, errors.New("connection reset"), true},
		{0, permanent, false},
		{0, errors.Join(errors.New("x"), permanent), false},
		{http.StatusRequestTimeout, nil, true},
		{http.StatusTooManyRequests, nil, true},
		{http.StatusInternalServerError, nil, true},
		{http.StatusServiceUnavailable, nil, true},
		{http.StatusNotImplemented, nil, false},
		{http.StatusNotFound, nil, false},
		{http.StatusUnauthorized, nil, false},
		{http.StatusOK, nil, false},
	} {
		if got := Transient(tc.status, tc.err, permanent); got != tc.want {
			t.Errorf("Transient(%d, %v) = %v, want %v", tc.status, tc.err, got, tc.want)
		}
	}
}

func TestBackoffWait(t *testing.T) {
	t.Parallel()
	b := NewBackoff(250*time.Millisecond, 30*time.Second, 5*time.Minute, 7)
	for n := range 40 {
		ceil := min(250*time.Millisecond<<min(n, 30), 30*time.Second)
		for range 50 {
			if d := b.Wait(n, -1); d < 250*time.Millisecond || d > ceil {
				t.Fatalf("Wait(%d) = %s, outside [250ms, %s]", n, d, ceil)
			}
		}
	}
	if d := b.Wait(3, 7*time.Second); d != 7*time.Second {
		t.Errorf("a Retry-After of 7s: Wait = %s", d)
	}
	if d := b.Wait(0, time.Hour); d != 5*time.Minute {
		t.Errorf("a Retry-After of an hour is capped: Wait = %s", d)
	}
	if d := NewBackoff(time.Second, time.Second, time.Minute, 0).Wait(5, -1); d != time.Second {
		t.Errorf("min = max: Wait = %s", d)
	}
}
