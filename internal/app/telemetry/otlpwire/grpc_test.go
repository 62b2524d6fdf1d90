package otlpwire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiusage/kit/spec"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// testKey is the key the authenticate function of a grpcCollector takes.
const testKey = "ik_test_key"

// principalKey is the context key under which the authenticate function of
// a grpcCollector puts the key it accepted.
type principalKey struct{}

// grpcCollector is an OTLP/gRPC server of the three services on
// 127.0.0.1:0 that accepts testKey (forbids "api-key"), keeps every request
// with the principal its ingest saw, and answers with partial or err.
type grpcCollector struct {
	addr       string
	mu         sync.Mutex
	got        []proto.Message
	principals []string
	results    []Result
	observed   []string // the principal of each Observe's context
	partial    Partial
	err        error
	authErr    error
	logs       bytes.Buffer
	encodings  []string // the grpc-encoding of each request
}

// HandleRPC keeps the compression of each request's header.
func (c *grpcCollector) HandleRPC(_ context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.encodings = append(c.encodings, h.Compression)
	}
}

func (c *grpcCollector) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (c *grpcCollector) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (c *grpcCollector) HandleConn(context.Context, stats.ConnStats) {}

// requireEncodings checks that every request arrived compressed with comp
// ("" for none).
func (c *grpcCollector) requireEncodings(t *testing.T, comp string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.NotEmpty(t, c.encodings)
	for _, e := range c.encodings {
		require.Equal(t, comp, e)
	}
}

func newGRPCCollector(t *testing.T, maxBytes int64) *grpcCollector {
	t.Helper()
	c := &grpcCollector{}
	s := grpc.NewServer(GRPCMaxRecvMsgSize(maxBytes), grpc.StatsHandler(c))
	err := RegisterGRPC(s, GRPCConfig{
		Authenticate: func(ctx context.Context, key string) (context.Context, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			switch {
			case c.authErr != nil:
				return nil, c.authErr
			case key == "api-key":
				return nil, spec.Errorf(spec.ErrForbidden, "an API key opens no telemetry endpoint")
			case key != testKey:
				return nil, spec.Errorf(spec.ErrUnauthorized, "unknown key")
			}
			return context.WithValue(ctx, principalKey{}, "source of "+key), nil
		},
		Ingest: func(ctx context.Context, m proto.Message) (Partial, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.got = append(c.got, m)
			p, _ := ctx.Value(principalKey{}).(string)
			c.principals = append(c.principals, p)
			return c.partial, c.err
		},
		Observe: func(ctx context.Context, r Result) {
			c.mu.Lock()
			defer c.mu.Unlock()
			p, _ := ctx.Value(principalKey{}).(string)
			c.results = append(c.results, r)
			c.observed = append(c.observed, p)
		},
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&c.mu, &c.logs}, nil)),
	})
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	c.addr = lis.Addr().String()
	return c
}

// lockedWriter writes to w under mu.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// received returns what arrived, with the principal each ingest saw.
func (c *grpcCollector) received() ([]proto.Message, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]proto.Message(nil), c.got...), append([]string(nil), c.principals...)
}

// set sets the answers of the collector.
func (c *grpcCollector) set(p Partial, err, authErr error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partial, c.err, c.authErr = p, err, authErr
}

// conn returns a client connection to c.
func (c *grpcCollector) conn(t *testing.T) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(c.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

var bearer = map[string]string{"authorization": "Bearer " + testKey}

func TestGRPCSDKTraces(t *testing.T) {
	t.Parallel()
	for _, comp := range []string{"", "gzip"} {
		t.Run("compression="+comp, func(t *testing.T) {
			t.Parallel()
			c := newGRPCCollector(t, 0)
			ctx := t.Context()
			opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(c.addr), otlptracegrpc.WithInsecure(),
				otlptracegrpc.WithHeaders(bearer), otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false})}
			if comp != "" {
				opts = append(opts, otlptracegrpc.WithCompressor(comp))
			}
			exp, err := otlptracegrpc.New(ctx, opts...)
			require.NoError(t, err)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			pctx, parent := tp.Tracer("test").Start(ctx, "invoke_agent")
			_, span := tp.Tracer("test").Start(pctx, "chat claude-sonnet-4")
			span.End()
			parent.End()
			require.NoError(t, tp.Shutdown(ctx))

			c.requireEncodings(t, comp)
			got, principals := c.received()
			require.Len(t, got, 2)
			require.Equal(t, []string{"source of " + testKey, "source of " + testKey}, principals)
			child := got[0].(*coltrace.ExportTraceServiceRequest).ResourceSpans[0].ScopeSpans[0].Spans[0]
			require.Equal(t, "chat claude-sonnet-4", child.Name)
			tid, sid, pid := span.SpanContext().TraceID(), span.SpanContext().SpanID(), parent.SpanContext().SpanID()
			require.Equal(t, tid[:], child.TraceId)
			require.Equal(t, sid[:], child.SpanId)
			require.Equal(t, pid[:], child.ParentSpanId)
		})
	}
}

