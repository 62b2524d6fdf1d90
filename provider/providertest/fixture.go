package providertest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// The tenants of the suite's data.
const (
	tenant1 = "t1"
	tenant2 = "t2"
)

// The instants the suite's data is built around.
var (
	// base is midnight of the day most records fall on.
	base = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	// now is the handler's clock: it decides the default /usage range.
	now = time.Date(2026, 3, 3, 10, 20, 30, 456_000_000, time.UTC)
	// convTie, assistantTie and eventTie are shared exactly by a group of
	// records each.
	convTie      = base.Add(5*time.Hour + 30*time.Minute + 250*time.Millisecond)
	assistantTie = base.Add(4*time.Hour + 4*time.Millisecond)
	eventTie     = base.Add(3*time.Hour + 333*time.Millisecond)
	// sharedStart is the startedAt of two conversations.
	sharedStart = base.Add(-12*time.Hour + 250*time.Millisecond)
	// subMilli is written with nanoseconds; the source keeps milliseconds.
	subMilli = base.Add(2*time.Hour + 500*time.Millisecond + 999_999*time.Nanosecond)
)

// item is a record as the suite expects it served.
type item struct {
	id string
	// key is the record's list position.
	key provider.Key
	// doc is the record's JSON as served, decoded into any.
	doc any
	// started is a conversation's startedAt.
	started time.Time
	// category is an event's category.
	category string
	// deletedAt is a tombstone's deletion time.
	deletedAt time.Time
}

// fixture is the data the suite writes, and what it expects served.
type fixture struct {
	conversations map[string][]item // per tenant, in list order
	assistants    map[string][]item
	events        map[string][]item
	usage         map[string][]provider.UsageRecord // per tenant, At in UTC milliseconds
}

// items returns the records of one resource ("conversations", "assistants"
// or "events") of tenant.
func (f *fixture) items(resource, tenant string) []item {
	switch resource {
	case "conversations":
		return f.conversations[tenant]
	case "assistants":
		return f.assistants[tenant]
	case "events":
		return f.events[tenant]
	}
	panic("providertest: unknown resource " + resource)
}

func (f *fixture) find(resource, tenant, id string) (item, bool) {
	for _, it := range f.items(resource, tenant) {
		if it.id == id {
			return it, true
		}
	}
	return item{}, false
}

// jsonDoc returns v encoded as JSON and decoded into any: the form in which
// the suite compares records.
func jsonDoc(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("providertest: encoding %T: %v", v, err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("providertest: decoding %T: %v", v, err)
	}
	return doc
}

func sortItems(items []item) {
	slices.SortFunc(items, func(a, b item) int {
		switch {
		case a.key.Less(b.key):
			return -1
		case b.key.Less(a.key):
			return 1
		}
		return 0
	})
}

