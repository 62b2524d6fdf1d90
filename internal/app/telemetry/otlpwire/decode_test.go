package otlpwire

import (
	"encoding/hex"
	"testing"

	"github.com/aiusage/kit/spec"
	"github.com/stretchr/testify/require"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

// TestUnmarshalJSONTraces checks OTLP/JSON's deviations: hex ids of either
// case (also in links and escaped keys), int64 as strings and numbers, enums
// as integers, unknown fields ignored.
func TestUnmarshalJSONTraces(t *testing.T) {
	t.Parallel()
	body := []byte(`{"resourceSpans":[{"resource":{"attributes":[{"key":"traceId","value":{"stringValue":"not an id"}}]},
	  "scopeSpans":[{"spans":[{
	    "traceId" : "5B8EFFF798038103D269B633813FC60C", "spanId":"eee19b7ec3c1b174", "parentSpanId":"",
	    "name":"chat claude", "kind":3, "startTimeUnixNano":"1544712660000000000", "endTimeUnixNano":1544712661000000000,
	    "links":[{"trace\u0049d":"5b8efff798038103d269b633813fc60c","span_id":"eee19b7ec3c1b173"}],
	    "attributes":[{"key":"n","value":{"intValue":42}},{"key":"m","value":{"intValue":"43"}}],
	    "futureField":{"traceId":"5b8efff798038103d269b633813fc60c","n":1}}]}]}]}`)
	m, err := unmarshal(Traces, encJSON, body)
	require.NoError(t, err)
	span := m.(*coltrace.ExportTraceServiceRequest).ResourceSpans[0].ScopeSpans[0].Spans[0]
	require.Equal(t, unhex(t, "5b8efff798038103d269b633813fc60c"), span.TraceId)
	require.Equal(t, unhex(t, "eee19b7ec3c1b174"), span.SpanId)
	require.Empty(t, span.ParentSpanId)
	require.Equal(t, "chat claude", span.Name)
	require.EqualValues(t, 3, span.Kind)
	require.Equal(t, uint64(1544712660000000000), span.StartTimeUnixNano)
	require.Equal(t, uint64(1544712661000000000), span.EndTimeUnixNano)
	require.Equal(t, unhex(t, "5b8efff798038103d269b633813fc60c"), span.Links[0].TraceId)
	require.Equal(t, unhex(t, "eee19b7ec3c1b173"), span.Links[0].SpanId)
	require.Equal(t, int64(42), span.Attributes[0].Value.GetIntValue())
	require.Equal(t, int64(43), span.Attributes[1].Value.GetIntValue())
}

func TestUnmarshalJSONLogsAndMetrics(t *testing.T) {
	t.Parallel()
	logs := []byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"1","severityNumber":9,
	  "body":{"stringValue":"claude_code.api_request"},"traceId":"5b8efff798038103d269b633813fc60c","spanId":"EEE19B7EC3C1B174",
	  "eventName":"claude_code.api_request"}]}]}]}`)
	m, err := unmarshal(Logs, encJSON, logs)
	require.NoError(t, err)
	rec := m.(*collogs.ExportLogsServiceRequest).ResourceLogs[0].ScopeLogs[0].LogRecords[0]
	require.Equal(t, "claude_code.api_request", rec.Body.GetStringValue())
	require.Equal(t, unhex(t, "eee19b7ec3c1b174"), rec.SpanId)
	require.EqualValues(t, 9, rec.SeverityNumber)

	metrics := []byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"claude_code.token.usage","unit":"tokens",
	  "sum":{"aggregationTemporality":1,"isMonotonic":true,"dataPoints":[{"asInt":"1200","timeUnixNano":5,
	  "exemplars":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","asDouble":1.5}]}]}}]}]}]}`)
	m, err = unmarshal(Metrics, encJSON, metrics)
	require.NoError(t, err)
	sum := m.(*colmetrics.ExportMetricsServiceRequest).ResourceMetrics[0].ScopeMetrics[0].Metrics[0].GetSum()
	require.EqualValues(t, 1, sum.AggregationTemporality)
	require.Equal(t, int64(1200), sum.DataPoints[0].GetAsInt())
	require.Equal(t, unhex(t, "5b8efff798038103d269b633813fc60c"), sum.DataPoints[0].Exemplars[0].TraceId)
}

func TestUnmarshalProtobufRoundTrip(t *testing.T) {
	t.Parallel()
	m, err := unmarshal(Logs, encProtobuf, logsProto(t, "hello"))
	require.NoError(t, err)
	want := &collogs.ExportLogsServiceRequest{}
	require.NoError(t, proto.Unmarshal(logsProto(t, "hello"), want))
	require.True(t, proto.Equal(want, m))
}

func TestRewriteIDs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want, field string
	}{
		{in: `{"spanId":"0102030405060708"}`, want: `{"spanId":"AQIDBAUGBwg="}`},
		{in: `{"spanId": null, "x":"spanId"}`, want: `{"spanId": null, "x":"spanId"}`},
		{in: `["traceId","spanId"]`, want: `["traceId","spanId"]`},
		{in: `{"a":"\"spanId\":\"zz\"","parentSpanId" :"0102030405060708"}`, want: `{"a":"\"spanId\":\"zz\"","parentSpanId" :"AQIDBAUGBwg="}`},
		{in: `{"spanId":"\u0030102030405060708"}`, want: `{"spanId":"AQIDBAUGBwg="}`},
		{in: `{"spanId":"01020304050607`, field: "spanId"},
		{in: `{"spanId":"010203040506070g"}`, field: "spanId"},
		{in: `{"parent_span_id":"0102"}`, field: "parentSpanId"},
		{in: `{"traceId":"0102030405060708"}`, field: "traceId"},
		{in: `{"x":"unterminated`, want: `{"x":"unterminated`},
	} {
		got, err := rewriteIDs([]byte(c.in))
		if c.field != "" {
			require.ErrorIs(t, err, spec.ErrInvalid, c.in)
			require.ErrorContains(t, err, c.field, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, string(got), c.in)
	}
}

func TestCut(t *testing.T) {
	t.Parallel()
	s := cut(string(make([]byte, 299)) + "ééé")
	require.LessOrEqual(t, len(s), maxMessage+len("…"))
	require.Equal(t, "…", s[len(s)-len("…"):])
	require.Equal(t, "short", cut("short"))
}
