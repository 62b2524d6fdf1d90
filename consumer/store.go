package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// ErrLeaseLost is returned by [Store.SavePage] and [Store.EndRun] when the
// poller no longer holds the lease of the source and resource: another
// poller took it over, so this one must stop without writing.
var ErrLeaseLost = errors.New("consumer: lease lost")

// Store keeps the collected records, the checkpoints and the leases. The
// engine calls it from one goroutine per source and resource; every method
// must be safe for concurrent use. consumer/sqlstore implements it on SQLite
// and PostgreSQL.
type Store interface {
	// AcquireLease takes or renews the lease of (source, resource) for owner
	// until expires. It reports false, with no error, when another owner
	// holds an unexpired lease (expiry is compared with now) and that owner
	// is not l.TakeOver.
	AcquireLease(ctx context.Context, l Lease) (bool, error)
	// LeaseHolder returns the lease of (source, resource) as stored (Owner
	// and Expires set), and false when there is none.
	LeaseHolder(ctx context.Context, source string, r Resource) (Lease, bool, error)
	// ReleaseLease gives up owner's lease; releasing a lease not held is not
	// an error.
	ReleaseLease(ctx context.Context, source string, r Resource, owner string) error

	// Checkpoint returns the checkpoint of (source, resource); the zero
	// Checkpoint when none was ever saved.
	Checkpoint(ctx context.Context, source string, r Resource) (Checkpoint, error)
	// SavePage writes a page in one transaction: it upserts the records,
	// quarantines the rejected ones and replaces the checkpoint, after
	// checking (in the same transaction) that p.Lease still holds the lease
	// and extending it to p.Lease.Expires; otherwise it writes nothing and
	// returns ErrLeaseLost.
	//
	// An upsert matches an existing record by (source, resource, ID). It
	// replaces the stored record only when the new one's Time is not older
	// (a late page never overwrites a newer version), but it always sets the
	// record's run to p.Checkpoint.Run and clears its Missing mark. A stored
	// record of an ID that arrives valid leaves quarantine; a stored record
	// whose ID arrives quarantined keeps its last valid version, and its run
	// is set too (it still exists at the provider, so no sweep marks it
	// Missing).
	SavePage(ctx context.Context, p PageWrite) error
	// EndRun ends a run in one transaction. It first writes e.Page, when it
	// holds records or quarantined ones, as SavePage would (the last page of
	// a walk commits with the end of its run). When e.Sweep is set (the run was
	// a complete full re-pull), every record of (source, resource) whose run
	// is older than e.Checkpoint.Run, is not already Missing and, when
	// SweepFrom or SweepUntil are set, whose Time lies in [SweepFrom,
	// SweepUntil), is marked Missing at e.At. Then the checkpoint is replaced
	// by e.Checkpoint. Like SavePage it checks and extends e.Lease first, or
	// returns ErrLeaseLost.
	EndRun(ctx context.Context, e RunEnd) error
	// RecordFailure stores err as the last error of (source, resource) at
	// time at, leaving the rest of the checkpoint as it is. It needs no lease.
	RecordFailure(ctx context.Context, source string, r Resource, at time.Time, err string) error

	// Status returns a line per (source, resource) that has a checkpoint,
	// ordered by source, then resource in the order of [Resources].
	Status(ctx context.Context) ([]Status, error)
	// Export calls fn for each stored record of (source, resource) in the
	// provider's order (Time, then ID byte by byte; usage by its bucket key),
	// with the JSON exactly as received. Missing records are left out unless
	// includeMissing. It stops at fn's first error and returns it.
	Export(ctx context.Context, source string, r Resource, includeMissing bool, fn func(json.RawMessage) error) error
	// Quarantined calls fn for each quarantined record of source (every
	// source when ""), oldest first.
	Quarantined(ctx context.Context, source string, fn func(Quarantine) error) error
}

// Lease is the right of one poller (Owner) to sync one source and resource
// until Expires. Several pollers sharing a store never sync the same source
// and resource at once.
type Lease struct {
	Source   string
	Resource Resource
	Owner    string
	// Now is the caller's clock, against which another owner's expiry is
	// compared.
	Now     time.Time
	Expires time.Time
	// TakeOver, when set, names an owner whose lease may be taken even
	// before it expires: a poller that found that owner's process dead.
	TakeOver string
}