// shuffled returns a copy of s in a deterministic random order, so that
// records reach the source out of list order.
func shuffled[T any](s []T, seed uint64) []T {
	out := slices.Clone(s)
	r := rand.New(rand.NewPCG(seed, 99))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func ptr[T any](v T) *T { return &v }

// conversation returns a conversation with every field set; variant varies
// the content.
func conversation(id string, started, updated time.Time, variant int) spec.Conversation {
	c := spec.Conversation{
		ID:             id,
		ConversationID: fmt.Sprintf("thread-%d", variant%4),
		StartedAt:      spec.Time{Time: started},
		UpdatedAt:      spec.Time{Time: updated},
		Model:          []string{"model-a", "model-b", "Model-C"}[variant%3],
		ModelProvider:  "vendor",
		Status:         []string{"completed", "failed", "in_progress"}[variant%3],
		Usage:          &spec.TokenUsage{InputTokens: int64(100 + variant), OutputTokens: int64(20 * variant), TotalTokens: int64(100 + 21*variant), Cost: 0.001 * float64(variant)},
	}
	if variant%5 != 4 {
		c.User = &spec.User{ID: fmt.Sprintf("u%d", variant%6+1), Email: fmt.Sprintf("u%d@example.com", variant%6+1), Department: []string{"eng", "sales", ""}[variant%3], Groups: []string{"all", fmt.Sprintf("g%d", variant%2)}}
	}
	if variant%3 != 2 {
		c.Assistant = &spec.AssistantRef{ID: fmt.Sprintf("asst-%02d", variant%10), Name: "Helper ü"}
	}
	if variant%4 == 1 {
		c.SystemPromptHash = fmt.Sprintf("sha256:%064x", variant)
	} else {
		c.SystemPrompt = "You are helpful. \"Quotes\", <tags> & unicode: ✓"
	}
	c.Parameters = &spec.Parameters{Temperature: ptr(0.25 * float64(variant%4)), MaxTokens: ptr(int64(1024)), Extra: map[string]json.RawMessage{"stop": json.RawMessage(`["\n\n"]`)}}
	for m := range 1 + variant%3 {
		at := started.Add(time.Duration(m)*time.Minute + 7*time.Millisecond)
		c.Messages = append(c.Messages,
			spec.Message{ID: fmt.Sprintf("%s-m%d", id, 2*m), Role: spec.RoleUser, Content: fmt.Sprintf("question %d of %s", m, id), CreatedAt: spec.Time{Time: at}},
			spec.Message{ID: fmt.Sprintf("%s-m%d", id, 2*m+1), Role: spec.RoleAssistant, Content: "answer\nwith lines", CreatedAt: spec.Time{Time: at.Add(time.Second)}},
		)
	}
	if variant%2 == 0 {
		c.Tools = []spec.Tool{{ID: "tool-1", Name: "web_search", Type: "builtin"}}
		c.Attachments = []spec.Attachment{{ID: id + "-f1", Kind: spec.AttachmentUploaded, Filename: "report.pdf", MimeType: "application/pdf", Hash: "sha256:abc"}}
	}
	if variant%3 == 0 {
		c.Metadata = json.RawMessage(fmt.Sprintf(`{"channel":"web","n":%d,"nested":{"a":[1,2]}}`, variant))
	}
	return c
}

func assistant(id string, created, updated time.Time, variant int) spec.Assistant {
	a := spec.Assistant{
		ID:          id,
		Name:        "Assistant " + id,
		Description: "Helps with things",
		Status:      []string{"active", "archived"}[variant%2],
		CreatedAt:   spec.Time{Time: created},
		UpdatedAt:   spec.Time{Time: updated},
		Owner:       &spec.User{ID: fmt.Sprintf("u%d", variant%6+1), Email: fmt.Sprintf("u%d@example.com", variant%6+1)},
		Visibility:  []string{spec.VisibilityPrivate, spec.VisibilityTeam, spec.VisibilityOrganisation, spec.VisibilityPublic}[variant%4],
		Model:       "model-a",
		Parameters:  &spec.Parameters{TopP: ptr(0.9)},
		Skills:      []spec.Skill{{ID: "s1", Name: "search", Type: spec.SkillBuiltin}, {ID: "s2", Name: "tickets", Type: spec.SkillMCP}},
		Connectors:  []spec.Connector{{ID: "k1", Type: "drive", Scopes: []string{"read", "list"}}},
		Knowledge:   []spec.KnowledgeItem{{ID: "kn1", Name: "handbook.pdf", MimeType: "application/pdf", SizeBytes: 12345}},
		Usage:       &spec.AssistantUsage{ConversationCount: int64(variant * 3), UserCount: int64(variant), LastUsedAt: spec.Time{Time: updated.Add(-time.Minute)}},
	}
	if variant%3 == 0 {
		a.InstructionsHash = "sha256:0123"
	} else {
		a.Instructions = "Answer briefly."
	}
	return a
}

func event(id string, at time.Time, category string, variant int) spec.Event {
	return spec.Event{
		ID:         id,
		OccurredAt: spec.Time{Time: at},
		Type:       []string{"user.login", "assistant.updated", "vendor.custom.Thing_v2", "file.exported"}[variant%4],
		Actor:      &spec.Actor{Type: []string{spec.ActorUser, spec.ActorAPIKey, spec.ActorServiceAccount, spec.ActorSystem}[variant%4], ID: fmt.Sprintf("u%d", variant%6+1)},
		Category:   category,
		Action:     []string{"Created", "Updated", "Deleted", "Exported", "Rotated"}[variant%5],
		Target:     &spec.Target{Kind: "assistant", ID: fmt.Sprintf("asst-%02d", variant%10), Name: "Helper"},
		Payload:    json.RawMessage(fmt.Sprintf(`{"raw":true,"seq":%d,"unicode":"é✓"}`, variant)),
	}
}

// eventCategories are the categories of the suite's events: every category
// but Policy, which holds none.
var eventCategories = []string{
	spec.CategoryAuthentication, spec.CategoryAccess, spec.CategoryConfiguration, spec.CategoryDataMovement,
	spec.CategoryResourceLifecycle, spec.CategoryIntegration, spec.CategoryOther,
}

// load writes the suite's data through w and returns what it expects served.
func load(t *testing.T, w provider.Writer) *fixture {
	t.Helper()
	f := &fixture{
		conversations: map[string][]item{},
		assistants:    map[string][]item{},
		events:        map[string][]item{},
		usage:         map[string][]provider.UsageRecord{},
	}
	loadConversations(t, w, f)
	loadAssistants(t, w, f)
	loadEvents(t, w, f)
	loadTenant2(t, w, f)
	loadUsage(t, w, f)
	return f
}

// mustWrite returns a check of a write of the fixture that fails t with
// what was written.
func mustWrite(t *testing.T) func(err error, what string) {
	return func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("providertest: writing %s: %v", what, err)
		}
	}
}