func TestGRPCSDKMetrics(t *testing.T) {
	t.Parallel()
	for _, comp := range []string{"", "gzip"} {
		t.Run("compression="+comp, func(t *testing.T) {
			t.Parallel()
			c := newGRPCCollector(t, 0)
			ctx := t.Context()
			opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpoint(c.addr), otlpmetricgrpc.WithInsecure(),
				otlpmetricgrpc.WithHeaders(bearer), otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: false})}
			if comp != "" {
				opts = append(opts, otlpmetricgrpc.WithCompressor(comp))
			}
			exp, err := otlpmetricgrpc.New(ctx, opts...)
			require.NoError(t, err)
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
			counter, err := mp.Meter("test").Int64Counter("claude_code.token.usage")
			require.NoError(t, err)
			counter.Add(ctx, 1200)
			counter.Add(ctx, 34)
			require.NoError(t, mp.Shutdown(ctx))

			c.requireEncodings(t, comp)
			got, principals := c.received()
			require.NotEmpty(t, got)
			require.Equal(t, "source of "+testKey, principals[0])
			m := got[0].(*colmetrics.ExportMetricsServiceRequest).ResourceMetrics[0].ScopeMetrics[0].Metrics[0]
			require.Equal(t, "claude_code.token.usage", m.Name)
			require.Equal(t, int64(1234), m.GetSum().DataPoints[0].GetAsInt())
		})
	}
}

func TestGRPCSDKLogs(t *testing.T) {
	t.Parallel()
	for _, comp := range []string{"", "gzip"} {
		t.Run("compression="+comp, func(t *testing.T) {
			t.Parallel()
			c := newGRPCCollector(t, 0)
			ctx := t.Context()
			opts := []otlploggrpc.Option{otlploggrpc.WithEndpoint(c.addr), otlploggrpc.WithInsecure(),
				otlploggrpc.WithHeaders(bearer), otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: false})}
			if comp != "" {
				opts = append(opts, otlploggrpc.WithCompressor(comp))
			}
			exp, err := otlploggrpc.New(ctx, opts...)
			require.NoError(t, err)
			lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(exp)))
			var rec log.Record
			rec.SetBody(attribute.StringValue("gemini_cli.api_response"))
			rec.SetEventName("gemini_cli.api_response")
			rec.AddAttributes(attribute.Int64("input_token_count", 1200))
			lp.Logger("test").Emit(ctx, rec)
			require.NoError(t, lp.Shutdown(ctx))

			c.requireEncodings(t, comp)
			got, principals := c.received()
			require.Len(t, got, 1)
			require.Equal(t, []string{"source of " + testKey}, principals)
			r := got[0].(*collogs.ExportLogsServiceRequest).ResourceLogs[0].ScopeLogs[0].LogRecords[0]
			require.Equal(t, "gemini_cli.api_response", r.EventName)
			require.Equal(t, int64(1200), r.Attributes[0].Value.GetIntValue())
		})
	}
}

