package tools

import (
	"fmt"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Mapper maps the parts of one export request into one [Batch], as
// [Metrics], [Logs] and [Traces] map a whole request: a large request
// decoded a part at a time (a resource and scope with some of their
// items) need not be held whole in memory. Parts of any signal may be
// added; the Batch is their union, in the order added. The zero Mapper is
// ready to use.
type Mapper struct{ bd builder }

// Add maps req, an *ExportMetricsServiceRequest, *ExportLogsServiceRequest
// or *ExportTraceServiceRequest, into the batch. Another type is an
// error. The Mapper keeps no reference to req.
func (m *Mapper) Add(req proto.Message) error {
	switch r := req.(type) {
	case *colmetricspb.ExportMetricsServiceRequest:
		m.bd.metrics(r)
	case *collogspb.ExportLogsServiceRequest:
		m.bd.logs(r)
	case *coltracepb.ExportTraceServiceRequest:
		m.bd.traces(r)
	default:
		return fmt.Errorf("tools: unexpected request %T", req)
	}
	return nil
}

// Batch returns what the parts added so far map to.
func (m *Mapper) Batch() Batch { return m.bd.b }
