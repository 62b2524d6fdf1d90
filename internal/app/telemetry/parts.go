package telemetry

import (
	"context"
	"errors"
	"iter"

	"google.golang.org/protobuf/proto"

	"github.com/aiusage/kit/internal/app/telemetry/otlpwire"
	"github.com/aiusage/kit/internal/app/telemetry/tools"
)

// ingestParts returns the ingest function of signal for a protobuf request
// decoded in parts: it maps every part into one batch, keeping none of
// them, and then stores the batch as [Service.ingest] does. A large
// request so holds in memory its body, its batch and one part, never the
// whole decoded request. Nothing is stored when a part is bad.
func (s *Service) ingestParts(signal otlpwire.Signal) otlpwire.PartsFunc {
	return func(ctx context.Context, parts iter.Seq2[proto.Message, error]) (otlpwire.Partial, error) {
		p, ok := principalOf(ctx)
		if !ok {
			return otlpwire.Partial{}, errors.New("telemetry: no principal")
		}
		var m tools.Mapper
		for part, err := range parts {
			if err != nil {
				return otlpwire.Partial{}, err
			}
			if err := m.Add(part); err != nil {
				return otlpwire.Partial{}, err
			}
		}
		b := m.Batch()
		if err := s.Ingest(ctx, p, b); err != nil {
			return otlpwire.Partial{}, err
		}
		s.observe(signal, b)
		return otlpwire.Partial{Message: unmappedMessage(b.Unmapped)}, nil
	}
}
