package demodata

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// DefaultEnd is the default Config.End: the generated data spans the 60 days
// before it.
var DefaultEnd = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// DefaultTenant is the default Config.Tenant.
const DefaultTenant = "acme"

// Span is how far back before Config.End the activity reaches: every
// conversation, event, usage record and assistant updatedAt lies in
// [End-Span, End). Assistants may have been created earlier.
const Span = 60 * 24 * time.Hour

// CostTolerance bounds how far the sum of a conversation's usage records'
// Cost may be from the conversation's usage.cost. Costs are generated as
// whole micro-dollars and divided by 1e6, so the sums agree exactly in
// micro-dollars (math.Round(cost*1e6)) and differ in float64 only by rounding
// error, far below this bound.
const CostTolerance = 1e-9

// Config selects a dataset. The same Config gives the same records, byte for
// byte, on every run and platform.
type Config struct {
	// Seed selects the dataset. Zero is a valid seed.
	Seed uint64
	// Conversations is the number of conversations, >= 0. About 3% of them
	// are deleted (see Dataset.Deleted). No default: zero generates none.
	Conversations int
	// Tenant names the organisation: users' emails are at the domain
	// "<tenant>.example" (the tenant lowercased, anything but letters and
	// digits turned into hyphens). Default DefaultTenant.
	Tenant string
	// End is the end of the generated activity, which spans Span before it.
	// It is truncated to milliseconds, in UTC. Default DefaultEnd, a fixed
	// date, so that output is reproducible.
	End time.Time
	// Users is the number of people in the organisation, >= 0. Default
	// Conversations/20, at least 10 and at most 20,000.
	Users int
	// Assistants is the number of custom assistants, >= 0. Default Users/8,
	// at least 12 and at most 300.
	Assistants int
	// Events is the number of audit events drawn from the event catalogue,
	// >= 0; events that record something else the dataset holds (assistants
	// created or archived, conversations deleted, bulk user provisioning)
	// come on top. Default Conversations/4, at least 64.
	Events int
}

func (c Config) withDefaults() Config {
	if c.Tenant == "" {
		c.Tenant = DefaultTenant
	}
	if c.End.IsZero() {
		c.End = DefaultEnd
	}
	c.End = c.End.UTC().Truncate(time.Millisecond)
	if c.Users == 0 {
		c.Users = min(max(c.Conversations/20, 10), 20000)
	}
	if c.Assistants == 0 {
		c.Assistants = min(max(c.Users/8, 12), 300)
	}
	if c.Events == 0 {
		c.Events = max(c.Conversations/4, 64)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Conversations < 0:
		return fmt.Errorf("demodata: Conversations must be >= 0, got %d", c.Conversations)
	case c.Users < 0:
		return fmt.Errorf("demodata: Users must be >= 0, got %d", c.Users)
	case c.Assistants < 0:
		return fmt.Errorf("demodata: Assistants must be >= 0, got %d", c.Assistants)
	case c.Events < 0:
		return fmt.Errorf("demodata: Events must be >= 0, got %d", c.Events)
	case c.Conversations > 1<<28:
		return fmt.Errorf("demodata: Conversations must be at most %d, got %d", 1<<28, c.Conversations)
	}
	if y := c.End.UTC().Year(); !c.End.IsZero() && (y < 1971 || y > 9999) {
		return fmt.Errorf("demodata: End must lie in the years 1971..9999, got %v", c.End)
	}
	if slug(c.Tenant) == "" && c.Tenant != "" {
		return fmt.Errorf("demodata: Tenant %q has no letter or digit", c.Tenant)
	}
	return nil
}

// User is a person of the generated organisation.
type User struct {
	ID         string
	Name       string
	Email      string
	Department string
	Groups     []string
}

// Ref returns u as it appears on conversations and as an assistant's owner.
func (u User) Ref() *spec.User {
	return &spec.User{ID: u.ID, Email: u.Email, Department: u.Department, Groups: u.Groups}
}

// Deletion is a conversation deleted at At. Loading turns it into a
// tombstone (provider.Writer.DeleteConversation), whose updatedAt becomes
// At.
type Deletion struct {
	ID string
	At time.Time
}

// Dataset is a generated organisation's AI use. Records share read-only
// values (a user's groups, the user and assistant references of
// conversations): copy before modifying one.
type Dataset struct {
	// Conversations in generation order, as they were before any deletion.
	Conversations []spec.Conversation
	// Deleted lists the deleted conversations, each once.
	Deleted []Deletion
	// Assistants in generation order.
	Assistants []spec.Assistant
	// Events in generation order (not sorted by occurredAt).
	Events []spec.Event
	// Usage holds one record per assistant reply of every conversation,
	// deleted ones included: the requests happened.
	Usage []provider.UsageRecord
	// Users of the organisation.
	Users []User
	// Departments of the organisation.
	Departments []string
}

