package otlpwire

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// logsRequest returns an export request of n log records in the shape of
// Claude Code's api_request events, with trace and span ids.
func logsRequest(n int) *collogs.ExportLogsServiceRequest {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	num := func(k string, v int64) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
	}
	recs := make([]*logspb.LogRecord, n)
	for i := range recs {
		recs[i] = &logspb.LogRecord{
			TimeUnixNano: 1764300000000000000 + uint64(i), SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_INFO,
			EventName: "claude_code.api_request",
			Body:      &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "claude_code.api_request"}},
			Attributes: []*commonpb.KeyValue{str("session.id", fmt.Sprintf("session-%d", i/10)), str("model", "claude-sonnet-4-5"),
				num("input_tokens", int64(i)), num("output_tokens", 300), num("cache_read_tokens", 12000),
				num("cache_creation_tokens", 0), str("cost_usd", "0.0123"), num("duration_ms", 2300)},
			TraceId: []byte{0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f, 0xc6, byte(i)},
			SpanId:  []byte{0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, byte(i)},
		}
	}
	return &collogs.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "claude-code"), str("user.email", "ada@example.com")}},
		ScopeLogs: []*logspb.ScopeLogs{{Scope: &commonpb.InstrumentationScope{Name: "com.anthropic.claude_code.events"}, LogRecords: recs}},
	}}}
}

// hexJSON returns m in OTLP/JSON: protojson with its base64 ids as hex.
func hexJSON(tb testing.TB, m proto.Message) []byte {
	tb.Helper()
	b, err := protojson.Marshal(m)
	require.NoError(tb, err)
	var out []byte
	for i := 0; i < len(b); {
		if b[i] != '"' {
			out = append(out, b[i])
			i++
			continue
		}
		end := stringEnd(b, i)
		size, _ := idKey(b[i:end])
		out = append(out, b[i:end]...)
		i = end
		if size == 0 {
			continue
		}
		j := skipSpace(b, skipSpace(b, i)+1) // past the colon
		out = append(out, b[i:j]...)
		end = stringEnd(b, j)
		raw, err := base64.StdEncoding.DecodeString(string(b[j+1 : end-1]))
		require.NoError(tb, err)
		out = append(out, '"')
		out = append(out, hex.EncodeToString(raw)...)
		out = append(out, '"')
		i = end
	}
	return out
}

// BenchmarkDecodeLogs decodes a request of 1,000 log records per op, in
// each encoding, from the body as read (a copy of it, as the JSON decoding
// rewrites its ids in place), and reports records/s.
func BenchmarkDecodeLogs(b *testing.B) {
	const records = 1000
	m := logsRequest(records)
	pb, err := proto.Marshal(m)
	require.NoError(b, err)
	js := hexJSON(b, m)
	for _, c := range []struct {
		name string
		enc  encoding
		body []byte
	}{{"protobuf", encProtobuf, pb}, {"json", encJSON, js}} {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, len(c.body))
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				copy(buf, c.body)
				got, err := unmarshal(Logs, c.enc, buf)
				if err != nil {
					b.Fatal(err)
				}
				if n := len(got.(*collogs.ExportLogsServiceRequest).ResourceLogs[0].ScopeLogs[0].LogRecords); n != records {
					b.Fatalf("%d records", n)
				}
			}
			b.ReportMetric(float64(records*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// TestHexJSON checks the benchmark's body: it decodes to the request.
func TestHexJSON(t *testing.T) {
	t.Parallel()
	m := logsRequest(3)
	js := hexJSON(t, m)
	require.Contains(t, string(js), `"traceId":"5b8efff798038103d269b633813fc602"`)
	got, err := unmarshal(Logs, encJSON, js)
	require.NoError(t, err)
	require.True(t, proto.Equal(m, got))
}

// BenchmarkHandlerMaxBody sends a request of log records just under the
// default limit (20 MiB) through the handler, protobuf and JSON, and
// reports the bytes allocated per request as a multiple of the body
// (alloc/body): the body buffer, the JSON rewrite done in place and the
// decoded message.
func BenchmarkHandlerMaxBody(b *testing.B) {
	h := newHandler(b, Logs, Config{})
	m := logsRequest(1000)
	pb, err := proto.Marshal(m)
	require.NoError(b, err)
	m = logsRequest(int(int64(1000) * (DefaultMaxBytes - 1<<20) / int64(len(pb))))
	for _, c := range []struct{ name, ct string }{{"protobuf", typeProtobuf}, {"json", typeJSON}} {
		var body []byte
		if c.ct == typeProtobuf {
			body, err = proto.Marshal(m)
			require.NoError(b, err)
		} else {
			body = hexJSON(b, m)
			if len(body) > DefaultMaxBytes {
				n := len(m.ResourceLogs[0].ScopeLogs[0].LogRecords) * (DefaultMaxBytes - 1<<20) / len(body)
				body = hexJSON(b, logsRequest(n))
			}
		}
		b.Run(c.name, func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1/logs", bytes.NewReader(body))
				req.Header.Set("Content-Type", c.ct)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code, rec.Body.String())
				}
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(len(body))/(1<<20), "MiB/body")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(body)), "alloc/body")
		})
	}
}
