package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// demoPartial records the partial successes the endpoint answers the demo's
// exporters, and takes them out of the answer before the SDK reads it.
//
// The SDK turns a partial success into an error of an internal type that
// no caller can test for but by its text; the demo reads the answer itself
// instead, with the generated OTLP types, through the HTTP client and the
// gRPC interceptor it gives the exporters. What is left as an error is then
// a real failure. A partial success is expected: some of what the tools
// send maps to nothing (Gemini CLI's "tool" tokens).
type demoPartial struct {
	mu sync.Mutex
	// rejected counts the records and data points the endpoint did not
	// take, by signal ("logs", "metrics").
	rejected map[string]int64
	// messages are the distinct messages of the partial successes.
	messages []string
}

// maxDemoAnswer bounds an answer the demo reads: the endpoint's are a few
// hundred bytes.
const maxDemoAnswer = 1 << 20

func newDemoPartial() *demoPartial { return &demoPartial{rejected: map[string]int64{}} }

// take records the partial success of an Export answer (a
// *ExportLogsServiceResponse or *ExportMetricsServiceResponse) and clears
// it; it reports whether m is such an answer.
func (p *demoPartial) take(m proto.Message) bool {
	var signal, msg string
	var n int64
	switch r := m.(type) {
	case *collogs.ExportLogsServiceResponse:
		signal, n, msg = "logs", r.GetPartialSuccess().GetRejectedLogRecords(), r.GetPartialSuccess().GetErrorMessage()
		r.PartialSuccess = nil
	case *colmetrics.ExportMetricsServiceResponse:
		signal, n, msg = "metrics", r.GetPartialSuccess().GetRejectedDataPoints(), r.GetPartialSuccess().GetErrorMessage()
		r.PartialSuccess = nil
	default:
		return false
	}
	if n == 0 && msg == "" {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rejected[signal] += n
	if msg != "" && len(p.messages) < 8 && !strings.Contains(strings.Join(p.messages, "\x00"), msg) {
		p.messages = append(p.messages, msg)
	}
	return true
}

// summary says what the endpoint did not take, or "" when it took all.
func (p *demoPartial) summary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rejected["logs"] == 0 && p.rejected["metrics"] == 0 && len(p.messages) == 0 {
		return ""
	}
	return fmt.Sprintf("%d log records and %d data points not taken: %s", p.rejected["logs"], p.rejected["metrics"],
		strings.Join(p.messages, "; "))
}

// httpClient returns the HTTP client of the demo's OTLP/HTTP exporters.
func (p *demoPartial) httpClient() *http.Client {
	return &http.Client{Transport: demoPartialTransport{p: p, next: http.DefaultTransport}}
}

// unaryInterceptor is the gRPC interceptor of the demo's OTLP/gRPC
// exporters.
func (p *demoPartial) unaryInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if m, ok := reply.(proto.Message); ok && err == nil {
			p.take(m)
		}
		return err
	}
}

// demoPartialTransport reads the protobuf answers of /v1/logs and
// /v1/metrics.
type demoPartialTransport struct {
	p    *demoPartial
	next http.RoundTripper
}

func (t demoPartialTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode/100 != 2 || resp.Header.Get("Content-Type") != "application/x-protobuf" {
		return resp, err
	}
	var m proto.Message
	switch {
	case strings.HasSuffix(req.URL.Path, "/v1/logs"):
		m = &collogs.ExportLogsServiceResponse{}
	case strings.HasSuffix(req.URL.Path, "/v1/metrics"):
		m = &colmetrics.ExportMetricsServiceResponse{}
	default:
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDemoAnswer+1))
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if len(body) > maxDemoAnswer {
		return nil, fmt.Errorf("%s: an answer over %d bytes", req.URL.Path, maxDemoAnswer)
	}
	if err := proto.Unmarshal(body, m); err != nil {
		return nil, fmt.Errorf("%s: the answer is not OTLP: %w", req.URL.Path, err)
	}
	t.p.take(m)
	if body, err = proto.Marshal(m); err != nil {
		return nil, err
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}
