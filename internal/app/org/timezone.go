package org

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	// The zone names resolve the same on every host, with or without the
	// system's zoneinfo files.
	_ "time/tzdata"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// DefaultTimeZone is the zone of an organisation that never chose one.
const DefaultTimeZone = "UTC"

// OrgSettings are an organisation's general settings.
type OrgSettings struct {
	// TimeZone is the IANA name of the zone the dashboard shows the
	// organisation's times in ("Europe/Berlin"). Default DefaultTimeZone.
	TimeZone string `json:"timeZone"`
	// UpdatedAt is when the settings were last changed; zero while they
	// are the defaults.
	UpdatedAt spec.Time `json:"updatedAt,omitzero"`
}

// Location returns the zone of the settings; UTC when its name does not
// resolve (it always does for a name that SetTimeZone stored).
func (st OrgSettings) Location() *time.Location {
	loc, err := ParseTimeZone(st.TimeZone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// ParseTimeZone checks an IANA zone name ("Europe/Berlin", "UTC") and
// returns its zone. "Local" and "" are refused: the host's zone is no
// organisation's choice. An error is of kind spec.ErrInvalid.
func ParseTimeZone(name string) (*time.Location, error) {
	bad := func() error {
		return spec.Invalid("timeZone", "%q is not an IANA time zone name such as UTC or Europe/Berlin", name)
	}
	if name == "" || name == "Local" || len(name) > 64 || strings.ContainsAny(name, "\\ \t\r\n") {
		return nil, bad()
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, bad()
	}
	return loc, nil
}

// OrgSettings returns the general settings of organisation orgID: one read
// by primary key, never cached, so that a change made by any process applies
// to the next page. An organisation that never changed them has the
// defaults.
func (s *Store) OrgSettings(ctx context.Context, orgID string) (OrgSettings, error) {
	return orgSettingsIn(ctx, s.db, strings.ToLower(orgID))
}

func orgSettingsIn(ctx context.Context, q queryRower, orgID string) (OrgSettings, error) {
	st := OrgSettings{TimeZone: DefaultTimeZone}
	var at int64
	err := q.QueryRowContext(ctx, `SELECT time_zone, updated_at FROM orgapi_org_settings WHERE org_id = $1`, orgID).
		Scan(&st.TimeZone, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return OrgSettings{TimeZone: DefaultTimeZone}, nil
	}
	if err != nil {
		return OrgSettings{}, err
	}
	st.UpdatedAt = spec.NewTime(fromMillis(at))
	return st, nil
}

// SetTimeZone sets the zone the dashboard shows organisation orgID's times
// in, and records the change in the audit trail ([AuditTimeZoneSet], with
// the settings before and after). name is an IANA zone name (see
// [ParseTimeZone]); another is an error of kind spec.ErrInvalid naming
// timeZone. Setting the zone it already has changes nothing and records
// nothing.
func (s *Store) SetTimeZone(ctx context.Context, orgID, name string, actor Actor) (OrgSettings, error) {
	if _, err := ParseTimeZone(name); err != nil {
		return OrgSettings{}, err
	}
	o, err := s.Organisation(ctx, orgID)
	if err != nil {
		return OrgSettings{}, err
	}
	now := s.Now()
	var out OrgSettings
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		// Serialise the changes of one organisation, as SetStorePrompts.
		if _, err := tx.ExecContext(ctx, `UPDATE orgapi_organisations SET audit_seq = audit_seq WHERE id = $1`, o.ID); err != nil {
			return err
		}
		before, err := orgSettingsIn(ctx, tx, o.ID)
		if err != nil {
			return err
		}
		if before.TimeZone == name {
			out = before
			return nil
		}
		out = OrgSettings{TimeZone: name, UpdatedAt: spec.NewTime(now)}
		if _, err := tx.ExecContext(ctx, `INSERT INTO orgapi_org_settings (org_id, time_zone, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (org_id) DO UPDATE SET time_zone = excluded.time_zone, updated_at = excluded.updated_at`,
			o.ID, name, sqldb.Millis(now)); err != nil {
			return err
		}
		return s.audit(ctx, tx, o.ID, now, actor, AuditTimeZoneSet, "organisationSettings", o.ID, before, out)
	})
	if err != nil {
		return OrgSettings{}, fmt.Errorf("set time zone: %w", err)
	}
	return out, nil
}
