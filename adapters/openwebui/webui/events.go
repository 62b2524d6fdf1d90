package webui

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Open WebUI keeps no audit table (its audit log is a file). The events served
// are derived from rows that record when something happened and never move:
// the creation of users, chats and custom models, and feedback on answers.
// Their types are the provider's own.
const (
	EventUserCreated       = "user.created"
	EventChatCreated       = "chat.created"
	EventModelCreated      = "model.created"
	EventFeedbackSubmitted = "feedback.submitted"
)

// eventKinds maps each derived event type to its category, action and
// target kind.
var eventKinds = map[string]struct{ category, action, target string }{
	EventUserCreated:       {spec.CategoryAccess, "Created", "user"},
	EventChatCreated:       {spec.CategoryResourceLifecycle, "Created", "conversation"},
	EventModelCreated:      {spec.CategoryConfiguration, "Created", "assistant"},
	EventFeedbackSubmitted: {spec.CategoryOther, "Created", "feedback"},
}

// eventsUnion is every derived event: type, event id, actor, time (epoch
// seconds), target id and name, payload.
const eventsUnion = `
	SELECT 'user.created' AS typ, 'user.created:' || u.id AS eid, u.id AS actor, u.created_at AS at, u.id AS target,
		u.name AS tname, CAST(NULL AS TEXT) AS payload FROM "user" u
	UNION ALL
	SELECT 'chat.created', 'chat.created:' || c.id, c.user_id, c.created_at, c.id, c.title, CAST(NULL AS TEXT)
		FROM chat c WHERE ` + notShared + `
	UNION ALL
	SELECT 'model.created', 'model.created:' || m.id, m.user_id, m.created_at, m.id, m.name, CAST(NULL AS TEXT)
		FROM model m WHERE m.base_model_id IS NOT NULL
	UNION ALL
	SELECT 'feedback.submitted', 'feedback.submitted:' || f.id, f.user_id, f.created_at, f.id, f.type,
		'{"data":' || COALESCE(CAST(f.data AS TEXT), 'null') || ',"meta":' || COALESCE(CAST(f.meta AS TEXT), 'null') || '}'
		FROM feedback f`

// ListEvents implements [provider.DataSource].
func (s *Source) ListEvents(ctx context.Context, q provider.EventQuery) (provider.Page[spec.Event], error) {
	var page provider.Page[spec.Event]
	if !s.ownTenant(q.Tenant) {
		return page, nil
	}
	where, args := []string{"1 = 1"}, []any{}
	if !q.OccurredAfter.IsZero() {
		where = append(where, "e.at > ?")
		args = append(args, floorSeconds(q.OccurredAfter.UnixMilli()))
	}
	if q.Category != "" {
		var types []string
		for typ, k := range eventKinds {
			if k.category == q.Category {
				types = append(types, typ)
			}
		}
		if len(types) == 0 {
			return page, nil
		}
		where = append(where, "e.typ IN ("+placeholders(len(types))+")")
		args = append(args, strArgs(types)...)
	}
	where, args = s.keyset(where, args, "e.at", "e.eid", q.After)
	rows, err := s.query(ctx, fmt.Sprintf(`SELECT e.typ, e.eid, e.actor, e.at, e.target, e.tname, e.payload FROM (%s) e
		WHERE %s ORDER BY e.at, %s LIMIT %d`, eventsUnion, strings.Join(where, " AND "), s.binary("e.eid"), q.Limit+1), args...)
	if err != nil {
		return page, err
	}
	defer rows.Close()
	var actors []string
	for rows.Next() {
		var typ, eid string
		var actor, target, name, payload sql.NullString
		var at int64
		if err := rows.Scan(&typ, &eid, &actor, &at, &target, &name, &payload); err != nil {
			return page, fmt.Errorf("webui: read event: %w", err)
		}
		k := eventKinds[typ]
		e := spec.Event{
			ID: eid, OccurredAt: secondsTime(at), Type: typ, Category: k.category, Action: k.action,
			Target: &spec.Target{Kind: k.target, ID: target.String, Name: name.String},
		}
		if actor.Valid && actor.String != "" {
			e.Actor = &spec.Actor{Type: spec.ActorUser, ID: actor.String}
			actors = append(actors, actor.String)
		}
		if payload.Valid && json.Valid([]byte(payload.String)) {
			e.Payload = json.RawMessage(payload.String)
		}
		page.Items = append(page.Items, e)
	}
	if err := rows.Err(); err != nil {
		return page, fmt.Errorf("webui: read events: %w", err)
	}
	if len(page.Items) > q.Limit {
		page.Items, page.HasMore = page.Items[:q.Limit], true
	}
	users, err := s.users(ctx, actors)
	if err != nil {
		return page, err
	}
	for i := range page.Items {
		if a := page.Items[i].Actor; a != nil {
			a.Email = users[a.ID].email
		}
	}
	return page, nil
}
