package otlpwire

import (
	"fmt"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Signal is one of the OTLP signals a [Handler] serves.
type Signal int

// The signals of OTLP/HTTP.
const (
	// Metrics is POST /v1/metrics: an ExportMetricsServiceRequest.
	Metrics Signal = iota + 1
	// Logs is POST /v1/logs: an ExportLogsServiceRequest.
	Logs
	// Traces is POST /v1/traces: an ExportTraceServiceRequest.
	Traces
)

// String returns the signal's name: "metrics", "logs" or "traces".
func (s Signal) String() string {
	switch s {
	case Metrics:
		return "metrics"
	case Logs:
		return "logs"
	case Traces:
		return "traces"
	}
	return fmt.Sprintf("Signal(%d)", int(s))
}

// Path returns the signal's default OTLP/HTTP path, such as "/v1/metrics",
// which the OpenTelemetry SDKs append to OTEL_EXPORTER_OTLP_ENDPOINT.
func (s Signal) Path() string {
	return "/v1/" + s.String()
}

// valid reports whether s is one of the signals.
func (s Signal) valid() bool {
	return s >= Metrics && s <= Traces
}

// newRequest returns an empty export request of the signal.
func (s Signal) newRequest() proto.Message {
	switch s {
	case Metrics:
		return &colmetrics.ExportMetricsServiceRequest{}
	case Logs:
		return &collogs.ExportLogsServiceRequest{}
	default:
		return &coltrace.ExportTraceServiceRequest{}
	}
}

// response returns the export response of the signal for p: its
// partial_success is unset when nothing was rejected and there is no message.
func (s Signal) response(p Partial) proto.Message {
	set := p.Rejected != 0 || p.Message != ""
	switch s {
	case Metrics:
		r := &colmetrics.ExportMetricsServiceResponse{}
		if set {
			r.PartialSuccess = &colmetrics.ExportMetricsPartialSuccess{RejectedDataPoints: p.Rejected, ErrorMessage: p.Message}
		}
		return r
	case Logs:
		r := &collogs.ExportLogsServiceResponse{}
		if set {
			r.PartialSuccess = &collogs.ExportLogsPartialSuccess{RejectedLogRecords: p.Rejected, ErrorMessage: p.Message}
		}
		return r
	default:
		r := &coltrace.ExportTraceServiceResponse{}
		if set {
			r.PartialSuccess = &coltrace.ExportTracePartialSuccess{RejectedSpans: p.Rejected, ErrorMessage: p.Message}
		}
		return r
	}
}