// loadConversations writes the conversations of tenant1, tombstones included into f.
func loadConversations(t *testing.T, w provider.Writer, f *fixture) {
	t.Helper()
	ctx := t.Context()
	must := mustWrite(t)
	convs := map[string]spec.Conversation{}
	add := func(c spec.Conversation) { convs[c.ID] = c }
	for i := range 15 {
		started := base.Add(-24*time.Hour + time.Duration(i)*10*time.Minute)
		updated := base.Add(time.Duration((i*7)%15)*time.Hour + time.Duration(i*37)*time.Millisecond)
		add(conversation(fmt.Sprintf("c-%03d", i), started, updated, i))
	}
	add(conversation("c-100", base.Add(-time.Hour), subMilli, 15))
	add(conversation("c-101", base.Add(-time.Hour), base.Add(2*time.Hour+501*time.Millisecond), 16))
	add(conversation("c-102", sharedStart, base.Add(6*time.Hour), 17))
	add(conversation("c-103", sharedStart, base.Add(7*time.Hour+1*time.Millisecond), 18))
	// The tie group: one updatedAt, ids whose byte order differs from
	// numeric, case-insensitive and Unicode collation orders.
	for i, id := range []string{"tie-9", "tie-10", "tie-A", "tie-a", "tie-_", "Tie-z", "tie-ü", "tie-1"} {
		started := base.Add(-6*time.Hour + time.Duration(i)*time.Minute)
		if i < 2 {
			started = sharedStart.Add(time.Hour) // two tie members start together too
		}
		add(conversation(id, started, convTie, 20+i))
	}
	add(conversation("c-tomb", base.Add(-2*time.Hour), base.Add(8*time.Hour), 30))
	// c-moved is written twice: only the second version, at its second
	// position, may be served.
	first := conversation("c-moved", base.Add(-3*time.Hour), base.Add(1*time.Hour), 31)
	second := conversation("c-moved", base.Add(-3*time.Hour), base.Add(9*time.Hour+999*time.Millisecond), 32)
	// c-norm has timestamps with an offset and nanoseconds.
	plus2 := time.FixedZone("", 2*3600)
	norm := conversation("c-norm", base.Add(-90*time.Minute+123456789*time.Nanosecond).In(plus2), base.Add(10*time.Hour+999999999*time.Nanosecond).In(plus2), 33)
	add(norm)

	for _, c := range shuffled(mapValues(convs), 1) {
		must(w.UpsertConversation(ctx, tenant1, c), "conversation "+c.ID)
	}
	must(w.UpsertConversation(ctx, tenant1, first), "conversation c-moved")
	must(w.UpsertConversation(ctx, tenant1, second), "conversation c-moved")
	convs["c-moved"] = second

	deletions := map[string]time.Time{
		"c-002":  base.Add(20 * time.Hour),
		"c-005":  base.Add(20 * time.Hour), // two tombstones share updatedAt
		"c-007":  convTie,                  // a tombstone joins the tie group
		"c-tomb": base.Add(21*time.Hour + 123*time.Millisecond),
	}
	for _, id := range []string{"c-002", "c-005", "c-007", "c-tomb"} {
		at := deletions[id]
		must(w.DeleteConversation(ctx, tenant1, id, at), "tombstone "+id)
		convs[id] = provider.TombstoneOf(convs[id], at)
	}
	for _, c := range convs {
		f.conversations[tenant1] = append(f.conversations[tenant1], conversationItem(t, c))
	}
	sortItems(f.conversations[tenant1])
}

