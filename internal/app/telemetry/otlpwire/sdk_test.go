package otlpwire

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aiusage/kit/spec"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP server of the three handlers on 127.0.0.1:0
// whose ingest keeps every request, and answers with partial or err.
type collector struct {
	url     string
	mu      sync.Mutex
	got     []proto.Message
	headers []http.Header
	partial Partial
	err     error
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{}
	mux := http.NewServeMux()
	for _, s := range []Signal{Metrics, Logs, Traces} {
		h := newHandler(t, s, Config{Ingest: func(_ context.Context, m proto.Message) (Partial, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.got = append(c.got, m)
			return c.partial, c.err
		}})
		mux.Handle(s.Path(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.mu.Lock()
			c.headers = append(c.headers, r.Header.Clone())
			c.mu.Unlock()
			h.ServeHTTP(w, r)
		}))
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

// received returns what arrived, and the headers of the requests.
func (c *collector) received() ([]proto.Message, []http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]proto.Message(nil), c.got...), append([]http.Header(nil), c.headers...)
}

func TestSDKTraces(t *testing.T) {
	t.Parallel()
	for _, enc := range []otlptracehttp.Encoding{otlptracehttp.EncodingProtobuf, otlptracehttp.EncodingJSON} {
		for _, comp := range []otlptracehttp.Compression{otlptracehttp.NoCompression, otlptracehttp.GzipCompression} {
			t.Run(fmt.Sprintf("encoding %v gzip %v", enc, comp), func(t *testing.T) {
				t.Parallel()
				c := newCollector(t)
				ctx := t.Context()
				exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(c.url+"/v1/traces"),
					otlptracehttp.WithEncoding(enc), otlptracehttp.WithCompression(comp),
					otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
				require.NoError(t, err)
				tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
				pctx, parent := tp.Tracer("test").Start(ctx, "invoke_agent")
				_, span := tp.Tracer("test").Start(pctx, "chat claude-sonnet-4")
				span.End()
				parent.End()
				require.NoError(t, tp.Shutdown(ctx))

				got, headers := c.received()
				require.Len(t, got, 2)
				wantType := map[otlptracehttp.Encoding]string{otlptracehttp.EncodingProtobuf: typeProtobuf, otlptracehttp.EncodingJSON: typeJSON}[enc]
				require.Equal(t, wantType, headers[0].Get("Content-Type"))
				if comp == otlptracehttp.GzipCompression {
					require.Equal(t, "gzip", headers[0].Get("Content-Encoding"))
				}
				child := got[0].(*coltrace.ExportTraceServiceRequest).ResourceSpans[0].ScopeSpans[0].Spans[0]
				root := got[1].(*coltrace.ExportTraceServiceRequest).ResourceSpans[0].ScopeSpans[0].Spans[0]
				require.Equal(t, "chat claude-sonnet-4", child.Name)
				sc := span.SpanContext()
				tid, sid := sc.TraceID(), sc.SpanID()
				pid := parent.SpanContext().SpanID()
				require.Equal(t, tid[:], child.TraceId)
				require.Equal(t, sid[:], child.SpanId)
				require.Equal(t, pid[:], child.ParentSpanId)
				require.Equal(t, pid[:], root.SpanId)
			})
		}
	}
}

func TestSDKMetrics(t *testing.T) {
	t.Parallel()
	for _, comp := range []otlpmetrichttp.Compression{otlpmetrichttp.NoCompression, otlpmetrichttp.GzipCompression} {
		t.Run(fmt.Sprintf("gzip %v", comp), func(t *testing.T) {
			t.Parallel()
			c := newCollector(t)
			ctx := t.Context()
			exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(c.url+"/v1/metrics"),
				otlpmetrichttp.WithCompression(comp), otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}))
			require.NoError(t, err)
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
			counter, err := mp.Meter("test").Int64Counter("claude_code.token.usage")
			require.NoError(t, err)
			counter.Add(ctx, 1200)
			counter.Add(ctx, 34)
			require.NoError(t, mp.Shutdown(ctx))

			got, headers := c.received()
			require.NotEmpty(t, got)
			require.Equal(t, typeProtobuf, headers[0].Get("Content-Type"))
			m := got[0].(*colmetrics.ExportMetricsServiceRequest).ResourceMetrics[0].ScopeMetrics[0].Metrics[0]
			require.Equal(t, "claude_code.token.usage", m.Name)
			require.Equal(t, int64(1234), m.GetSum().DataPoints[0].GetAsInt())
		})
	}
}

func TestSDKLogs(t *testing.T) {
	t.Parallel()
	for _, comp := range []otlploghttp.Compression{otlploghttp.NoCompression, otlploghttp.GzipCompression} {
		t.Run(fmt.Sprintf("gzip %v", comp), func(t *testing.T) {
			t.Parallel()
			c := newCollector(t)
			ctx := t.Context()
			exp, err := otlploghttp.New(ctx, otlploghttp.WithEndpointURL(c.url+"/v1/logs"),
				otlploghttp.WithCompression(comp), otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}))
			require.NoError(t, err)
			lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(exp)))
			var rec log.Record
			rec.SetBody(attribute.StringValue("claude_code.api_request"))
			rec.SetEventName("claude_code.api_request")
			rec.AddAttributes(attribute.Int64("input_tokens", 1200))
			lp.Logger("test").Emit(ctx, rec)
			require.NoError(t, lp.Shutdown(ctx))

			got, _ := c.received()
			require.Len(t, got, 1)
			r := got[0].(*collogs.ExportLogsServiceRequest).ResourceLogs[0].ScopeLogs[0].LogRecords[0]
			require.Equal(t, "claude_code.api_request", r.Body.GetStringValue())
			require.Equal(t, "claude_code.api_request", r.EventName)
			require.Equal(t, int64(1200), r.Attributes[0].Value.GetIntValue())
		})
	}
}

// TestSDKAnswers checks that the SDK reads the answers: a partial success
// is reported as its error, a 400 as a permanent failure with the message.
func TestSDKAnswers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		partial Partial
		err     error
		want    []string
	}{
		{name: "partial", partial: Partial{Rejected: 1, Message: "1 span maps to nothing"}, want: []string{"1 span maps to nothing"}},
		{name: "bad request", err: spec.Invalid("resourceSpans", "is odd"), want: []string{"400", "resourceSpans is odd"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			col := newCollector(t)
			col.partial, col.err = c.partial, c.err
			ctx := t.Context()
			exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(col.url+"/v1/traces"),
				otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
			require.NoError(t, err)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(exp)))
			_, span := tp.Tracer("test").Start(ctx, "s")
			span.End()
			err = tp.ForceFlush(ctx)
			require.Error(t, err)
			for _, w := range c.want {
				require.ErrorContains(t, err, w)
			}
			require.NoError(t, tp.Shutdown(ctx))
		})
	}
}
