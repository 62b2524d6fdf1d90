package webhook_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec/webhook"
)

// noRedirects is a client that returns a 3xx as the answer, as the senders'
// clients do.
var noRedirects = &http.Client{Timeout: 5 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// Send signs what it sends as Verify checks it, with the headers a
// receiver expects.
func TestSendSignsAndPosts(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	type seen struct {
		header http.Header
		body   []byte
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		require.Equal(t, http.MethodPost, r.Method)
		got <- seen{r.Header.Clone(), body}
		_, _ = w.Write([]byte(" thanks \n"))
	}))
	t.Cleanup(srv.Close)
	now := time.Now()
	m := webhook.Message{URL: srv.URL, Secret: secret, ID: "msg_1", Timestamp: now, Body: []byte(`{"a":1}`), UserAgent: "test/1"}
	r := webhook.Send(t.Context(), noRedirects, m)
	require.NoError(t, r.Err)
	require.Equal(t, webhook.Delivered, r.Outcome)
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, "thanks", r.Answer)
	s := <-got
	require.Equal(t, `{"a":1}`, string(s.body))
	require.Equal(t, "application/json", s.header.Get("Content-Type"))
	require.Equal(t, "test/1", s.header.Get("User-Agent"))
	require.Equal(t, "msg_1", s.header.Get(webhook.HeaderID))
	require.Equal(t, strconv.FormatInt(now.Unix(), 10), s.header.Get(webhook.HeaderTimestamp))
	require.NoError(t, webhook.Verify(secret, s.header, s.body, now, 0))

	m.UserAgent = ""
	require.Equal(t, webhook.Delivered, webhook.Send(t.Context(), noRedirects, m).Outcome)
	require.True(t, strings.HasPrefix((<-got).header.Get("User-Agent"), "Go-http-client/"), "the client's default")
}

func TestSendClassifiesTheAnswer(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		status     int
		retryAfter string
		want       webhook.Outcome
		wantAfter  time.Duration
	}{
		{http.StatusAccepted, "60", webhook.Delivered, 0},
		{http.StatusFound, "", webhook.Redirected, 0},
		{http.StatusBadRequest, "", webhook.Refused, 0},
		{http.StatusGone, "", webhook.Refused, 0},
		{http.StatusTooManyRequests, "120", webhook.Refused, 2 * time.Minute},
		{http.StatusServiceUnavailable, now.Add(90 * time.Second).Format(http.TimeFormat), webhook.Refused, 90 * time.Second},
		{http.StatusBadGateway, "soon", webhook.Refused, 0},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				if tc.status == http.StatusFound {
					w.Header().Set("Location", "https://elsewhere.example/hook")
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(strings.Repeat("x", 1000)))
			}))
			t.Cleanup(srv.Close)
			r := webhook.Send(t.Context(), noRedirects, webhook.Message{URL: srv.URL, Secret: webhook.NewSecret(), ID: "msg_1",
				Timestamp: now, Body: []byte(`{}`)})
			require.NoError(t, r.Err)
			require.Equal(t, tc.want, r.Outcome)
			require.Equal(t, tc.status, r.Status)
			require.Equal(t, tc.wantAfter, r.RetryAfter)
			require.Len(t, r.Answer, 512, "the start of the answer")
			if tc.want == webhook.Redirected {
				require.Equal(t, "elsewhere.example", r.Location.Host)
			} else {
				require.Nil(t, r.Location)
			}
		})
	}
}

func TestSendWithoutAnswer(t *testing.T) {
	t.Parallel()
	ok := webhook.Message{URL: "http://127.0.0.1:1/", Secret: webhook.NewSecret(), ID: "msg_1", Timestamp: time.Now()}

	bad := ok
	bad.Secret = "secret"
	r := webhook.Send(t.Context(), noRedirects, bad)
	require.Equal(t, webhook.NotSent, r.Outcome)
	require.ErrorIs(t, r.Err, webhook.ErrSecret)

	bad = ok
	bad.URL = "http://[::1"
	r = webhook.Send(t.Context(), noRedirects, bad)
	require.Equal(t, webhook.NotSent, r.Outcome)
	require.Error(t, r.Err)

	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	to := ok
	to.URL = hang.URL
	r = webhook.Send(ctx, noRedirects, to)
	require.Equal(t, webhook.NoAnswer, r.Outcome)
	require.Zero(t, r.Status)
	require.True(t, errors.Is(r.Err, context.DeadlineExceeded), "%v", r.Err)
}
