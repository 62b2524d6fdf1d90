package provider

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/spec"
)

// DataSource is what a vendor implements over its own store to serve the AI
// usage data interface. It is a stable contract: small, read-only, every
// method context-first.
//
// # Tenants
//
// Every call names the tenant (the customer) whose data it reads; the
// [Handler] takes it from the authenticated credential. A DataSource must
// never return another tenant's records: a record of another tenant is
// [ErrNotFound], exactly as one that does not exist.
//
// # Order and keyset pagination
//
// Lists are ordered by a key that never ties: conversations and assistants by
// (updatedAt, id), events by (occurredAt, id), ascending; ids compare byte by
// byte, timestamps at millisecond precision (the precision served). A query's
// After, when set, is the key of the last record of the previous page: the
// list starts strictly after it. A page holds at most Limit records (Limit is
// 1..1000, already checked) and reports whether more records follow. Because
// the key never ties, no record is skipped or repeated when many records share
// one timestamp, and a page costs the same at any depth. Implementations must
// not use OFFSET.
//
// # Page size in bytes
//
// The list queries carry MaxBytes, the byte budget of the page's records:
// the [Handler] sets it to its page cap ([WithMaxPageBytes]), so that a
// request for many large records never costs more than the cap. A source
// honours it by ending the page at the first record that would take the
// records' JSON, joined by commas, past MaxBytes bytes (a page always holds
// its first record, however large), with HasMore set; it should size the
// records before it loads them (from the stored lengths), so that it never
// holds much more than MaxBytes of records for one call. Honouring it is
// optional: the Handler trims any page to its cap by the same rule, but a
// source that ignores MaxBytes loads up to Limit whole records per request.
// Zero means no budget.
//
// # Filters
//
// UpdatedSince is inclusive (updatedAt >= UpdatedSince); StartedAfter and
// OccurredAfter are exclusive (> the value). A zero time means no filter. A
// conversation or assistant without updatedAt sorts and filters by its
// startedAt / createdAt instead.
//
// # Errors
//
// Methods return [ErrNotFound] for an unknown id, and [ErrUnsupported] (for
// every method of a resource) when the store does not hold that resource: the
// endpoint then answers 501. [ErrInvalid] (wrapped in an [*Error] naming the
// field) is a bad argument; [ErrUnavailable] a temporary failure (503). Any
// other error is a 500 whose details never reach the client.
//
// # Concurrency
//
// The Handler calls a DataSource from many goroutines at once: every method
// must be safe for concurrent use.
type DataSource interface {
	// ListConversations returns a page of the tenant's conversations in
	// (updatedAt, id) order. Deleted conversations are listed as tombstones:
	// DeletedAt set, content fields dropped.
	ListConversations(ctx context.Context, q ConversationQuery) (Page[spec.Conversation], error)
	// GetConversation returns one conversation, or a tombstone, by id.
	GetConversation(ctx context.Context, tenant, id string) (spec.Conversation, error)
	// ListAssistants returns a page of the tenant's assistants in
	// (updatedAt, id) order.
	ListAssistants(ctx context.Context, q AssistantQuery) (Page[spec.Assistant], error)
	// GetAssistant returns one assistant by id.
	GetAssistant(ctx context.Context, tenant, id string) (spec.Assistant, error)
	// ListEvents returns a page of the tenant's events in (occurredAt, id)
	// order.
	ListEvents(ctx context.Context, q EventQuery) (Page[spec.Event], error)
	// Usage returns a page of usage buckets of q.Granularity within
	// [q.Start, q.End), grouped by q.GroupBy, in [UsageKey] order. Empty
	// buckets are left out. Each bucket's Dimensions hold exactly the grouped
	// keys (an unknown value is the empty string) and ActiveUsers is a distinct
	// count within the bucket and group.
	Usage(ctx context.Context, q UsageQuery) (Page[spec.UsageBucket], error)
}

// MaxIDLength is the longest record id, in bytes, that the Handler accepts
// in a path (GET /conversations/{id}) and that the kit's Writers store.
const MaxIDLength = 1024

// CheckIDLength returns an [ErrInvalid] naming "id" when id is longer than
// [MaxIDLength].
func CheckIDLength(id string) error {
	if len(id) > MaxIDLength {
		return Invalid("id", "is %d bytes long; ids are at most %d bytes", len(id), MaxIDLength)
	}
	return nil
}

// Key is the position of a record in a list: its updatedAt (occurredAt for
// events) and id. Keys order by Time, then ID byte by byte.
type Key struct {
	Time time.Time
	ID   string
}

// Less reports whether k sorts before o.
func (k Key) Less(o Key) bool {
	if !k.Time.Equal(o.Time) {
		return k.Time.Before(o.Time)
	}
	return k.ID < o.ID
}

// ConversationKey returns the list position of c: (updatedAt, id), with
// startedAt standing in for a missing updatedAt.
func ConversationKey(c *spec.Conversation) Key {
	t := c.UpdatedAt.Time
	if c.UpdatedAt.IsZero() {
		t = c.StartedAt.Time
	}
	return Key{Time: t.UTC().Truncate(time.Millisecond), ID: c.ID}
}

