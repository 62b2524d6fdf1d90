package tools_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/aiusage/kit/internal/app/telemetry/tools"
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// oneRecord returns a logs request of one record, with the resource
// attributes res.
func oneRecord(res []*commonpb.KeyValue, rec ...*commonpb.KeyValue) *collogspb.ExportLogsServiceRequest {
	return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: &resourcepb.Resource{Attributes: res},
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{
			TimeUnixNano: 1795774500000000000, Attributes: rec,
		}}}},
	}}}
}

func TestLenientNumbers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		value *commonpb.AnyValue
		want  int64
		found bool
	}{
		{"int", &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 12}}, 12, true},
		{"double", &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 12.4}}, 12, true},
		{"decimal string", &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: " 12 "}}, 12, true},
		{"float string", &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "12.0"}}, 12, true},
		{"true string", &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "true"}}, 1, true},
		{"bool", &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: false}}, 0, true},
		{"word", &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "many"}}, 0, false},
		{"negative", &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -3}}, 0, false},
		{"NaN", &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.NaN()}}, 0, false},
		{"huge", &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 1e300}}, 0, false},
		{"array", &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{}}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := tools.Logs(oneRecord([]*commonpb.KeyValue{str("service.name", "claude-code")},
				str("event.name", "claude_code.api_request"), &commonpb.KeyValue{Key: "input_tokens", Value: tc.value}))
			if !tc.found {
				require.Empty(t, b.Usage)
				require.Equal(t, 1, b.Unmapped.Reasons[tools.ReasonNoTokens])
				return
			}
			require.Len(t, b.Usage, 1)
			require.Equal(t, tools.Tokens{Input: tc.want}, b.Usage[0].Tokens)
		})
	}
}

func TestMergeRecordWins(t *testing.T) {
	t.Parallel()
	b := tools.Logs(oneRecord(
		[]*commonpb.KeyValue{str("service.name", "claude-code"), str("user.email", "old@example.com"), str("department", "sales")},
		str("event.name", "api_request"), str("user.email", " New@Example.com"), str("output_tokens", "3"),
		str("session.id", "s"), str("event.sequence", "1")))
	require.Len(t, b.Usage, 1)
	u := b.Usage[0]
	require.Equal(t, "new@example.com", u.Email)
	require.Equal(t, "sales", u.Department)
	// Without the string body, Claude Code's short event name is still its own.
	require.Equal(t, "claude_code.api_request", u.Source)
}

func TestGenAIDetailsEvent(t *testing.T) {
	t.Parallel()
	req := oneRecord([]*commonpb.KeyValue{str("service.name", "copilot-chat"), str("user.email", "h@example.com")},
		str("gen_ai.response.model", "gpt-4.1"), str("gen_ai.conversation.id", "cv"),
		str("gen_ai.usage.input_tokens", "120"), str("gen_ai.usage.cache_read.input_tokens", "20"),
		str("gen_ai.usage.output_tokens", "9"), str("gen_ai.input.messages", `[{"role":"user"}]`))
	req.ResourceLogs[0].ScopeLogs[0].LogRecords[0].EventName = "gen_ai.client.inference.operation.details"
	b := tools.Logs(req)
	require.Len(t, b.Usage, 1)
	u := b.Usage[0]
	require.Equal(t, tools.Tokens{Input: 100, CacheRead: 20, Output: 9}, u.Tokens)
	require.Equal(t, "gpt-4.1", u.Model)
	require.Equal(t, "cv", u.SessionID)
	require.Equal(t, tools.OriginEvent, u.Origin)
	require.Len(t, b.Prompts, 1)
	require.Equal(t, u.Key, b.Prompts[0].Key)
	require.Equal(t, `[{"role":"user"}]`, b.Prompts[0].Text)
	require.Zero(t, b.Unmapped.Total())

	// A record without an event name maps to nothing.
	b = tools.Logs(oneRecord(nil, str("message", "hello")))
	require.Equal(t, tools.Unmapped{LogRecords: 1, Reasons: map[tools.Reason]int{tools.ReasonNoName: 1}}, b.Unmapped)
}
