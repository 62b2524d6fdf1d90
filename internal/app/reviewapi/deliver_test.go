package reviewapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/testkit/webhooktest"
	"github.com/aiusage/kit/spec/webhook"
)

const whBody = `{"type":"task.approved","timestamp":"2026-01-02T03:04:05.000Z","data":{"id":"t1","status":"approved"}}`

// whDelivery is a delivery to rcv signed with a fresh secret the receiver
// knows.
func whDelivery(t *testing.T, rcv *webhooktest.Receiver, msgID string) reviewapi.Delivery {
	t.Helper()
	secret := webhook.NewSecret()
	rcv.SetSecret(secret)
	return reviewapi.Delivery{URL: rcv.URL(), Secret: secret, MsgID: msgID, Timestamp: time.Now(), Body: []byte(whBody)}
}

func whPrivateClient(timeout time.Duration) *http.Client {
	return reviewapi.NewWebhookClient(reviewapi.AddressPolicy{AllowPrivate: true}, timeout)
}

func whDeliveryError(t *testing.T, err error) *reviewapi.DeliveryError {
	t.Helper()
	de, ok := errors.AsType[*reviewapi.DeliveryError](err)
	require.True(t, ok, "err = %v (%T)", err, err)
	return de
}

func TestDeliverSuccess(t *testing.T) {
	t.Parallel()
	rcv := webhooktest.NewReceiver(t, "")
	rcv.SetTolerance(time.Minute) // a real receiver's check
	d := whDelivery(t, rcv, "msg_success")

	status, err := reviewapi.Deliver(t.Context(), whPrivateClient(time.Second), d)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)

	got := rcv.Acknowledged()
	require.Len(t, got, 1)
	require.Equal(t, "msg_success", got[0].ID)
	require.Equal(t, "task.approved", got[0].Type)
	require.Equal(t, whBody, string(got[0].Body))
	require.Equal(t, 1, got[0].Attempt)
	require.Equal(t, d.Timestamp.Unix(), got[0].Timestamp.Unix())
	require.Equal(t, "application/json", got[0].Header.Get("Content-Type"))
	require.Equal(t, "aiusage-webhooks/1", got[0].Header.Get("User-Agent"))
	require.Equal(t, strconv.FormatInt(d.Timestamp.Unix(), 10), got[0].Header.Get("webhook-timestamp"))
	// The service's own verifier agrees.
	require.NoError(t, webhook.Verify(d.Secret, got[0].Header, got[0].Body, time.Now(), 0))
	var payload map[string]any
	require.NoError(t, json.Unmarshal(got[0].Body, &payload))
}

func TestDeliverAny2xx(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusNoContent, 299} {
		rcv := webhooktest.NewReceiver(t, "")
		rcv.RespondWith(code)
		status, err := reviewapi.Deliver(t.Context(), whPrivateClient(time.Second), whDelivery(t, rcv, "msg_2xx"))
		require.NoError(t, err, code)
		require.Equal(t, code, status)
	}
}

func TestDeliverRetriesThen500ThenSuccess(t *testing.T) {
	t.Parallel()
	rcv := webhooktest.NewReceiver(t, "")
	rcv.FailFirst(1)
	d := whDelivery(t, rcv, "msg_retry")
	c := whPrivateClient(time.Second)

	status, err := reviewapi.Deliver(t.Context(), c, d)
	require.Equal(t, http.StatusInternalServerError, status)
	de := whDeliveryError(t, err)
	require.Equal(t, http.StatusInternalServerError, de.Status)
	require.True(t, de.Retryable)
	require.NoError(t, de.Err)
	require.ErrorContains(t, err, "500")

	// The retry: same message id, new timestamp, signed anew.
	d.Timestamp = d.Timestamp.Add(5 * time.Second)
	status, err = reviewapi.Deliver(t.Context(), c, d)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)

	all := rcv.Deliveries()
	require.Len(t, all, 2)
	require.Equal(t, []int{1, 2}, []int{all[0].Attempt, all[1].Attempt})
	require.Equal(t, all[0].ID, all[1].ID)
	require.NotEqual(t, all[0].Header.Get("webhook-signature"), all[1].Header.Get("webhook-signature"))
	ack := rcv.Acknowledged()
	require.Len(t, ack, 1)
	require.Equal(t, 2, ack[0].Attempt)
}

func TestDeliverStatusErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status     int
		retryAfter string
		retryable  bool
		wantAfter  time.Duration
	}{
		{http.StatusGone, "", false, 0}, // the receiver asks to stop
		{http.StatusBadRequest, "", true, 0},
		{http.StatusUnauthorized, "", true, 0},
		{http.StatusNotFound, "", true, 0},
		{http.StatusTooManyRequests, "120", true, 2 * time.Minute},
		{http.StatusServiceUnavailable, "soon", true, 0},
		{http.StatusBadGateway, "", true, 0},
		{http.StatusNotModified, "", true, 0},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			t.Parallel()
			srv, _ := whServer(t, func(w http.ResponseWriter, _ *http.Request) {
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(tt.status)
			})
			d := reviewapi.Delivery{URL: srv.URL, Secret: webhook.NewSecret(), MsgID: "msg_status", Timestamp: time.Now(), Body: []byte(`{}`)}
			status, err := reviewapi.Deliver(t.Context(), whPrivateClient(time.Second), d)
			require.Equal(t, tt.status, status)
			de := whDeliveryError(t, err)
			require.Equal(t, tt.status, de.Status)
			require.Equal(t, tt.retryable, de.Retryable)
			require.Equal(t, tt.wantAfter, de.RetryAfter)
		})
	}
}

func TestDeliverGoneFromReceiver(t *testing.T) {
	t.Parallel()
	rcv := webhooktest.NewReceiver(t, "")
	rcv.RespondWith(http.StatusGone)
	status, err := reviewapi.Deliver(t.Context(), whPrivateClient(time.Second), whDelivery(t, rcv, "msg_gone"))
	require.Equal(t, http.StatusGone, status)
	require.False(t, whDeliveryError(t, err).Retryable)
	require.Len(t, rcv.Deliveries(), 1)
	require.NoError(t, rcv.Deliveries()[0].Err, "authentic, answered 410")
}

func TestDeliverRetryAfterDate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	srv, _ := whServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat))
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	d := reviewapi.Delivery{URL: srv.URL, Secret: webhook.NewSecret(), MsgID: "msg_date", Timestamp: now, Body: []byte(`{}`)}
	_, err := reviewapi.Deliver(t.Context(), whPrivateClient(time.Second), d)
	require.Equal(t, 90*time.Second, whDeliveryError(t, err).RetryAfter)
}

func TestDeliverTimeout(t *testing.T) {
	t.Parallel()
	rcv := webhooktest.NewReceiver(t, "")
	rcv.Slow(time.Minute)
	d := whDelivery(t, rcv, "msg_slow")

	start := time.Now()
	status, err := reviewapi.Deliver(t.Context(), whPrivateClient(250*time.Millisecond), d)
	require.Less(t, time.Since(start), 2*time.Second)
	require.Zero(t, status)
	de := whDeliveryError(t, err)
	require.True(t, de.Retryable)
	require.Zero(t, de.Status)
	require.Error(t, de.Err)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	got, err := rcv.Wait(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, got[0].Err, "it arrived, authentic")
	require.Empty(t, rcv.Acknowledged())
}

func TestDeliverContextCanceled(t *testing.T) {
	t.Parallel()
	rcv := webhooktest.NewReceiver(t, "")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := reviewapi.Deliver(ctx, whPrivateClient(time.Second), whDelivery(t, rcv, "msg_cancel"))
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, whDeliveryError(t, err).Retryable)
	require.Empty(t, rcv.Deliveries())
}

func TestDeliverRedirectRefused(t *testing.T) {
	t.Parallel()
	target := webhooktest.NewReceiver(t, "")
	rcv := webhooktest.NewReceiver(t, "")
	d := whDelivery(t, rcv, "msg_redirect")
	target.SetSecret(d.Secret)
	rcv.RedirectTo(target.URL())

	status, err := reviewapi.Deliver(t.Context(), whPrivateClient(time.Second), d)
	require.Equal(t, http.StatusTemporaryRedirect, status)
	de := whDeliveryError(t, err)
	require.Equal(t, http.StatusTemporaryRedirect, de.Status)
	require.True(t, de.Retryable)
	require.Len(t, rcv.Deliveries(), 1)
	require.Empty(t, target.Deliveries(), "the redirect was followed")
}