// TestGRPCSDKAnswers checks what the SDK's trace exporter makes of the
// answers: a wrong or missing key is a permanent Unauthenticated, a partial
// success comes back as the flush's error, a bad request is not retried.
func TestGRPCSDKAnswers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		headers map[string]string
		partial Partial
		err     error
		want    []string
		calls   int
	}{
		{name: "wrong key", headers: map[string]string{"authorization": "Bearer nope"}, want: []string{"Unauthenticated", "unknown key"}},
		{name: "no key", want: []string{"Unauthenticated", "no key"}},
		{name: "api key", headers: map[string]string{"x-api-key": "api-key"}, want: []string{"PermissionDenied"}},
		{name: "partial", headers: bearer, partial: Partial{Rejected: 1, Message: "1 span maps to nothing"},
			want: []string{"1 span maps to nothing"}, calls: 1},
		{name: "bad request", headers: bearer, err: spec.Invalid("resourceSpans", "is odd"),
			want: []string{"InvalidArgument", "resourceSpans is odd"}, calls: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			col := newGRPCCollector(t, 0)
			col.set(c.partial, c.err, nil)
			ctx := t.Context()
			// Retries on, with short waits: none of these answers is retried.
			exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(col.addr), otlptracegrpc.WithInsecure(),
				otlptracegrpc.WithHeaders(c.headers), otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{
					Enabled: true, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, MaxElapsedTime: time.Minute}))
			require.NoError(t, err)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(exp)))
			_, span := tp.Tracer("test").Start(ctx, "s")
			span.End()
			err = tp.ForceFlush(ctx)
			require.Error(t, err)
			for _, w := range c.want {
				require.ErrorContains(t, err, w)
			}
			got, _ := col.received()
			require.Len(t, got, c.calls)
			require.NoError(t, tp.Shutdown(ctx))
		})
	}
}

// TestGRPCSDKPartialMetricsLogs checks that the metric and log exporters
// report a partial success too.
func TestGRPCSDKPartialMetricsLogs(t *testing.T) {
	t.Parallel()
	c := newGRPCCollector(t, 0)
	c.set(Partial{Rejected: 2, Message: "2 items map to nothing"}, nil, nil)
	ctx := t.Context()

	mexp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(c.addr), otlpmetricgrpc.WithInsecure(),
		otlpmetricgrpc.WithHeaders(bearer), otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: false}))
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp)))
	counter, err := mp.Meter("test").Int64Counter("n")
	require.NoError(t, err)
	counter.Add(ctx, 1)
	require.ErrorContains(t, mp.ForceFlush(ctx), "2 items map to nothing")
	c.set(Partial{}, nil, nil) // the shutdown exports the cumulative sum again
	require.NoError(t, mp.Shutdown(ctx))
	c.set(Partial{Rejected: 2, Message: "2 items map to nothing"}, nil, nil)

	lexp, err := otlploggrpc.New(ctx, otlploggrpc.WithEndpoint(c.addr), otlploggrpc.WithInsecure(),
		otlploggrpc.WithHeaders(bearer), otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: false}))
	require.NoError(t, err)
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(lexp)))
	var rec log.Record
	rec.SetBody(attribute.StringValue("x"))
	lp.Logger("test").Emit(ctx, rec)
	require.ErrorContains(t, lp.ForceFlush(ctx), "2 items map to nothing")
	require.NoError(t, lp.Shutdown(ctx))
}

// TestGRPCSDKRetryInfo checks that the SDK reads the RetryInfo of a
// throttled export: with a delay of a minute and at most a second to
// retry in, it gives up at once, saying the wait would pass its limit.
func TestGRPCSDKRetryInfo(t *testing.T) {
	t.Parallel()
	for _, err := range []error{retryErr{after: time.Minute}, &spec.Error{Kind: spec.ErrUnavailable, Detail: "busy"}} {
		t.Run(err.Error(), func(t *testing.T) {
			t.Parallel()
			c := newGRPCCollector(t, 0)
			c.set(Partial{}, err, nil)
			ctx := t.Context()
			exp, xerr := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(c.addr), otlptracegrpc.WithInsecure(),
				otlptracegrpc.WithHeaders(bearer), otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{
					Enabled: true, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, MaxElapsedTime: time.Second}))
			require.NoError(t, xerr)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(exp)))
			_, span := tp.Tracer("test").Start(ctx, "s")
			span.End()
			ferr := tp.ForceFlush(ctx)
			require.ErrorContains(t, ferr, "Unavailable")
			if _, ok := err.(retryErr); ok {
				// A minute is over the second: the SDK stops after one call.
				require.ErrorContains(t, ferr, "max retry time would elapse")
				got, _ := c.received()
				require.Len(t, got, 1)
			}
			require.NoError(t, tp.Shutdown(ctx))
		})
	}
}