// loadAssistants writes the assistants of tenant1 into f.
func loadAssistants(t *testing.T, w provider.Writer, f *fixture) {
	t.Helper()
	ctx := t.Context()
	must := mustWrite(t)
	var assts []spec.Assistant
	for i := range 10 {
		created := base.Add(-30*24*time.Hour + time.Duration(i)*time.Hour)
		updated := base.Add(time.Duration((i*3)%10)*time.Hour + time.Duration(i)*time.Millisecond)
		assts = append(assts, assistant(fmt.Sprintf("asst-%02d", i), created, updated, i))
	}
	for i, id := range []string{"ta-B", "ta-a", "ta-10", "ta-9", "ta-ä", "ta-1"} {
		assts = append(assts, assistant(id, base.Add(-48*time.Hour), assistantTie, 10+i))
	}
	for _, a := range shuffled(assts, 2) {
		must(w.UpsertAssistant(ctx, tenant1, a), "assistant "+a.ID)
		f.assistants[tenant1] = append(f.assistants[tenant1], assistantItem(t, a))
	}
	sortItems(f.assistants[tenant1])
}

// loadEvents writes the events of tenant1 into f.
func loadEvents(t *testing.T, w provider.Writer, f *fixture) {
	t.Helper()
	ctx := t.Context()
	must := mustWrite(t)
	var evs []spec.Event
	for i := range 30 {
		at := base.Add(time.Duration(i)*17*time.Minute + time.Duration(i%4)*time.Millisecond)
		evs = append(evs, event(fmt.Sprintf("ev-%03d", i), at, eventCategories[i%len(eventCategories)], i))
	}
	for i, id := range []string{"te-3", "te-20", "te-B", "te-b", "te-a", "te-Z"} {
		evs = append(evs, event(id, eventTie, eventCategories[i%3], 40+i))
	}
	evs = append(evs, event("ev-nocat", base.Add(90*time.Minute+1*time.Millisecond), "", 50))
	for _, e := range shuffled(evs, 3) {
		must(w.AppendEvent(ctx, tenant1, e), "event "+e.ID)
		f.events[tenant1] = append(f.events[tenant1], eventItem(t, e))
	}
	sortItems(f.events[tenant1])
}

// loadTenant2 writes a little of everything for tenant2, ids of its own into f.
func loadTenant2(t *testing.T, w provider.Writer, f *fixture) {
	t.Helper()
	ctx := t.Context()
	must := mustWrite(t)
	for i := range 4 {
		c := conversation(fmt.Sprintf("t2-c-%d", i), base.Add(time.Duration(i)*time.Hour), base.Add(time.Duration(i)*time.Hour+5*time.Minute), i)
		must(w.UpsertConversation(ctx, tenant2, c), "conversation "+c.ID)
		f.conversations[tenant2] = append(f.conversations[tenant2], conversationItem(t, c))
	}
	for i := range 3 {
		a := assistant(fmt.Sprintf("t2-a-%d", i), base, base.Add(time.Duration(i)*time.Minute), i)
		must(w.UpsertAssistant(ctx, tenant2, a), "assistant "+a.ID)
		f.assistants[tenant2] = append(f.assistants[tenant2], assistantItem(t, a))
	}
	for i := range 5 {
		e := event(fmt.Sprintf("t2-e-%d", i), base.Add(time.Duration(i)*time.Minute), eventCategories[i%2], i)
		must(w.AppendEvent(ctx, tenant2, e), "event "+e.ID)
		f.events[tenant2] = append(f.events[tenant2], eventItem(t, e))
	}
	for _, tn := range []string{tenant2} {
		sortItems(f.conversations[tn])
		sortItems(f.assistants[tn])
		sortItems(f.events[tn])
	}
}

