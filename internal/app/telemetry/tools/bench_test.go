package tools_test

import (
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"github.com/aiusage/kit/internal/app/telemetry/tools"
)

// BenchmarkLogs maps a request of 1,000 Claude Code and Codex CLI log
// records (the fixtures repeated) and reports records per second.
func BenchmarkLogs(b *testing.B) {
	claude := load(b, "claude_logs.json", &collogspb.ExportLogsServiceRequest{})
	codex := load(b, "codex_logs.json", &collogspb.ExportLogsServiceRequest{})
	req := &collogspb.ExportLogsServiceRequest{}
	n := 0
	for n < 1000 {
		for _, src := range []*collogspb.ExportLogsServiceRequest{claude, codex} {
			rl := src.GetResourceLogs()[0]
			req.ResourceLogs = append(req.ResourceLogs, &logspb.ResourceLogs{Resource: rl.GetResource(), ScopeLogs: rl.GetScopeLogs()})
			n += len(rl.GetScopeLogs()[0].GetLogRecords())
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		tools.Logs(req)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
