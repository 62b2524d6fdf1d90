package conformance_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/spec"
)

// --- data

// stableID is the id of the i-th record of a kind (prefix) of a tenant:
// the same in every run.
func stableID(prefix, tenant string, i int) string {
	h := sha256.Sum256([]byte(tenant + prefix + strconv.Itoa(i)))
	return prefix + "_" + hex.EncodeToString(h[:6])
}

func ptr[T any](v T) *T { return &v }

// genTenant makes deterministic data: nc conversations (three tombstones and
// a group of eight sharing one updatedAt when nc >= 48), na assistants, ne
// events in every category with two groups of ties, nu usage rows in the six
// days before now.
func genTenant(tenant string, nc, na, ne, nu int, now time.Time) *refTenant {
	t := &refTenant{}
	base := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	models := []string{"gpt-4o", "claude-sonnet-4", "mistral-large"}
	modelProviders := []string{"openai", "anthropic", "mistral"}
	departments := []string{"Finance", "Engineering", "Legal"}
	user := func(i int) *spec.User {
		u := i % 6
		return &spec.User{ID: fmt.Sprintf("user-%d", u), Email: fmt.Sprintf("user%d@%s.example", u, tenant),
			Department: departments[u%3], Groups: []string{"staff", departments[u%3]}}
	}
	assistantIDs := make([]string, na)
	for i := range na {
		assistantIDs[i] = stableID("asst", tenant, i)
	}
	tieAt := base.Add(200*time.Hour + 250*time.Millisecond)

	// Conversations.
	for i := range nc {
		started := base.Add(time.Duration(i)*7*time.Hour + time.Duration(i%5*111)*time.Millisecond)
		updated := started.Add(90 * time.Minute)
		if nc >= 48 && i >= 20 && i < 28 {
			updated = tieAt
		}
		c := spec.Conversation{
			ID:             stableID("conv", tenant, i),
			ConversationID: fmt.Sprintf("thread-%d", i/2),
			StartedAt:      spec.NewTime(started),
			UpdatedAt:      spec.NewTime(updated),
			User:           user(i),
			Model:          models[i%3],
			ModelProvider:  modelProviders[i%3],
			Parameters:     &spec.Parameters{Temperature: ptr(0.5), MaxTokens: ptr(int64(1024))},
			SystemPrompt:   "You are a helpful assistant.",
			Messages: []spec.Message{
				{ID: fmt.Sprintf("m%d-1", i), Role: spec.RoleUser, Content: "Summarise the quarterly report.", CreatedAt: spec.NewTime(started)},
				{ID: fmt.Sprintf("m%d-2", i), Role: spec.RoleAssistant, Content: "Revenue grew by 4%.", CreatedAt: spec.NewTime(started.Add(time.Minute))},
			},
			Tools:       []spec.Tool{{ID: "web", Name: "Web search", Type: "builtin"}},
			Attachments: []spec.Attachment{{ID: fmt.Sprintf("f%d", i), Kind: spec.AttachmentUploaded, Filename: "report.pdf", MimeType: "application/pdf", Hash: "sha256:00ff"}},
			Usage:       &spec.TokenUsage{InputTokens: int64(100 + i), OutputTokens: int64(50 + i), TotalTokens: int64(150 + 2*i), Cost: float64(i%8) * 0.125},
			Status:      "completed",
			Metadata:    json.RawMessage(`{"workspace":"main"}`),
		}
		if i%5 != 4 && na > 0 {
			a := i % na
			c.Assistant = &spec.AssistantRef{ID: assistantIDs[a], Name: fmt.Sprintf("Assistant %d", a)}
		}
		it := &refItem{id: c.ID, at: updated, started: started, idx: i, v: c}
		if nc >= 48 && (i == 5 || i == 33 || i == 47) {
			deleted := updated.Add(2 * time.Hour)
			full := c
			full.DeletedAt, full.UpdatedAt = spec.NewTime(deleted), spec.NewTime(deleted)
			tomb := full
			tomb.Messages, tomb.SystemPrompt, tomb.Attachments, tomb.Tools, tomb.Parameters, tomb.Metadata = nil, "", nil, nil, nil, nil
			it.at, it.tomb, it.v, it.full = deleted, true, tomb, full
		}
		t.conversations = append(t.conversations, it)
		if nc >= 48 && (i == 12 || i == 40) {
			old := c
			old.UpdatedAt, old.Status = spec.NewTime(started.Add(30*time.Minute)), "in_progress"
			t.conversations = append(t.conversations, &refItem{id: c.ID, at: old.UpdatedAt.Time, started: started, idx: i, stale: true, v: old})
		}
	}

	// Assistants; two pairs share an updatedAt.
	visibilities := []string{spec.VisibilityPrivate, spec.VisibilityTeam, spec.VisibilityOrganisation, spec.VisibilityPublic}
	skills := []string{spec.SkillBuiltin, spec.SkillMCP, spec.SkillPlugin, spec.SkillFunction}
	for i := range na {
		created := base.Add(-time.Duration(na-i)*24*time.Hour + time.Duration(i%4*250)*time.Millisecond)
		updated := base.Add(time.Duration(i)*11*time.Hour + time.Duration(i%3*7)*time.Millisecond)
		if i == 7 || i == 8 {
			updated = base.Add(77 * time.Hour)
		}
		status := "active"
		if i%6 == 5 {
			status = "archived"
		}
		a := spec.Assistant{
			ID: assistantIDs[i], Name: fmt.Sprintf("Assistant %d", i), Description: "Answers finance questions.",
			Status: status, CreatedAt: spec.NewTime(created), UpdatedAt: spec.NewTime(updated),
			Owner: user(i), Visibility: visibilities[i%4], Model: models[i%3],
			Parameters:   &spec.Parameters{TopP: ptr(0.9)},
			Instructions: "Be precise.",
			Skills:       []spec.Skill{{ID: fmt.Sprintf("sk%d", i), Name: "Lookup", Type: skills[i%4]}},
			Connectors:   []spec.Connector{{ID: "drive", Type: "google-drive", Scopes: []string{"read"}}},
			Knowledge:    []spec.KnowledgeItem{{ID: fmt.Sprintf("k%d", i), Name: "handbook.pdf", MimeType: "application/pdf"}},
			Usage:        &spec.AssistantUsage{ConversationCount: int64(i * 3), UserCount: int64(i % 6), LastUsedAt: spec.NewTime(updated)},
		}
		t.assistants = append(t.assistants, &refItem{id: a.ID, at: updated, idx: i, v: a})
	}

	// Events: every category, ties at two instants.
	actions := []string{"Created", "Updated", "Deleted", "Enabled", "Disabled", "Exported", "Shared", "SignedIn"}
	actors := []string{spec.ActorUser, spec.ActorAPIKey, spec.ActorServiceAccount, spec.ActorSystem}
	for i := range ne {
		at := base.Add(time.Duration(i)*3*time.Hour + time.Duration(i%7*13)*time.Millisecond)
		switch {
		case ne >= 64 && i >= 40 && i < 45:
			at = base.Add(120*time.Hour + 500*time.Millisecond)
		case ne >= 64 && i >= 60 && i < 63:
			at = base.Add(180 * time.Hour)
		}
		cat := spec.EventCategories[i%len(spec.EventCategories)]
		e := spec.Event{
			ID: stableID("evt", tenant, i), OccurredAt: spec.NewTime(at), Type: fmt.Sprintf("native.%s.%s", strings.ToLower(cat), strings.ToLower(actions[i%len(actions)])),
			Actor:    &spec.Actor{Type: actors[i%4], ID: fmt.Sprintf("user-%d", i%6), Email: fmt.Sprintf("user%d@%s.example", i%6, tenant)},
			Category: cat, Action: actions[i%len(actions)],
			Target:  &spec.Target{Kind: "assistant", ID: assistantIDs[i%max(na, 1)], Name: "Assistant"},
			Payload: json.RawMessage(fmt.Sprintf(`{"seq":%d}`, i)),
		}
		t.events = append(t.events, &refItem{id: e.ID, at: at, category: cat, idx: i, v: e})
	}

	// Usage rows: one per request, in the six days before now.
	for i := range nu {
		c := t.conversations[(i*7)%len(t.conversations)].v.(spec.Conversation)
		asst := ""
		if c.Assistant != nil {
			asst = c.Assistant.ID
		}
		t.usage = append(t.usage, refUsageRow{
			at:    now.Add(-10*time.Minute - time.Duration(i)*19*time.Minute).Truncate(time.Millisecond),
			model: c.Model, assistant: asst, user: c.User.ID, department: c.User.Department, conversation: c.ID,
			in: int64(200 + i%50), out: int64(80 + i%30), cost: float64(i%5) * 0.125,
		})
	}

	for _, l := range [][]*refItem{t.conversations, t.assistants, t.events} {
		sort.SliceStable(l, func(a, b int) bool { return itemLess(l[a], l[b]) })
	}
	return t
}

// itemLess reports whether a sorts before b in keyset order.
func itemLess(a, b *refItem) bool {
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.id < b.id
}
