package otlpwire

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aiusage/kit/spec"
	"github.com/stretchr/testify/require"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// retryErr is an ingest error of kind spec.ErrRateLimited that says when to
// retry.
type retryErr struct{ after time.Duration }

func (e retryErr) Error() string              { return "slow down" }
func (e retryErr) Unwrap() error              { return spec.Errorf(spec.ErrRateLimited, "too many records from this key") }
func (e retryErr) RetryAfter() time.Duration { return e.after }

// gz returns b compressed with gzip.
func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// logsProto returns a protobuf ExportLogsServiceRequest of one record
// whose body is body.
func logsProto(t testing.TB, body string) []byte {
	t.Helper()
	b, err := proto.Marshal(&collogs.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{
			Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: body}},
		}}}},
	}}})
	require.NoError(t, err)
	return b
}

// newHandler returns the handler of signal with cfg, failing t on error.
func newHandler(t testing.TB, signal Signal, cfg Config) http.Handler {
	t.Helper()
	if cfg.Ingest == nil {
		cfg.Ingest = func(context.Context, proto.Message) (Partial, error) { return Partial{}, nil }
	}
	h, err := Handler(signal, cfg)
	require.NoError(t, err)
	return h
}

// rpcStatus decodes the google.rpc.Status of rec in the encoding its
// Content-Type says.
func rpcStatus(t *testing.T, rec *httptest.ResponseRecorder) *status.Status {
	t.Helper()
	s := &status.Status{}
	switch rec.Header().Get("Content-Type") {
	case typeJSON:
		require.NoError(t, protojson.Unmarshal(rec.Body.Bytes(), s), rec.Body.String())
	case typeProtobuf:
		require.NoError(t, proto.Unmarshal(rec.Body.Bytes(), s))
	default:
		t.Fatalf("Content-Type %q", rec.Header().Get("Content-Type"))
	}
	return s
}

// violations returns the BadRequest field violations of s, as field:
// description.
func violations(t *testing.T, s *status.Status) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range s.Details {
		br := &errdetails.BadRequest{}
		if d.MessageIs(br) {
			require.NoError(t, d.UnmarshalTo(br))
			for _, v := range br.FieldViolations {
				out[v.Field] = v.Description
			}
		}
	}
	return out
}