// loadUsage records the usage of both tenants into f.
func loadUsage(t *testing.T, w provider.Writer, f *fixture) {
	t.Helper()
	ctx := t.Context()
	must := mustWrite(t)
	f.usage[tenant1] = usageRecords("u-", 700, 2026)
	f.usage[tenant2] = usageRecords("t2-u-", 60, 7)
	for _, tn := range []string{tenant1, tenant2} {
		for _, u := range shuffled(f.usage[tn], 4) {
			must(w.RecordUsage(ctx, tn, u), "usage record "+u.ID)
		}
		for i := range f.usage[tn] {
			f.usage[tn][i].At = f.usage[tn][i].At.UTC().Truncate(time.Millisecond)
		}
	}
}

func mapValues[K comparable, V any](m map[K]V) []V {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Deterministic: sort the keys by their printed form.
	slices.SortFunc(keys, func(a, b K) int {
		sa, sb := fmt.Sprint(a), fmt.Sprint(b)
		switch {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		}
		return 0
	})
	out := make([]V, 0, len(m))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

func conversationItem(t *testing.T, c spec.Conversation) item {
	return item{id: c.ID, key: provider.ConversationKey(&c), doc: jsonDoc(t, c), started: c.StartedAt.UTC().Truncate(time.Millisecond), deletedAt: c.DeletedAt.UTC().Truncate(time.Millisecond)}
}

func assistantItem(t *testing.T, a spec.Assistant) item {
	return item{id: a.ID, key: provider.AssistantKey(&a), doc: jsonDoc(t, a)}
}

func eventItem(t *testing.T, e spec.Event) item {
	return item{id: e.ID, key: provider.EventKey(&e), doc: jsonDoc(t, e), category: e.Category}
}

// usageRecords returns n deterministic usage records from 2026-02-24 to
// 2026-03-06, with empty values in every dimension, records on hour and day
// boundaries, and nanosecond times.
func usageRecords(prefix string, n int, seed uint64) []provider.UsageRecord {
	r := rand.New(rand.NewPCG(seed, 3))
	pick := func(vals ...string) string { return vals[r.IntN(len(vals))] }
	departments := map[string]string{"": "", "u1": "eng", "u2": "eng", "u3": "sales", "u4": "", "u5": "ops", "u6": "Ops"}
	from := base.AddDate(0, 0, -5)
	span := int64(11 * 24 * time.Hour)
	var out []provider.UsageRecord
	for i := range n {
		at := from.Add(time.Duration(r.Int64N(span)))
		switch i % 20 {
		case 0:
			at = at.Truncate(time.Hour)
		case 1:
			at = at.Truncate(24 * time.Hour)
		case 2:
			at = at.Truncate(time.Hour).Add(-time.Millisecond)
		}
		user := pick("", "u1", "u2", "u3", "u4", "u5", "u6")
		dept := departments[user]
		if r.IntN(10) == 0 {
			dept = pick("", "eng", "marketing")
		}
		in := int64(r.IntN(4000))
		out = append(out, provider.UsageRecord{
			ID:             fmt.Sprintf("%s%04d", prefix, i),
			At:             at,
			ConversationID: pick("", "c-000", "c-001", "c-002", "c-003", "c-004", "c-005", "tie-a"),
			UserID:         user,
			Department:     dept,
			Model:          pick("", "model-a", "model-b", "Model-C"),
			AssistantID:    pick("", "asst-01", "asst-02", "ta-a"),
			InputTokens:    in,
			OutputTokens:   int64(r.IntN(2000)),
			Cost:           float64(in) * 0.000003 * (1 + r.Float64()),
		})
	}
	// Records on the edges of the suite's explicit ranges.
	for i, at := range []time.Time{base, base.Add(-time.Millisecond), base.Add(72 * time.Hour), base.Add(72*time.Hour - time.Millisecond), base.Add(24*time.Hour - time.Millisecond)} {
		out = append(out, provider.UsageRecord{ID: fmt.Sprintf("%sedge-%d", prefix, i), At: at, UserID: "u1", Department: "eng", Model: "model-a", InputTokens: 1, OutputTokens: 1, Cost: 1e-6})
	}
	return out
}
