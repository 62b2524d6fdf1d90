package org

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// TelemetrySettings are an organisation's settings of its telemetry.
type TelemetrySettings struct {
	// StorePrompts is whether the prompt text that AI tools send with
	// their telemetry is stored, as conversations of the Ingestion key's
	// source, where Administrators and Reviewers read it. Default false:
	// prompt text is dropped on arrival.
	StorePrompts bool `json:"storePrompts"`
	// UpdatedAt is when the settings were last changed; zero while they
	// are the defaults.
	UpdatedAt spec.Time `json:"updatedAt,omitzero"`
}

// TelemetrySettings returns the telemetry settings of organisation orgID:
// one read by primary key, never cached, so that a change made by any
// process applies to the next request. An organisation that never changed
// them has the defaults.
func (s *Store) TelemetrySettings(ctx context.Context, orgID string) (TelemetrySettings, error) {
	return telemetrySettingsIn(ctx, s.db, strings.ToLower(orgID))
}

type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func telemetrySettingsIn(ctx context.Context, q queryRower, orgID string) (TelemetrySettings, error) {
	var st TelemetrySettings
	var at int64
	err := q.QueryRowContext(ctx, `SELECT store_prompts, updated_at FROM orgapi_telemetry_settings WHERE org_id = $1`, orgID).
		Scan(&st.StorePrompts, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return TelemetrySettings{}, nil
	}
	if err != nil {
		return TelemetrySettings{}, err
	}
	st.UpdatedAt = spec.NewTime(fromMillis(at))
	return st, nil
}

// SetStorePrompts turns the storing of prompt text on or off for
// organisation orgID, and records the change in the audit trail
// ([AuditTelemetrySettingsSet], with the settings before and after). Setting
// the value it already has changes nothing and records nothing. Turning it
// off stops storing new prompt text; what was stored stays.
func (s *Store) SetStorePrompts(ctx context.Context, orgID string, on bool, actor Actor) (TelemetrySettings, error) {
	o, err := s.Organisation(ctx, orgID)
	if err != nil {
		return TelemetrySettings{}, err
	}
	now := s.Now()
	var out TelemetrySettings
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		// Serialise the changes of one organisation: its row is locked
		// on PostgreSQL; SQLite's write transaction holds the database.
		if _, err := tx.ExecContext(ctx, `UPDATE orgapi_organisations SET audit_seq = audit_seq WHERE id = $1`, o.ID); err != nil {
			return err
		}
		before, err := telemetrySettingsIn(ctx, tx, o.ID)
		if err != nil {
			return err
		}
		if before.StorePrompts == on {
			out = before
			return nil
		}
		out = TelemetrySettings{StorePrompts: on, UpdatedAt: spec.NewTime(now)}
		if _, err := tx.ExecContext(ctx, `INSERT INTO orgapi_telemetry_settings (org_id, store_prompts, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (org_id) DO UPDATE SET store_prompts = excluded.store_prompts, updated_at = excluded.updated_at`,
			o.ID, on, sqldb.Millis(now)); err != nil {
			return err
		}
		return s.audit(ctx, tx, o.ID, now, actor, AuditTelemetrySettingsSet, "telemetrySettings", o.ID, before, out)
	})
	return out, err
}