// TestGRPCCodes calls the generated clients directly and checks the code,
// message and details of each answer.
func TestGRPCCodes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		md         []string
		err        error
		authErr    error
		code       codes.Code
		msg        string
		badRequest []string // the fields of a BadRequest detail
		retry      time.Duration
		logged     string
	}{
		{name: "ok", md: []string{"authorization", "Bearer " + testKey}, code: codes.OK},
		{name: "scheme in lower case", md: []string{"authorization", "bearer " + testKey}, code: codes.OK},
		{name: "x-api-key", md: []string{"x-api-key", testKey}, code: codes.OK},
		{name: "basic scheme falls to x-api-key", md: []string{"authorization", "Basic abc", "x-api-key", testKey}, code: codes.OK},
		{name: "no key", code: codes.Unauthenticated, msg: "no key"},
		{name: "basic scheme only", md: []string{"authorization", "Basic " + testKey}, code: codes.Unauthenticated},
		{name: "bearer without token", md: []string{"authorization", "Bearer "}, code: codes.Unauthenticated},
		{name: "wrong key", md: []string{"authorization", "Bearer other"}, code: codes.Unauthenticated, msg: "unknown key"},
		{name: "api key", md: []string{"x-api-key", "api-key"}, code: codes.PermissionDenied, msg: "an API key opens no telemetry endpoint"},
		{name: "authenticate fails", md: []string{"x-api-key", testKey}, authErr: errors.New("key store down"),
			code: codes.Internal, msg: detailInternal, logged: "key store down"},
		{name: "invalid", md: []string{"x-api-key", testKey}, err: spec.Invalid("resourceLogs[0]", "has no scope"),
			code: codes.InvalidArgument, msg: "resourceLogs[0] has no scope", badRequest: []string{"resourceLogs[0]"}},
		{name: "invalid without field", md: []string{"x-api-key", testKey}, err: spec.Errorf(spec.ErrInvalid, "odd"),
			code: codes.InvalidArgument, msg: "odd"},
		{name: "too large", md: []string{"x-api-key", testKey}, err: spec.Errorf(spec.ErrTooLarge, "over 20 MiB"),
			code: codes.ResourceExhausted, msg: "over 20 MiB"},
		{name: "rate limited", md: []string{"x-api-key", testKey}, err: retryErr{after: 1500 * time.Millisecond},
			code: codes.Unavailable, msg: "too many records from this key", retry: 1500 * time.Millisecond},
		{name: "rate limited, default delay", md: []string{"x-api-key", testKey}, err: spec.ErrRateLimited,
			code: codes.Unavailable, retry: time.Second},
		{name: "unavailable", md: []string{"x-api-key", testKey},
			err:  &spec.Error{Kind: spec.ErrUnavailable, Detail: "busy", Err: errors.New("pool exhausted")},
			code: codes.Unavailable, msg: "busy", retry: time.Second, logged: "pool exhausted"},
		{name: "conflict", md: []string{"x-api-key", testKey}, err: spec.Errorf(spec.ErrConflict, "clash"), code: codes.Aborted, msg: "clash"},
		{name: "internal", md: []string{"x-api-key", testKey}, err: errors.New("secret table exploded"),
			code: codes.Internal, msg: detailInternal, logged: "secret table exploded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			col := newGRPCCollector(t, 0)
			col.set(Partial{}, c.err, c.authErr)
			ctx := metadata.NewOutgoingContext(t.Context(), metadata.Pairs(c.md...))
			cc := col.conn(t)
			_, err := collogs.NewLogsServiceClient(cc).Export(ctx, &collogs.ExportLogsServiceRequest{})
			st := status.Convert(err)
			require.Equal(t, c.code, st.Code(), st.Message())
			if c.msg != "" {
				require.Contains(t, st.Message(), c.msg)
			}
			var fields []string
			var retry time.Duration
			for _, d := range st.Details() {
				switch d := d.(type) {
				case *errdetails.BadRequest:
					for _, v := range d.FieldViolations {
						fields = append(fields, v.Field)
					}
				case *errdetails.RetryInfo:
					retry = d.RetryDelay.AsDuration()
				default:
					t.Fatalf("unexpected detail %T", d)
				}
			}
			require.Equal(t, c.badRequest, fields)
			require.Equal(t, c.retry, retry)
			col.mu.Lock()
			logs, observed := col.logs.String(), col.observed
			col.mu.Unlock()
			// Observe sees the principal once the key is accepted.
			want := ""
			if c.code == codes.OK || c.err != nil {
				want = "source of " + testKey
			}
			require.Equal(t, []string{want}, observed)
			if c.logged == "" {
				require.Empty(t, logs)
			} else {
				require.Equal(t, 1, strings.Count(logs, "\n"), logs)
				require.Contains(t, logs, c.logged)
			}
		})
	}
}