// AssistantKey returns the list position of a: (updatedAt, id), with
// createdAt standing in for a missing updatedAt.
func AssistantKey(a *spec.Assistant) Key {
	t := a.UpdatedAt.Time
	if a.UpdatedAt.IsZero() {
		t = a.CreatedAt.Time
	}
	return Key{Time: t.UTC().Truncate(time.Millisecond), ID: a.ID}
}

// EventKey returns the list position of e: (occurredAt, id).
func EventKey(e *spec.Event) Key {
	return Key{Time: e.OccurredAt.UTC().Truncate(time.Millisecond), ID: e.ID}
}

// Page is one page of a list.
type Page[T any] struct {
	// Items are at most the query's Limit records, in list order.
	Items []T
	// HasMore reports that records follow the last item.
	HasMore bool
}

// ConversationQuery selects a page of conversations.
type ConversationQuery struct {
	Tenant string
	// After is the key of the last record of the previous page; nil starts at
	// the beginning.
	After *Key
	// UpdatedSince keeps records with updatedAt >= UpdatedSince (inclusive).
	UpdatedSince time.Time
	// StartedAfter keeps records with startedAt > StartedAfter (exclusive).
	StartedAfter time.Time
	// Limit is the most records to return, 1..1000.
	Limit int
	// MaxBytes, when positive, is the byte budget of the page's records
	// (see "Page size in bytes" at [DataSource]); zero means none.
	MaxBytes int
}

// AssistantQuery selects a page of assistants.
type AssistantQuery struct {
	Tenant string
	After  *Key
	// UpdatedSince keeps records with updatedAt >= UpdatedSince (inclusive).
	UpdatedSince time.Time
	Limit        int
	// MaxBytes, when positive, is the byte budget of the page's records
	// (see "Page size in bytes" at [DataSource]); zero means none.
	MaxBytes int
}

// EventQuery selects a page of events.
type EventQuery struct {
	Tenant string
	After  *Key
	// OccurredAfter keeps events with occurredAt > OccurredAfter (exclusive).
	OccurredAfter time.Time
	// Category, when not empty, keeps events of that category only.
	Category string
	Limit    int
	// MaxBytes, when positive, is the byte budget of the page's records
	// (see "Page size in bytes" at [DataSource]); zero means none.
	MaxBytes int
}

// UsageQuery selects a page of usage buckets.
type UsageQuery struct {
	Tenant string
	// Start and End bound the buckets: Start <= startAt < End. Both lie on
	// boundaries of Granularity (UTC hours or days).
	Start, End time.Time
	// Granularity is spec.GranularityHour or spec.GranularityDay.
	Granularity string
	// GroupBy holds the grouping dimensions (values of spec.Dimensions), in
	// the canonical order of spec.Dimensions, without repeats.
	GroupBy []string
	// After is the key of the last bucket of the previous page.
	After *UsageKey
	Limit int
}

// Check validates q as a DataSource receives it: the granularity, the
// groupBy dimensions (known, not repeated) and the limit (1..MaxLimit).
// The Handler has checked all of them already; a DataSource called
// directly checks again with Check. It returns the bucket width and, by
// index of spec.Dimensions, which dimensions are grouped.
func (q *UsageQuery) Check() (width time.Duration, grouped [4]bool, err error) {
	switch q.Granularity {
	case spec.GranularityHour:
		width = time.Hour
	case spec.GranularityDay:
		width = 24 * time.Hour
	default:
		return 0, grouped, Invalid("granularity", "must be %q or %q, not %q", spec.GranularityHour, spec.GranularityDay, q.Granularity)
	}
	for _, d := range q.GroupBy {
		i := slices.Index(spec.Dimensions, d)
		if i < 0 {
			return 0, grouped, Invalid("groupBy", "unknown dimension %q: want any of %s", d, strings.Join(spec.Dimensions, ", "))
		}
		if grouped[i] {
			return 0, grouped, Invalid("groupBy", "dimension %q given twice", d)
		}
		grouped[i] = true
	}
	if q.Limit < 1 || q.Limit > MaxLimit {
		return 0, grouped, Invalid("limit", "must be between 1 and %d, not %d", MaxLimit, q.Limit)
	}
	return width, grouped, nil
}

// UsageKey is the position of a usage bucket: its start, then the grouped
// dimension values in the order of spec.Dimensions (model, assistantId,
// userId, department), compared byte by byte; ungrouped dimensions are "".
type UsageKey struct {
	Start       time.Time
	Model       string
	AssistantID string
	UserID      string
	Department  string
}

// BucketKey returns the list position of b.
func BucketKey(b *spec.UsageBucket) UsageKey {
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	d := b.Dimensions
	return UsageKey{Start: b.StartAt.UTC(), Model: s(d.Model), AssistantID: s(d.AssistantID), UserID: s(d.UserID), Department: s(d.Department)}
}

