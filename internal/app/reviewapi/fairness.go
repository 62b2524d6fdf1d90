package reviewapi

import (
	"context"
	"math"
	"sync"
	"time"
)

// The job queues of the service's own work, beside River's default queue
// (the sweep and other components' schedules).
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

// orgVolume ranks the organisations by how many deliveries this process
// queued for them lately, for the River priority of the next one: an
// organisation that queues a burst (twenty webhooks times many events) has
// its later deliveries queued at a lower priority, so that the deliveries of
// the quiet organisations queued after them are fetched first instead of
// waiting while the burst is turned away by its limit. A job's priority
// never keeps it from running when nothing of higher priority is due.
//
// The volume decays by half every orgVolumeHalfLife of the wall clock; it is
// an estimate of this process's, so several processes rank each their own
// share of a burst.
type orgVolume struct {
	limit int // Config.OrgDeliveryLimit
	mu    sync.Mutex
	m     map[string]*volume
}

type volume struct {
	n  float64
	at time.Time
}

const orgVolumeHalfLife = 10 * time.Second

// priority counts one more delivery of org at now and returns its River
// priority: 1 while org queued fewer than 2 times its limit lately, 2 below
// 8 times, 3 below 32 times, 4 beyond.
func (v *orgVolume) priority(org string, now time.Time) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[string]*volume{}
	}
	if len(v.m) > 10000 { // forget the organisations quiet for a while
		for k, e := range v.m {
			if decayed(e, now) < 1 {
				delete(v.m, k)
			}
		}
	}
	e := v.m[org]
	if e == nil {
		e = &volume{at: now}
		v.m[org] = e
	}
	e.n, e.at = decayed(e, now), now
	limit := float64(max(v.limit, 1))
	p := 1
	for _, f := range []float64{2, 8, 32} {
		if e.n >= f*limit {
			p++
		}
	}
	e.n++
	return p
}

func decayed(e *volume, now time.Time) float64 {
	dt := now.Sub(e.at)
	if dt <= 0 {
		return e.n
	}
	return e.n * math.Exp2(-float64(dt)/float64(orgVolumeHalfLife))
}
