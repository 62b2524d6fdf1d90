package tools_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/aiusage/kit/internal/app/telemetry/tools"
)

func TestGeminiCumulativeMetrics(t *testing.T) {
	t.Parallel()
	m1, m2, m3 := metricsOf(t, "gemini_metrics_1.json"), metricsOf(t, "gemini_metrics_2.json"), metricsOf(t, "gemini_metrics_3.json")
	want := map[bucket]total{
		// 14h: input 800 running total of which 200 cached; output 90 and thoughts 30.
		{"gemini-cli", "gemini-2.5-pro", "erin@example.com", "2026-11-27T14"}: {Tokens: tools.Tokens{Input: 600, CacheRead: 200, Output: 120}},
		// 15h: the restarted process (new start time, new session) counts from zero.
		{"gemini-cli", "gemini-2.5-pro", "erin@example.com", "2026-11-27T15"}: {Tokens: tools.Tokens{Input: 100, Output: 10}},
	}
	for name, order := range map[string][]tools.Batch{
		"in order":            {m1, m2, m3},
		"duplicates":          {m1, m1, m2, m2, m3, m1, m3},
		"reordered":           {m3, m2, m1},
		"late first export":   {m2, m1, m3},
		"restart before rest": {m1, m3, m2},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var s store
			s.add(order...)
			require.Equal(t, want, s.totals())
		})
	}

	// Each point: the running total, its series and start; tool tokens and
	// the GenAI histogram are not counted.
	require.Len(t, m1.Usage, 4)
	u := m1.Usage[1]
	require.True(t, u.Cumulative)
	require.Equal(t, tools.Tokens{Input: -200, CacheRead: 200}, u.Tokens)
	require.Equal(t, time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC), u.Start)
	require.Equal(t, time.Date(2026, 11, 27, 14, 0, 10, 0, time.UTC), u.Time)
	require.Equal(t, m2.Usage[1].Series, u.Series)
	require.NotEqual(t, m2.Usage[1].Key, u.Key)
	require.NotEqual(t, m1.Usage[0].Series, u.Series)
	require.Equal(t, tools.OriginMetric, u.Origin)
	require.Equal(t, "g-2", u.SessionID)
	require.Equal(t, tools.Unmapped{DataPoints: 2, Reasons: map[tools.Reason]int{
		tools.ReasonNotCounted: 1, tools.ReasonCountedElsewhere: 1}}, m1.Unmapped)
	require.Equal(t, keys(m1), keys(metricsOf(t, "gemini_metrics_1.json")))
}

func TestGenAIMetrics(t *testing.T) {
	t.Parallel()
	m := metricsOf(t, "genai_metrics.json")
	var s store
	s.add(m, m)
	require.Equal(t, map[bucket]total{
		// Delta histograms: the sums add up; input includes any cache.
		{"support-bot", "claude-sonnet-4-5-20250929", "grace@example.com", "2026-11-27T18"}: {Tokens: tools.Tokens{Input: 330, Output: 120}},
	}, s.totals())
	require.False(t, m.Usage[0].Cumulative)
	require.Equal(t, tools.Unmapped{DataPoints: 1, Reasons: map[tools.Reason]int{tools.ReasonMetricKind: 1}}, m.Unmapped)
	require.Equal(t, []tools.Assistant{{ID: "support-bot", Name: "support-bot", Version: "1.2.0",
		LastSeen: time.Date(2026, 11, 27, 18, 2, 0, 0, time.UTC)}}, m.Assistants)
}

func TestGenAITraces(t *testing.T) {
	t.Parallel()
	tr := tracesOf(t, "genai_traces.json")
	var s store
	s.add(tr, tr)
	require.Equal(t, map[bucket]total{
		// The agent span repeats its chat span and is not counted; input
		// includes the cache tokens, which are taken out.
		{"copilot-chat", "gpt-4.1-2025-04-14", "frank@example.com", "2026-11-27T16"}: {Tokens: tools.Tokens{Input: 300, CacheRead: 600, CacheWrite: 100, Output: 200}},
		// LiteLLM with the deprecated prompt_tokens and completion_tokens.
		{"litellm", "gpt-4o", "", "2026-11-27T17"}: {Tokens: tools.Tokens{Input: 300, Output: 70}},
	}, s.totals())
	require.Len(t, tr.Usage, 2)
	require.Equal(t, "conv-7", tr.Usage[0].SessionID)
	require.Equal(t, "platform", tr.Usage[0].Team)
	require.Equal(t, tools.OriginSpan, tr.Usage[0].Origin)
	require.Equal(t, "chat gpt-4.1", tr.Usage[0].Source)
	require.Len(t, tr.Prompts, 1)
	require.Contains(t, tr.Prompts[0].Text, "hello")
	require.Equal(t, tools.Unmapped{Spans: 2, Reasons: map[tools.Reason]int{
		tools.ReasonAggregate: 1, tools.ReasonNoTokens: 1}}, tr.Unmapped)
	require.Equal(t, keys(tr), keys(tracesOf(t, "genai_traces.json")))
	require.NotEqual(t, tr.Usage[0].Key, tr.Usage[1].Key)
}

func TestCodexTurnTokenUsage(t *testing.T) {
	t.Parallel()
	point := func(typ string, sum float64, at uint64) *metricspb.HistogramDataPoint {
		return &metricspb.HistogramDataPoint{Attributes: []*commonpb.KeyValue{str("token_type", typ), str("model", "gpt-5-codex")},
			StartTimeUnixNano: 1795774500000000000, TimeUnixNano: at, Count: 1, Sum: &sum}
	}
	req := func(at uint64, in, cached, write, out, total float64) *colmetricspb.ExportMetricsServiceRequest {
		return &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "codex-cli"), str("user.email", "dave@example.com")}},
			ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{
				Name: "codex.turn.token_usage",
				Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
					AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
					DataPoints: []*metricspb.HistogramDataPoint{point("input", in, at), point("cached_input", cached, at),
						point("cache_write_input", write, at), point("output", out, at), point("total", total, at)},
				}},
			}}}},
		}}}
	}
	m1 := tools.Metrics(req(1795774560000000000, 1200, 1000, 0, 300, 1500))
	m2 := tools.Metrics(req(1795774620000000000, 1700, 1000, 25, 340, 2040))
	var s store
	s.add(m2, m1, m2)
	require.Equal(t, map[bucket]total{
		{"codex-cli", "gpt-5-codex", "dave@example.com", "2026-11-27T10"}: {Tokens: tools.Tokens{Input: 700, CacheRead: 1000, CacheWrite: 25, Output: 340}},
	}, s.totals())
	require.Equal(t, tools.Unmapped{DataPoints: 1, Reasons: map[tools.Reason]int{tools.ReasonNotCounted: 1}}, m1.Unmapped)
}