// Less reports whether k sorts before o.
func (k UsageKey) Less(o UsageKey) bool {
	if !k.Start.Equal(o.Start) {
		return k.Start.Before(o.Start)
	}
	for _, p := range [][2]string{{k.Model, o.Model}, {k.AssistantID, o.AssistantID}, {k.UserID, o.UserID}, {k.Department, o.Department}} {
		if p[0] != p[1] {
			return p[0] < p[1]
		}
	}
	return false
}

// RawSource is an optional capability of a [DataSource] that keeps each
// record's canonical JSON: the [Handler] then writes a page by concatenating
// the stored bytes instead of encoding structs, which is what lets a provider
// serve pages at close to the speed of static bytes. Each method returns the
// same records, in the same order, as its counterpart in DataSource.
type RawSource interface {
	ListConversationsRaw(ctx context.Context, q ConversationQuery) (Page[RawRecord], error)
	ListAssistantsRaw(ctx context.Context, q AssistantQuery) (Page[RawRecord], error)
	ListEventsRaw(ctx context.Context, q EventQuery) (Page[RawRecord], error)
}

// RawGetter is an optional capability of a [DataSource] that reads single
// records as stored JSON, so that GET /conversations/{id} answers exactly the
// bytes a list shows for the record, members the spec types do not know
// included. Each method returns the record its counterpart in DataSource
// returns, and the same errors.
type RawGetter interface {
	GetConversationRaw(ctx context.Context, tenant, id string) (json.RawMessage, error)
	GetAssistantRaw(ctx context.Context, tenant, id string) (json.RawMessage, error)
}

// RawRecord is one record as stored JSON, with its list position.
type RawRecord struct {
	Key Key
	// JSON is the record exactly as served: a JSON object valid against the
	// resource's schema, timestamps in UTC with milliseconds. It is
	// read-only: a source may share it between requests (a page cache), and
	// may lay a page's records out in one buffer as the list serves them,
	// each record followed by a comma and the next, with each slice's
	// capacity reaching into the next record; the [Handler] then writes the
	// page's records without copying them. Never append to it.
	JSON json.RawMessage
}

// Writer is the optional write capability of the kit's own data sources
// (memsource, sqlsource): a vendor calls it as things happen. Every method is
// safe for concurrent use. Timestamps are stored at millisecond precision.
type Writer interface {
	// UpsertConversation creates or replaces a conversation. A zero
	// UpdatedAt is set to the source's current time.
	UpsertConversation(ctx context.Context, tenant string, c spec.Conversation) error
	// DeleteConversation turns a conversation into a tombstone: DeletedAt and
	// UpdatedAt set to at, content fields (messages, systemPrompt, tools,
	// attachments, parameters, metadata) dropped. Unknown id: ErrNotFound.
	DeleteConversation(ctx context.Context, tenant, id string, at time.Time) error
	// UpsertAssistant creates or replaces an assistant. A zero UpdatedAt is
	// set to the source's current time.
	UpsertAssistant(ctx context.Context, tenant string, a spec.Assistant) error
	// AppendEvent records an event. An event whose id exists is ErrConflict.
	AppendEvent(ctx context.Context, tenant string, e spec.Event) error
	// RecordUsage records the usage of one AI request, the raw material of
	// usage buckets.
	RecordUsage(ctx context.Context, tenant string, u UsageRecord) error
}

// UsageRecord is the usage of one AI request.
type UsageRecord struct {
	// ID identifies the request; recording an existing id is ErrConflict.
	ID             string
	At             time.Time
	ConversationID string
	UserID         string
	Department     string
	Model          string
	AssistantID    string
	InputTokens    int64
	OutputTokens   int64
	Cost           float64
}

// RoundCost rounds a summed cost to 12 significant digits: enough for any
// currency, and free of the noise that adding floats leaves in the last
// digits (0.25535399999999997), which would otherwise differ between stores
// and query plans.
func RoundCost(x float64) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64)
	if err != nil {
		return x
	}
	return v
}

// TombstoneOf returns c as a tombstone deleted at at: content dropped,
// DeletedAt set to at and UpdatedAt bumped: to at, or to just after c's
// UpdatedAt when at is not later, so that an incremental reader (updatedSince)
// always sees the deletion.
func TombstoneOf(c spec.Conversation, at time.Time) spec.Conversation {
	updated := spec.NewTime(at)
	if !c.UpdatedAt.IsZero() && !updated.After(c.UpdatedAt.Time) {
		updated = spec.NewTime(c.UpdatedAt.Add(time.Millisecond))
	}
	return spec.Conversation{
		ID:             c.ID,
		ConversationID: c.ConversationID,
		StartedAt:      c.StartedAt,
		UpdatedAt:      updated,
		DeletedAt:      spec.NewTime(at),
		User:           c.User,
		Assistant:      c.Assistant,
		Model:          c.Model,
		ModelProvider:  c.ModelProvider,
		Usage:          c.Usage,
		Status:         c.Status,
	}
}
