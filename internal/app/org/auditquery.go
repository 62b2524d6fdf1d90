package org

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// MaxAuditPage is the largest page [Store.AuditPage] returns.
const MaxAuditPage = 500

// AuditQuery selects a page of an organisation's audit trail, newest first.
// Empty filters match every record.
type AuditQuery struct {
	// Actor is a case-insensitive substring of the actor's name (on SQLite,
	// case-insensitive for ASCII letters only).
	Actor string
	// ActorType is ActorUser, ActorAPIKey, ActorAdmin or ActorIdP.
	ActorType string
	// ActorID is the id of the actor (a user's or an API key's), exactly.
	ActorID string
	// From and To bound the records' time: From <= At < To; a zero time
	// is no bound.
	From, To time.Time
	// Action is a prefix of the action: "key." matches key.created and
	// key.revoked; a whole action matches itself.
	Action string
	// Before returns the records with a Seq below it; 0 starts at the
	// newest record.
	Before int64
	// Limit is the page size, 1 to MaxAuditPage; 0 means 50.
	Limit int
}

// AuditPage returns a page of the organisation's audit trail, newest first
// (by Seq, descending), and next, the Before of the following (older) page,
// or 0 when no older record matches. It walks the trail's primary key
// (org_id, seq) backwards from Before.
func (s *Store) AuditPage(ctx context.Context, orgID string, q AuditQuery) ([]AuditRecord, int64, error) {
	if q.Limit == 0 {
		q.Limit = 50
	}
	switch {
	case q.Limit < 1 || q.Limit > MaxAuditPage:
		return nil, 0, fmt.Errorf("limit must be 1 to %d, got %d: %w", MaxAuditPage, q.Limit, spec.ErrInvalid)
	case q.Before < 0:
		return nil, 0, fmt.Errorf("before must not be negative: %w", spec.ErrInvalid)
	case q.ActorType != "" && q.ActorType != ActorUser && q.ActorType != ActorAPIKey && q.ActorType != ActorAdmin && q.ActorType != ActorIdP:
		return nil, 0, fmt.Errorf("actor type must be %s, %s, %s or %s, got %q: %w", ActorUser, ActorAPIKey, ActorAdmin, ActorIdP, q.ActorType, spec.ErrInvalid)
	case !utf8.ValidString(q.Actor) || !utf8.ValidString(q.Action) || !utf8.ValidString(q.ActorID):
		return nil, 0, fmt.Errorf("actor and action must be UTF-8: %w", spec.ErrInvalid)
	}
	where := []string{"org_id = $1"}
	args := []any{strings.ToLower(orgID)}
	add := func(cond string, vs ...any) {
		for _, v := range vs {
			args = append(args, v)
			cond = strings.Replace(cond, "$?", fmt.Sprintf("$%d", len(args)), 1)
		}
		where = append(where, cond)
	}
	if q.Before > 0 {
		add("seq < $?", q.Before)
	}
	if q.ActorType != "" {
		add("actor_type = $?", q.ActorType)
	}
	if q.ActorID != "" {
		add("actor_id = $?", strings.ToLower(q.ActorID))
	}
	if !q.From.IsZero() {
		add("at >= $?", sqldb.Millis(q.From))
	}
	if !q.To.IsZero() {
		add("at < $?", sqldb.Millis(q.To))
	}
	if q.Actor != "" {
		if s.db.Dialect == sqldb.Postgres {
			add("strpos(lower(actor_name), lower($?)) > 0", q.Actor)
		} else {
			add("instr(lower(actor_name), lower($?)) > 0", q.Actor)
		}
	}
	if q.Action != "" {
		add("substr(action, 1, $?) = $?", utf8.RuneCountInString(q.Action), q.Action)
	}
	args = append(args, q.Limit+1)
	rows, err := s.db.QueryContext(ctx, `SELECT seq, org_id, at, actor_type, actor_id, actor_name, action,
		resource_type, resource_id, before_json, after_json
		FROM orgapi_audit WHERE `+strings.Join(where, " AND ")+fmt.Sprintf(` ORDER BY org_id DESC, seq DESC LIMIT $%d`, len(args)), args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []AuditRecord{}
	for rows.Next() {
		var r AuditRecord
		var at int64
		var before, aft sql.NullString
		if err := rows.Scan(&r.Seq, &r.OrganisationID, &at, &r.Actor.Type, &r.Actor.ID, &r.Actor.Name, &r.Action,
			&r.ResourceType, &r.ResourceID, &before, &aft); err != nil {
			return nil, 0, err
		}
		r.At = spec.NewTime(fromMillis(at))
		r.Before, r.After = rawOrNull(before), rawOrNull(aft)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	var next int64
	if len(out) > q.Limit {
		out = out[:q.Limit]
		next = out[q.Limit-1].Seq
	}
	return out, next, nil
}
