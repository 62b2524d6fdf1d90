package org

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// audit appends one record to the audit trail within tx. Call it last in
// the transaction: it locks the organisation's row until the commit.
func (s *Store) audit(ctx context.Context, tx *sql.Tx, org string, at time.Time, actor Actor, action, resType, resID string, before, after any) error {
	enc := func(v any) (any, error) {
		if v == nil {
			return nil, nil
		}
		if raw, ok := v.(json.RawMessage); ok {
			return string(raw), nil
		}
		b, err := json.Marshal(v)
		return string(b), err
	}
	b, err := enc(before)
	if err != nil {
		return err
	}
	a, err := enc(after)
	if err != nil {
		return err
	}
	// The organisation's row hands out the sequence number, and its lock,
	// held to the commit, makes the numbers follow the order of the commits:
	// a reader that has seen number n never later sees a new record below n.
	var seq int64
	if err := tx.QueryRowContext(ctx, `UPDATE orgapi_organisations SET audit_seq = audit_seq + 1
		WHERE id = $1 RETURNING audit_seq`, org).Scan(&seq); err != nil {
		return fmt.Errorf("audit sequence of organisation %s: %w", org, err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO orgapi_audit
		(org_id, seq, at, actor_type, actor_id, actor_name, action, resource_type, resource_id, before_json, after_json)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		org, seq, sqldb.Millis(at), actor.Type, actor.ID, actor.Name, action, resType, resID, b, a)
	return err
}

// RecordAudit appends one record to the organisation's audit trail, in a
// transaction of its own, at the store's clock reading: the hook by which
// other components of the service record their changes to an organisation
// (package people: its users). before and after are encoded as JSON (nil:
// null); they must hold nothing secret, since the trail is shown to
// administrators. A change made in a transaction records itself with
// [Store.RecordAuditTx] instead, so that the change and its record commit
// together.
func (s *Store) RecordAudit(ctx context.Context, orgID string, actor Actor, action, resourceType, resourceID string, before, after any) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		return s.RecordAuditTx(ctx, tx, orgID, s.Now(), actor, action, resourceType, resourceID, before, after)
	})
}

// RecordAuditTx is [Store.RecordAudit] within tx, a transaction on the
// store's database, stamped at. Call it last in the transaction: it locks
// the organisation's row until the commit, which numbers the records in
// commit order. An organisation that does not exist is an error.
func (s *Store) RecordAuditTx(ctx context.Context, tx *sql.Tx, orgID string, at time.Time, actor Actor, action, resourceType, resourceID string, before, after any) error {
	return s.audit(ctx, tx, strings.ToLower(orgID), at.UTC().Truncate(time.Millisecond), actor, action, resourceType, resourceID, before, after)
}

// Audit returns up to limit records of the organisation's audit trail with a
// Seq above after, oldest first.
func (s *Store) Audit(ctx context.Context, orgID string, after int64, limit int) ([]AuditRecord, error) {
	if limit < 1 {
		limit = 1000
	}
	rows, err := s.db.QueryContext(ctx, `SELECT seq, org_id, at, actor_type, actor_id, actor_name, action,
		resource_type, resource_id, before_json, after_json
		FROM orgapi_audit WHERE org_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, strings.ToLower(orgID), after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []AuditRecord{}
	for rows.Next() {
		var r AuditRecord
		var at int64
		var before, aft sql.NullString
		if err := rows.Scan(&r.Seq, &r.OrganisationID, &at, &r.Actor.Type, &r.Actor.ID, &r.Actor.Name, &r.Action,
			&r.ResourceType, &r.ResourceID, &before, &aft); err != nil {
			return nil, err
		}
		r.At = spec.NewTime(fromMillis(at))
		r.Before, r.After = rawOrNull(before), rawOrNull(aft)
		out = append(out, r)
	}
	return out, rows.Err()
}

func rawOrNull(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return json.RawMessage("null")
	}
	return json.RawMessage(s.String)
}
