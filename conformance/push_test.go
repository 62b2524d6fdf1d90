package conformance_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/conformance"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/provider/push"
	"github.com/aiusage/kit/spec/webhook"
)

const pushSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestPushReceiverPassesTheKitsPusher points the kit's own pusher at the
// receiver: every check passes.
func TestPushReceiverPassesTheKitsPusher(t *testing.T) {
	t.Parallel()
	rc, err := conformance.NewPushReceiver(conformance.PushConfig{Secret: pushSecret})
	require.NoError(t, err)
	srv := httptest.NewServer(rc)
	defer srv.Close()
	src := memsource.New()
	require.NoError(t, demodata.Fill(t.Context(), demodata.Config{Conversations: 30, Seed: 2, End: time.Now()}, "acme", src))
	started := time.Now()
	p, err := push.New(t.Context(), push.Config{DatabaseURL: sqldbtest.URL(t, sqldb.SQLite), Source: src, Tenant: "acme", URL: srv.URL,
		Secret: pushSecret, MaxRecords: 50, RetryBase: 600 * time.Millisecond, RetryMax: 2 * time.Second, PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Scan(t.Context())
	require.NoError(t, err)
	require.NoError(t, p.Start(t.Context()))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	o, err := p.Wait(ctx, started, 20*time.Millisecond)
	require.NoError(t, err)
	require.Zero(t, o.GivenUp)
	require.NoError(t, p.Stop(t.Context()))

	rep := rc.Report(srv.URL, started)
	require.Len(t, rep.Results, len(conformance.PushCatalogue))
	for _, r := range rep.Results {
		require.Equal(t, conformance.StatusPass, r.Status, "%s: %s", r.ID, r.Message)
	}
	require.False(t, rep.Failed(true))
}

// post sends one delivery of body under id, signed with secret at ts.
func post(t *testing.T, u, secret, id string, ts time.Time, body string) int {
	t.Helper()
	sig, err := webhook.Sign(secret, id, ts, []byte(body))
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.HeaderID, id)
	req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(webhook.HeaderSignature, sig)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// TestPushReceiverCatchesABadPusher sends what a careless pusher would: each
// fault fails its check.
func TestPushReceiverCatchesABadPusher(t *testing.T) {
	t.Parallel()
	rc, err := conformance.NewPushReceiver(conformance.PushConfig{Secret: pushSecret})
	require.NoError(t, err)
	srv := httptest.NewServer(rc)
	defer srv.Close()
	now := time.Now()
	good := `{"type":"records","resource":"events","records":[{"id":"e1","occurredAt":"2026-03-01T10:00:00.000Z"}]}`
	// The first two deliveries are refused on purpose (500, 429) and never
	// sent again.
	require.Equal(t, http.StatusInternalServerError, post(t, srv.URL, pushSecret, "msg_1", now, good))
	require.Equal(t, http.StatusTooManyRequests, post(t, srv.URL, pushSecret, "msg_2", now, good))
	require.Equal(t, http.StatusUnauthorized, post(t, srv.URL, webhook.NewSecret(), "msg_3", now, good))
	require.Equal(t, http.StatusUnauthorized, post(t, srv.URL, pushSecret, "msg_4", now.Add(-time.Hour), good))
	require.Equal(t, http.StatusBadRequest, post(t, srv.URL, pushSecret, "msg_5", now, `{"type":"records","resource":"users","records":[{}]}`))
	require.Equal(t, http.StatusOK, post(t, srv.URL, pushSecret, "msg_6", now, `{"type":"records","resource":"events","records":[{"id":"e2"}]}`))
	require.Equal(t, http.StatusOK, post(t, srv.URL, pushSecret, "msg_7", now, good))
	require.Equal(t, http.StatusOK, post(t, srv.URL, pushSecret, "msg_7", now, good+" "))

	rep := rc.Report(srv.URL, now)
	got := statuses(rep)
	require.Equal(t, conformance.Status("PASS"), got["PUSH-01"])
	require.Equal(t, conformance.StatusFail, got["PUSH-04"], "wrong secret")
	require.Equal(t, conformance.StatusFail, got["PUSH-05"], "stale timestamp")
	require.Equal(t, conformance.StatusFail, got["PUSH-06"], "unknown resource")
	require.Equal(t, conformance.StatusFail, got["PUSH-07"], "event without occurredAt")
	require.Equal(t, conformance.StatusFail, got["PUSH-08"], "500 not retried")
	require.Equal(t, conformance.StatusFail, got["PUSH-09"], "429 not retried")
	require.Equal(t, conformance.StatusFail, got["PUSH-10"], "another body under one id")
	require.True(t, rep.Failed(false))

	// Nothing at all: PUSH-01 fails, the rest is skipped.
	empty, err := conformance.NewPushReceiver(conformance.PushConfig{Secret: pushSecret})
	require.NoError(t, err)
	got = statuses(empty.Report("x", now))
	require.Equal(t, conformance.StatusFail, got["PUSH-01"])
	require.Equal(t, conformance.StatusSkip, got["PUSH-08"])
	require.Equal(t, conformance.StatusSkip, got["PUSH-07"])

	_, err = conformance.NewPushReceiver(conformance.PushConfig{Secret: "nope"})
	require.Error(t, err)
}
