package sources

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// errTelemetrySource is the refusal to change or remove telemetry source id
// here: its Ingestion key decides it.
func errTelemetrySource(id string) error {
	return fmt.Errorf("source %s receives the telemetry of an Ingestion key and follows the key: revoke the key to stop it: %w", id, spec.ErrConflict)
}

// telemetryEvery is the every_ms stored for a telemetry source, which is
// never synced (it has no url, so the scheduler never finds it due).
const telemetryEvery = DefaultEvery

// EnsureTelemetry makes sure organisation orgID has the telemetry source id
// (a UUID the caller derives from the Ingestion key's id), named name (the
// key's name). It returns nil when the source exists already, whatever its
// name now. When another source of the organisation has the name, the
// source is named name followed by " (telemetry)", or by the source id
// when that is taken too. It is safe for concurrent use, also by several
// processes: of two calls racing, one inserts and the other finds it.
func (s *Service) EnsureTelemetry(ctx context.Context, orgID, id, name string) error {
	org, ok := ident.CanonicalUUID(orgID)
	sid, ok2 := ident.CanonicalUUID(id)
	if !ok || !ok2 {
		return fmt.Errorf("sources: telemetry source %q of organisation %q: %w", id, orgID, spec.ErrInvalid)
	}
	now := s.now()
	keyID, token, secret, err := s.sealSecrets(Source{ID: sid, Transport: TransportTelemetry})
	if err != nil {
		return err
	}
	for _, n := range []string{name, name + " (telemetry)", name + " (" + sid + ")"} {
		var got string
		err := s.db.QueryRowContext(ctx, `SELECT org_id FROM sources WHERE id = $1`, sid).Scan(&got)
		if err == nil {
			if got != org {
				return fmt.Errorf("sources: telemetry source %s belongs to another organisation: %w", sid, spec.ErrConflict)
			}
			return nil
		}
		_, err = s.db.ExecContext(ctx, `INSERT INTO sources (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, push_secret, secret_key_id)
			VALUES ($1, $2, $3, '', $4, $5, $6, $7, $7, $8, $9) ON CONFLICT (id) DO NOTHING`,
			sid, org, n, token, TransportTelemetry, telemetryEvery.Milliseconds(), now.UnixMilli(), secret, keyID)
		if sqldb.IsUniqueViolation(err) {
			continue // the name is taken: the next one
		}
		if err != nil {
			return fmt.Errorf("sources: telemetry source %s: %w", sid, err)
		}
		return nil
	}
	return errors.New("sources: telemetry source " + sid + ": every name tried is taken")
}

// TelemetryReceived records that the telemetry source id accepted a request
// at time at: one UPDATE a request, never moving the time back (of two
// processes racing, the later time stays). An unknown id, or a source of
// another transport, changes nothing.
func (s *Service) TelemetryReceived(ctx context.Context, id string, at time.Time) error {
	sid, ok := ident.CanonicalUUID(id)
	if !ok {
		return fmt.Errorf("sources: telemetry source %q: %w", id, spec.ErrInvalid)
	}
	ms := at.UnixMilli()
	_, err := s.db.ExecContext(ctx, `UPDATE sources SET last_received_ms = $1
		WHERE id = $2 AND transport = $3 AND (last_received_ms IS NULL OR last_received_ms < $1)`, ms, sid, TransportTelemetry)
	if err != nil {
		return fmt.Errorf("sources: telemetry source %s: last received: %w", sid, err)
	}
	return nil
}
