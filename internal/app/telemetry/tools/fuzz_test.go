package tools_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/aiusage/kit/internal/app/telemetry/tools"
)

// seed adds the protobuf encoding of each JSON fixture to the fuzz corpus
// (testdata/fuzz/<name> holds more).
func seed[M proto.Message](f *testing.F, m func() M, fixtures ...string) {
	f.Helper()
	for _, name := range fixtures {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		msg := m()
		require.NoError(f, protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, msg))
		pb, err := proto.Marshal(msg)
		require.NoError(f, err)
		f.Add(pb)
	}
}

// fuzzMap unmarshals data into a new request and maps it twice: mapping
// never panics, and gives the same keys each time.
func fuzzMap[M proto.Message](t *testing.T, data []byte, m func() M, mapper func(M) tools.Batch) {
	req := m()
	if proto.Unmarshal(data, req) != nil {
		return
	}
	a, b := mapper(req), mapper(req)
	require.Equal(t, keys(a), keys(b))
	require.Equal(t, a.Unmapped, b.Unmapped)
	acc := tools.NewAccumulator()
	require.LessOrEqual(t, len(acc.Apply(tools.Dedup(a.Usage))), len(a.Usage))
}

func FuzzLogs(f *testing.F) {
	newReq := func() *collogspb.ExportLogsServiceRequest { return &collogspb.ExportLogsServiceRequest{} }
	seed(f, newReq, "claude_logs.json", "codex_logs.json", "gemini_logs.json", "codex_turn_cost_logs.json", "genai_deprecated_logs.json")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzMap(t, data, newReq, tools.Logs) })
}

func FuzzMetrics(f *testing.F) {
	newReq := func() *colmetricspb.ExportMetricsServiceRequest { return &colmetricspb.ExportMetricsServiceRequest{} }
	seed(f, newReq, "claude_metrics.json", "gemini_metrics_1.json", "genai_metrics.json", "copilot_metrics.json", "genai_draft_metrics_1.json")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzMap(t, data, newReq, tools.Metrics) })
}

func FuzzTraces(f *testing.F) {
	newReq := func() *coltracepb.ExportTraceServiceRequest { return &coltracepb.ExportTraceServiceRequest{} }
	seed(f, newReq, "genai_traces.json", "claude_traces.json", "litellm_traces.json")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzMap(t, data, newReq, tools.Traces) })
}
