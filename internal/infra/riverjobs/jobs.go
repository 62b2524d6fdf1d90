package riverjobs

import (
	"context"
	"fmt"
	"maps"

	"github.com/riverqueue/river"

	"github.com/aiusage/kit/internal/infra/sqldb"
)

// Enqueuer queues a job on a job queue, on the queue its options (or its
// args' InsertOpts) name. A feature of the service is given one at
// construction and queues its jobs through it; the job's worker must be
// registered on the queue's [Jobs].
type Enqueuer interface {
	Enqueue(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) error
}

// Jobs collects what the features of one service work on its one River
// client: their workers, the queues of their own and their periodic jobs.
// Each feature adds its share (a Jobs method of its service); the service's
// composition root then opens the client over all of it ([Jobs.Config]).
type Jobs struct {
	// Workers holds every feature's workers (river.AddWorker).
	Workers *river.Workers
	queues  map[string]river.QueueConfig
	// periodic are the features' periodic jobs, run by the leader of the
	// processes sharing a database.
	periodic []*river.PeriodicJob
}

// NewJobs returns a Jobs holding the default queue, worked by workers
// workers at once.
func NewJobs(workers int) *Jobs {
	return &Jobs{Workers: river.NewWorkers(), queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}}}
}

// AddQueue adds the queue name, worked by workers workers at once in this
// process. A name added twice panics: two features would share a queue
// neither sized.
func (j *Jobs) AddQueue(name string, workers int) {
	if _, ok := j.queues[name]; ok {
		panic(fmt.Sprintf("riverjobs: queue %q added twice", name))
	}
	j.queues[name] = river.QueueConfig{MaxWorkers: workers}
}

// AddPeriodic adds periodic jobs.
func (j *Jobs) AddPeriodic(p ...*river.PeriodicJob) { j.periodic = append(j.periodic, p...) }

// Config fills the workers, queues and periodic jobs of c from j and
// returns c.
func (j *Jobs) Config(c *river.Config) *river.Config {
	c.Workers = j.Workers
	c.Queues = maps.Clone(j.queues)
	c.PeriodicJobs = append(c.PeriodicJobs, j.periodic...)
	return c
}

// Depth counts the jobs of River's table on db by state, for the
// queue-depth gauge of package ops.
func Depth(ctx context.Context, db *sqldb.DB) (map[string]float64, error) {
	rows, err := db.QueryContext(ctx, `SELECT state, COUNT(*) FROM river_job GROUP BY state`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]float64{}
	for rows.Next() {
		var state string
		var n float64
		if err := rows.Scan(&state, &n); err != nil {
			return nil, err
		}
		out[state] = n
	}
	return out, rows.Err()
}