// TestGRPCPartial checks the partial_success of each signal's answer: set
// exactly as over HTTP, and the Result observed.
func TestGRPCPartial(t *testing.T) {
	t.Parallel()
	col := newGRPCCollector(t, 0)
	cc := col.conn(t)
	ctx := metadata.NewOutgoingContext(t.Context(), metadata.Pairs("authorization", "Bearer "+testKey))

	m, err := colmetrics.NewMetricsServiceClient(cc).Export(ctx, &colmetrics.ExportMetricsServiceRequest{})
	require.NoError(t, err)
	require.Nil(t, m.PartialSuccess)

	col.set(Partial{Rejected: 3, Message: "3 points map to nothing"}, nil, nil)
	m, err = colmetrics.NewMetricsServiceClient(cc).Export(ctx, &colmetrics.ExportMetricsServiceRequest{})
	require.NoError(t, err)
	require.Equal(t, int64(3), m.PartialSuccess.RejectedDataPoints)
	require.Equal(t, "3 points map to nothing", m.PartialSuccess.ErrorMessage)

	col.set(Partial{Message: "warning \xff"}, nil, nil)
	l, err := collogs.NewLogsServiceClient(cc).Export(ctx, &collogs.ExportLogsServiceRequest{})
	require.NoError(t, err)
	require.Equal(t, int64(0), l.PartialSuccess.RejectedLogRecords)
	require.Equal(t, "warning \uFFFD", l.PartialSuccess.ErrorMessage)

	col.set(Partial{Rejected: 1}, nil, nil)
	tr, err := coltrace.NewTraceServiceClient(cc).Export(ctx, &coltrace.ExportTraceServiceRequest{})
	require.NoError(t, err)
	require.Equal(t, int64(1), tr.PartialSuccess.RejectedSpans)

	col.mu.Lock()
	results := append([]Result(nil), col.results...)
	col.mu.Unlock()
	require.Equal(t, []Result{
		{Signal: Metrics, Status: 200},
		{Signal: Metrics, Status: 200, Rejected: 3},
		{Signal: Logs, Status: 200},
		{Signal: Traces, Status: 200, Rejected: 1},
	}, results)
}

// TestGRPCLimit checks the size limit of GRPCMaxRecvMsgSize: a request of
// exactly the limit passes, one byte more is ResourceExhausted without
// RetryInfo, plain and gzip (where the compressed request is far smaller).
func TestGRPCLimit(t *testing.T) {
	t.Parallel()
	req := func(n int) *collogs.ExportLogsServiceRequest {
		return &collogs.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
			ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{
				Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: strings.Repeat("x", n)}},
			}}}},
		}}}
	}
	limit := proto.Size(req(100_000))
	col := newGRPCCollector(t, int64(limit))
	cc := col.conn(t)
	ctx := metadata.NewOutgoingContext(t.Context(), metadata.Pairs("authorization", "Bearer "+testKey))
	for _, comp := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", comp), func(t *testing.T) {
			var opts []grpc.CallOption
			if comp {
				opts = append(opts, grpc.UseCompressor(gzip.Name))
			}
			_, err := collogs.NewLogsServiceClient(cc).Export(ctx, req(100_000), opts...)
			require.NoError(t, err)
			_, err = collogs.NewLogsServiceClient(cc).Export(ctx, req(100_001), opts...)
			st := status.Convert(err)
			require.Equal(t, codes.ResourceExhausted, st.Code(), st.Message())
			require.Empty(t, st.Details())
		})
	}
	got, _ := col.received()
	require.Len(t, got, 2)
	col.mu.Lock()
	defer col.mu.Unlock()
	require.Len(t, col.results, 2) // the server refused the others before the service
	for _, r := range col.results {
		require.Equal(t, Result{Signal: Logs, Status: 200, Bytes: int64(limit)}, r)
	}
}

