package webhooktest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The test vector of the Standard Webhooks specification's reference
// libraries.
const (
	vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTS     = "1614265330"
	vectorBody   = `{"test": 2432232314}`
	vectorSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

const testSecret = "whsec_dGhpcy1pcy1hLXRlc3Qta2V5LWZvci10aGUtcmVjZWl2ZXI=" // "this-is-a-test-key-for-the-receiver"

func vectorHeader(sig string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", vectorID)
	h.Set("webhook-timestamp", vectorTS)
	h.Set("webhook-signature", sig)
	return h
}

func TestVerifyOfficialVector(t *testing.T) {
	t.Parallel()
	require.NoError(t, Verify(vectorSecret, vectorHeader(vectorSig), []byte(vectorBody)))
	// Another scheme's entry first, as in secret rotation.
	require.NoError(t, Verify(vectorSecret, vectorHeader("v1a,AAAA v1,Zm9v "+vectorSig), []byte(vectorBody)))
}

func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		secret string
		header http.Header
		body   string
	}{
		{"tampered body", vectorSecret, vectorHeader(vectorSig), `{"test": 2432232315}`},
		{"other secret", testSecret, vectorHeader(vectorSig), vectorBody},
		{"secret without prefix", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", vectorHeader(vectorSig), vectorBody},
		{"secret not base64", "whsec_!!!", vectorHeader(vectorSig), vectorBody},
		{"v1a only", vectorSecret, vectorHeader("v1a" + vectorSig[2:]), vectorBody},
		{"no signature", vectorSecret, vectorHeader(""), vectorBody},
		{"tampered id", vectorSecret, func() http.Header {
			h := vectorHeader(vectorSig)
			h.Set("webhook-id", vectorID+"x")
			return h
		}(), vectorBody},
		{"tampered timestamp", vectorSecret, func() http.Header {
			h := vectorHeader(vectorSig)
			h.Set("webhook-timestamp", "1614265331")
			return h
		}(), vectorBody},
		{"no id", vectorSecret, func() http.Header {
			h := vectorHeader(vectorSig)
			h.Del("webhook-id")
			return h
		}(), vectorBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.ErrorIs(t, Verify(tt.secret, tt.header, []byte(tt.body)), ErrBadSignature)
		})
	}
}

// sign is the test's own signer; the official vector checks it.
func sign(secret, id, ts string, body []byte) string {
	key, err := base64.StdEncoding.DecodeString(secret[len("whsec_"):])
	if err != nil {
		panic(err)
	}
	m := hmac.New(sha256.New, key)
	_, _ = io.WriteString(m, id+"."+ts+".")
	_, _ = m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func TestSignMatchesVector(t *testing.T) {
	t.Parallel()
	require.Equal(t, vectorSig, sign(vectorSecret, vectorID, vectorTS, []byte(vectorBody)))
}

// send sends one signed delivery and returns the status.
func send(url, secret, id string, body string) (int, error) {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", sign(secret, id, ts, []byte(body)))
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Body.Close()
}

// post is send for the test goroutine.
func post(t *testing.T, url, secret, id string, body string) int {
	t.Helper()
	status, err := send(url, secret, id, body)
	require.NoError(t, err)
	return status
}

func TestReceiverRecords(t *testing.T) {
	t.Parallel()
	r := NewReceiver(t, testSecret)
	require.Regexp(t, `^http://127\.0\.0\.1:\d+/hooks$`, r.URL())

	before := time.Now()
	require.Equal(t, http.StatusOK, post(t, r.URL(), testSecret, "msg_1", `{"type":"task.approved","data":{}}`))
	require.Equal(t, http.StatusOK, post(t, r.URL(), testSecret, "msg_1", `{"type":"task.approved","data":{}}`))
	require.Equal(t, http.StatusOK, post(t, r.URL(), testSecret, "msg_2", `not json`))

	got := r.Deliveries()
	require.Len(t, got, 3)
	require.Equal(t, "msg_1", got[0].ID)
	require.Equal(t, "task.approved", got[0].Type)
	require.Equal(t, 1, got[0].Attempt)
	require.Equal(t, 2, got[1].Attempt)
	require.Equal(t, 1, got[2].Attempt)
	require.Empty(t, got[2].Type)
	require.Equal(t, `not json`, string(got[2].Body))
	for _, d := range got {
		require.NoError(t, d.Err)
		require.True(t, d.Acknowledged())
		require.WithinDuration(t, before, d.Timestamp, 2*time.Second)
		require.False(t, d.ReceivedAt.Before(before))
		require.Equal(t, "application/json", d.Header.Get("Content-Type"))
	}
	require.Len(t, r.Acknowledged(), 3)
}

func TestReceiverRefusesBadSignature(t *testing.T) {
	t.Parallel()
	r := NewReceiver(t, testSecret)
	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte("another-key-another-key-another-key"))
	require.Equal(t, http.StatusUnauthorized, post(t, r.URL(), other, "msg_1", `{}`))
	got := r.Deliveries()
	require.Len(t, got, 1)
	require.ErrorIs(t, got[0].Err, ErrBadSignature)
	require.False(t, got[0].Acknowledged())
	require.Empty(t, r.Acknowledged())
}

func TestReceiverSetSecretLater(t *testing.T) {
	t.Parallel()
	r := NewReceiver(t, "")
	require.Equal(t, http.StatusUnauthorized, post(t, r.URL(), testSecret, "msg_1", `{}`))
	require.Error(t, r.Deliveries()[0].Err)
	r.SetSecret(testSecret)
	require.Equal(t, http.StatusOK, post(t, r.URL(), testSecret, "msg_1", `{}`))
	require.Equal(t, 2, r.Deliveries()[1].Attempt)
}

