package cli

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

// demoToolTotals is the organisation-wide usage of one assistant.
type demoToolTotals struct{ requests, input, output int64 }

// demoTelemetryUsage reads the organisation-wide usage of the demo run's
// organisation by assistant, with its API key.
func demoTelemetryUsage(t *testing.T, d *demoRun) map[string]demoToolTotals {
	t.Helper()
	m := regexp.MustCompile(`(http://[^ ]+)/organisations/([0-9a-f-]+)/instructions`).FindStringSubmatch(d.commands["1"])
	require.Len(t, m, 3, d.commands["1"])
	key := regexp.MustCompile(`aiu_[0-9A-Za-z]+`).FindString(d.commands["1"])
	if key == "" { // a later start prints $API_KEY, not the key
		for _, v := range d.env {
			if k, ok := strings.CutPrefix(v, "API_KEY="); ok {
				key = k
			}
		}
	}
	q := url.Values{"granularity": {"day"}, "groupBy": {spec.DimensionAssistantID}, "limit": {"1000"},
		"startAt": {time.Now().UTC().AddDate(0, 0, -10).Format(time.RFC3339)}, "endAt": {time.Now().UTC().AddDate(0, 0, 1).Format(time.RFC3339)}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, m[1]+"/organisations/"+m[2]+"/usage?"+q.Encode(), nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var page struct {
		Data    []spec.UsageBucket `json:"data"`
		HasMore bool               `json:"hasMore"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
	require.False(t, page.HasMore)
	out := map[string]demoToolTotals{}
	for _, b := range page.Data {
		if b.Dimensions.AssistantID == nil {
			continue
		}
		tt := out[*b.Dimensions.AssistantID]
		tt.requests += b.Metrics.Requests
		tt.input += b.Metrics.InputTokens
		tt.output += b.Metrics.OutputTokens
		out[*b.Dimensions.AssistantID] = tt
	}
	return out
}

// demoTelemetrySent waits until the demo run logs that its telemetry was
// sent.
func demoTelemetrySent(t *testing.T, d *demoRun) {
	t.Helper()
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(d.accessLog)
		return err == nil && strings.Contains(string(b), `msg="demo telemetry sent"`)
	}, 60*time.Second, 100*time.Millisecond, "the demo sends its telemetry:\n%s", d.stderr.String())
}

// checkDemoTelemetry checks the block's telemetry line, and that the
// telemetry the demo sent shows in the organisation-wide usage as the two
// tools, with tokens; it returns their totals once the rollup is done.
func checkDemoTelemetry(t *testing.T, d *demoRun) map[string]demoToolTotals {
	t.Helper()
	// The demo runs with --otlp-grpc-addr 127.0.0.1:0: the line shows the
	// port it got, and Gemini CLI's telemetry goes there.
	m := regexp.MustCompile(`(?m)^  telemetry      OTLP http://127\.0\.0\.1:[0-9]+  \(HTTP at /v1/\{logs,metrics,traces\}; gRPC at (http://127\.0\.0\.1:([0-9]+)); Ingestion key aiu_[0-9A-Za-z]+\)$`).FindStringSubmatch(d.block)
	require.Len(t, m, 3, d.block)
	require.NotEqual(t, "0", m[2])
	demoTelemetrySent(t, d)
	b, err := os.ReadFile(d.accessLog)
	require.NoError(t, err)
	sent := regexp.MustCompile(`(?m)^.*msg="demo telemetry sent".*$`).FindString(string(b))
	require.Contains(t, sent, "grpc="+m[1])
	// Gemini CLI's "tool" tokens map to nothing: a partial success, told
	// apart from a failure by the answer itself.
	require.Contains(t, sent, "not taken")
	var last map[string]demoToolTotals
	stable := 0
	require.Eventually(t, func() bool {
		u := demoTelemetryUsage(t, d)
		if u["claude-code"].input == 0 || u["gemini-cli"].input == 0 || u["claude-code"].output == 0 || u["gemini-cli"].output == 0 {
			return false
		}
		if last != nil && u["claude-code"] == last["claude-code"] && u["gemini-cli"] == last["gemini-cli"] {
			stable++
		} else {
			stable = 0
		}
		last = u
		return stable >= 4 // unchanged for two seconds
	}, 60*time.Second, 500*time.Millisecond, "the usage shows claude-code and gemini-cli: %v", last)
	return last
}

// checkDemoTelemetryAgain checks that a later start, which sends the same
// telemetry again, leaves the totals as they were.
func checkDemoTelemetryAgain(t *testing.T, d *demoRun, want map[string]demoToolTotals) {
	t.Helper()
	demoTelemetrySent(t, d)
	require.Never(t, func() bool {
		u := demoTelemetryUsage(t, d)
		return u["claude-code"] != want["claude-code"] || u["gemini-cli"] != want["gemini-cli"]
	}, 5*time.Second, 250*time.Millisecond, "a second start does not change the telemetry's totals: %v", want)
}
