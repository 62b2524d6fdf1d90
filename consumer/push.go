package consumer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aiusage/kit/spec"
)

// ErrBusy is returned by [SavePushed] when a poller holds the lease of the
// source and resource: the pushed records are not written, and the sender
// should try again shortly.
var ErrBusy = errors.New("consumer: a sync of the source and resource is in progress")

// PushedRecords are records a provider pushed (the webhook transport), to
// be written beside what a poller collects.
type PushedRecords struct {
	// Source is the consumer source name the records belong to.
	Source   string
	Resource Resource
	// Records are the records as received, each validated by [SavePushed]
	// as a polled record is: a record that fails is quarantined, not lost.
	Records []json.RawMessage
	// Now is the receiver's clock, for the lease and the quarantine.
	Now time.Time
}

// PushedResult counts what [SavePushed] wrote.
type PushedResult struct {
	Saved, Quarantined int
}

// pushLeaseTTL bounds how long a push holds the lease of its source and
// resource; the write takes one transaction.
const pushLeaseTTL = 30 * time.Second

// SavePushed validates p.Records and writes them to store in one
// transaction, exactly as a poller's page would be written: upserted by id
// (a record older than the stored version does not replace it), invalid ones
// quarantined with their reason. Pushed usage buckets must be hourly and
// grouped by every dimension, what a poller collects by default, so the two
// transports never store overlapping buckets of one source; others are
// quarantined. The checkpoint is left as it is: a push does not move the
// poller's watermark, so a reconciliation walk still reads what the pushes
// missed.
//
// It takes the lease of (p.Source, p.Resource) for the write and gives it
// back after; when a poller holds it, it returns [ErrBusy] and writes
// nothing.
func SavePushed(ctx context.Context, store Store, p PushedRecords) (PushedResult, error) {
	if !slices.Contains(Resources, p.Resource) {
		return PushedResult{}, fmt.Errorf("consumer: SavePushed: unknown resource %q", p.Resource)
	}
	w := PageWrite{}
	for _, raw := range p.Records {
		pr := parseRecord(p.Resource, raw)
		if pr.reason == "" && p.Resource == Usage {
			pr.reason = checkPushedBucket(pr.rec.Bucket)
		}
		if pr.reason != "" {
			w.Quarantine = append(w.Quarantine, Quarantine{Source: p.Source, Resource: p.Resource, ID: pr.id,
				Reason: pr.reason, At: p.Now, JSON: raw})
			continue
		}
		w.Records = append(w.Records, pr.rec)
	}
	owner := pushOwner()
	w.Lease = Lease{Source: p.Source, Resource: p.Resource, Owner: owner, Now: p.Now, Expires: p.Now.Add(pushLeaseTTL)}
	ok, err := store.AcquireLease(ctx, w.Lease)
	if err != nil {
		return PushedResult{}, fmt.Errorf("consumer: acquire lease: %w", err)
	}
	if !ok {
		return PushedResult{}, ErrBusy
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = store.ReleaseLease(rctx, p.Source, p.Resource, owner)
	}()
	if w.Checkpoint, err = store.Checkpoint(ctx, p.Source, p.Resource); err != nil {
		return PushedResult{}, fmt.Errorf("consumer: read checkpoint: %w", err)
	}
	if err := store.SavePage(ctx, w); err != nil {
		return PushedResult{}, err
	}
	return PushedResult{Saved: len(w.Records), Quarantined: len(w.Quarantine)}, nil
}

// checkPushedBucket returns why a pushed usage bucket is not kept, or "".
func checkPushedBucket(b *BucketKey) string {
	switch {
	case b.Granularity != spec.GranularityHour:
		return fmt.Sprintf("/granularity: %q; pushed usage must be hourly", b.Granularity)
	case !b.Start.Truncate(time.Hour).Equal(b.Start):
		return fmt.Sprintf("/startAt: %s is not on a UTC hour boundary", b.Start.Format(millisLayout))
	case len(b.Grouped) != len(spec.Dimensions):
		return fmt.Sprintf("/dimensions: grouped by %v; pushed usage must be grouped by every dimension %v", b.Grouped, spec.Dimensions)
	}
	return ""
}

// pushOwner names the lease owner of one push: unique, and never a
// poller's "host:pid:..." owner, which a poller could take for dead.
func pushOwner() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "push-" + hex.EncodeToString(b)
}
