package otlpwire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aiusage/kit/spec"
	"google.golang.org/protobuf/proto"
)

// Partial is what an ingest function kept back of a request it accepted:
// the answer's partial_success. The zero Partial (everything accepted, no
// message) leaves partial_success unset.
type Partial struct {
	// Rejected is the number of items (data points, log records or spans,
	// by the signal) not accepted; never negative.
	Rejected int64
	// Message says why items were rejected, or warns of something accepted
	// (with Rejected 0).
	Message string
}

// IngestFunc takes one decoded export request: an
// *ExportMetricsServiceRequest, *ExportLogsServiceRequest or
// *ExportTraceServiceRequest of the collector packages of
// go.opentelemetry.io/proto/otlp, by the handler's signal. It returns what it
// rejected, or an error answered with the HTTP status of its kind
// (spec.StatusOf): a *spec.Error's Detail (and Field) reach the client, the
// words of an error of no kind never do. An error with a method
// RetryAfter() time.Duration sets the Retry-After of a 429 or 503 (over
// gRPC, with the code the package doc lists, the RetryInfo of Unavailable). It is
// called concurrently, once per request, with the request's context; the
// message shares no memory with the body and is the function's to keep.
type IngestFunc func(ctx context.Context, req proto.Message) (Partial, error)

// Result is what one request to a [Handler] came to, for metrics.
type Result struct {
	// Signal is the handler's signal.
	Signal Signal
	// Status is the HTTP status answered; over gRPC, the HTTP status of
	// the same outcome.
	Status int
	// Bytes is the size of the body after decompression, 0 when it was not
	// read to its end.
	Bytes int64
	// Rejected is the count of items the ingest function rejected.
	Rejected int64
}

// Config configures a [Handler].
type Config struct {
	// MaxBytes is the largest body accepted, before and after
	// decompression; a larger one is answered 413. Default:
	// [DefaultMaxBytes] (20 MiB).
	MaxBytes int64
	// Ingest takes each decoded request. Required.
	Ingest IngestFunc
	// IngestParts, when set, takes each protobuf request in parts instead
	// of Ingest, which still takes JSON requests: memory then grows with a
	// part, not with the decoded request. Default: none.
	IngestParts PartsFunc
	// RetryAfter is the Retry-After of a 429 or 503 whose error says none,
	// rounded up to whole seconds. Default: 1 second.
	RetryAfter time.Duration
	// Observe, when set, is called with the result of every request, after
	// the answer is written. Default: none.
	Observe func(ctx context.Context, r Result)
	// Logger receives the failures of the server (the errors of no kind
	// answered 500), once each. Default: discards.
	Logger *slog.Logger
}

// handler serves one signal; see [Handler].
type handler struct {
	signal Signal
	cfg    Config
}

// Handler returns the OTLP/HTTP handler of signal: it answers a POST whose
// body is an export request of the signal, as the package doc says, by
// calling cfg.Ingest with the decoded request. It returns an error naming
// the field when signal or cfg is invalid.
func Handler(signal Signal, cfg Config) (http.Handler, error) {
	switch {
	case !signal.valid():
		return nil, fmt.Errorf("otlpwire: signal: %v is none of Metrics, Logs and Traces", signal)
	case cfg.Ingest == nil:
		return nil, errors.New("otlpwire: Config.Ingest is required")
	case cfg.MaxBytes < 0:
		return nil, fmt.Errorf("otlpwire: Config.MaxBytes: %d is negative", cfg.MaxBytes)
	case cfg.RetryAfter < 0:
		return nil, fmt.Errorf("otlpwire: Config.RetryAfter: %v is negative", cfg.RetryAfter)
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.RetryAfter == 0 {
		cfg.RetryAfter = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &handler{signal: signal, cfg: cfg}, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res := Result{Signal: h.signal}
	res.Status = h.serve(w, r, &res)
	if h.cfg.Observe != nil {
		h.cfg.Observe(r.Context(), res)
	}
}

// serve answers r, filling res, and returns the status answered.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, res *Result) int {
	enc, ctErr := encodingOf(r.Header.Get("Content-Type"))
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return h.writeError(w, r, enc, spec.Errorf(spec.ErrMethodNotAllowed, "%s takes POST only, not %s",
			cut(r.URL.Path), cut(r.Method)))
	}
	if ctErr != nil {
		return h.writeError(w, r, enc, ctErr)
	}
	body, err := readBody(r, h.cfg.MaxBytes)
	if err != nil {
		if spec.StatusOf(err) == http.StatusRequestEntityTooLarge {
			// Let the server close the connection rather than drain a
			// body over the limit.
			w.Header().Set("Connection", "close")
		}
		return h.writeError(w, r, enc, err)
	}
	res.Bytes = int64(len(body))
	p, err := h.ingest(r.Context(), enc, body)
	if err != nil {
		return h.writeError(w, r, enc, err)
	}
	res.Rejected = p.Rejected
	out, err := marshal(enc, h.signal.response(p))
	if err != nil {
		return h.writeError(w, r, enc, err)
	}
	writeBody(w, enc, http.StatusOK, out)
	return http.StatusOK
}

// ingest decodes body, in encoding enc, and hands it to the ingest
// function: a protobuf body in parts where the handler has a PartsFunc, so
// that the decoded request is never whole in memory; an error of decoding
// is answered whatever the function returns.
func (h *handler) ingest(ctx context.Context, enc encoding, body []byte) (Partial, error) {
	if enc != encProtobuf || h.cfg.IngestParts == nil {
		req, err := unmarshal(h.signal, enc, body)
		if err != nil {
			return Partial{}, err
		}
		return h.cfg.Ingest(ctx, req)
	}
	var bad error
	parts := func(yield func(proto.Message, error) bool) {
		for m, err := range protobufParts(h.signal, body) {
			if err != nil {
				bad = err
			}
			if !yield(m, err) {
				return
			}
		}
	}
	p, err := h.cfg.IngestParts(ctx, parts)
	if bad != nil {
		return Partial{}, bad
	}
	return p, err
}
