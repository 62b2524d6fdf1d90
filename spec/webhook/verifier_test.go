package webhook_test

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec/webhook"
)

// signed returns the headers of a delivery of body under id at ts.
func signed(t testing.TB, secret, id string, ts time.Time, body []byte) http.Header {
	sig, err := webhook.Sign(secret, id, ts, body)
	require.NoError(t, err)
	h := http.Header{}
	h.Set(webhook.HeaderID, id)
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(webhook.HeaderSignature, sig)
	return h
}

// fakeClock is a clock tests move by hand.
type fakeClock struct{ now atomic.Int64 }

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.now.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.now.Add(int64(d)) }

func newClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.now.Store(t.UnixNano())
	return c
}

func TestVerifierDuplicates(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	clk := newClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	v, err := webhook.NewVerifier(secret, &webhook.VerifierOptions{Now: clk.Now, Tolerance: time.Minute})
	require.NoError(t, err)
	body := []byte(`{"n":1}`)

	first := signed(t, secret, "msg_1", clk.Now(), body)
	require.NoError(t, v.Verify(first, body))
	// The same delivery again (a replay, or a retry whose answer was lost).
	require.ErrorIs(t, v.Verify(first, body), webhook.ErrDuplicate)
	// A retry of the same id with a fresh timestamp is a duplicate too.
	clk.Advance(30 * time.Second)
	retry := signed(t, secret, "msg_1", clk.Now(), body)
	require.ErrorIs(t, v.Verify(retry, body), webhook.ErrDuplicate)
	// Another id is new.
	require.NoError(t, v.Verify(signed(t, secret, "msg_2", clk.Now(), body), body))

	// Inauthentic deliveries are refused as by Verify, and not remembered.
	forged := signed(t, webhook.NewSecret(), "msg_3", clk.Now(), body)
	require.ErrorIs(t, v.Verify(forged, body), webhook.ErrSignature)
	require.NoError(t, v.Verify(signed(t, secret, "msg_3", clk.Now(), body), body))

	// Once the latest timestamp of msg_1 is past the tolerance, a replay of
	// it fails the timestamp check, and the id is forgotten.
	clk.Advance(61 * time.Second)
	require.ErrorIs(t, v.Verify(retry, body), webhook.ErrTimestamp)
	require.NoError(t, v.Verify(signed(t, secret, "msg_1", clk.Now(), body), body))

	// Forget lets the next delivery of an id be processed (its processing
	// failed the first time).
	require.NoError(t, v.Verify(signed(t, secret, "msg_4", clk.Now(), body), body))
	v.Forget("msg_4")
	require.NoError(t, v.Verify(signed(t, secret, "msg_4", clk.Now(), body), body))
	require.ErrorIs(t, v.Verify(signed(t, secret, "msg_4", clk.Now(), body), body), webhook.ErrDuplicate)
}

func TestVerifierMemoryIsBounded(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	clk := newClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	const n = 50
	v, err := webhook.NewVerifier(secret, &webhook.VerifierOptions{Now: clk.Now, MaxIDs: n})
	require.NoError(t, err)
	body := []byte(`{}`)
	for i := range n + 1 {
		require.NoError(t, v.Verify(signed(t, secret, fmt.Sprintf("msg_%d", i), clk.Now(), body), body))
		require.LessOrEqual(t, v.Len(), n)
	}
	require.Equal(t, n, v.Len())
	// The first id was forgotten to make room, the last ones are kept.
	require.NoError(t, v.Verify(signed(t, secret, "msg_0", clk.Now(), body), body))
	require.ErrorIs(t, v.Verify(signed(t, secret, fmt.Sprintf("msg_%d", n), clk.Now(), body), body), webhook.ErrDuplicate)

	// Expired ids leave the memory without waiting for eviction.
	clk.Advance(webhook.DefaultTolerance + time.Second)
	require.NoError(t, v.Verify(signed(t, secret, "msg_new", clk.Now(), body), body))
	require.Equal(t, 1, v.Len())

	_, err = webhook.NewVerifier(secret, &webhook.VerifierOptions{MaxIDs: -1})
	require.Error(t, err)
	_, err = webhook.NewVerifier("whsec_short", nil)
	require.ErrorIs(t, err, webhook.ErrSecret)
}

// Of concurrent deliveries of one id, exactly one is accepted.
func TestVerifierConcurrent(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	v, err := webhook.NewVerifier(secret, &webhook.VerifierOptions{MaxIDs: 64})
	require.NoError(t, err)
	body := []byte(`{"k":"v"}`)
	const ids, copies = 40, 8
	headers := make([]http.Header, ids)
	for i := range headers {
		headers[i] = signed(t, secret, fmt.Sprintf("msg_%d", i), time.Now(), body)
	}
	var accepted [ids]atomic.Int32
	var wg sync.WaitGroup
	for c := range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				i := (i + c*5) % ids
				err := v.Verify(headers[i], body)
				switch {
				case err == nil:
					accepted[i].Add(1)
				case !errorsIsDuplicate(err):
					t.Errorf("msg_%d: %v", i, err)
				}
				if i%7 == 0 {
					_ = v.Len()
				}
			}
		}()
	}
	wg.Wait()
	for i := range accepted {
		require.Equal(t, int32(1), accepted[i].Load(), "msg_%d", i)
	}
	require.LessOrEqual(t, v.Len(), 64)
}

func errorsIsDuplicate(err error) bool { return errors.Is(err, webhook.ErrDuplicate) }

func ExampleVerifier() {
	secret := webhook.NewSecret()
	v, err := webhook.NewVerifier(secret, nil)
	if err != nil {
		panic(err)
	}
	body := []byte(`{"type":"task.completed"}`)
	now := time.Now()
	sig, _ := webhook.Sign(secret, "msg_1", now, body)
	h := http.Header{}
	h.Set(webhook.HeaderID, "msg_1")
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(webhook.HeaderSignature, sig)

	fmt.Println(v.Verify(h, body))                                  // first delivery: process it
	fmt.Println(errors.Is(v.Verify(h, body), webhook.ErrDuplicate)) // a retry: acknowledge only
	// Output:
	// <nil>
	// true
}