func TestReceiverTolerance(t *testing.T) {
	t.Parallel()
	r := NewReceiver(t, vectorSecret)
	// The vector's timestamp is from 2021: fine without a tolerance...
	status := func() int {
		req, err := http.NewRequest(http.MethodPost, r.URL(), bytes.NewReader([]byte(vectorBody)))
		require.NoError(t, err)
		req.Header = vectorHeader(vectorSig)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, status())
	// ...refused with one.
	r.SetTolerance(5 * time.Minute)
	require.Equal(t, http.StatusUnauthorized, status())
	require.ErrorContains(t, r.Deliveries()[1].Err, "webhook-timestamp")
}

func TestReceiverFailFirst(t *testing.T) {
	t.Parallel()
	r := NewReceiver(t, testSecret)
	r.FailFirst(2)
	for _, want := range []int{500, 500, 200, 200} {
		require.Equal(t, want, post(t, r.URL(), testSecret, "msg_a", `{}`))
	}
	// Counted per message.
	require.Equal(t, 500, post(t, r.URL(), testSecret, "msg_b", `{}`))
	ack := r.Acknowledged()
	require.Len(t, ack, 2)
	require.Equal(t, 3, ack[0].Attempt)
	require.Equal(t, 4, ack[1].Attempt)
	// Only what follows an acknowledged delivery of the same id is a
	// duplicate.
	var dup []bool
	for _, d := range r.Deliveries() {
		dup = append(dup, d.Duplicate)
	}
	require.Equal(t, []bool{false, false, false, true, false}, dup)
}

func TestReceiverRespondWithAndRedirect(t *testing.T) {
	t.Parallel()
	r := NewReceiver(t, testSecret)
	r.RespondWith(http.StatusGone)
	require.Equal(t, http.StatusGone, post(t, r.URL(), testSecret, "msg_1", `{}`))
	r.RespondWith(http.StatusNoContent)
	require.Equal(t, http.StatusNoContent, post(t, r.URL(), testSecret, "msg_2", `{}`))
	r.RedirectTo("http://127.0.0.1:1/elsewhere")
	require.Equal(t, http.StatusTemporaryRedirect, post(t, r.URL(), testSecret, "msg_3", `{}`))
	got := r.Deliveries()
	require.Equal(t, []int{410, 204, 307}, []int{got[0].Status, got[1].Status, got[2].Status})
	require.Len(t, r.Acknowledged(), 1)
}

func TestReceiverRefusesGet(t *testing.T) {
	t.Parallel()
	r := NewReceiver(t, testSecret)
	resp, err := http.Get(r.URL())
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Error(t, r.Deliveries()[0].Err)
}

func TestReceiverSlowAbandoned(t *testing.T) {
	t.Parallel()
	r := NewReceiver(t, testSecret)
	r.Slow(time.Minute)
	req, err := http.NewRequest(http.MethodPost, r.URL(), bytes.NewReader([]byte(`{}`)))
	require.NoError(t, err)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("webhook-id", "msg_slow")
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", sign(testSecret, "msg_slow", ts, []byte(`{}`)))
	c := &http.Client{Timeout: 100 * time.Millisecond}
	start := time.Now()
	_, err = c.Do(req)
	require.Error(t, err)
	require.Less(t, time.Since(start), 5*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		got := r.Deliveries()
		if len(got) == 1 && got[0].Abandoned {
			require.False(t, got[0].Acknowledged())
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("delivery not marked abandoned: %+v", got)
		case <-time.After(10 * time.Millisecond):
		}
	}
	require.Empty(t, r.Acknowledged())
}

func TestReceiverCloseEndsSlowAnswers(t *testing.T) {
	t.Parallel()
	r := NewReceiver(t, testSecret)
	r.Slow(time.Hour)
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, r.URL(), bytes.NewReader(nil))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		_ = resp.Body.Close()
		done <- resp.StatusCode
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := r.Wait(ctx, 1)
	require.NoError(t, err)
	start := time.Now()
	r.Close()
	require.Less(t, time.Since(start), 5*time.Second)
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("slow request still hanging after Close")
	}
	r.Close() // twice is fine
}

func TestReceiverWait(t *testing.T) {
	t.Parallel()
	r := NewReceiver(t, testSecret)
	r.FailFirst(1)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			id := "msg_" + strconv.Itoa(i)
			for range 2 {
				if _, err := send(r.URL(), testSecret, id, `{}`); err != nil {
					t.Error(err)
				}
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ack, err := r.WaitAcknowledged(ctx, 3)
	require.NoError(t, err)
	require.Len(t, ack, 3)
	all, err := r.Wait(ctx, 6)
	require.NoError(t, err)
	require.Len(t, all, 6)
	wg.Wait()

	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	got, err := r.Wait(short, 7)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "err = %v", err)
	require.Len(t, got, 6)
}

func TestReceiverSlowAnswer(t *testing.T) {
	t.Parallel()
	r := NewReceiver(t, testSecret)
	r.Slow(300 * time.Millisecond)
	done := make(chan int, 1)
	go func() {
		status, err := send(r.URL(), testSecret, "msg_slow", `{}`)
		if err != nil {
			t.Error(err)
		}
		done <- status
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := r.Wait(ctx, 1)
	require.NoError(t, err)
	require.False(t, got[0].Answered, "still waiting")
	require.Empty(t, r.Acknowledged())
	ack, err := r.WaitAcknowledged(ctx, 1)
	require.NoError(t, err)
	require.True(t, ack[0].Answered)
	require.False(t, ack[0].Abandoned)
	require.Equal(t, http.StatusOK, <-done)
}
