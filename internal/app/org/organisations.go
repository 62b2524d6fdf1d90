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

// UpdateOrganisation changes the organisation id as u says and records the
// change, before and after, in its audit trail (an unchanged organisation is
// returned as it is, and nothing is recorded). An update that changes
// nothing is spec.ErrInvalid, as is a result that fails
// [OrganisationCreate.Validate]; an unknown id is spec.ErrNotFound.
//
// The plan decides the review-task API's hourly limit: this store's next
// request uses the new one (its cache of organisations is cleared), another
// process's within its key cache time ([WithKeyCacheTTL]).
func (s *Store) UpdateOrganisation(ctx context.Context, id string, u OrganisationUpdate, actor Actor) (Organisation, error) {
	if u.Name == nil && u.Plan == nil && u.HourlyLimit == nil {
		return Organisation{}, fmt.Errorf("%w: nothing to change: give a name, a plan or an hourly limit", spec.ErrInvalid)
	}
	now := s.Now()
	var after Organisation
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		before, err := scanOrg(tx.QueryRowContext(ctx, `SELECT `+orgColumns+` FROM orgapi_organisations WHERE id = $1`+s.forUpdate(), strings.ToLower(id)))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("organisation %s: %w", id, spec.ErrNotFound)
		}
		if err != nil {
			return err
		}
		after = before
		if u.Name != nil {
			after.Name = *u.Name
		}
		if u.Plan != nil {
			after.Plan = *u.Plan
			if after.Plan != PlanEnterprise {
				after.HourlyLimit = 0
			}
		}
		if u.HourlyLimit != nil {
			after.HourlyLimit = *u.HourlyLimit
		} else if after.Plan == PlanEnterprise && before.Plan != PlanEnterprise {
			after.HourlyLimit = 0 // required: Validate says so
		}
		if err := (OrganisationCreate{Name: after.Name, Plan: after.Plan, HourlyLimit: after.HourlyLimit}).Validate(); err != nil {
			return err
		}
		if after == before {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE orgapi_organisations SET name = $1, plan = $2, hourly_limit = $3 WHERE id = $4`,
			after.Name, string(after.Plan), after.HourlyLimit, after.ID); err != nil {
			return err
		}
		return s.audit(ctx, tx, after.ID, now, actor, AuditOrganisationUpdated, "organisation", after.ID, before, after)
	})
	if err != nil {
		return Organisation{}, err
	}
	s.orgs.clear()
	return after, nil
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
