package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/telemetry/otlpwire"
	"github.com/aiusage/kit/internal/app/telemetry/tools"
	"github.com/aiusage/kit/spec"
)

// sourceNamespace derives the id of a key's telemetry source from the key's
// id (a name-based UUID), so that every process finds the same source.
var sourceNamespace = uuid.MustParse("3f1c1b9e-6a53-4b8e-9a0e-7c2d1f0a5b11")

// SourceID returns the id of the telemetry source of the Ingestion key
// keyID.
func SourceID(keyID string) string {
	return uuid.NewSHA1(sourceNamespace, []byte(strings.ToLower(keyID))).String()
}

// detailDown is the message of a request the service failed to store.
const detailDown = "The service cannot store telemetry now; retry shortly."

// ingest returns the ingest function of signal: it maps the request with
// package tools and stores what it maps to in the key's telemetry source.
func (s *Service) ingest(signal otlpwire.Signal) otlpwire.IngestFunc {
	return func(ctx context.Context, req proto.Message) (otlpwire.Partial, error) {
		p, ok := principalOf(ctx)
		if !ok {
			return otlpwire.Partial{}, errors.New("telemetry: no principal")
		}
		var b tools.Batch
		switch m := req.(type) {
		case *colmetricspb.ExportMetricsServiceRequest:
			b = tools.Metrics(m)
		case *collogspb.ExportLogsServiceRequest:
			b = tools.Logs(m)
		case *coltracepb.ExportTraceServiceRequest:
			b = tools.Traces(m)
		default:
			return otlpwire.Partial{}, fmt.Errorf("telemetry: %s: unexpected request %T", signal, req)
		}
		if err := s.Ingest(ctx, p, b); err != nil {
			return otlpwire.Partial{}, err
		}
		s.observe(signal, b)
		return otlpwire.Partial{Message: unmappedMessage(b.Unmapped)}, nil
	}
}

// observe counts the records of an accepted request in the service's
// metrics: those mapped (to usage, events or prompts), and the others by
// reason.
func (s *Service) observe(signal otlpwire.Signal, b tools.Batch) {
	if s.cfg.Metrics == nil {
		return
	}
	reasons := make(map[string]int, len(b.Unmapped.Reasons))
	for r, n := range b.Unmapped.Reasons {
		reasons[string(r)] = n
	}
	s.cfg.Metrics.ObserveTelemetry(signal.String(), mappedCount(b), reasons)
}

// mappedCount is how many records of b mapped to something: a usage, an
// event, or a prompt not already counted with its event.
func mappedCount(b tools.Batch) int {
	keys := map[string]bool{}
	for _, u := range b.Usage {
		keys[u.Key] = true
	}
	for _, e := range b.Events {
		keys[e.ID] = true
	}
	for _, p := range b.Prompts {
		keys[p.Key] = true
	}
	return len(keys)
}

// unmappedMessage says what of a request mapped to nothing, by reason, or
// "" when everything mapped.
func unmappedMessage(u tools.Unmapped) string {
	if u.Total() == 0 {
		return ""
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(u.Reasons)) {
		parts = append(parts, fmt.Sprintf("%d %s", u.Reasons[r], r))
	}
	return "accepted; records that map to nothing: " + strings.Join(parts, ", ")
}

// Ingest stores batch b, sent with the Ingestion key p, in the key's
// telemetry source (created on its first batch): its usage into the
// telemetry tables, whose changed hours are rolled up into usage buckets by
// a job; its events and assistants into the source's collected view. It is
// idempotent: a batch stored again, in any order with others, changes
// nothing. Prompt text is stored only where the key's organisation allows
// it (org.TelemetrySettings.StorePrompts, read on each request that carries
// prompts), as one conversation per tool session in the collected view;
// otherwise it is dropped. An error is a *spec.Error of kind
// spec.ErrUnavailable (the client retries).
func (s *Service) Ingest(ctx context.Context, p org.Principal, b tools.Batch) error {
	sid := SourceID(p.KeyID)
	if _, ok := s.ensured.Load(sid); !ok {
		if err := s.cfg.Views.EnsureTelemetry(ctx, p.OrganisationID, sid, p.KeyName); err != nil {
			return unavailable(fmt.Errorf("telemetry: source of key %s: %w", p.KeyID, err))
		}
		s.ensured.Store(sid, true)
	}
	now := s.now().Truncate(time.Millisecond)
	stored, err := s.storeUsage(ctx, sid, b.Usage)
	if err != nil {
		return unavailable(err)
	}
	if err := s.saveRecords(ctx, sid, now, b); err != nil {
		return unavailable(err)
	}
	if err := s.savePrompts(ctx, p, sid, now, b.Prompts); err != nil {
		return unavailable(err)
	}
	if stored > 0 {
		s.queueRollup(ctx, sid)
	}
	if err := s.cfg.Views.TelemetryReceived(ctx, sid, now); err != nil {
		return unavailable(err)
	}
	return nil
}

