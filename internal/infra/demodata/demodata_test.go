package demodata_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// The shared dataset most tests read. Tests must not modify it.
var shared = sync.OnceValues(func() (*demodata.Dataset, error) {
	return demodata.Generate(demodata.Config{Seed: 7, Conversations: 3000})
})

func dataset(t *testing.T) *demodata.Dataset {
	t.Helper()
	d, err := shared()
	require.NoError(t, err)
	return d
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// records returns every record of d as JSON, in load order.
func records(t testing.TB, d *demodata.Dataset) [][]byte {
	t.Helper()
	var out [][]byte
	for _, c := range d.Conversations {
		out = append(out, marshal(t, c))
	}
	for _, x := range d.Deleted {
		out = append(out, marshal(t, x))
	}
	for _, a := range d.Assistants {
		out = append(out, marshal(t, a))
	}
	for _, e := range d.Events {
		out = append(out, marshal(t, e))
	}
	for _, u := range d.Usage {
		out = append(out, marshal(t, u))
	}
	return out
}

func TestGenerateIsDeterministic(t *testing.T) {
	t.Parallel()
	cfg := demodata.Config{Seed: 42, Conversations: 500}
	a, err := demodata.Generate(cfg)
	require.NoError(t, err)
	b, err := demodata.Generate(cfg)
	require.NoError(t, err)
	ra, rb := records(t, a), records(t, b)
	require.Equal(t, len(ra), len(rb))
	for i := range ra {
		require.Equal(t, string(ra[i]), string(rb[i]), "record %d", i)
	}
	require.Equal(t, marshal(t, a.Users), marshal(t, b.Users))
	require.Equal(t, a.Departments, b.Departments)

	// Stream yields the same records in the same order.
	var streamed [][]byte
	require.NoError(t, demodata.Stream(cfg, func(rec any) error {
		streamed = append(streamed, marshal(t, rec))
		return nil
	}))
	require.Equal(t, ra, streamed)

	// Another seed gives other data.
	cfg.Seed = 43
	c, err := demodata.Generate(cfg)
	require.NoError(t, err)
	require.NotEqual(t, marshal(t, a.Conversations), marshal(t, c.Conversations))
	require.NotEqual(t, marshal(t, a.Events), marshal(t, c.Events))
	require.NotEqual(t, marshal(t, a.Users), marshal(t, c.Users))
}

func TestStreamStopsOnError(t *testing.T) {
	t.Parallel()
	stop := errors.New("stop")
	n := 0
	err := demodata.Stream(demodata.Config{Seed: 1, Conversations: 50}, func(any) error {
		n++
		if n == 10 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 10, n)
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]demodata.Config{
		"Conversations": {Conversations: -1},
		"Users":         {Users: -1},
		"Assistants":    {Assistants: -2},
		"Events":        {Events: -3},
		"End":           {End: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"Tenant":        {Tenant: "---"},
	} {
		_, err := demodata.Generate(cfg)
		require.ErrorContains(t, err, name, name)
		require.ErrorContains(t, demodata.Stream(cfg, func(any) error { return nil }), name, name)
	}
}

func TestCounts(t *testing.T) {
	t.Parallel()
	d := dataset(t)
	require.Len(t, d.Conversations, 3000)
	require.Len(t, d.Users, 150, "default Users is Conversations/20")
	require.Len(t, d.Assistants, 18, "default Assistants is Users/8")
	require.GreaterOrEqual(t, len(d.Events), 750, "default Events is Conversations/4, plus record events")
	require.Equal(t, []string{"Engineering", "Sales", "Support", "Marketing", "Product", "Finance", "Legal", "HR", "Operations", "Security", "Data Science"}, d.Departments)

	// About 3% deleted.
	require.InDelta(t, 0.03, float64(len(d.Deleted))/3000, 0.015)

	// One usage record per assistant message.
	replies := 0
	for _, c := range d.Conversations {
		for _, m := range c.Messages {
			if m.Role == spec.RoleAssistant {
				replies++
			}
		}
		require.GreaterOrEqual(t, len(c.Messages), 2)
		require.LessOrEqual(t, len(c.Messages), 12)
	}
	require.Equal(t, replies, len(d.Usage))

	// Ids are unique within each kind.
	unique := func(kind string, ids []string) {
		seen := map[string]bool{}
		for _, id := range ids {
			require.NotEmpty(t, id, kind)
			require.False(t, seen[id], "%s id %s repeats", kind, id)
			seen[id] = true
		}
	}
	var ids []string
	for _, c := range d.Conversations {
		ids = append(ids, c.ID)
	}
	unique("conversation", ids)
	ids = ids[:0]
	for _, x := range d.Deleted {
		ids = append(ids, x.ID)
	}
	unique("deletion", ids)
	ids = ids[:0]
	for _, a := range d.Assistants {
		ids = append(ids, a.ID)
	}
	unique("assistant", ids)
	ids = ids[:0]
	for _, e := range d.Events {
		ids = append(ids, e.ID)
	}
	unique("event", ids)
	ids = ids[:0]
	for _, u := range d.Usage {
		ids = append(ids, u.ID)
	}
	unique("usage", ids)
	ids = ids[:0]
	emails := []string{}
	for _, u := range d.Users {
		ids = append(ids, u.ID)
		emails = append(emails, u.Email)
		require.True(t, strings.HasSuffix(u.Email, "@acme.example"), u.Email)
		require.Contains(t, d.Departments, u.Department)
		require.NotEmpty(t, u.Groups)
	}
	unique("user", ids)
	unique("email", emails)
}

func TestSmallAndEmptyConfigs(t *testing.T) {
	t.Parallel()
	for _, cfg := range []demodata.Config{
		{},
		{Conversations: 1},
		{Conversations: 2, Users: 1, Assistants: 1, Events: 1},
		{Conversations: 5, Users: 3, Tenant: "Globex Corp", End: time.Date(2025, 7, 1, 12, 30, 0, 123456789, time.FixedZone("x", 3600))},
	} {
		d, err := demodata.Generate(cfg)
		require.NoError(t, err)
		require.Len(t, d.Conversations, cfg.Conversations)
		validateAll(t, d)
		checkTimes(t, d, cfg.End)
		checkUsage(t, d)
	}
	d, err := demodata.Generate(demodata.Config{Conversations: 3, Tenant: "Globex Corp"})
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(d.Users[0].Email, "@globex-corp.example"), d.Users[0].Email)
}

// validateAll validates every record of d, and the tombstones, against the
// kit's schemas. The kit's data is a clean provider: no finding at all, not
// even a warning for a value outside an extensible enum.
func validateAll(t *testing.T, d *demodata.Dataset) {
	t.Helper()
	check := func(schema string, v any) {
		t.Helper()
		b := marshal(t, v)
		findings, err := spec.Validate(schema, b)
		require.NoError(t, err)
		require.Empty(t, findings, "%s %s", schema, b)
	}
	for _, c := range d.Conversations {
		check("conversation", c)
	}
	for _, c := range d.FinalConversations() {
		check("conversation", c)
	}
	for _, a := range d.Assistants {
		check("assistant", a)
	}
	for _, e := range d.Events {
		check("event", e)
	}
}

func TestEveryRecordValidates(t *testing.T) {
	t.Parallel()
	d, err := demodata.Generate(demodata.Config{Seed: 3, Conversations: 1200})
	require.NoError(t, err)
	validateAll(t, d)

	// The page size the performance targets assume: about 1.7 KB per conversation.
	size := len(marshal(t, d.Conversations))
	avg := size / len(d.Conversations)
	t.Logf("average conversation: %d bytes of JSON", avg)
	require.InDelta(t, 1700, avg, 300)
}

func TestTimestamps(t *testing.T) {
	t.Parallel()
	d := dataset(t)
	checkTimes(t, d, time.Time{})
}

func checkTimes(t *testing.T, d *demodata.Dataset, end time.Time) {
	t.Helper()
	if end.IsZero() {
		end = demodata.DefaultEnd
	}
	end = end.UTC().Truncate(time.Millisecond)
	start := end.Add(-demodata.Span)
	inWindow := func(what string, ts time.Time) {
		t.Helper()
		require.Equal(t, time.UTC, ts.Location(), what)
		require.Equal(t, ts, ts.Truncate(time.Millisecond), what)
		require.False(t, ts.Before(start), "%s %v before the window", what, ts)
		require.True(t, ts.Before(end), "%s %v at or after End", what, ts)
	}
	byID := map[string]spec.Conversation{}
	for _, c := range d.Conversations {
		byID[c.ID] = c
		inWindow("startedAt", c.StartedAt.Time)
		inWindow("updatedAt", c.UpdatedAt.Time)
		require.False(t, c.UpdatedAt.Before(c.StartedAt.Time), c.ID)
		require.Equal(t, c.StartedAt, c.Messages[0].CreatedAt, c.ID)
		for i, m := range c.Messages {
			require.False(t, m.CreatedAt.Before(c.StartedAt.Time), c.ID)
			require.False(t, m.CreatedAt.After(c.UpdatedAt.Time), c.ID)
			if i > 0 {
				require.False(t, m.CreatedAt.Before(c.Messages[i-1].CreatedAt.Time), c.ID)
			}
		}
	}
	for _, x := range d.Deleted {
		c, ok := byID[x.ID]
		require.True(t, ok, "deleted %s is not a conversation", x.ID)
		inWindow("deletion", x.At)
		require.True(t, x.At.After(c.UpdatedAt.Time), x.ID)
	}
	for _, a := range d.Assistants {
		require.Equal(t, time.UTC, a.CreatedAt.Location())
		inWindow("assistant updatedAt", a.UpdatedAt.Time)
		require.False(t, a.UpdatedAt.Before(a.CreatedAt.Time), a.ID)
		if !a.Usage.LastUsedAt.IsZero() {
			inWindow("lastUsedAt", a.Usage.LastUsedAt.Time)
			require.False(t, a.UpdatedAt.Before(a.Usage.LastUsedAt.Time), a.ID)
		}
	}
	for _, e := range d.Events {
		inWindow("occurredAt", e.OccurredAt.Time)
	}
	for _, u := range d.Usage {
		inWindow("usage", u.At)
		c := byID[u.ConversationID]
		require.False(t, u.At.Before(c.StartedAt.Time), u.ID)
		require.False(t, u.At.After(c.UpdatedAt.Time), u.ID)
	}
}

func TestUsageSumsToConversations(t *testing.T) {
	t.Parallel()
	checkUsage(t, dataset(t))
}

func checkUsage(t *testing.T, d *demodata.Dataset) {
	t.Helper()
	type sum struct {
		n, in, out, micros int64
		cost               float64
	}
	sums := map[string]*sum{}
	byID := map[string]spec.Conversation{}
	for _, c := range d.Conversations {
		byID[c.ID] = c
	}
	for _, u := range d.Usage {
		c, ok := byID[u.ConversationID]
		require.True(t, ok, u.ID)
		require.Equal(t, c.User.ID, u.UserID)
		require.Equal(t, c.User.Department, u.Department)
		require.Equal(t, c.Model, u.Model)
		if c.Assistant != nil {
			require.Equal(t, c.Assistant.ID, u.AssistantID)
		} else {
			require.Empty(t, u.AssistantID)
		}
		require.Positive(t, u.InputTokens)
		require.Positive(t, u.OutputTokens)
		micros := u.Cost * 1e6
		require.InDelta(t, math.Round(micros), micros, 1e-6, "cost is whole micro-dollars")
		s := sums[u.ConversationID]
		if s == nil {
			s = &sum{}
			sums[u.ConversationID] = s
		}
		s.n++
		s.in += u.InputTokens
		s.out += u.OutputTokens
		s.micros += int64(math.Round(micros))
		s.cost += u.Cost
	}
	for _, c := range d.Conversations {
		s := sums[c.ID]
		require.NotNil(t, s, "conversation %s has no usage", c.ID)
		require.Equal(t, c.Usage.InputTokens, s.in, c.ID)
		require.Equal(t, c.Usage.OutputTokens, s.out, c.ID)
		require.Equal(t, c.Usage.InputTokens+c.Usage.OutputTokens, c.Usage.TotalTokens, c.ID)
		require.InDelta(t, c.Usage.Cost, s.cost, demodata.CostTolerance, c.ID)
		require.Equal(t, int64(math.Round(c.Usage.Cost*1e6)), s.micros, c.ID)
	}
}

func TestAssistantRollups(t *testing.T) {
	t.Parallel()
	d := dataset(t)
	type roll struct {
		convs int64
		users map[string]bool
		last  time.Time
	}
	rolls := map[string]*roll{}
	for _, c := range d.Conversations {
		if c.Assistant == nil {
			continue
		}
		r := rolls[c.Assistant.ID]
		if r == nil {
			r = &roll{users: map[string]bool{}}
			rolls[c.Assistant.ID] = r
		}
		r.convs++
		r.users[c.User.ID] = true
	}
	for _, u := range d.Usage {
		if r := rolls[u.AssistantID]; r != nil && u.At.After(r.last) {
			r.last = u.At
		}
	}
	names := map[string]string{}
	for _, a := range d.Assistants {
		names[a.ID] = a.Name
		r := rolls[a.ID]
		if r == nil {
			require.Zero(t, a.Usage.ConversationCount, a.ID)
			continue
		}
		require.Equal(t, r.convs, a.Usage.ConversationCount, a.ID)
		require.Equal(t, int64(len(r.users)), a.Usage.UserCount, a.ID)
		require.True(t, r.last.Equal(a.Usage.LastUsedAt.Time), "%s: lastUsedAt %v, last usage %v", a.ID, a.Usage.LastUsedAt, r.last)
		require.GreaterOrEqual(t, a.Usage.LastUsedAt.Sub(a.CreatedAt.Time), time.Duration(0), a.ID)
	}
	for _, c := range d.Conversations {
		if c.Assistant != nil {
			require.Equal(t, names[c.Assistant.ID], c.Assistant.Name)
		}
	}
}

func TestEverythingIsCovered(t *testing.T) {
	t.Parallel()
	d := dataset(t)
	seen := map[string]bool{}
	mark := func(kind, v string) { seen[kind+":"+v] = true }
	for _, a := range d.Assistants {
		mark("visibility", a.Visibility)
		mark("status", a.Status)
		for _, s := range a.Skills {
			mark("skill", s.Type)
		}
		require.NotNil(t, a.Owner, a.ID)
		if len(a.Connectors) > 0 {
			mark("has", "connectors")
			require.NotEmpty(t, a.Connectors[0].Scopes)
		}
		if len(a.Knowledge) > 0 {
			mark("has", "knowledge")
		}
		if a.InstructionsHash != "" {
			mark("has", "instructionsHash")
		}
	}
	for _, c := range d.Conversations {
		mark("provider", c.ModelProvider)
		mark("convstatus", c.Status)
		if c.SystemPromptHash != "" {
			mark("has", "systemPromptHash")
			require.True(t, strings.HasPrefix(c.SystemPromptHash, "sha256:"))
		}
		if c.SystemPrompt != "" {
			mark("has", "systemPrompt")
		}
		if c.Assistant == nil {
			mark("has", "no assistant")
		}
		if c.Parameters != nil && len(c.Parameters.Extra) > 0 {
			mark("has", "extra parameters")
		}
		for _, m := range c.Messages {
			mark("role", m.Role)
		}
		tools := map[string]bool{}
		for _, tl := range c.Tools {
			tools[tl.Name] = true
			mark("tooltype", tl.Type)
		}
		calls := 0
		for i, m := range c.Messages {
			if m.Role == spec.RoleTool {
				calls++
				prev := c.Messages[i-1]
				require.Equal(t, spec.RoleAssistant, prev.Role, c.ID)
				named := false
				for name := range tools {
					named = named || strings.Contains(prev.Content, name) || strings.Contains(m.Content, name)
				}
				require.True(t, named, "%s: the tool called is not in tools[]", c.ID)
				require.True(t, json.Valid([]byte(m.Content)), "%s: tool output %q", c.ID, m.Content)
			}
		}
		require.Equal(t, calls > 0, len(c.Tools) > 0, c.ID)
		for _, a := range c.Attachments {
			mark("attachment", a.Kind)
			require.Regexp(t, `^sha256:[0-9a-f]{64}$`, a.Hash)
			require.NotEmpty(t, a.MimeType)
		}
		require.True(t, json.Valid(c.Metadata))
	}
	unknownTypes := 0
	for _, e := range d.Events {
		mark("category", e.Category)
		mark("actor", e.Actor.Type)
		require.NotNil(t, e.Target, e.ID)
		require.True(t, json.Valid(e.Payload), e.ID)
		if e.Type == "assistant.archived" {
			mark("has", "archived assistant event")
			require.Equal(t, "Disabled", e.Action)
		}
		if e.Type == "billing.invoice.paid" {
			unknownTypes++
			require.Equal(t, spec.CategoryOther, e.Category)
		}
	}
	require.Positive(t, unknownTypes)

	want := []string{
		"status:active", "status:archived",
		"has:connectors", "has:knowledge", "has:instructionsHash", "has:systemPromptHash", "has:systemPrompt",
		"has:no assistant", "has:extra parameters", "has:archived assistant event",
		"provider:openai", "provider:anthropic", "provider:google", "provider:mistral",
		"convstatus:completed", "convstatus:failed",
		"role:" + spec.RoleSystem, "role:" + spec.RoleUser, "role:" + spec.RoleAssistant, "role:" + spec.RoleTool,
		"attachment:" + spec.AttachmentUploaded, "attachment:" + spec.AttachmentGenerated,
	}
	for _, v := range []string{spec.VisibilityPrivate, spec.VisibilityTeam, spec.VisibilityOrganisation, spec.VisibilityPublic} {
		want = append(want, "visibility:"+v)
	}
	for _, v := range []string{spec.SkillBuiltin, spec.SkillMCP, spec.SkillPlugin, spec.SkillFunction} {
		want = append(want, "skill:"+v, "tooltype:"+v)
	}
	for _, v := range spec.EventCategories {
		want = append(want, "category:"+v)
	}
	for _, v := range []string{spec.ActorUser, spec.ActorAPIKey, spec.ActorServiceAccount, spec.ActorSystem} {
		want = append(want, "actor:"+v)
	}
	for _, w := range want {
		require.True(t, seen[w], "no %s", w)
	}
}

// groups returns the sizes of the groups of more than one equal key.
func groups(keys []time.Time) []int {
	count := map[time.Time]int{}
	for _, k := range keys {
		count[k]++
	}
	var out []int
	for _, n := range count {
		if n > 1 {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

func TestTies(t *testing.T) {
	t.Parallel()
	d := dataset(t)
	var keys []time.Time
	for _, c := range d.FinalConversations() {
		keys = append(keys, c.UpdatedAt.Time)
	}
	g := groups(keys)
	tied := 0
	for _, n := range g {
		tied += n
	}
	t.Logf("conversations: %d groups sharing updatedAt, %d conversations, largest %d", len(g), tied, g[len(g)-1])
	require.NotEmpty(t, g)
	require.InDelta(t, 0.05, float64(tied)/float64(len(keys)), 0.03)
	require.GreaterOrEqual(t, g[len(g)-1], 5)

	keys = keys[:0]
	for _, a := range d.Assistants {
		keys = append(keys, a.UpdatedAt.Time)
	}
	require.NotEmpty(t, groups(keys), "assistants sharing updatedAt")

	keys = keys[:0]
	for _, e := range d.Events {
		keys = append(keys, e.OccurredAt.Time)
	}
	require.NotEmpty(t, groups(keys), "events sharing occurredAt")

	// Tombstones share their deletion time when the retention sweep
	// deleted them together.
	keys = keys[:0]
	for _, x := range d.Deleted {
		keys = append(keys, x.At)
	}
	require.NotEmpty(t, groups(keys), "deletions sharing a time")

	// Ties hold in small datasets too.
	small, err := demodata.Generate(demodata.Config{Seed: 9, Conversations: 4})
	require.NoError(t, err)
	keys = keys[:0]
	for _, c := range small.FinalConversations() {
		keys = append(keys, c.UpdatedAt.Time)
	}
	require.NotEmpty(t, groups(keys))
	require.NotEmpty(t, small.Deleted)
}

func TestDeletedConversations(t *testing.T) {
	t.Parallel()
	d := dataset(t)
	require.NotEmpty(t, d.Deleted)
	deleted := map[string]time.Time{}
	for _, x := range d.Deleted {
		deleted[x.ID] = x.At
	}
	tombstones := 0
	for _, c := range d.FinalConversations() {
		at, ok := deleted[c.ID]
		require.Equal(t, ok, c.Deleted(), c.ID)
		if !ok {
			continue
		}
		tombstones++
		require.True(t, at.Equal(c.DeletedAt.Time))
		require.Equal(t, c.DeletedAt, c.UpdatedAt)
		require.Empty(t, c.Messages)
	}
	require.Equal(t, len(d.Deleted), tombstones)

	// Every deletion is in the audit trail.
	events := 0
	for _, e := range d.Events {
		if e.Type == "conversation.deleted" {
			events++
			at, ok := deleted[e.Target.ID]
			require.True(t, ok, e.ID)
			require.True(t, at.Equal(e.OccurredAt.Time), e.ID)
		}
	}
	require.Equal(t, len(d.Deleted), events)
}

// fakeWriter is a provider.Writer over maps that counts its calls.
type fakeWriter struct {
	mu            sync.Mutex
	calls         map[string]int
	order         []string
	conversations map[string]spec.Conversation
	assistants    map[string]spec.Assistant
	events        map[string]spec.Event
	usage         map[string]provider.UsageRecord
}

var _ provider.Writer = (*fakeWriter)(nil)

func newFakeWriter() *fakeWriter {
	return &fakeWriter{
		calls:         map[string]int{},
		conversations: map[string]spec.Conversation{},
		assistants:    map[string]spec.Assistant{},
		events:        map[string]spec.Event{},
		usage:         map[string]provider.UsageRecord{},
	}
}

func (w *fakeWriter) call(name, tenant string) error {
	w.calls[name]++
	if n := len(w.order); n == 0 || w.order[n-1] != name {
		w.order = append(w.order, name)
	}
	if tenant != "t1" {
		return errors.New("wrong tenant " + tenant)
	}
	return nil
}

func (w *fakeWriter) UpsertConversation(_ context.Context, tenant string, c spec.Conversation) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.call("UpsertConversation", tenant); err != nil {
		return err
	}
	w.conversations[c.ID] = c
	return nil
}

func (w *fakeWriter) DeleteConversation(_ context.Context, tenant, id string, at time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.call("DeleteConversation", tenant); err != nil {
		return err
	}
	c, ok := w.conversations[id]
	if !ok {
		return provider.ErrNotFound
	}
	w.conversations[id] = provider.TombstoneOf(c, at)
	return nil
}

func (w *fakeWriter) UpsertAssistant(_ context.Context, tenant string, a spec.Assistant) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.call("UpsertAssistant", tenant); err != nil {
		return err
	}
	w.assistants[a.ID] = a
	return nil
}

func (w *fakeWriter) AppendEvent(_ context.Context, tenant string, e spec.Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.call("AppendEvent", tenant); err != nil {
		return err
	}
	if _, ok := w.events[e.ID]; ok {
		return provider.ErrConflict
	}
	w.events[e.ID] = e
	return nil
}

func (w *fakeWriter) RecordUsage(_ context.Context, tenant string, u provider.UsageRecord) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.call("RecordUsage", tenant); err != nil {
		return err
	}
	if _, ok := w.usage[u.ID]; ok {
		return provider.ErrConflict
	}
	w.usage[u.ID] = u
	return nil
}

func (w *fakeWriter) state(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, m := range []any{w.conversations, w.assistants, w.events, w.usage} {
		b.Write(marshal(t, m)) // encoding/json sorts map keys
	}
	return b.Bytes()
}

func TestLoad(t *testing.T) {
	t.Parallel()
	cfg := demodata.Config{Seed: 5, Conversations: 400}
	d, err := demodata.Generate(cfg)
	require.NoError(t, err)
	w := newFakeWriter()
	require.NoError(t, d.Load(context.Background(), "t1", w))
	require.Equal(t, map[string]int{
		"UpsertConversation": len(d.Conversations),
		"DeleteConversation": len(d.Deleted),
		"UpsertAssistant":    len(d.Assistants),
		"AppendEvent":        len(d.Events),
		"RecordUsage":        len(d.Usage),
	}, w.calls)
	require.Equal(t, []string{"UpsertConversation", "DeleteConversation", "UpsertAssistant", "AppendEvent", "RecordUsage"}, w.order)
	require.Len(t, w.conversations, len(d.Conversations))
	for _, c := range d.FinalConversations() {
		require.Equal(t, marshal(t, c), marshal(t, w.conversations[c.ID]))
	}

	// Fill streams the same calls into a writer.
	f := newFakeWriter()
	require.NoError(t, demodata.Fill(context.Background(), cfg, "t1", f))
	require.Equal(t, w.calls, f.calls)
	require.Equal(t, w.order, f.order)
	require.Equal(t, w.state(t), f.state(t))

	// Errors stop loading and name the record.
	err = d.Load(context.Background(), "other", newFakeWriter())
	require.ErrorContains(t, err, "conversation "+d.Conversations[0].ID)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, d.Load(ctx, "t1", newFakeWriter()), context.Canceled)
	require.ErrorIs(t, demodata.Fill(ctx, cfg, "t1", newFakeWriter()), context.Canceled)
}
