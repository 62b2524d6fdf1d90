package reviewapi

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/aiusage/kit/internal/infra/ops"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
	"github.com/aiusage/kit/spec/webhook"
)

// MaxWebhooks is the most webhooks an organisation may register: each
// event is sent to every one of them.
const MaxWebhooks = 20

// CreateWebhook registers a receiver of the organisation's task events. The
// answer carries the signing secret, the only time it is shown.
func (s *Service) CreateWebhook(ctx context.Context, orgID string, c spec.WebhookCreate) (spec.Webhook, error) {
	if err := CheckWebhookURL(ctx, c.URL, AddressPolicy{AllowPrivate: s.cfg.AllowPrivateWebhooks}, s.cfg.Resolver); err != nil {
		if errors.Is(err, ErrUnreachableHost) {
			// What the name resolved to, or that it did not, stays here.
			s.cfg.Logger.InfoContext(ctx, "webhook url refused", "org", orgID, "reason", err.Error())
			return spec.Webhook{}, spec.Invalid("url", "%s", UnreachableHostMessage(s.cfg.AllowPrivateWebhooks))
		}
		return spec.Webhook{}, spec.Invalid("url", "%v", err)
	}
	if strings.IndexFunc(c.Description, unicode.IsControl) >= 0 {
		return spec.Webhook{}, spec.Invalid("description", "description must not hold control characters")
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM reviewapi_webhooks WHERE org_id = $1 AND deleted_at IS NULL`, orgID).Scan(&n); err != nil {
		return spec.Webhook{}, err
	}
	if n >= MaxWebhooks {
		return spec.Webhook{}, spec.Invalid("", "the organisation already has %d webhooks, the most allowed; delete one first", n)
	}
	events := c.Events
	if len(events) == 0 {
		events = slices.Clone(spec.WebhookEventTypes)
	}
	seen := map[string]bool{}
	for _, e := range events {
		if seen[e] {
			return spec.Webhook{}, spec.Invalid("events", "lists %s twice", e)
		}
		seen[e] = true
	}
	now := s.now()
	w := spec.Webhook{ID: uuid.NewString(), URL: c.URL, Events: events, Description: c.Description,
		CreatedAt: spec.NewTime(now), Secret: webhook.NewSecret()}
	ev, _ := json.Marshal(events)
	keyID, sealed, err := s.cfg.Secrets.Seal(w.Secret, secretTable.Binding("secret", w.ID))
	if err != nil {
		return spec.Webhook{}, err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO reviewapi_webhooks (id, org_id, url, events, description, secret, secret_key_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, w.ID, orgID, w.URL, string(ev), w.Description, sealed, keyID, sqldb.Millis(now))
	return w, err
}

// webhookColumns are the columns scanWebhook reads, in its order.
const webhookColumns = `id, url, events, description, created_at, consecutive_failures`

// scanWebhook reads a webhook of webhookColumns, without its secret.
func scanWebhook(row interface{ Scan(...any) error }) (spec.Webhook, error) {
	var w spec.Webhook
	var events string
	var created int64
	w.ConsecutiveFailures = new(int)
	if err := row.Scan(&w.ID, &w.URL, &events, &w.Description, &created, w.ConsecutiveFailures); err != nil {
		return spec.Webhook{}, err
	}
	if err := json.Unmarshal([]byte(events), &w.Events); err != nil {
		return spec.Webhook{}, err
	}
	w.CreatedAt = spec.NewTime(time.UnixMilli(created))
	return w, nil
}

// Webhooks lists the organisation's webhooks, oldest first, without secrets.
func (s *Service) Webhooks(ctx context.Context, orgID string) ([]spec.Webhook, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+webhookColumns+` FROM reviewapi_webhooks
		WHERE org_id = $1 AND deleted_at IS NULL ORDER BY created_at, id`, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []spec.Webhook{}
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// Webhook returns a webhook of the organisation as GET /webhooks lists it,
// without its secret. A webhook that does not exist, was deleted or is
// another organisation's is ErrWebhookNotFound.
func (s *Service) Webhook(ctx context.Context, orgID, id string) (spec.Webhook, error) {
	w, err := scanWebhook(s.db.QueryRowContext(ctx, `SELECT `+webhookColumns+` FROM reviewapi_webhooks
		WHERE id = $1 AND org_id = $2 AND deleted_at IS NULL`, id, orgID))
	if errors.Is(err, sql.ErrNoRows) {
		return spec.Webhook{}, fmt.Errorf("webhook %s: %w", id, ErrWebhookNotFound)
	}
	return w, err
}

// DeleteWebhook removes a webhook of the organisation; its deliveries not
// yet made are cancelled.
func (s *Service) DeleteWebhook(ctx context.Context, orgID, id string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		now := sqldb.Millis(s.now())
		res, err := tx.ExecContext(ctx, `UPDATE reviewapi_webhooks SET deleted_at = $1 WHERE id = $2 AND org_id = $3 AND deleted_at IS NULL`, now, id, orgID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("webhook %s: %w", id, ErrWebhookNotFound)
		}
		_, err = tx.ExecContext(ctx, `UPDATE reviewapi_deliveries SET state = 'cancelled', updated_at = $1
			WHERE webhook_id = $2 AND state = 'pending'`, now, id)
		return err
	})
}

// recordEvents writes the events of a change and one pending delivery per
// subscribed webhook, in the change's transaction: an event is never lost
// between the change and its delivery.
func (s *Service) recordEvents(ctx context.Context, tx *sql.Tx, orgID string, now time.Time, events ...event) ([]delivery, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, events FROM reviewapi_webhooks WHERE org_id = $1 AND deleted_at IS NULL`, orgID)
	if err != nil {
		return nil, err
	}
	type hook struct {
		id     string
		events []string
	}
	var hooks []hook
	for rows.Next() {
		var h hook
		var ev string
		if err := rows.Scan(&h.id, &ev); err != nil {
			rows.Close()
			return nil, err
		}
		if err := json.Unmarshal([]byte(ev), &h.events); err != nil {
			rows.Close()
			return nil, err
		}
		hooks = append(hooks, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []delivery
	for _, e := range events {
		// Version 7 ids grow with time and, within this process, with each
		// id made: the events of one change sort in the order recorded.
		v7, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		id := "msg_" + strings.ReplaceAll(v7.String(), "-", "")
		body, err := json.Marshal(spec.WebhookDelivery{Type: e.typ, Timestamp: spec.NewTime(now), Data: e.task})
		if err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO reviewapi_events (id, org_id, task_id, type, body, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, id, orgID, e.task.ID, e.typ, string(body), sqldb.Millis(now)); err != nil {
			return nil, err
		}
		for _, h := range hooks {
			if !slices.Contains(h.events, e.typ) {
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO reviewapi_deliveries (event_id, webhook_id, state, created_at, updated_at)
				VALUES ($1, $2, 'pending', $3, $3)`, id, h.id, sqldb.Millis(now)); err != nil {
				return nil, err
			}
			out = append(out, delivery{id, h.id, orgID})
		}
	}
	return out, nil
}

// queueDeliveries hands deliveries to the job queue. One that fails to be
// queued stays pending in the database and the sweep queues it again.
func (s *Service) queueDeliveries(ctx context.Context, ds []delivery) {
	for _, d := range ds {
		opts := &river.InsertOpts{Priority: s.orgVolume.priority(d.orgID, time.Now())}
		if err := s.cfg.Jobs.Enqueue(context.WithoutCancel(ctx), deliverArgs{EventID: d.eventID, WebhookID: d.webhookID, OrgID: d.orgID}, opts); err != nil {
			s.cfg.Logger.Error("queue webhook delivery", "event", d.eventID, "webhook", d.webhookID, "error", err)
		}
	}
}

// errGiveUp ends a delivery without retrying.
var errGiveUp = errors.New("delivery refused")

// deliver makes one attempt of a delivery. It returns nil when the delivery
// is done (acknowledged, or nothing left to do), errGiveUp when it must not
// be retried, and another error to retry.
func (s *Service) deliver(ctx context.Context, eventID, webhookID string) error {
	var state, target, secret, body string
	var deleted sql.NullInt64
	var attempts int
	var keyID sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT d.state, d.attempts, w.url, w.secret, w.secret_key_id, w.deleted_at, e.body
		FROM reviewapi_deliveries d
		JOIN reviewapi_webhooks w ON w.id = d.webhook_id
		JOIN reviewapi_events e ON e.id = d.event_id
		WHERE d.event_id = $1 AND d.webhook_id = $2`, eventID, webhookID).Scan(&state, &attempts, &target, &secret, &keyID, &deleted, &body)
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && state != "pending":
		return nil
	case err != nil:
		return err
	case deleted.Valid:
		_, err := s.db.ExecContext(ctx, `UPDATE reviewapi_deliveries SET state = 'cancelled', updated_at = $1
			WHERE event_id = $2 AND webhook_id = $3 AND state = 'pending'`, sqldb.Millis(s.now()), eventID, webhookID)
		return err
	}
	if secret, err = s.openSecret(keyID, webhookID, secret); err != nil {
		return err // retried: the key may be given back
	}
	attempt := attempts + 1
	var status int
	var derr error
	if u, perr := url.Parse(target); perr != nil || (u.Scheme != "https" && !s.cfg.AllowPrivateWebhooks) {
		// Registered while the service allowed http; it no longer does.
		derr = &DeliveryError{Err: errors.New("the webhook URL is not https and private webhooks are not allowed")}
	} else {
		status, derr = Deliver(ctx, s.client, Delivery{URL: target, Secret: secret, MsgID: eventID, Timestamp: s.cfg.Now(), Body: []byte(body)})
		s.noteAttempt(ctx, webhookID, derr)
	}
	now := sqldb.Millis(s.now())
	newState, msg := "pending", ""
	switch {
	case derr == nil:
		newState = "delivered"
	case !retryable(derr), attempt > len(s.cfg.RetrySchedule):
		newState, msg = "failed", derr.Error()
	default:
		msg = derr.Error()
	}
	var delivered any
	if newState == "delivered" {
		delivered = now
	}
	if _, err := s.db.ExecContext(context.WithoutCancel(ctx), `UPDATE reviewapi_deliveries SET state = $1, attempts = attempts + 1,
		last_status = $2, last_error = $3, updated_at = $4, delivered_at = $5
		WHERE event_id = $6 AND webhook_id = $7 AND state = 'pending'`,
		newState, status, msg, now, delivered, eventID, webhookID); err != nil {
		return err
	}
	s.cfg.Logger.Info("webhook delivery", "event", eventID, "webhook", webhookID, "attempt", attempt, "status", status, "state", newState)
	s.cfg.Metrics.ObserveDelivery(ops.DeliveryOutcome(newState))
	switch newState {
	case "delivered":
		return nil
	case "failed":
		return fmt.Errorf("%w: %v", errGiveUp, derr)
	}
	return derr
}

// retryable reports whether a failed delivery attempt may be repeated.
func retryable(err error) bool {
	var de *DeliveryError
	if errors.As(err, &de) {
		return de.Retryable
	}
	return !errors.Is(err, ErrForbiddenAddress)
}

// DeliveryState is the state of one delivery, for operators and tests.
type DeliveryState struct {
	EventID, WebhookID, EventType, TaskID, State, LastError string
	Attempts, LastStatus                                    int
}

// Deliveries lists the deliveries of the organisation's events, oldest
// first.
func (s *Service) Deliveries(ctx context.Context, orgID string) ([]DeliveryState, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT d.event_id, d.webhook_id, e.type, e.task_id, d.state, d.last_error, d.attempts, d.last_status
		FROM reviewapi_deliveries d JOIN reviewapi_events e ON e.id = d.event_id
		WHERE e.org_id = $1 ORDER BY d.created_at, d.event_id, d.webhook_id`, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []DeliveryState
	for rows.Next() {
		var d DeliveryState
		if err := rows.Scan(&d.EventID, &d.WebhookID, &d.EventType, &d.TaskID, &d.State, &d.LastError, &d.Attempts, &d.LastStatus); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