// unavailable wraps err as a 503 whose words stay in the log.
func unavailable(err error) error {
	return &spec.Error{Kind: spec.ErrUnavailable, Detail: detailDown, Err: err}
}

// saveRecords writes the events and assistants of b into source sid's
// collected view.
func (s *Service) saveRecords(ctx context.Context, sid string, now time.Time, b tools.Batch) error {
	var events, assistants []json.RawMessage
	for _, e := range b.Events {
		raw, err := json.Marshal(e.Event)
		if err != nil {
			return fmt.Errorf("telemetry: event %s: %w", e.ID, err)
		}
		events = append(events, raw)
	}
	for _, a := range b.Assistants {
		first, err := s.firstSeen(ctx, sid, a.ID, a.LastSeen)
		if err != nil {
			return err
		}
		sa := spec.Assistant{ID: a.ID, Name: a.Name, CreatedAt: spec.NewTime(first), UpdatedAt: spec.NewTime(a.LastSeen)}
		if a.Version != "" {
			sa.Description = "version " + a.Version
		}
		raw, err := json.Marshal(sa)
		if err != nil {
			return fmt.Errorf("telemetry: assistant %s: %w", a.ID, err)
		}
		assistants = append(assistants, raw)
	}
	if err := s.savePushed(ctx, sid, consumer.Events, events, now); err != nil {
		return err
	}
	return s.savePushed(ctx, sid, consumer.Assistants, assistants, now)
}

// firstSeen records that source sid saw tool id at seen and returns the
// earliest time it saw it.
func (s *Service) firstSeen(ctx context.Context, sid, id string, seen time.Time) (time.Time, error) {
	var ms int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO telemetry_assistants (source_id, assistant_id, first_seen_ms) VALUES ($1, $2, $3)
		ON CONFLICT (source_id, assistant_id) DO UPDATE SET first_seen_ms = CASE
			WHEN excluded.first_seen_ms < telemetry_assistants.first_seen_ms THEN excluded.first_seen_ms
			ELSE telemetry_assistants.first_seen_ms END
		RETURNING first_seen_ms`, sid, id, seen.UnixMilli()).Scan(&ms)
	if err != nil {
		return time.Time{}, fmt.Errorf("telemetry: assistant %s: %w", id, err)
	}
	return time.UnixMilli(ms).UTC(), nil
}

// savePushed writes records of resource r into source sid's collected view,
// waiting while another write of the same source and resource holds its
// lease.
func (s *Service) savePushed(ctx context.Context, sid string, r consumer.Resource, records []json.RawMessage, now time.Time) error {
	if len(records) == 0 {
		return nil
	}
	wait := 10 * time.Millisecond
	for attempt := 0; ; attempt++ {
		res, err := consumer.SavePushed(ctx, s.cfg.Views.ConsumerStore(), consumer.PushedRecords{Source: sid, Resource: r, Records: records, Now: now})
		if errors.Is(err, consumer.ErrBusy) && attempt < 40 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			wait = min(2*wait, 250*time.Millisecond)
			continue
		}
		if err != nil {
			return fmt.Errorf("telemetry: save %s of source %s: %w", r, sid, err)
		}
		if res.Quarantined > 0 {
			s.log.WarnContext(ctx, "telemetry: records quarantined", "source", sid, "resource", string(r), "quarantined", res.Quarantined)
		}
		return nil
	}
}