// Generate builds the dataset of cfg in memory. It is deterministic: the
// same cfg gives the same records, byte for byte. 100,000 conversations take
// a few hundred megabytes; Stream and Fill generate any size in little
// memory.
func Generate(cfg Config) (*Dataset, error) {
	g, err := newGenerator(cfg)
	if err != nil {
		return nil, err
	}
	d := &Dataset{
		Users:         g.users,
		Departments:   g.depts,
		Conversations: make([]spec.Conversation, 0, len(g.convs)),
		Assistants:    make([]spec.Assistant, 0, len(g.asst)),
		Deleted:       make([]Deletion, 0, len(g.deletions)),
		Usage:         make([]provider.UsageRecord, 0, g.replies),
	}
	err = g.run(func(rec any) error {
		switch v := rec.(type) {
		case spec.Conversation:
			d.Conversations = append(d.Conversations, v)
		case Deletion:
			d.Deleted = append(d.Deleted, v)
		case spec.Assistant:
			d.Assistants = append(d.Assistants, v)
		case spec.Event:
			d.Events = append(d.Events, v)
		case provider.UsageRecord:
			d.Usage = append(d.Usage, v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Stream generates the dataset of cfg and passes every record to fn, in the
// order Dataset.Load writes them: every spec.Conversation, then every
// Deletion, spec.Assistant, spec.Event and provider.UsageRecord (all passed
// by value). The records are exactly those of Generate(cfg), but only a few
// bytes per conversation stay in memory. An error from fn stops the stream
// and is returned.
func Stream(cfg Config, fn func(rec any) error) error {
	g, err := newGenerator(cfg)
	if err != nil {
		return err
	}
	return g.run(fn)
}

// Fill streams the dataset of cfg into w for tenant, in the order and with
// the calls of Dataset.Load, without holding the dataset in memory. It stops
// at the first error, or when ctx ends.
func Fill(ctx context.Context, cfg Config, tenant string, w provider.Writer) error {
	return Stream(cfg, func(rec any) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return write(ctx, tenant, w, rec)
	})
}

// Load writes d into w for tenant: every conversation (UpsertConversation),
// then the deletions as tombstones (DeleteConversation), the assistants
// (UpsertAssistant), the events (AppendEvent) and the usage records
// (RecordUsage). It stops at the first error, or when ctx ends.
func (d *Dataset) Load(ctx context.Context, tenant string, w provider.Writer) error {
	for _, c := range d.Conversations {
		if err := loadOne(ctx, tenant, w, c); err != nil {
			return err
		}
	}
	for _, x := range d.Deleted {
		if err := loadOne(ctx, tenant, w, x); err != nil {
			return err
		}
	}
	for _, a := range d.Assistants {
		if err := loadOne(ctx, tenant, w, a); err != nil {
			return err
		}
	}
	for _, e := range d.Events {
		if err := loadOne(ctx, tenant, w, e); err != nil {
			return err
		}
	}
	for _, u := range d.Usage {
		if err := loadOne(ctx, tenant, w, u); err != nil {
			return err
		}
	}
	return nil
}

func loadOne(ctx context.Context, tenant string, w provider.Writer, rec any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return write(ctx, tenant, w, rec)
}

func write(ctx context.Context, tenant string, w provider.Writer, rec any) error {
	var err error
	var what, id string
	switch v := rec.(type) {
	case spec.Conversation:
		what, id, err = "conversation", v.ID, w.UpsertConversation(ctx, tenant, v)
	case Deletion:
		what, id, err = "deletion of conversation", v.ID, w.DeleteConversation(ctx, tenant, v.ID, v.At)
	case spec.Assistant:
		what, id, err = "assistant", v.ID, w.UpsertAssistant(ctx, tenant, v)
	case spec.Event:
		what, id, err = "event", v.ID, w.AppendEvent(ctx, tenant, v)
	case provider.UsageRecord:
		what, id, err = "usage record", v.ID, w.RecordUsage(ctx, tenant, v)
	default:
		return errors.New("demodata: unknown record type")
	}
	if err != nil {
		return fmt.Errorf("demodata: %s %s: %w", what, id, err)
	}
	return nil
}

// FinalConversations returns the conversations as a Writer holds them after
// Load: each deleted one replaced by its tombstone (provider.TombstoneOf), in
// the order of d.Conversations.
func (d *Dataset) FinalConversations() []spec.Conversation {
	at := make(map[string]time.Time, len(d.Deleted))
	for _, x := range d.Deleted {
		at[x.ID] = x.At
	}
	out := make([]spec.Conversation, len(d.Conversations))
	for i, c := range d.Conversations {
		if t, ok := at[c.ID]; ok {
			c = provider.TombstoneOf(c, t)
		}
		out[i] = c
	}
	return out
}
