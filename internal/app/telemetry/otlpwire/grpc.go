package otlpwire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/aiusage/kit/spec"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // gzip-compressed requests, as Gemini CLI sends them
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// AuthenticateFunc checks the key of a gRPC request: the bearer token of
// the metadata authorization, else the metadata x-api-key, never empty. It
// returns the context the ingest function is called with (carrying the
// principal, say), or an error answered as an ingest function's is: a
// *spec.Error of kind spec.ErrUnauthorized is Unauthenticated, of
// spec.ErrForbidden PermissionDenied, an error of no kind Internal.
type AuthenticateFunc func(ctx context.Context, key string) (context.Context, error)

// GRPCConfig configures the OTLP/gRPC services of [RegisterGRPC].
type GRPCConfig struct {
	// Authenticate checks the key of each request before Ingest sees it.
	// Required: a request without a key is Unauthenticated without a call.
	Authenticate AuthenticateFunc
	// Ingest takes each decoded request, of the three signals, with the
	// context Authenticate returned; its contract is the HTTP side's
	// ([IngestFunc]). Required.
	Ingest IngestFunc
	// RetryAfter is the RetryInfo.retry_delay of an Unavailable whose error
	// says none. Default: 1 second.
	RetryAfter time.Duration
	// Observe, when set, is called with the result of every request that
	// reaches the services, after Ingest, with the context Authenticate
	// returned when it accepted the key; Result.Status is the HTTP status
	// the same outcome has over OTLP/HTTP. A request the gRPC server itself
	// refuses (over the size limit, not decodable) never reaches it.
	// Default: none.
	Observe func(ctx context.Context, r Result)
	// Logger receives the failures of the server (the errors of no kind
	// answered Internal), once each. Default: discards.
	Logger *slog.Logger
}

// GRPCMaxRecvMsgSize returns the option of a grpc.Server that caps a
// request at maxBytes, before and after decompression ([DefaultMaxBytes]
// when maxBytes is 0 or less; gRPC's own default is 4 MiB). The server
// answers a larger request ResourceExhausted, without RetryInfo, so the
// client does not retry it.
func GRPCMaxRecvMsgSize(maxBytes int64) grpc.ServerOption {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	return grpc.MaxRecvMsgSize(int(min(maxBytes, math.MaxInt)))
}