func TestDeliverForbiddenAddress(t *testing.T) {
	t.Parallel()
	rcv := webhooktest.NewReceiver(t, "")
	d := whDelivery(t, rcv, "msg_forbidden")
	for name, c := range map[string]*http.Client{
		"production client": reviewapi.NewWebhookClient(reviewapi.AddressPolicy{}, time.Second),
		"nil client":        nil,
	} {
		status, err := reviewapi.Deliver(t.Context(), c, d)
		require.Zero(t, status, name)
		require.ErrorIs(t, err, reviewapi.ErrForbiddenAddress, name)
		de := whDeliveryError(t, err)
		require.False(t, de.Retryable, name)
		require.Zero(t, de.Status, name)
	}
	require.Empty(t, rcv.Deliveries())
}

func TestDeliverConnectionRefusedIsRetryable(t *testing.T) {
	t.Parallel()
	rcv := webhooktest.NewReceiver(t, "")
	d := whDelivery(t, rcv, "msg_down")
	rcv.Close()
	_, err := reviewapi.Deliver(t.Context(), whPrivateClient(time.Second), d)
	de := whDeliveryError(t, err)
	require.True(t, de.Retryable)
	require.Zero(t, de.Status)
}

func TestDeliverBadDelivery(t *testing.T) {
	t.Parallel()
	ok := reviewapi.Delivery{URL: "http://127.0.0.1:1/", Secret: webhook.NewSecret(), MsgID: "msg_1", Timestamp: time.Now()}
	tests := []struct {
		name string
		edit func(*reviewapi.Delivery)
		want error
	}{
		{"malformed secret", func(d *reviewapi.Delivery) { d.Secret = "secret" }, webhook.ErrSecret},
		{"no message id", func(d *reviewapi.Delivery) { d.MsgID = "" }, webhook.ErrID},
		{"bad url", func(d *reviewapi.Delivery) { d.URL = "http://[::1" }, nil},
		{"other scheme", func(d *reviewapi.Delivery) { d.URL = "ftp://example.com/" }, reviewapi.ErrInvalidWebhookURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := ok
			tt.edit(&d)
			_, err := reviewapi.Deliver(t.Context(), whPrivateClient(time.Second), d)
			require.Error(t, err)
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
			}
			require.False(t, whDeliveryError(t, err).Retryable)
		})
	}
}

func TestNextRetry(t *testing.T) {
	t.Parallel()
	s := reviewapi.DefaultRetrySchedule
	require.Equal(t, []time.Duration{
		5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
	}, s)

	for attempt, want := range map[int]time.Duration{0: 0, -1: 0, 1: 5 * time.Second, 2: 5 * time.Minute, 4: 2 * time.Hour, 7: 10 * time.Hour} {
		got, ok := reviewapi.NextRetry(s, attempt, nil)
		require.True(t, ok, attempt)
		require.Equal(t, want, got, attempt)
	}
	for _, attempt := range []int{8, 9, 100} {
		got, ok := reviewapi.NextRetry(s, attempt, nil)
		require.False(t, ok, attempt)
		require.Zero(t, got)
	}
	_, ok := reviewapi.NextRetry(nil, 1, nil)
	require.False(t, ok)

	// Jitter applies to the scheduled wait, never below zero.
	got, ok := reviewapi.NextRetry(s, 3, func(d time.Duration) time.Duration { return d + time.Minute })
	require.True(t, ok)
	require.Equal(t, 31*time.Minute, got)
	got, _ = reviewapi.NextRetry(s, 1, func(d time.Duration) time.Duration { return -d })
	require.Zero(t, got)

	// The whole default schedule, from the first attempt: 27 h 35 min 5 s.
	var total time.Duration
	for attempt := 1; ; attempt++ {
		d, ok := reviewapi.NextRetry(s, attempt, nil)
		if !ok {
			require.Equal(t, 8, attempt, "8 attempts in all")
			break
		}
		total += d
	}
	require.Equal(t, 27*time.Hour+35*time.Minute+5*time.Second, total)
}

func TestRetryJitter(t *testing.T) {
	t.Parallel()
	base := 30 * time.Minute
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := reviewapi.RetryJitter(base)
		require.GreaterOrEqual(t, d, base-3*time.Minute)
		require.LessOrEqual(t, d, base+3*time.Minute)
		seen[d] = true
	}
	require.Greater(t, len(seen), 100, "jitter varies")
	require.Equal(t, time.Duration(0), reviewapi.RetryJitter(0))
	require.Equal(t, 9*time.Nanosecond, reviewapi.RetryJitter(9*time.Nanosecond))
}
