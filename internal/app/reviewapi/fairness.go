package reviewapi

import (
	"context"
	"time"
)

// The job queues of the service's own work, beside River's default queue
// (the sweep, other components' schedules, and jobs an older version queued
// there).
const (
	// QueueDeliveries holds the webhook deliveries (Config.DeliveryWorkers).
	QueueDeliveries = "deliveries"
	// QueueEvaluations holds the evaluations that did not run when their
	// task was submitted (Config.EvaluationWorkers).
	QueueEvaluations = "evaluations"
)

// A delivery whose organisation is at its limit (Config.OrgDeliveryLimit)
// waits up to orgSlotWait for a slot (see riverjobs.KeyLimiter), then is
// snoozed for orgSnoozeBase, doubled for each earlier snooze, at most
// orgSnoozeMax, with jitter.
const (
	orgSlotWait   = 200 * time.Millisecond
	orgSnoozeBase = 250 * time.Millisecond
	orgSnoozeMax  = 10 * time.Second
)

// webhookHealth returns the webhook's organisation and its count of
// consecutive failed attempts; sql.ErrNoRows when there is no such webhook.
func (s *Service) webhookHealth(ctx context.Context, webhookID string) (orgID string, failures int, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT org_id, consecutive_failures FROM reviewapi_webhooks WHERE id = $1`,
		webhookID).Scan(&orgID, &failures)
	return orgID, failures, err
}

// noteAttempt counts an attempt's outcome against its webhook: a failure
// adds one to its consecutive failures, a success sets them back to 0. A
// write that fails is logged: the count only tunes the timeouts.
func (s *Service) noteAttempt(ctx context.Context, webhookID string, derr error) {
	q := `UPDATE reviewapi_webhooks SET consecutive_failures = 0 WHERE id = $1 AND consecutive_failures <> 0`
	if derr != nil {
		q = `UPDATE reviewapi_webhooks SET consecutive_failures = consecutive_failures + 1 WHERE id = $1`
	}
	if _, err := s.db.ExecContext(context.WithoutCancel(ctx), q, webhookID); err != nil {
		s.cfg.Logger.Error("count webhook failures", "webhook", webhookID, "error", err)
	}
}
