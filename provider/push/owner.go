package push

import (
	"context"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/aiusage/kit/internal/infra/liveness"
)

// The pusher names its process in the job queue (River's client id, which
// River records in every job it starts) as "push:host:pid:tag.random", the
// tag hashing the boot and the pid namespace. A process that finds a
// delivery running under the name of a process of the same host and pid
// namespace that no longer runs (one killed with SIGKILL) takes it over at
// once; any other running delivery is left to River, which gives it up after
// RescueStuckJobsAfter. The consumer's leases do the same (consumer/owner.go):
// both name their processes with package liveness.

// processPrefix starts the pusher's process names.
const processPrefix = "push:"

// processID returns this process's name in the queue, or "" (River's own
// default) when it would exceed the 100 characters River allows.
func processID() string {
	id := liveness.Name(processPrefix)
	if len(id) > 100 {
		return ""
	}
	return id
}

// processDead reports whether id names, in the form of processID, a
// process of this host and pid namespace that no longer runs. Any other id
// is never judged dead.
func processDead(id string) bool { return liveness.Gone(processPrefix, id) }

// takeOver makes the deliveries of this pusher's queue that a dead process
// of this host left running available again, so that they are sent at once
// rather than after RescueStuckJobsAfter. It returns how many it took over.
// The update is guarded by the state, so a job River itself rescued
// meanwhile is not touched twice.
func (p *Pusher) takeOver(ctx context.Context) (int, error) {
	n := 0
	params := river.NewJobListParams().Queues(p.queue).States(rivertype.JobStateRunning).First(10_000)
	for {
		res, err := p.jobs.JobList(ctx, params)
		if err != nil {
			return n, fmt.Errorf("list the running deliveries: %w", err)
		}
		for _, j := range res.Jobs {
			if len(j.AttemptedBy) == 0 || !processDead(j.AttemptedBy[len(j.AttemptedBy)-1]) {
				continue
			}
			r, err := p.db.ExecContext(ctx, `UPDATE river_job SET state = 'available' WHERE id = $1 AND state = 'running'`, j.ID)
			if err != nil {
				return n, fmt.Errorf("take over delivery job %d: %w", j.ID, err)
			}
			if k, _ := r.RowsAffected(); k > 0 {
				n++
			}
		}
		if len(res.Jobs) == 0 || res.LastCursor == nil {
			return n, nil
		}
		params = params.After(res.LastCursor)
	}
}
