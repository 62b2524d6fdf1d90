package reviewapi

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/aiusage/kit/internal/infra/riverjobs"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/spec"
)

// deliverArgs is the job of one webhook delivery: one attempt per run,
// retried by River on the service's schedule.
type deliverArgs struct {
	EventID   string `json:"eventId"`
	WebhookID string `json:"webhookId"`
	// OrgID is the webhook's organisation, for its concurrency limit.
	OrgID string `json:"orgId,omitempty"`
}

func (deliverArgs) Kind() string { return "aiusage_webhook_delivery" }

// uniqueWhileQueued makes a job unique by its arguments while one is queued
// or running, and only then: once a job has completed or been cancelled, the
// sweep may queue the same work again.
var uniqueWhileQueued = river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled,
}}

func (deliverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueDeliveries, UniqueOpts: uniqueWhileQueued}
}

type deliverWorker struct {
	river.WorkerDefaults[deliverArgs]
	s *Service
	// failing holds, by job id, the jobs whose last attempt failed at a
	// failing webhook, for NextRetry.
	failing sync.Map
}

// Work makes one attempt, when the organisation has a delivery slot free in
// this process; otherwise it snoozes the job, which costs no attempt.
func (w *deliverWorker) Work(ctx context.Context, job *river.Job[deliverArgs]) error {
	s := w.s
	release, ok := s.orgDeliveries.Acquire(ctx, job.Args.OrgID, orgSlotWait)
	if !ok {
		return river.JobSnooze(riverjobs.SnoozeFor(job.Metadata, orgSnoozeBase, orgSnoozeMax))
	}
	defer release()
	_, failures, err := s.webhookHealth(ctx, job.Args.WebhookID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // the webhook is gone, and its deliveries with it
	} else if err != nil {
		return err
	}
	failing := failures >= s.cfg.FailingAfter
	if failing {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.FailingDeliveryTimeout)
		defer cancel()
	}
	err = s.deliver(ctx, job.Args.EventID, job.Args.WebhookID)
	if errors.Is(err, errGiveUp) {
		return river.JobCancel(err)
	}
	if err != nil && (failing || failures+1 >= s.cfg.FailingAfter) {
		w.failing.Store(job.ID, true)
	}
	return err
}

// NextRetry follows the service's retry schedule; for a failing webhook it
// waits four times as long, at most the schedule's longest wait.
func (w *deliverWorker) NextRetry(job *river.Job[deliverArgs]) time.Time {
	sched := w.s.cfg.RetrySchedule
	i := min(max(job.Attempt-1, 0), len(sched)-1)
	d := sched[i]
	if _, failing := w.failing.LoadAndDelete(job.ID); failing {
		d = max(d, min(4*d, slices.Max(sched)))
	}
	return time.Now().Add(d)
}

func (w *deliverWorker) Timeout(*river.Job[deliverArgs]) time.Duration {
	return w.s.cfg.DeliveryTimeout + 5*time.Second
}

// evaluateArgs is the job that evaluates a task whose evaluation did not run
// when it was submitted.
type evaluateArgs struct {
	TaskID string `json:"taskId"`
}

func (evaluateArgs) Kind() string { return "aiusage_review_evaluate" }

func (evaluateArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueEvaluations, MaxAttempts: 1000, UniqueOpts: uniqueWhileQueued}
}

type evaluateWorker struct {
	river.WorkerDefaults[evaluateArgs]
	s *Service
}

// NextRetry retries an evaluation after 1, 2, 4 ... seconds, at most 5
// minutes apart: a policy outage should not leave tasks pending for hours.
func (w *evaluateWorker) NextRetry(job *river.Job[evaluateArgs]) time.Time {
	return time.Now().Add(min(time.Second<<min(max(job.Attempt-1, 0), 9), 5*time.Minute))
}

// maxEvaluationBackoff bounds the wait a semantic matcher's endpoint may
// ask for (Retry-After) before a task is evaluated again: the longest wait
// of the evaluation's own retry schedule.
const maxEvaluationBackoff = 5 * time.Minute

func (w *evaluateWorker) Work(ctx context.Context, job *river.Job[evaluateArgs]) error {
	_, err := w.s.evaluate(ctx, job.Args.TaskID)
	if errors.Is(err, ErrTaskNotFound) {
		return river.JobCancel(err)
	}
	// An endpoint that asked to be left alone for a while (429 or 503 with
	// Retry-After) is left alone that long, at least: the job waits, and
	// the wait costs no attempt.
	if wait := policy.BackoffOf(err); wait > 0 {
		return river.JobSnooze(min(wait, maxEvaluationBackoff))
	}
	return err
}

// sweepArgs is the periodic job that applies review timeouts and queues
// again what was recorded but not queued (a process stopped between its
// commit and the queue).
type sweepArgs struct{}

func (sweepArgs) Kind() string { return "aiusage_review_sweep" }

type sweepWorker struct {
	river.WorkerDefaults[sweepArgs]
	s *Service
}

func (w *sweepWorker) Work(ctx context.Context, _ *river.Job[sweepArgs]) error {
	_, err := w.s.Sweep(ctx)
	return err
}

// Sweep applies review timeouts (SweepTimeouts), queues again the
// evaluations and deliveries left behind for longer than a minute, and
// deletes the rate-limit buckets that have left every organisation's sliding
// window (those older than two hours, a margin for lagging clocks).
func (s *Service) Sweep(ctx context.Context) (int, error) {
	n, err := s.SweepTimeouts(ctx)
	if err != nil {
		return n, err
	}
	stale := sqldb.Millis(s.now().Add(-time.Minute))
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM reviewapi_tasks WHERE status IN ($1, $2) AND updated_at < $3`,
		spec.StatusPending, spec.StatusProcessing, stale)
	if err != nil {
		return n, err
	}
	var tasks []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return n, err
		}
		tasks = append(tasks, id)
	}
	rows.Close()
	for _, id := range tasks {
		// A task stuck in processing (its evaluator stopped) goes back to
		// pending first.
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			t, err := s.loadTask(ctx, tx, "", id, s.forUpdate())
			if err != nil || t.Status != spec.StatusProcessing {
				return err
			}
			t.Status, t.UpdatedAt = spec.StatusPending, spec.NewTime(s.now())
			_, err = saveTask(ctx, tx, t, spec.StatusProcessing)
			return err
		})
		if err != nil {
			return n, err
		}
		s.queueEvaluation(ctx, id, 0)
	}
	// Deliveries never attempted: their job was not queued (a process
	// stopped between the commit and the queue). Those attempted have a job
	// waiting for its retry.
	rows, err = s.db.QueryContext(ctx, `SELECT d.event_id, d.webhook_id, e.org_id FROM reviewapi_deliveries d
		JOIN reviewapi_events e ON e.id = d.event_id
		WHERE d.state = 'pending' AND d.attempts = 0 AND d.updated_at < $1 ORDER BY d.updated_at LIMIT 500`, stale)
	if err != nil {
		return n, err
	}
	var ds []delivery
	for rows.Next() {
		var d delivery
		if err := rows.Scan(&d.eventID, &d.webhookID, &d.orgID); err != nil {
			rows.Close()
			return n, err
		}
		ds = append(ds, d)
	}
	rows.Close()
	s.queueDeliveries(ctx, ds)
	_, err = s.db.ExecContext(ctx, `DELETE FROM reviewapi_rate_buckets WHERE bucket_start < $1`, sqldb.Millis(s.now().Add(-rateKeep)))
	return n, err
}