// RegisterGRPC registers on s the three OTLP collector services
// (opentelemetry.proto.collector.{metrics,logs,trace}.v1.*Service/Export),
// each answering as the package doc says for gRPC. It returns an error
// naming the field when cfg is invalid. The server is the caller's: build
// it with [GRPCMaxRecvMsgSize] and the transport credentials it needs.
func RegisterGRPC(s grpc.ServiceRegistrar, cfg GRPCConfig) error {
	switch {
	case s == nil:
		return errors.New("otlpwire: RegisterGRPC: the server is nil")
	case cfg.Authenticate == nil:
		return errors.New("otlpwire: GRPCConfig.Authenticate is required")
	case cfg.Ingest == nil:
		return errors.New("otlpwire: GRPCConfig.Ingest is required")
	case cfg.RetryAfter < 0:
		return fmt.Errorf("otlpwire: GRPCConfig.RetryAfter: %v is negative", cfg.RetryAfter)
	}
	if cfg.RetryAfter == 0 {
		cfg.RetryAfter = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g := &grpcServer{cfg: cfg}
	colmetrics.RegisterMetricsServiceServer(s, metricsService{g: g})
	collogs.RegisterLogsServiceServer(s, logsService{g: g})
	coltrace.RegisterTraceServiceServer(s, traceService{g: g})
	return nil
}

// grpcServer answers the export calls of the three services.
type grpcServer struct {
	cfg GRPCConfig
}

type metricsService struct {
	colmetrics.UnimplementedMetricsServiceServer
	g *grpcServer
}

func (m metricsService) Export(ctx context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	resp, err := m.g.export(ctx, Metrics, req)
	if err != nil {
		return nil, err
	}
	return resp.(*colmetrics.ExportMetricsServiceResponse), nil
}

type logsService struct {
	collogs.UnimplementedLogsServiceServer
	g *grpcServer
}

func (l logsService) Export(ctx context.Context, req *collogs.ExportLogsServiceRequest) (*collogs.ExportLogsServiceResponse, error) {
	resp, err := l.g.export(ctx, Logs, req)
	if err != nil {
		return nil, err
	}
	return resp.(*collogs.ExportLogsServiceResponse), nil
}

type traceService struct {
	coltrace.UnimplementedTraceServiceServer
	g *grpcServer
}

func (t traceService) Export(ctx context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	resp, err := t.g.export(ctx, Traces, req)
	if err != nil {
		return nil, err
	}
	return resp.(*coltrace.ExportTraceServiceResponse), nil
}

// export authenticates and ingests req, of signal, and returns the export
// response of the signal or a gRPC status error.
func (g *grpcServer) export(ctx context.Context, signal Signal, req proto.Message) (proto.Message, error) {
	res := Result{Signal: signal, Status: http.StatusOK}
	resp, actx, err := g.serve(ctx, signal, req, &res)
	if err != nil {
		res.Status = statusOf(err)
	}
	if g.cfg.Observe != nil {
		g.cfg.Observe(actx, res)
	}
	if err != nil {
		return nil, g.statusError(ctx, signal, err)
	}
	return resp, nil
}

// serve authenticates and ingests req, filling res. It returns the context
// Authenticate returned, or ctx when it accepted no key.
func (g *grpcServer) serve(ctx context.Context, signal Signal, req proto.Message, res *Result) (proto.Message, context.Context, error) {
	key := keyOf(ctx)
	if key == "" {
		return nil, ctx, spec.Errorf(spec.ErrUnauthorized, "no key: send authorization: Bearer KEY or x-api-key as metadata")
	}
	actx, err := g.cfg.Authenticate(ctx, key)
	if err != nil {
		return nil, ctx, err
	}
	if actx == nil {
		actx = ctx
	}
	if g.cfg.Observe != nil {
		res.Bytes = int64(proto.Size(req))
	}
	p, err := g.cfg.Ingest(actx, req)
	if err != nil {
		return nil, actx, err
	}
	res.Rejected = p.Rejected
	return signal.response(p), actx, nil
}

// keyOf returns the key of the request's metadata: the token of the first
// authorization with the scheme Bearer (in any case), else the first
// non-empty x-api-key, else "", either percent-encoded or not
// ([BearerToken]).
func keyOf(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if token, ok := BearerToken(v); ok {
			return token
		}
	}
	for _, v := range md.Get("x-api-key") {
		if v = APIKey(v); v != "" {
			return v
		}
	}
	return ""
}

// statusError returns the gRPC status error answering err, an error of
// the ingest or authenticate function of a call on signal. The code is the
// kind's (grpcCode), the message and a BadRequest detail the HTTP side's; an
// Unavailable carries RetryInfo. An error of no kind is answered with a
// generic message and logged, as is a 5xx carrying the failure behind it,
// unless the client went away.
func (g *grpcServer) statusError(ctx context.Context, signal Signal, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return status.FromContextError(ctx.Err()).Err()
	}
	st := statusOf(err)
	var e *spec.Error
	if st == http.StatusInternalServerError || st >= 500 && errors.As(err, &e) && e.Err != nil {
		g.cfg.Logger.ErrorContext(ctx, "otlp ingest failed", "signal", signal.String(), "transport", "grpc", "error", err)
	}
	c := grpcCode(st)
	s := &rpcstatus.Status{Code: int32(c), Message: strings.ToValidUTF8(messageOf(err, st), "\uFFFD")}
	if br := badRequestOf(err, st); br != nil {
		s.Details = appendAny(s.Details, br)
	}
	if c == codes.Unavailable {
		s.Details = appendAny(s.Details, &errdetails.RetryInfo{RetryDelay: durationpb.New(retryDelay(err, g.cfg.RetryAfter))})
	}
	return status.ErrorProto(s)
}

// grpcCode returns the gRPC code of an error whose HTTP status is st: the
// HTTP side's google.rpc.Code (rpcCode) but for the two where OTLP/gRPC
// differs. Throttling (429) is Unavailable, which OTLP clients retry after
// the RetryInfo; a request too large (413) is ResourceExhausted without
// RetryInfo, which they do not retry, as the gRPC server answers a message
// over its limit.
func grpcCode(st int) codes.Code {
	switch st {
	case http.StatusTooManyRequests:
		return codes.Unavailable
	case http.StatusRequestEntityTooLarge:
		return codes.ResourceExhausted
	}
	return codes.Code(rpcCode(st))
}
