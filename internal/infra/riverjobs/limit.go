package riverjobs

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"
	"time"
)

// KeyLimiter bounds how many jobs of one key (an organisation) run at once in
// this process. River's open-source queues have no such limit: a worker asks
// Acquire first and, when the key is at its limit, snoozes the job
// (river.JobSnooze, which does not use up an attempt) for [SnoozeFor], so
// the queue's other workers stay free for the other keys.
//
// The limit is per process: n processes sharing a PostgreSQL database run up
// to n times the limit of one key. It is safe for concurrent use.
type KeyLimiter struct {
	limit int
	mu    sync.Mutex
	keys  map[string]*keySlots
}

type keySlots struct {
	held, waiting int
	freed         chan struct{} // closed and replaced at every release
}

// NewKeyLimiter returns a limiter of limit jobs per key; limit 0 or less
// means no limit.
func NewKeyLimiter(limit int) *KeyLimiter {
	return &KeyLimiter{limit: limit, keys: map[string]*keySlots{}}
}

// Acquire takes one of key's slots. When key holds all its slots, it waits
// up to wait for one to be released, but only when fewer than limit other
// jobs of key are waiting already (so one key never holds more than twice
// its limit in workers): a key whose jobs are quick loses no time to
// snoozes, and one whose jobs are slow costs the queue little. It returns ok
// false, having taken nothing, when no slot was free in time or ctx ended;
// otherwise release gives the slot back (call it once).
func (l *KeyLimiter) Acquire(ctx context.Context, key string, wait time.Duration) (release func(), ok bool) {
	if l.limit <= 0 {
		return func() {}, true
	}
	var timer *time.Timer
	l.mu.Lock()
	k := l.keys[key]
	if k == nil {
		k = &keySlots{freed: make(chan struct{})}
		l.keys[key] = k
	}
	for k.held >= l.limit {
		if timer == nil {
			if wait <= 0 || k.waiting >= l.limit {
				l.mu.Unlock()
				return nil, false
			}
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		freed := k.freed
		k.waiting++
		l.mu.Unlock()
		var done bool
		select {
		case <-freed:
		case <-timer.C:
			done = true
		case <-ctx.Done():
			done = true
		}
		l.mu.Lock()
		k.waiting--
		if done && k.held >= l.limit {
			l.dropLocked(key, k)
			l.mu.Unlock()
			return nil, false
		}
	}
	k.held++
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			k.held--
			close(k.freed)
			k.freed = make(chan struct{})
			l.dropLocked(key, k)
		})
	}, true
}

// dropLocked forgets a key nobody holds or waits for; l.mu is held.
func (l *KeyLimiter) dropLocked(key string, k *keySlots) {
	if k.held == 0 && k.waiting == 0 {
		delete(l.keys, key)
	}
}

// Held returns how many slots key holds, for tests and metrics.
func (l *KeyLimiter) Held(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k := l.keys[key]; k != nil {
		return k.held
	}
	return 0
}

// SnoozeFor returns how long to snooze a job turned away by a [KeyLimiter]:
// base doubled for each time the job was snoozed before (River counts them
// in the job's metadata under "snoozes"), at most maxWait, drawn at random
// between half of it and all of it. A key with a long backlog thus costs the
// queue few fetches per second, while a job that waited little is tried
// again soon.
func SnoozeFor(metadata []byte, base, maxWait time.Duration) time.Duration {
	var m struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(metadata, &m) // no metadata: never snoozed
	d := maxWait
	if m.Snoozes < 30 {
		if b := base << max(m.Snoozes, 0); b > 0 && b < d {
			d = b
		}
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