func TestHandlerErrors(t *testing.T) {
	t.Parallel()
	bomb := gz(t, make([]byte, 64<<10))
	random := make([]byte, 8<<10)
	_, _ = rand.Read(random)
	hexSpan := func(traceID, spanID string) []byte {
		return []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"` + traceID + `","spanId":"` + spanID + `","name":"s"}]}]}]}`)
	}
	cases := []struct {
		name       string
		signal     Signal
		method     string
		ct, ce     string
		body       []byte
		unknownLen bool  // send no Content-Length
		ingestErr  error // what Ingest returns
		status     int
		wantType   string // Content-Type of the answer
		msg        []string
		field      string // a BadRequest violation expected
		header     map[string]string
	}{
		{name: "unknown content type", signal: Logs, ct: "text/plain", body: []byte("x"), status: 415, wantType: typeProtobuf,
			msg: []string{"Content-Type text/plain", typeProtobuf, typeJSON}},
		{name: "no content type", signal: Logs, body: []byte("x"), status: 415, wantType: typeProtobuf, msg: []string{"Content-Type none"}},
		{name: "malformed content type", signal: Logs, ct: "application/json; =", body: []byte("{}"), status: 415, wantType: typeProtobuf},
		{name: "unknown encoding", signal: Logs, ct: typeJSON, ce: "br", body: []byte("{}"), status: 415, wantType: typeJSON,
			msg: []string{"Content-Encoding br", "gzip"}},
		{name: "GET", signal: Metrics, method: http.MethodGet, ct: typeJSON, status: 405, wantType: typeJSON,
			msg: []string{"POST only"}, header: map[string]string{"Allow": "POST"}},
		{name: "over the limit by Content-Length", signal: Logs, ct: typeProtobuf, body: make([]byte, 1025), status: 413,
			wantType: typeProtobuf, msg: []string{"body is larger than 1024 bytes"}},
		{name: "over the limit while reading", signal: Logs, ct: typeProtobuf, body: make([]byte, 1025), unknownLen: true,
			status: 413, wantType: typeProtobuf, msg: []string{"body is larger than 1024 bytes"}},
		{name: "over the limit after decompression", signal: Logs, ct: typeJSON, ce: "gzip", body: bomb, status: 413,
			wantType: typeJSON, msg: []string{"after decompression"}},
		{name: "over the limit compressed", signal: Logs, ct: typeProtobuf, ce: "gzip", body: gz(t, random), unknownLen: true,
			status: 413, wantType: typeProtobuf, msg: []string{"compressed"}},
		{name: "not gzip", signal: Logs, ct: typeProtobuf, ce: "gzip", body: []byte("plain"), status: 400, wantType: typeProtobuf,
			msg: []string{"body could not be read"}, field: "body"},
		{name: "bad protobuf", signal: Logs, ct: typeProtobuf, body: []byte{0xff, 0xff, 0xff}, status: 400, wantType: typeProtobuf,
			msg: []string{"not a protobuf ExportLogsServiceRequest"}, field: "body"},
		{name: "bad JSON", signal: Metrics, ct: typeJSON, body: []byte(`{"resourceMetrics":[`), status: 400, wantType: typeJSON,
			msg: []string{"not an OTLP/JSON ExportMetricsServiceRequest"}, field: "body"},
		{name: "empty JSON", signal: Metrics, ct: typeJSON, status: 400, wantType: typeJSON, field: "body"},
		{name: "JSON of the wrong type", signal: Traces, ct: typeJSON, body: []byte(`{"resourceSpans":{}}`), status: 400, wantType: typeJSON, field: "body"},
		{name: "bad hex traceId", signal: Traces, ct: typeJSON, body: hexSpan("zz8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"),
			status: 400, wantType: typeJSON, msg: []string{"traceId must be 32 hexadecimal digits"}, field: "traceId"},
		{name: "short spanId", signal: Traces, ct: typeJSON, body: hexSpan("5b8efff798038103d269b633813fc60c", "eee19b"),
			status: 400, wantType: typeJSON, msg: []string{"spanId must be 16 hexadecimal digits"}, field: "spanId"},
		{name: "base64 traceId", signal: Traces, ct: typeJSON, body: hexSpan("W47/95gDgQPSabYzgT/GDA==", "eee19b7ec3c1b174"),
			status: 400, wantType: typeJSON, field: "traceId"},
		{name: "rate limited", signal: Logs, ct: typeProtobuf, ingestErr: retryErr{2500 * time.Millisecond}, status: 429, wantType: typeProtobuf,
			msg: []string{"too many records"}, header: map[string]string{"Retry-After": "3"}},
		{name: "unavailable", signal: Logs, ct: typeJSON, body: []byte("{}"), ingestErr: spec.ErrUnavailable, status: 503, wantType: typeJSON,
			msg: []string{"Service Unavailable"}, header: map[string]string{"Retry-After": "1"}},
		{name: "unauthorized", signal: Traces, ct: typeProtobuf, ingestErr: spec.Errorf(spec.ErrUnauthorized, "no valid key"), status: 401,
			wantType: typeProtobuf, msg: []string{"no valid key"}},
		{name: "invalid from ingest", signal: Metrics, ct: typeProtobuf, ingestErr: spec.Invalid("resourceMetrics", "is odd"), status: 400,
			wantType: typeProtobuf, msg: []string{"resourceMetrics is odd"}, field: "resourceMetrics"},
		{name: "internal", signal: Metrics, ct: typeJSON, body: []byte("{}"), ingestErr: errors.New("secret table exploded"), status: 500,
			wantType: typeJSON, msg: []string{detailInternal}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHandler(t, c.signal, Config{MaxBytes: 1024, Ingest: func(context.Context, proto.Message) (Partial, error) {
				return Partial{}, c.ingestErr
			}})
			method := c.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, c.signal.Path(), bytes.NewReader(c.body))
			if c.unknownLen {
				req.ContentLength = -1
			}
			if c.ct != "" {
				req.Header.Set("Content-Type", c.ct)
			}
			if c.ce != "" {
				req.Header.Set("Content-Encoding", c.ce)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, c.status, rec.Code, rec.Body.String())
			require.Equal(t, c.wantType, rec.Header().Get("Content-Type"))
			s := rpcStatus(t, rec)
			require.NotZero(t, s.Code)
			for _, m := range c.msg {
				require.Contains(t, s.Message, m)
			}
			require.NotContains(t, s.Message, "secret")
			if c.field != "" {
				require.Contains(t, violations(t, s), c.field)
			}
			for k, v := range c.header {
				require.Equal(t, v, rec.Header().Get(k), k)
			}
		})
	}
}

func TestHandlerSuccess(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		signal  Signal
		ct, ce  string
		body    []byte
		partial Partial
		check   func(t *testing.T, body []byte)
	}{
		{name: "empty protobuf", signal: Logs, ct: typeProtobuf, check: func(t *testing.T, body []byte) {
			require.Empty(t, body)
		}},
		{name: "empty JSON", signal: Traces, ct: "application/json; charset=utf-8", body: []byte("{}"), check: func(t *testing.T, body []byte) {
			require.JSONEq(t, `{}`, string(body))
		}},
		{name: "gzip identity casing", signal: Logs, ct: typeProtobuf, ce: "GZIP", body: gz(t, logsProto(t, "hi")), check: func(t *testing.T, body []byte) {
			r := &collogs.ExportLogsServiceResponse{}
			require.NoError(t, proto.Unmarshal(body, r))
			require.Nil(t, r.PartialSuccess)
		}},
		{name: "partial protobuf", signal: Logs, ct: typeProtobuf, body: logsProto(t, "hi"), partial: Partial{Rejected: 3, Message: "3 unknown"},
			check: func(t *testing.T, body []byte) {
				r := &collogs.ExportLogsServiceResponse{}
				require.NoError(t, proto.Unmarshal(body, r))
				require.Equal(t, int64(3), r.PartialSuccess.GetRejectedLogRecords())
				require.Equal(t, "3 unknown", r.PartialSuccess.GetErrorMessage())
			}},
		{name: "partial JSON metrics", signal: Metrics, ct: typeJSON, body: []byte(`{}`), partial: Partial{Rejected: 2, Message: "2 points"},
			check: func(t *testing.T, body []byte) {
				require.JSONEq(t, `{"partialSuccess":{"rejectedDataPoints":"2","errorMessage":"2 points"}}`, string(body))
			}},
		{name: "warning JSON traces", signal: Traces, ct: typeJSON, body: []byte(`{}`), partial: Partial{Message: "names unknown"},
			check: func(t *testing.T, body []byte) {
				r := &coltrace.ExportTraceServiceResponse{}
				require.NoError(t, protojson.Unmarshal(body, r))
				require.NotNil(t, r.PartialSuccess)
				require.Zero(t, r.PartialSuccess.RejectedSpans)
				require.Equal(t, "names unknown", r.PartialSuccess.ErrorMessage)
			}},
		{name: "partial protobuf metrics", signal: Metrics, ct: typeProtobuf, partial: Partial{Rejected: 1},
			check: func(t *testing.T, body []byte) {
				r := &colmetrics.ExportMetricsServiceResponse{}
				require.NoError(t, proto.Unmarshal(body, r))
				require.Equal(t, int64(1), r.PartialSuccess.GetRejectedDataPoints())
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var got proto.Message
			var res Result
			h := newHandler(t, c.signal, Config{
				Ingest: func(_ context.Context, m proto.Message) (Partial, error) {
					got = m
					return c.partial, nil
				},
				Observe: func(_ context.Context, r Result) { res = r },
			})
			req := httptest.NewRequest(http.MethodPost, c.signal.Path(), bytes.NewReader(c.body))
			req.Header.Set("Content-Type", c.ct)
			if c.ce != "" {
				req.Header.Set("Content-Encoding", c.ce)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			wantType, _, _ := strings.Cut(c.ct, ";")
			require.Equal(t, wantType, rec.Header().Get("Content-Type"))
			require.NotNil(t, got)
			require.Equal(t, string(c.signal.newRequest().ProtoReflect().Descriptor().FullName()),
				string(got.ProtoReflect().Descriptor().FullName()))
			require.Equal(t, Result{Signal: c.signal, Status: 200, Bytes: res.Bytes, Rejected: c.partial.Rejected}, res)
			c.check(t, rec.Body.Bytes())
		})
	}
}

func TestHandlerConfig(t *testing.T) {
	t.Parallel()
	ingest := func(context.Context, proto.Message) (Partial, error) { return Partial{}, nil }
	for _, c := range []struct {
		signal Signal
		cfg    Config
		want   string
	}{
		{Signal(0), Config{Ingest: ingest}, "signal"},
		{Signal(4), Config{Ingest: ingest}, "signal"},
		{Logs, Config{}, "Config.Ingest"},
		{Logs, Config{Ingest: ingest, MaxBytes: -1}, "Config.MaxBytes"},
		{Logs, Config{Ingest: ingest, RetryAfter: -time.Second}, "Config.RetryAfter"},
	} {
		_, err := Handler(c.signal, c.cfg)
		require.ErrorContains(t, err, c.want)
	}
	require.Equal(t, "/v1/traces", Traces.Path())
	require.Equal(t, "Signal(9)", Signal(9).String())
}
