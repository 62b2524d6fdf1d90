package cli

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// TestOTLPGRPCListen: the real port of :0 is the endpoint; a taken port
// falls back to a free one only for the demo's default, else it is a usage
// error naming the flag.
func TestOTLPGRPCListen(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	o := &otlpGRPCFlags{addr: "127.0.0.1:0"}
	ln, err := o.listen(t.Context(), "demo", log)
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NotZero(t, port)
	require.Equal(t, "http://127.0.0.1:"+strconv.Itoa(port), o.endpoint)
	require.Empty(t, o.taken)

	held := ln.Addr().String() // still listening: taken
	o = &otlpGRPCFlags{addr: held}
	_, err = o.listen(t.Context(), "demo", log)
	require.Error(t, err)
	require.IsType(t, &usageError{}, err)
	require.Contains(t, err.Error(), "demo: --otlp-grpc-addr: ")

	o = &otlpGRPCFlags{addr: held, fallback: true}
	ln2, err := o.listen(t.Context(), "demo", log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln2.Close(); _ = ln.Close() })
	require.Equal(t, held, o.taken)
	require.NotEqual(t, "http://"+held, o.endpoint)
	require.Equal(t, "http://"+ln2.Addr().String(), o.endpoint)
	require.Contains(t, demoTelemetryLine("http://127.0.0.1:1", o, "aiu_x"), "gRPC at "+o.endpoint+", "+held+" being taken")

	// A fallback never hides an address that is wrong in itself.
	o = &otlpGRPCFlags{addr: "127.0.0.1:notaport", fallback: true}
	_, err = o.listen(t.Context(), "demo", log)
	require.Error(t, err)
	require.Contains(t, err.Error(), "--otlp-grpc-addr")
}

// TestDemoOTLPGRPCDefault: the demo serves gRPC at the standard port unless
// told otherwise; only that default falls back; service serve serves none.
func TestDemoOTLPGRPCDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args     []string
		env      string
		want     string
		fallback bool
	}{
		{nil, "", "127.0.0.1:4317", true},
		{[]string{"--otlp-grpc-addr", "127.0.0.1:0"}, "", "127.0.0.1:0", false},
		{[]string{"--otlp-grpc-addr", ""}, "", "", false},
		{nil, "127.0.0.1:5317", "127.0.0.1:5317", false},
	} {
		fs := flag.NewFlagSet("demo", flag.ContinueOnError)
		o := &otlpGRPCFlags{}
		o.register(fs, true)
		require.NoError(t, fs.Parse(tc.args))
		require.NoError(t, applyEnv(fs, "demo", func(k string) string {
			if k == "AIUSAGE_OTLP_GRPC_ADDR" {
				return tc.env
			}
			return ""
		}))
		o.defaulted(fs)
		require.Equal(t, tc.want, o.addr, tc)
		require.Equal(t, tc.fallback, o.fallback, tc)
	}
	fs := flag.NewFlagSet("service serve", flag.ContinueOnError)
	o := &otlpGRPCFlags{}
	o.register(fs, false)
	require.NoError(t, fs.Parse(nil))
	require.Empty(t, o.addr)
}

// partialLogs is the answer of an endpoint that took all but 3 records.
func partialLogs() *collogs.ExportLogsServiceResponse {
	return &collogs.ExportLogsServiceResponse{PartialSuccess: &collogs.ExportLogsPartialSuccess{
		RejectedLogRecords: 3, ErrorMessage: "3 log records map to nothing"}}
}

// exportOne exports one log record with exp, as the demo does (a batch,
// flushed at shut-down), and returns the error of the flush.
func exportOne(t *testing.T, exp sdklog.Exporter) error {
	t.Helper()
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)))
	var r otellog.Record
	r.SetBody(attribute.StringValue("x"))
	lp.Logger("t").Emit(t.Context(), r)
	return lp.Shutdown(context.Background())
}

// TestDemoPartialHTTP: over HTTP, a partial success is recorded and not an
// error, which it is for the SDK left alone; an error answer stays one.
func TestDemoPartialHTTP(t *testing.T) {
	t.Parallel()
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		b, err := proto.Marshal(partialLogs())
		if err != nil {
			panic(err)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(status)
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	plain, err := otlploghttp.New(t.Context(), otlploghttp.WithEndpointURL(srv.URL+"/v1/logs"))
	require.NoError(t, err)
	require.ErrorContains(t, exportOne(t, plain), "partial success", "the SDK alone reports a partial success as an error")

	p := newDemoPartial()
	exp, err := otlploghttp.New(t.Context(), otlploghttp.WithEndpointURL(srv.URL+"/v1/logs"), otlploghttp.WithHTTPClient(p.httpClient()))
	require.NoError(t, err)
	require.NoError(t, exportOne(t, exp))
	require.Equal(t, "3 log records and 0 data points not taken: 3 log records map to nothing", p.summary())

	status = http.StatusBadRequest
	exp, err = otlploghttp.New(t.Context(), otlploghttp.WithEndpointURL(srv.URL+"/v1/logs"), otlploghttp.WithHTTPClient(newDemoPartial().httpClient()),
		otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}))
	require.NoError(t, err)
	require.Error(t, exportOne(t, exp), "an error answer stays an error")
}

// partialLogsServer answers every export with partialLogs.
type partialLogsServer struct {
	collogs.UnimplementedLogsServiceServer
}

func (partialLogsServer) Export(context.Context, *collogs.ExportLogsServiceRequest) (*collogs.ExportLogsServiceResponse, error) {
	return partialLogs(), nil
}

// TestDemoPartialGRPC: the same over gRPC, through the interceptor.
func TestDemoPartialGRPC(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer()
	collogs.RegisterLogsServiceServer(gs, partialLogsServer{})
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	url := "http://" + ln.Addr().String()

	plain, err := otlploggrpc.New(t.Context(), otlploggrpc.WithEndpointURL(url))
	require.NoError(t, err)
	require.ErrorContains(t, exportOne(t, plain), "partial success")

	p := newDemoPartial()
	exp, err := otlploggrpc.New(t.Context(), otlploggrpc.WithEndpointURL(url), otlploggrpc.WithDialOption(grpc.WithUnaryInterceptor(p.unaryInterceptor())))
	require.NoError(t, err)
	require.NoError(t, exportOne(t, exp))
	require.Contains(t, p.summary(), "3 log records and 0 data points not taken")
}
