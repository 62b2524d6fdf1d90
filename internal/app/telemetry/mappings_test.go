package telemetry_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestMoreMappings: Claude Code's beta spans beside its events, Codex CLI's
// turn cost, LiteLLM's metadata, Copilot's own and draft metrics, an
// application's draft counters and the deprecated GenAI message events,
// sent through the endpoint twice (in both encodings but for the traces),
// give the organisation-wide totals exactly: the spans and the draft
// counters that repeat other records add nothing, and a turn cost adds its
// cost but no request.
func TestMoreMappings(t *testing.T) {
	t.Parallel()
	names := []string{"claude_logs.json", "claude_traces.json", "codex_turn_cost_logs.json", "litellm_traces.json",
		"copilot_metrics.json", "genai_draft_metrics_1.json", "genai_draft_metrics_2.json", "genai_deprecated_logs.json"}
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, nil)
		for _, asProto := range []bool{true, false} {
			for _, n := range names {
				// The trace fixtures are OTLP/JSON with hex ids, which the
				// helper's protobuf path (plain protojson) cannot read
				// right: they go as JSON, twice.
				asProto := asProto && !strings.Contains(n, "traces")
				code, body := post(t, e.url, n, asProto, bearer(e.ingest.Secret))
				require.Equal(t, http.StatusOK, code, "%s: %s", n, body)
			}
		}
		require.NoError(t, e.srv.Telemetry().RollupAll(t.Context()))
		got := e.orgUsage(t)
		// Requests: Claude Code's 4 api_request events, Codex CLI's one
		// response.completed, LiteLLM's 3 spans; the turn costs, the
		// metrics and the spans repeating the events count none.
		// Input (cache included) and output: Claude Code 1,323 and 279,
		// Codex CLI 1,200 and 300, LiteLLM 547 and 93, Copilot's histogram
		// 1,000 and 200, the draft counters' last totals 610 and 90.
		// Cost: Claude Code's estimates 0.5126 and Codex CLI's turn costs
		// 0.012845.
		require.Equal(t, int64(8), got.Requests)
		require.Equal(t, int64(1323+1200+547+1000+610), got.Input)
		require.Equal(t, int64(279+300+93+200+90), got.Output)
		require.InDelta(t, 0.5126+0.012845, got.Cost, 1e-6)
		want := reference(t, names...)
		require.InDelta(t, want.Cost, got.Cost, 1e-6)
		got.Cost, want.Cost = 0, 0
		require.Equal(t, want, got)
	})
}
