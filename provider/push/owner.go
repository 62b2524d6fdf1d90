package push

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// The pusher names its process in the job queue (River's client id, which
// River records in every job it starts) as "push:host:pid:tag.random", the
// tag hashing the boot and the pid namespace. A process that finds a
// delivery running under the name of a process of the same host and pid
// namespace that no longer runs (one killed with SIGKILL) takes it over at
// once; any other running delivery is left to River, which gives it up after
// RescueStuckJobsAfter. This follows the consumer's leases (consumer/owner.go).

// processID returns this process's name in the queue, or "" (River's own
// default) when it would exceed the 100 characters River allows.
func processID() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	if tag := pidSpace(); tag != "" {
		suffix = tag + "." + suffix
	}
	id := fmt.Sprintf("push:%s:%d:%s", host, os.Getpid(), suffix)
	if len(id) > 100 {
		return ""
	}
	return id
}

// pidSpace identifies the space in which this process's pid means
// something: the boot and the pid namespace (Linux), hashed; "" where they
// cannot be read.
func pidSpace() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(boot)) + "|" + ns))
	return hex.EncodeToString(sum[:6])
}

// processDead reports whether id names, in the form of processID, a
// process of this host and pid namespace that no longer runs. Any other id
// is never judged dead.
func processDead(id string) bool {
	rest, ok := strings.CutPrefix(id, "push:")
	if !ok {
		return false
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return false
	}
	rest, suffix := rest[:i], rest[i+1:]
	tag, _, ok := strings.Cut(suffix, ".")
	if mine := pidSpace(); !ok || mine == "" || tag != mine {
		return false
	}
	j := strings.LastIndexByte(rest, ':')
	if j < 0 {
		return false
	}
	host, pidText := rest[:j], rest[j+1:]
	me, err := os.Hostname()
	if err != nil || host != me {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	err = proc.Signal(syscall.Signal(0))
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}

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