// TestGRPCGzipBomb checks that a small gzip request that expands far past
// the limit is ResourceExhausted, refused after decompression.
func TestGRPCGzipBomb(t *testing.T) {
	t.Parallel()
	col := newGRPCCollector(t, 1<<20)
	ctx := metadata.NewOutgoingContext(t.Context(), metadata.Pairs("authorization", "Bearer "+testKey))
	bomb := &collogs.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{
			Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: strings.Repeat("\x00", 16<<20)}},
		}}}},
	}}}
	_, err := collogs.NewLogsServiceClient(col.conn(t)).Export(ctx, bomb, grpc.UseCompressor(gzip.Name))
	st := status.Convert(err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), st.Message())
	require.Contains(t, st.Message(), "decompression")
	require.Empty(t, st.Details())
	got, _ := col.received()
	require.Empty(t, got)
}

func TestGRPCMaxRecvMsgSizeDefault(t *testing.T) {
	t.Parallel()
	// A request over gRPC's own 4 MiB default passes under the default.
	col := newGRPCCollector(t, 0)
	ctx := metadata.NewOutgoingContext(t.Context(), metadata.Pairs("authorization", "Bearer "+testKey))
	big := &collogs.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{
			Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: strings.Repeat("x", 5<<20)}},
		}}}},
	}}}
	_, err := collogs.NewLogsServiceClient(col.conn(t)).Export(ctx, big)
	require.NoError(t, err)
}

func TestRegisterGRPCConfig(t *testing.T) {
	t.Parallel()
	auth := func(ctx context.Context, _ string) (context.Context, error) { return ctx, nil }
	ingest := func(context.Context, proto.Message) (Partial, error) { return Partial{}, nil }
	for _, c := range []struct {
		cfg  GRPCConfig
		want string
	}{
		{GRPCConfig{Ingest: ingest}, "GRPCConfig.Authenticate"},
		{GRPCConfig{Authenticate: auth}, "GRPCConfig.Ingest"},
		{GRPCConfig{Authenticate: auth, Ingest: ingest, RetryAfter: -time.Second}, "GRPCConfig.RetryAfter"},
	} {
		require.ErrorContains(t, RegisterGRPC(grpc.NewServer(), c.cfg), c.want)
	}
	require.ErrorContains(t, RegisterGRPC(nil, GRPCConfig{Authenticate: auth, Ingest: ingest}), "nil")
	require.NoError(t, RegisterGRPC(grpc.NewServer(), GRPCConfig{Authenticate: auth, Ingest: ingest}))
}

// TestGRPCClientGone checks that an ingest that fails because the client
// went away is answered Canceled and not logged.
func TestGRPCClientGone(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	started := make(chan struct{})
	s := grpc.NewServer(grpc.WaitForHandlers(true))
	require.NoError(t, RegisterGRPC(s, GRPCConfig{
		Authenticate: func(ctx context.Context, _ string) (context.Context, error) { return ctx, nil },
		Ingest: func(ctx context.Context, _ proto.Message) (Partial, error) {
			close(started)
			<-ctx.Done()
			return Partial{}, fmt.Errorf("storing: %w", ctx.Err())
		},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	}))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })

	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(t.Context(), "x-api-key", testKey))
	go func() {
		<-started
		cancel()
	}()
	_, err = collogs.NewLogsServiceClient(cc).Export(ctx, &collogs.ExportLogsServiceRequest{})
	require.Equal(t, codes.Canceled, status.Code(err))
	s.Stop() // waits for the handler to return, so its log (if any) is written
	require.Empty(t, logs.String())
}