// Checkpoint is the sync state of one source and resource.
type Checkpoint struct {
	// Run numbers the walk in progress, or the last one; it grows by one per
	// walk started.
	Run int64
	// Cursor continues the walk in progress: the cursor of the next page to
	// fetch. "" when no walk is in progress or the next page is the first.
	Cursor string
	// InProgress reports that a walk was started and not ended: a restarted
	// poller continues it from Cursor with the same filters.
	InProgress bool
	// Full reports that the walk in progress is a full re-pull (no filter),
	// whose end sweeps records that did not appear as Missing.
	Full bool
	// Since is the filter of the walk in progress (updatedSince or
	// occurredAfter; for usage the window start). A cursor is only valid with
	// the filters it was issued for.
	Since time.Time
	// Until is the end of the usage window of the walk in progress.
	Until time.Time
	// Started is when the walk in progress, or the last one, started, by
	// the poller's clock. The next incremental walk reaches back to it
	// minus the lookback, so records a provider committed late while a
	// long or interrupted walk was past their position are read again.
	Started time.Time
	// Watermark is the largest record Time committed (updatedAt,
	// occurredAt; for usage the end of the last complete window).
	Watermark time.Time
	// NeedsFull reports that the provider lacks a sync feature, so every
	// run is a full re-pull; NeedsFullReason says which, NeedsFullSince
	// since when. The poller tries an incremental walk again after
	// Config.FullEvery, in case the provider gained the feature.
	NeedsFull       bool
	NeedsFullReason string
	NeedsFullSince  time.Time
	// LastFull is when a full walk last ended complete (a sweep).
	LastFull time.Time
	// Pages and Records count what the walk in progress has committed.
	Pages, Records int64
	// LastSuccess is when a walk last ended complete; LastError and
	// LastErrorAt the last failure, cleared by a success.
	LastSuccess time.Time
	LastError   string
	LastErrorAt time.Time
}

// NotOfferedPrefix starts the LastError the poller records for a resource
// the provider does not offer (it answered 404 or 501 for it, as
// provider.ErrNotFound or provider.ErrUnsupported).
const NotOfferedPrefix = "not offered by the provider: "

// NotOffered reports whether the last attempt at the resource found that
// the provider does not offer it: a state of the provider, not a failed
// sync. A later success or another failure replaces it.
func (c Checkpoint) NotOffered() bool {
	return c.LastError != "" && strings.HasPrefix(c.LastError, NotOfferedPrefix)
}

// Record is one record as received, with what the store indexes.
type Record struct {
	// ID identifies the record within its source and resource. For usage
	// buckets it is the bucket key: granularity, startAt and dimensions.
	ID string
	// Time is the record's sort time: updatedAt (startedAt or createdAt when
	// absent) for conversations and assistants, occurredAt for events,
	// startAt for usage buckets. Millisecond precision, UTC.
	Time time.Time
	// StartedAt is a conversation's startedAt (zero otherwise).
	StartedAt time.Time
	// Deleted reports a conversation tombstone (deletedAt present).
	Deleted bool
	// Category is an event's category ("" otherwise).
	Category string
	// Bucket holds a usage bucket's key fields (nil otherwise).
	Bucket *BucketKey
	// Refs holds a conversation's user.id and assistant.id as read from
	// JSON, when the engine read them while it checked the record; nil
	// otherwise, where a store that needs them reads them from JSON.
	Refs *Refs
	// JSON is the record exactly as received.
	JSON json.RawMessage
}

// Refs is what a conversation's JSON holds at user.id and assistant.id:
// the string there, or "" when the member is absent or not a string.
type Refs struct {
	UserID, AssistantID string
}

// BucketKey is what identifies a usage bucket.
type BucketKey struct {
	Granularity string
	Start       time.Time
	End         time.Time
	// Grouped lists the dimensions the bucket was grouped by, in the order
	// of spec.Dimensions; the values of the others are "".
	Grouped     []string
	Model       string
	AssistantID string
	UserID      string
	Department  string
}

// Quarantine is a record that failed its schema: kept with the reason, not
// lost and not served.
type Quarantine struct {
	Source   string
	Resource Resource
	// ID is the record's id when it has a string one, else a digest of
	// its JSON prefixed "sha256:".
	ID     string
	Reason string
	At     time.Time
	JSON   json.RawMessage
}

// PageWrite is one page to commit with the checkpoint that follows it.
type PageWrite struct {
	Lease      Lease
	Records    []Record
	Quarantine []Quarantine
	// Checkpoint replaces the stored one (Source and Resource come from
	// Lease).
	Checkpoint Checkpoint
}

// RunEnd ends a walk.
type RunEnd struct {
	Lease Lease
	// Page is the walk's last page, committed with the end of the run
	// (Page.Lease and Page.Checkpoint are not used).
	Page PageWrite
	// At is when the run ended; the Missing mark of swept records.
	At time.Time
	// Sweep marks records not seen in this run Missing (see Store.EndRun).
	Sweep                 bool
	SweepFrom, SweepUntil time.Time
	Checkpoint            Checkpoint
}

// Status is one line of [Store.Status].
type Status struct {
	Source      string
	Resource    Resource
	Records     int64 // stored records, Missing ones excluded
	Missing     int64 // records marked Missing by a full re-pull
	Quarantined int64
	Checkpoint  Checkpoint
}
