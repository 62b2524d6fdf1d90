package memsource

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

var (
	_ provider.DataSource = (*Source)(nil)
	_ provider.Writer     = (*Source)(nil)
)

// Option configures a [Source].
type Option func(*Source)

// WithNow sets the clock that stamps a record written without updatedAt (and
// a tombstone deleted at the zero time). The default is time.Now. A nil now
// keeps the default.
func WithNow(now func() time.Time) Option {
	return func(s *Source) {
		if now != nil {
			s.now = now
		}
	}
}

// Source is an in-memory [provider.DataSource] and [provider.Writer]. The
// zero value is not usable; call [New]. All methods are safe for concurrent
// use.
type Source struct {
	now func() time.Time

	mu      sync.RWMutex
	tenants map[string]*tenant
}

// tenant is the data of one tenant.
type tenant struct {
	conversations sorted[spec.Conversation]
	assistants    sorted[spec.Assistant]
	events        sorted[spec.Event]
	// usage is ordered by (At, ID); usageIDs holds the recorded ids.
	usage    []provider.UsageRecord
	usageIDs map[string]struct{}
}

// New returns an empty Source.
func New(opts ...Option) *Source {
	s := &Source{now: time.Now, tenants: map[string]*tenant{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// tenantLocked returns the data of name, or nil when it holds none. s.mu is
// held.
func (s *Source) tenantLocked(name string) *tenant {
	return s.tenants[name]
}

// writableLocked returns the data of name, creating it. s.mu is held for
// writing.
func (s *Source) writableLocked(name string) *tenant {
	t := s.tenants[name]
	if t == nil {
		t = &tenant{usageIDs: map[string]struct{}{}}
		s.tenants[name] = t
	}
	return t
}

// ListConversations implements [provider.DataSource].
func (s *Source) ListConversations(ctx context.Context, q provider.ConversationQuery) (provider.Page[spec.Conversation], error) {
	if err := ctx.Err(); err != nil {
		return provider.Page[spec.Conversation]{}, err
	}
	if err := checkLimit(q.Limit); err != nil {
		return provider.Page[spec.Conversation]{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.tenantLocked(q.Tenant)
	if t == nil {
		return provider.Page[spec.Conversation]{}, nil
	}
	l := &t.conversations
	start := l.start(q.After)
	if !q.UpdatedSince.IsZero() {
		start = max(start, l.firstAtOrAfter(q.UpdatedSince))
	}
	var keep func(*spec.Conversation) bool
	if !q.StartedAfter.IsZero() {
		keep = func(c *spec.Conversation) bool { return c.StartedAt.After(q.StartedAfter) }
	}
	return l.page(start, q.Limit, keep, cloneConversation), nil
}

// GetConversation implements [provider.DataSource].
func (s *Source) GetConversation(ctx context.Context, tenant, id string) (spec.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return spec.Conversation{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t := s.tenantLocked(tenant); t != nil {
		if c, ok := t.conversations.get(id); ok {
			return cloneConversation(c), nil
		}
	}
	return spec.Conversation{}, notFound("conversation", id)
}

// ListAssistants implements [provider.DataSource].
func (s *Source) ListAssistants(ctx context.Context, q provider.AssistantQuery) (provider.Page[spec.Assistant], error) {
	if err := ctx.Err(); err != nil {
		return provider.Page[spec.Assistant]{}, err
	}
	if err := checkLimit(q.Limit); err != nil {
		return provider.Page[spec.Assistant]{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.tenantLocked(q.Tenant)
	if t == nil {
		return provider.Page[spec.Assistant]{}, nil
	}
	l := &t.assistants
	start := l.start(q.After)
	if !q.UpdatedSince.IsZero() {
		start = max(start, l.firstAtOrAfter(q.UpdatedSince))
	}
	return l.page(start, q.Limit, nil, cloneAssistant), nil
}

// GetAssistant implements [provider.DataSource].
func (s *Source) GetAssistant(ctx context.Context, tenant, id string) (spec.Assistant, error) {
	if err := ctx.Err(); err != nil {
		return spec.Assistant{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t := s.tenantLocked(tenant); t != nil {
		if a, ok := t.assistants.get(id); ok {
			return cloneAssistant(a), nil
		}
	}
	return spec.Assistant{}, notFound("assistant", id)
}

// ListEvents implements [provider.DataSource].
func (s *Source) ListEvents(ctx context.Context, q provider.EventQuery) (provider.Page[spec.Event], error) {
	if err := ctx.Err(); err != nil {
		return provider.Page[spec.Event]{}, err
	}
	if err := checkLimit(q.Limit); err != nil {
		return provider.Page[spec.Event]{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.tenantLocked(q.Tenant)
	if t == nil {
		return provider.Page[spec.Event]{}, nil
	}
	l := &t.events
	start := l.start(q.After)
	if !q.OccurredAfter.IsZero() {
		start = max(start, l.firstAfter(q.OccurredAfter))
	}
	var keep func(*spec.Event) bool
	if q.Category != "" {
		keep = func(e *spec.Event) bool { return e.Category == q.Category }
	}
	return l.page(start, q.Limit, keep, cloneEvent), nil
}

// UpsertConversation implements [provider.Writer]. A conversation written
// with DeletedAt set is stored as a tombstone: its content fields are
// dropped as by [provider.TombstoneOf], its UpdatedAt kept.
func (s *Source) UpsertConversation(ctx context.Context, tenant string, c spec.Conversation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := provider.CheckIDLength(c.ID); err != nil {
		return err
	}
	if c.ID == "" {
		return provider.Invalid("id", "a conversation needs an id")
	}
	c = normConversation(cloneConversation(c))
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = spec.NewTime(s.now())
	}
	if c.Deleted() {
		ts := provider.TombstoneOf(c, c.DeletedAt.Time)
		ts.UpdatedAt = c.UpdatedAt
		c = ts
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writableLocked(tenant).conversations.put(provider.ConversationKey(&c), c)
	return nil
}

// DeleteConversation implements [provider.Writer]. A zero at is the
// source's current time. Deleting a tombstone again moves its deletedAt.
func (s *Source) DeleteConversation(ctx context.Context, tenant, id string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if at.IsZero() {
		at = s.now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tenantLocked(tenant)
	if t == nil {
		return notFound("conversation", id)
	}
	c, ok := t.conversations.get(id)
	if !ok {
		return notFound("conversation", id)
	}
	// The stored record is owned by the source, so the tombstone may share
	// its remaining pointers.
	ts := provider.TombstoneOf(c, at)
	t.conversations.put(provider.ConversationKey(&ts), ts)
	return nil
}

// UpsertAssistant implements [provider.Writer].
func (s *Source) UpsertAssistant(ctx context.Context, tenant string, a spec.Assistant) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := provider.CheckIDLength(a.ID); err != nil {
		return err
	}
	if a.ID == "" {
		return provider.Invalid("id", "an assistant needs an id")
	}
	a = normAssistant(cloneAssistant(a))
	if a.UpdatedAt.IsZero() {
		a.UpdatedAt = spec.NewTime(s.now())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writableLocked(tenant).assistants.put(provider.AssistantKey(&a), a)
	return nil
}

// AppendEvent implements [provider.Writer]. An event needs an id and an
// occurredAt; an id already recorded for the tenant is
// [provider.ErrConflict].
func (s *Source) AppendEvent(ctx context.Context, tenant string, e spec.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := provider.CheckIDLength(e.ID); err != nil {
		return err
	}
	if e.ID == "" {
		return provider.Invalid("id", "an event needs an id")
	}
	if e.OccurredAt.IsZero() {
		return provider.Invalid("occurredAt", "event %q needs an occurredAt", e.ID)
	}
	e = normEvent(cloneEvent(e))
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.writableLocked(tenant)
	if _, ok := t.events.keys[e.ID]; ok {
		return fmt.Errorf("memsource: event %q already recorded: %w", e.ID, provider.ErrConflict)
	}
	t.events.put(provider.EventKey(&e), e)
	return nil
}

// RecordUsage implements [provider.Writer]. A record needs an id and a time;
// an id already recorded for the tenant is [provider.ErrConflict].
func (s *Source) RecordUsage(ctx context.Context, tenant string, u provider.UsageRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := provider.CheckIDLength(u.ID); err != nil {
		return err
	}
	if u.ID == "" {
		return provider.Invalid("id", "a usage record needs an id")
	}
	if u.At.IsZero() {
		return provider.Invalid("at", "usage record %q needs a time", u.ID)
	}
	u.At = u.At.UTC().Truncate(time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.writableLocked(tenant)
	if _, ok := t.usageIDs[u.ID]; ok {
		return fmt.Errorf("memsource: usage record %q already recorded: %w", u.ID, provider.ErrConflict)
	}
	t.usageIDs[u.ID] = struct{}{}
	// Records mostly arrive in time order: the search then ends at the tail.
	i := sort.Search(len(t.usage), func(i int) bool { return usageLess(&u, &t.usage[i]) })
	t.usage = slices.Insert(t.usage, i, u)
	return nil
}

func usageLess(a, b *provider.UsageRecord) bool {
	if !a.At.Equal(b.At) {
		return a.At.Before(b.At)
	}
	return a.ID < b.ID
}

func checkLimit(n int) error {
	if n < 1 || n > 1000 {
		return provider.Invalid("limit", "limit %d is outside 1..1000", n)
	}
	return nil
}

func notFound(kind, id string) error {
	return fmt.Errorf("memsource: %s %q: %w", kind, id, provider.ErrNotFound)
}

// sorted holds records in [provider.Key] order, with an index from id to
// key. Positions are found by binary search; an insertion shifts the tail.
type sorted[T any] struct {
	items []entry[T]
	keys  map[string]provider.Key
}

type entry[T any] struct {
	key provider.Key
	rec T
}

func compareKeys(a, b provider.Key) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// search returns the position of the first item whose key is >= k, and
// whether it equals k.
func (l *sorted[T]) search(k provider.Key) (int, bool) {
	return slices.BinarySearchFunc(l.items, k, func(e entry[T], k provider.Key) int { return compareKeys(e.key, k) })
}

func (l *sorted[T]) get(id string) (T, bool) {
	k, ok := l.keys[id]
	if !ok {
		var zero T
		return zero, false
	}
	i, _ := l.search(k)
	return l.items[i].rec, true
}

// put stores rec under k, replacing the record of the same id.
func (l *sorted[T]) put(k provider.Key, rec T) {
	if l.keys == nil {
		l.keys = map[string]provider.Key{}
	}
	if old, ok := l.keys[k.ID]; ok {
		i, _ := l.search(old)
		if compareKeys(old, k) == 0 {
			l.items[i].rec = rec
			return
		}
		l.items = slices.Delete(l.items, i, i+1)
	}
	l.keys[k.ID] = k
	i, _ := l.search(k)
	l.items = slices.Insert(l.items, i, entry[T]{key: k, rec: rec})
}

// start returns the position of the first item strictly after after (0 when
// after is nil).
func (l *sorted[T]) start(after *provider.Key) int {
	if after == nil {
		return 0
	}
	i, found := l.search(*after)
	if found {
		i++
	}
	return i
}

// firstAtOrAfter returns the position of the first item whose time is >= t.
func (l *sorted[T]) firstAtOrAfter(t time.Time) int {
	return sort.Search(len(l.items), func(i int) bool { return !l.items[i].key.Time.Before(t) })
}

// firstAfter returns the position of the first item whose time is > t.
func (l *sorted[T]) firstAfter(t time.Time) int {
	return sort.Search(len(l.items), func(i int) bool { return l.items[i].key.Time.After(t) })
}

// page returns copies of at most limit items from position start on that
// keep accepts (all when keep is nil), and whether more follow.
func (l *sorted[T]) page(start, limit int, keep func(*T) bool, clone func(T) T) provider.Page[T] {
	p := provider.Page[T]{Items: []T{}}
	for i := start; i < len(l.items); i++ {
		rec := &l.items[i].rec
		if keep != nil && !keep(rec) {
			continue
		}
		if len(p.Items) == limit {
			p.HasMore = true
			break
		}
		p.Items = append(p.Items, clone(*rec))
	}
	return p
}
