package org

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// CreateOrganisation creates an organisation; n must pass its Validate.
func (s *Store) CreateOrganisation(ctx context.Context, n OrganisationCreate, actor Actor) (Organisation, error) {
	if err := n.Validate(); err != nil {
		return Organisation{}, err
	}
	if n.Plan == "" {
		n.Plan = PlanStandard
	}
	now := s.Now()
	o := Organisation{ID: uuid.NewString(), Name: n.Name, Plan: n.Plan, HourlyLimit: n.HourlyLimit, CreatedAt: spec.NewTime(now)}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO orgapi_organisations (id, name, plan, hourly_limit, created_at)
			VALUES ($1, $2, $3, $4, $5)`, o.ID, o.Name, string(o.Plan), o.HourlyLimit, sqldb.Millis(now)); err != nil {
			return err
		}
		return s.audit(ctx, tx, o.ID, now, actor, AuditOrganisationCreated, "organisation", o.ID, nil, o)
	})
	return o, err
}

const orgColumns = `id, name, plan, hourly_limit, created_at`

func scanOrg(row interface{ Scan(...any) error }) (Organisation, error) {
	var o Organisation
	var plan string
	var created int64
	if err := row.Scan(&o.ID, &o.Name, &plan, &o.HourlyLimit, &created); err != nil {
		return o, err
	}
	o.Plan, o.CreatedAt = Plan(plan), spec.NewTime(fromMillis(created))
	return o, nil
}

// Organisation returns the organisation id, or an error of kind
// spec.ErrNotFound. An organisation found is reused for the key cache's
// time (WithKeyCacheTTL): what it returns never changes after creation.
func (s *Store) Organisation(ctx context.Context, id string) (Organisation, error) {
	lower, now := strings.ToLower(id), s.Now()
	o, ok, gen := s.orgs.get(lower, now)
	if ok {
		return o, nil
	}
	o, err := scanOrg(s.db.QueryRowContext(ctx, `SELECT `+orgColumns+` FROM orgapi_organisations WHERE id = $1`, lower))
	if errors.Is(err, sql.ErrNoRows) {
		return o, fmt.Errorf("organisation %s: %w", id, spec.ErrNotFound)
	}
	if err == nil {
		s.orgs.put(lower, o, now, gen)
	}
	return o, err
}

// Organisations returns every organisation, oldest first.
func (s *Store) Organisations(ctx context.Context) ([]Organisation, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+orgColumns+` FROM orgapi_organisations ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Organisation{}
	for rows.Next() {
		o, err := scanOrg(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}
