package telemetry

import (
	"context"
	"errors"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/aiusage/kit/internal/app/telemetry/otlpwire"
	"github.com/aiusage/kit/spec"
)

// NewGRPCServer returns a gRPC server answering OTLP's three Export
// services with the same keys, mapping and storage as the HTTP endpoint
// (Routes): an Ingestion key in the metadata authorization: Bearer KEY or
// x-api-key, requests bounded by Config.MaxBytes before and after gzip,
// and the key's bound of requests in flight. Serve it on a listener of its
// own (aiusage service serve --otlp-grpc-addr) and GracefulStop it on
// shutdown.
func (s *Service) NewGRPCServer() (*grpc.Server, error) {
	gs := grpc.NewServer(otlpwire.GRPCMaxRecvMsgSize(s.cfg.MaxBytes))
	err := otlpwire.RegisterGRPC(gs, otlpwire.GRPCConfig{
		Authenticate: s.authenticateGRPC,
		Ingest:       s.ingestGRPC,
		Logger:       s.log,
	})
	if err != nil {
		return nil, err
	}
	return gs, nil
}

// authenticateGRPC accepts an Ingestion key, with the answers of the HTTP
// side: the same Unauthenticated for a missing, unknown, revoked or expired
// key, PermissionDenied for an API key.
func (s *Service) authenticateGRPC(ctx context.Context, key string) (context.Context, error) {
	p, err := s.cfg.Orgs.AuthenticateIngestion(ctx, key)
	switch {
	case err == nil:
		return context.WithValue(ctx, principalKey{}, p), nil
	case errors.Is(err, spec.ErrUnauthorized):
		return nil, &spec.Error{Kind: spec.ErrUnauthorized, Detail: msgUnauthorized}
	case errors.Is(err, spec.ErrForbidden):
		return nil, err
	}
	return nil, &spec.Error{Kind: spec.ErrUnavailable, Detail: msgUnavailable, Err: err}
}

// ingestGRPC is the ingest function of the three signals, within the key's
// rate limit (past it, Unavailable with a RetryInfo of the time until the
// key has a token again) and its bound of requests in flight.
func (s *Service) ingestGRPC(ctx context.Context, req proto.Message) (otlpwire.Partial, error) {
	p, ok := principalOf(ctx)
	if !ok {
		return otlpwire.Partial{}, errors.New("telemetry: no principal")
	}
	if wait := s.rate.allow(p.KeyID); wait > 0 {
		s.throttle("grpc", throttleRate)
		return otlpwire.Partial{}, errThrottled(wait)
	}
	release, err := s.cfg.Concurrency.Acquire(p.KeyID, p.OrganisationID)
	if err != nil {
		s.throttle("grpc", throttleInFlight)
		return otlpwire.Partial{}, &spec.Error{Kind: spec.ErrRateLimited, Detail: msgBusy}
	}
	defer release()
	signal := otlpwire.Traces
	switch req.(type) {
	case *colmetricspb.ExportMetricsServiceRequest:
		signal = otlpwire.Metrics
	case *collogspb.ExportLogsServiceRequest:
		signal = otlpwire.Logs
	}
	return s.ingest(signal)(ctx, req)
}
