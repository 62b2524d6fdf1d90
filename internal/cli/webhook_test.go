package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec/webhook"
)

func TestWebhookListenVerifiesAndPrints(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	var out bytes.Buffer
	printer, err := webhookPrinter(secret, time.Minute, &out)
	require.NoError(t, err)
	srv := httptest.NewServer(printer)
	defer srv.Close()
	body := []byte(`{"type":"task.completed","timestamp":"2026-11-21T10:00:00.000Z","data":{"id":"t1","status":"approved"}}`)
	post := func(sec string) int {
		now := time.Now()
		sig, err := webhook.Sign(sec, "msg_1", now, body)
		require.NoError(t, err)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hooks", bytes.NewReader(body))
		req.Header.Set(webhook.HeaderID, "msg_1")
		req.Header.Set(webhook.HeaderTimestamp, jsonInt(now.Unix()))
		req.Header.Set(webhook.HeaderSignature, sig)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusNoContent, post(secret))
	require.Equal(t, http.StatusUnauthorized, post(webhook.NewSecret()))
	// A retry of msg_1 is acknowledged, and not printed a second time.
	require.Equal(t, http.StatusNoContent, post(secret))
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	require.Len(t, lines, 2)
	var good, bad receivedWebhook
	require.NoError(t, json.Unmarshal(lines[0], &good))
	require.NoError(t, json.Unmarshal(lines[1], &bad))
	require.True(t, good.Verified)
	require.Equal(t, "task.completed", good.Type)
	require.Equal(t, "t1", good.TaskID)
	require.Equal(t, "approved", good.Status)
	require.False(t, bad.Verified)
	require.NotEmpty(t, bad.Error)
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestWebhookListenNeedsASecret(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "", nil, "webhook", "listen", "--addr", "127.0.0.1:0")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "--secret")
	r = runCLI(t, "", nil, "webhook", "listen", "--addr", "127.0.0.1:0", "--secret", "nope")
	require.Equal(t, ExitUsage, r.code, r.stderr)
}
