package telemetry_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// jsClientDir holds the OpenTelemetry JavaScript SDK client; .ci/run
// installs its node_modules.
const jsClientDir = "jsclient"

// needJSClient returns node, or skips the test when the JavaScript client
// is not installed, unless AIUSAGE_REQUIRE_NODE=1 (CI), where it fails.
func needJSClient(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	_, statErr := os.Stat(filepath.Join(jsClientDir, "node_modules", "@opentelemetry", "exporter-logs-otlp-http"))
	if err != nil || statErr != nil {
		msg := "the OpenTelemetry JavaScript client is not installed: run (cd internal/app/telemetry/jsclient && npm ci)"
		if os.Getenv("AIUSAGE_REQUIRE_NODE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node
}

// runJSClient runs send.mjs against endpoint with the key in
// OTEL_EXPORTER_OTLP_HEADERS, as a user configures a tool, and returns its
// output and whether it succeeded.
func runJSClient(t *testing.T, node, endpoint, key string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "send.mjs")
	cmd.Dir = jsClientDir
	cmd.Env = append(os.Environ(),
		"OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/json",
		"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer "+key,
		"OTEL_EXPORTER_OTLP_TIMEOUT=30000",
	)
	out, err := cmd.CombinedOutput()
	t.Logf("send.mjs:\n%s", out)
	return string(out), err == nil
}

// TestJavaScriptSDK sends Claude Code api_request events, delta token
// metrics and a GenAI span with the OpenTelemetry JavaScript SDK's OTLP
// http/json exporters to the whole service, and finds the exact totals in
// the organisation's usage: the events' tokens, the metrics of the session
// without events (the other session's are counted once, by its events),
// and the span's. A wrong key makes every export fail with the 401 and an
// API key with the 403, and neither stores anything.
func TestJavaScriptSDK(t *testing.T) {
	t.Parallel()
	node := needJSClient(t)
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db, nil)

		out, ok := runJSClient(t, node, e.url, "aiusage_wrongwrongwrongwrongwrongwrongwrongwrong")
		require.False(t, ok, out)
		require.Contains(t, out, "logs: export failed: HTTP 401")
		require.Contains(t, out, "metrics: export failed: HTTP 401")
		require.Contains(t, out, "traces: export failed: HTTP 401")
		out, ok = runJSClient(t, node, e.url, e.api.Secret)
		require.False(t, ok, out)
		require.Contains(t, out, "logs: export failed: HTTP 403")

		out, ok = runJSClient(t, node, e.url, e.ingest.Secret)
		require.True(t, ok, out)
		require.Contains(t, out, "all sent")
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))

		// Events of js-s1: 3 requests, input 100+1000+200 + 10 + 7, output
		// 250+20+3, cost 0.013. Metrics of js-s2 in two delta exports:
		// input 40+5+2, output 60+8 (js-s1's 999 is dropped). The span:
		// 1 request, input 11, output 13.
		want := totals{Requests: 4, Input: 1317 + 47 + 11, Output: 273 + 68 + 13, Cost: 0.013}
		got := e.usageAround(t, time.Now())
		require.InDelta(t, want.Cost, got.Cost, 1e-9)
		got.Cost, want.Cost = 0, 0
		require.Equal(t, want, got)

		// The tools themselves are the organisation's assistants.
		assistants := e.orgIDs(t, "assistants")
		require.Len(t, assistants, 2, "claude-code and js-agent")
	})
}

// usageAround sums the organisation-wide usage of the days around at.
func (e *env) usageAround(t *testing.T, at time.Time) totals {
	t.Helper()
	day := at.UTC().Truncate(24 * time.Hour)
	q := url.Values{"granularity": {"day"}, "startAt": {day.Add(-24 * time.Hour).Format(time.RFC3339)},
		"endAt": {day.Add(48 * time.Hour).Format(time.RFC3339)}, "limit": {"1000"}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url+"/organisations/"+e.org.ID+"/usage?"+q.Encode(), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.api.Secret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var page struct {
		Data []spec.UsageBucket `json:"data"`
	}
	require.NoError(t, json.Unmarshal(b, &page))
	var out totals
	for _, bk := range page.Data {
		out.Requests += bk.Metrics.Requests
		out.Input += bk.Metrics.InputTokens
		out.Output += bk.Metrics.OutputTokens
		out.Cost += bk.Metrics.Cost
	}
	return out
}
