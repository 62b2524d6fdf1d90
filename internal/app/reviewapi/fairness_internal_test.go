package reviewapi

import (
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
)

// TestDeliverWorkerNextRetry: a retry waits by the schedule; one whose last
// attempt failed at a failing webhook waits four times as long, at most the
// schedule's longest wait.
func TestDeliverWorkerNextRetry(t *testing.T) {
	t.Parallel()
	sched := []time.Duration{time.Minute, 10 * time.Minute, time.Hour}
	w := &deliverWorker{s: &Service{cfg: &Config{RetrySchedule: sched}}}
	for _, c := range []struct {
		name    string
		attempt int
		failing bool
		want    time.Duration
	}{
		{"first retry", 1, false, time.Minute},
		{"second retry", 2, false, 10 * time.Minute},
		{"past the schedule", 9, false, time.Hour},
		{"first retry, failing", 1, true, 4 * time.Minute},
		{"second retry, failing", 2, true, 40 * time.Minute},
		{"last retry, failing", 3, true, time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			job := &river.Job[deliverArgs]{JobRow: &rivertype.JobRow{ID: int64(c.attempt), Attempt: c.attempt}}
			if c.failing {
				w.failing.Store(job.ID, true)
			}
			before := time.Now()
			got := w.NextRetry(job)
			require.False(t, got.Before(before.Add(c.want)), "%s before %s", got.Sub(before), c.want)
			require.False(t, got.After(time.Now().Add(c.want)), "%s after %s", got.Sub(before), c.want)
			_, left := w.failing.Load(job.ID)
			require.False(t, left, "the mark is used once")
		})
	}
}

// TestOrgVolumePriority: an organisation that queues a burst gets lower
// priorities as it goes; another organisation keeps the highest; a quiet
// minute restores it.
func TestOrgVolumePriority(t *testing.T) {
	t.Parallel()
	v := orgVolume{limit: 4}
	now := time.Date(2027, 3, 2, 9, 0, 0, 0, time.UTC)
	count := map[int]int{}
	for range 400 {
		count[v.priority("burst", now)]++
	}
	require.Equal(t, map[int]int{1: 8, 2: 24, 3: 96, 4: 272}, count)
	require.Equal(t, 1, v.priority("quiet", now))
	require.Equal(t, 4, v.priority("burst", now.Add(10*time.Second)), "halved to about 200: still beyond 128")
	require.Equal(t, 1, v.priority("burst", now.Add(2*time.Minute)), "about 0.1 left")
}
