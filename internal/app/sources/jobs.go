package sources

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/aiusage/kit/internal/infra/riverjobs"
	"github.com/aiusage/kit/spec"
)

// uniqueWhileQueued makes a job unique by its arguments while one is queued
// or running, and only then.
var uniqueWhileQueued = river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled,
}}

// SyncArgs is the job that syncs one source once, for the due time Due
// (Unix milliseconds) of its schedule.
type SyncArgs struct {
	SourceID string `json:"sourceId"`
	Due      int64  `json:"due"`
}

// Kind implements river.JobArgs.
func (SyncArgs) Kind() string { return "aiusage_source_sync" }

// InsertOpts makes one job per source and due time; a failed sync is not
// retried by the queue but at the source's next due time. Two jobs of one
// source may run at once (the second due while the first still runs): the
// consumer's leases let only one walk each resource, and the other skips
// it. A job left running by a process that died does not hold the source
// back: the next due time queues another, which takes the dead process's
// leases over.
func (SyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: SyncQueue, MaxAttempts: 1, UniqueOpts: uniqueWhileQueued}
}

// SyncQueue is the job queue of the syncs, worked by Config.SyncWorkers
// workers ([Service.Jobs]), so that syncs and webhook deliveries do not wait
// for each other.
const SyncQueue = "syncs"

// A sync whose organisation is at its limit (Config.OrgSyncLimit) is snoozed
// for syncSnoozeBase, doubled for each earlier snooze, at most
// syncSnoozeMax, with jitter.
const (
	syncSnoozeBase = time.Second
	syncSnoozeMax  = 30 * time.Second
)

// scheduleArgs is the periodic job that queues the syncs of the sources due.
type scheduleArgs struct{}

func (scheduleArgs) Kind() string { return "aiusage_source_schedule" }

// InsertOpts makes a schedule job that is not unique: only the leader
// queues it, once an interval, and two running at once are harmless (the
// sync jobs are unique per source and due time, and only one scheduler moves
// a due time). Unique while running, a schedule job left "running" by a
// process killed mid-run would keep every other process from scheduling
// until River rescued it, minutes later.
func (scheduleArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1}
}

// SyncTimeout bounds one sync job.
const SyncTimeout = time.Hour

type syncWorker struct {
	river.WorkerDefaults[SyncArgs]
	s *Service
}

// Work syncs the source when its organisation has a sync slot free in this
// process; otherwise it snoozes the job, which costs no attempt.
func (w *syncWorker) Work(ctx context.Context, job *river.Job[SyncArgs]) error {
	src, err := w.s.get(ctx, job.Args.SourceID)
	if errors.Is(err, spec.ErrNotFound) { // removed meanwhile
		return river.JobCancel(err)
	} else if err != nil {
		return err
	}
	release, ok := w.s.orgSyncs.Acquire(ctx, src.OrganisationID, 0)
	if !ok {
		return river.JobSnooze(riverjobs.SnoozeFor(job.Metadata, syncSnoozeBase, syncSnoozeMax))
	}
	defer release()
	_, err = w.s.SyncNow(ctx, job.Args.SourceID)
	if errors.Is(err, spec.ErrNotFound) || errors.Is(err, ErrPaused) { // removed or paused meanwhile
		return river.JobCancel(err)
	}
	return err
}

func (w *syncWorker) Timeout(*river.Job[SyncArgs]) time.Duration { return SyncTimeout }

type scheduleWorker struct {
	river.WorkerDefaults[scheduleArgs]
	s *Service
}

func (w *scheduleWorker) Work(ctx context.Context, _ *river.Job[scheduleArgs]) error {
	_, err := w.s.Schedule(ctx)
	return err
}

// Jobs registers the sources' background work on the service's job queue:
// the sync and schedule workers, the queue of the syncs (SyncQueue), the
// conformance checks' worker and queue (ConformanceQueue), and
// the scheduler's periodic job, which every ScheduleInterval queues a sync
// of each source due.
func (s *Service) Jobs(j *riverjobs.Jobs) {
	river.AddWorker(j.Workers, &syncWorker{s: s})
	river.AddWorker(j.Workers, &scheduleWorker{s: s})
	j.AddQueue(SyncQueue, s.cfg.SyncWorkers)
	river.AddWorker(j.Workers, &conformanceWorker{s: s})
	j.AddQueue(ConformanceQueue, 1)
	j.AddPeriodic(river.NewPeriodicJob(river.PeriodicInterval(s.cfg.ScheduleInterval),
		func() (river.JobArgs, *river.InsertOpts) { return scheduleArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true}))
}

// Schedule queues a sync of every source whose next sync is due, moves its
// due time one interval ahead, and returns how many it queued.
func (s *Service) Schedule(ctx context.Context) (int, error) {
	if s.cfg.Jobs == nil {
		return 0, errors.New("sources: schedule: no job queue (Config.Jobs)")
	}
	now := s.now()
	due, err := s.due(ctx, now)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, src := range due {
		if err := s.cfg.Jobs.Enqueue(ctx, SyncArgs{SourceID: src.ID, Due: src.NextSyncAt.UnixMilli()}, nil); err != nil {
			return n, fmt.Errorf("sources: schedule %s: %w", src.ID, err)
		}
		// Only the first of concurrent schedulers moves the due time.
		if _, err := s.db.ExecContext(ctx, `UPDATE sources SET next_due_ms = $3 WHERE id = $1 AND next_due_ms = $2`,
			src.ID, src.NextSyncAt.UnixMilli(), now.Add(src.Every).UnixMilli()); err != nil {
			return n, fmt.Errorf("sources: schedule %s: %w", src.ID, err)
		}
		n++
	}
	return n, nil
}
