package main

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/adapters/openwebui/webui"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// TestMapping checks the mapping of the hand-written sample chats and
// models field by field, on SQLite and on PostgreSQL.
func TestMapping(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	at := func(hoursBefore float64, plusSeconds int) spec.Time {
		return spec.NewTime(end.Add(-time.Duration(hoursBefore * float64(time.Hour))).Add(time.Duration(plusSeconds) * time.Second))
	}
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			src := openSample(t, sampleDSN(t, d, end))
			ctx := t.Context()
			get := func(id string) spec.Conversation {
				t.Helper()
				c, err := src.GetConversation(ctx, tenant, id)
				require.NoError(t, err, id)
				return c
			}
			ids := func(c spec.Conversation) []string {
				var out []string
				for _, m := range c.Messages {
					out = append(out, m.ID)
				}
				return out
			}

			// A regeneration: the branch to currentId is served, the
			// replaced answer is not; every answer's tokens count.
			c := get("chat-branches")
			require.Equal(t, []string{"m-br-u1", "m-br-a2", "m-br-u2", "m-br-a3"}, ids(c))
			require.Equal(t, at(30, 0), c.StartedAt, "chat.created_at is in seconds")
			require.Equal(t, at(30, 125), c.UpdatedAt)
			require.Equal(t, at(30, 60), c.Messages[1].CreatedAt, "message timestamps are in seconds")
			require.Equal(t, &spec.TokenUsage{InputTokens: 170, OutputTokens: 67, TotalTokens: 237, Cost: 0.0013}, c.Usage)
			require.Equal(t, "gpt-4o", c.Model)
			require.Nil(t, c.Assistant)
			require.Equal(t, &spec.User{ID: "u-bob", Email: "bob@example.com", Department: "Engineering", Groups: []string{"Engineering", "Support"}}, c.User)
			require.Equal(t, "active", c.Status)
			var md map[string]any
			require.NoError(t, json.Unmarshal(c.Metadata, &md))
			require.Equal(t, "Rotate a password", md["title"])
			require.Equal(t, []any{"postgres", "ops"}, md["tags"])
			require.EqualValues(t, 5, md["treeMessages"])

			// An edit is a sibling of the original question: only the
			// edited branch is served. Ollama's counts sit in info.usage.
			c = get("chat-edited")
			require.Equal(t, []string{"m-ed-u1e", "m-ed-a1e"}, ids(c))
			require.Equal(t, "Write a haiku about autumn", c.Messages[0].Content)
			require.Equal(t, &spec.TokenUsage{InputTokens: 24, OutputTokens: 25, TotalTokens: 49}, c.Usage)
			require.Equal(t, 0.9, *c.Parameters.Temperature)
			require.Equal(t, &spec.User{ID: "u-erin", Email: "erin@example.com"}, c.User, "no department, no group")

			// Two models side by side: the one currentId points at.
			c = get("chat-multimodel")
			require.Equal(t, []string{"m-mm-u1", "m-mm-a1"}, ids(c))
			require.Equal(t, "gpt-4o-mini", c.Model)
			require.Equal(t, int64(40+23), c.Usage.TotalTokens)

			// A custom model: assistant, base model, its system prompt,
			// parameters and tools; the attachment; pin, folder and share.
			c = get("chat-assistant")
			require.Equal(t, &spec.AssistantRef{ID: "contract-reviewer", Name: "Contract Reviewer"}, c.Assistant)
			require.Equal(t, "gpt-4o", c.Model)
			require.Equal(t, "You review contracts for the legal team. Cite clauses.", c.SystemPrompt)
			require.Equal(t, 0.2, *c.Parameters.Temperature)
			require.Equal(t, int64(2048), *c.Parameters.MaxTokens)
			require.Equal(t, []spec.Tool{{ID: "web_search_tool", Name: "Web Search", Type: "function"}}, c.Tools)
			require.Equal(t, []spec.Attachment{{ID: "file-nda", Kind: spec.AttachmentUploaded, Filename: "acme-nda.pdf", MimeType: "application/pdf",
				Hash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}, c.Attachments)
			md = nil
			require.NoError(t, json.Unmarshal(c.Metadata, &md))
			require.Equal(t, "share-nda", md["shareId"])
			require.Equal(t, true, md["pinned"])
			require.Equal(t, "folder-legal", md["folderId"])

			require.Equal(t, "archived", get("chat-archived").Status)
			require.Equal(t, "in_progress", get("chat-in-progress").Status)

			// An old client's chat: no tree, timestamps in milliseconds
			// where seconds belong, Ollama counts directly in info.
			c = get("chat-legacy")
			require.Equal(t, []string{"m-lg-u1", "m-lg-a1"}, ids(c))
			require.Equal(t, at(60, 1), c.Messages[1].CreatedAt)
			require.Equal(t, &spec.TokenUsage{InputTokens: 5, OutputTokens: 2, TotalTokens: 7}, c.Usage)

			// Deleted chats are gone; the copy kept for a share link is no
			// conversation; another tenant sees nothing.
			for _, id := range []string{"chat-deleted-1", "share-nda"} {
				_, err := src.GetConversation(ctx, tenant, id)
				require.ErrorIs(t, err, provider.ErrNotFound, id)
			}
			_, err := src.GetConversation(ctx, "other", "chat-branches")
			require.ErrorIs(t, err, provider.ErrNotFound)
			all := walkAll(t, src)
			require.NotContains(t, all, "share-nda")
			require.Contains(t, all, "chat-archived")

			// updatedSince is inclusive at the second the chat table keeps.
			p, err := src.ListConversations(ctx, provider.ConversationQuery{Tenant: tenant, UpdatedSince: at(30, 125).Time, Limit: 1000})
			require.NoError(t, err)
			for _, c := range p.Items {
				require.False(t, provider.ConversationKey(&c).Time.Before(at(30, 125).Time), c.ID)
			}
			require.Contains(t, idsOf(p.Items), "chat-branches")
			// A bound between two seconds: the chat updated in the earlier
			// one is before it, for updatedSince and for a cursor's key.
			p, err = src.ListConversations(ctx, provider.ConversationQuery{Tenant: tenant, UpdatedSince: at(30, 125).Add(time.Millisecond), Limit: 1000})
			require.NoError(t, err)
			require.NotContains(t, idsOf(p.Items), "chat-branches")
			key := provider.Key{Time: at(30, 125).Add(-time.Millisecond), ID: "zzz"}
			p, err = src.ListConversations(ctx, provider.ConversationQuery{Tenant: tenant, After: &key, Limit: 1000})
			require.NoError(t, err)
			require.Equal(t, "chat-branches", p.Items[0].ID)
			key = provider.Key{Time: at(30, 125).Time, ID: "chat-branches"}
			p, err = src.ListConversations(ctx, provider.ConversationQuery{Tenant: tenant, After: &key, Limit: 1000})
			require.NoError(t, err)
			require.NotContains(t, idsOf(p.Items), "chat-branches")
			require.Len(t, p.Items, len(all)-len(idsBefore(all, at(30, 125).Time))-1)

			// Assistants: custom models only, visibility from grants.
			a, err := src.GetAssistant(ctx, tenant, "contract-reviewer")
			require.NoError(t, err)
			require.Equal(t, spec.VisibilityTeam, a.Visibility)
			require.Equal(t, "gpt-4o", a.Model)
			require.Equal(t, "You review contracts for the legal team. Cite clauses.", a.Instructions)
			require.Equal(t, &spec.User{ID: "u-carol", Email: "carol@example.com", Department: "Legal"}, a.Owner)
			require.Equal(t, []spec.Skill{{ID: "web_search_tool", Name: "Web Search", Type: spec.SkillFunction},
				{ID: "citations", Name: "citations", Type: spec.SkillBuiltin}, {ID: "vision", Name: "vision", Type: spec.SkillBuiltin}}, a.Skills)
			require.Equal(t, []spec.KnowledgeItem{{ID: "kb-contracts", Name: "Contract templates", Type: "collection"}}, a.Knowledge)
			require.Equal(t, at(160, 0), a.CreatedAt)
			require.Equal(t, at(20, 0), a.UpdatedAt)
			for id, want := range map[string]string{"support-helper": spec.VisibilityOrganisation, "sql-buddy": spec.VisibilityPrivate, "old-translator": spec.VisibilityTeam} {
				a, err := src.GetAssistant(ctx, tenant, id)
				require.NoError(t, err)
				require.Equal(t, want, a.Visibility, id)
			}
			a, err = src.GetAssistant(ctx, tenant, "old-translator")
			require.NoError(t, err)
			require.Equal(t, "inactive", a.Status)
			_, err = src.GetAssistant(ctx, tenant, "gpt-4o")
			require.ErrorIs(t, err, provider.ErrNotFound, "a settings override of a connection model is no assistant")

			// Events: derived from rows; feedback on a deleted chat stays.
			ev, err := src.ListEvents(ctx, provider.EventQuery{Tenant: tenant, Category: spec.CategoryOther, Limit: 100})
			require.NoError(t, err)
			require.Len(t, ev.Items, 4)
			last := ev.Items[3]
			require.Equal(t, "feedback.submitted:fb-3", last.ID)
			require.Equal(t, at(23, 0).Time, last.OccurredAt.Time)
			require.Equal(t, &spec.Actor{Type: spec.ActorUser, ID: "u-carol", Email: "carol@example.com"}, last.Actor)
			var payload struct {
				Data struct{ Rating int } `json:"data"`
				Meta struct {
					ChatID string `json:"chat_id"`
				} `json:"meta"`
			}
			require.NoError(t, json.Unmarshal(last.Payload, &payload))
			require.Equal(t, 1, payload.Data.Rating)
			require.Equal(t, "chat-assistant", payload.Meta.ChatID)
			require.Equal(t, "feedback.submitted:fb-4", ev.Items[0].ID, "feedback on a deleted chat")

			// Usage: every answer of every branch is a request; the tokens
			// add up to the conversations' usage.
			var convTokens, convIn int64
			for _, c := range all {
				if c.Usage != nil {
					convTokens += c.Usage.InputTokens + c.Usage.OutputTokens
					convIn += c.Usage.InputTokens
				}
			}
			u, err := src.Usage(ctx, provider.UsageQuery{Tenant: tenant, Start: end.Add(-9 * 24 * time.Hour), End: end.Add(24 * time.Hour),
				Granularity: spec.GranularityDay, Limit: 1000})
			require.NoError(t, err)
			var bucketTokens, bucketIn int64
			for _, b := range u.Items {
				bucketTokens += b.Metrics.InputTokens + b.Metrics.OutputTokens
				bucketIn += b.Metrics.InputTokens
			}
			require.Equal(t, convTokens, bucketTokens)
			require.Equal(t, convIn, bucketIn)

			// The branch chat's hour: three answers, one user, one chat.
			u, err = src.Usage(ctx, provider.UsageQuery{Tenant: tenant, Start: at(30, 0).Time, End: at(29, 0).Time,
				Granularity: spec.GranularityHour, GroupBy: []string{spec.DimensionModel, spec.DimensionUserID}, Limit: 10})
			require.NoError(t, err)
			b := findBucket(t, u.Items, spec.UsageDimensions{Model: ptr("gpt-4o"), UserID: ptr("u-bob")})
			require.Equal(t, spec.UsageMetrics{Requests: 3, Conversations: 1, ActiveUsers: 1, InputTokens: 170, OutputTokens: 67, Cost: 0.0013}, b.Metrics)

			// The custom model's answer counts for its base model and for
			// the assistant.
			u, err = src.Usage(ctx, provider.UsageQuery{Tenant: tenant, Start: at(24, 0).Time, End: at(23, 0).Time,
				Granularity: spec.GranularityHour, GroupBy: []string{spec.DimensionModel, spec.DimensionAssistantID, spec.DimensionDepartment}, Limit: 10})
			require.NoError(t, err)
			b = findBucket(t, u.Items, spec.UsageDimensions{Model: ptr("gpt-4o"), AssistantID: ptr("contract-reviewer"), Department: ptr("Legal")})
			require.Equal(t, int64(1800), b.Metrics.InputTokens)
		})
	}
}

func ptr(s string) *string { return &s }

// findBucket returns the bucket with dimensions dims.
func findBucket(t *testing.T, buckets []spec.UsageBucket, dims spec.UsageDimensions) spec.UsageBucket {
	t.Helper()
	for _, b := range buckets {
		if reflect.DeepEqual(b.Dimensions, dims) {
			return b
		}
	}
	t.Fatalf("no bucket with dimensions %+v", dims)
	return spec.UsageBucket{}
}

// idsBefore returns the ids of the conversations listed before t.
func idsBefore(all map[string]spec.Conversation, t time.Time) []string {
	var out []string
	for id, c := range all {
		if provider.ConversationKey(&c).Time.Before(t) {
			out = append(out, id)
		}
	}
	return out
}

func idsOf(cs []spec.Conversation) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

// TestSampleIsReadOnly checks that the Source opens a SQLite file read-only.
func TestSampleIsReadOnly(t *testing.T) {
	t.Parallel()
	dsn := sampleDSN(t, "sqlite", time.Now().UTC().Truncate(time.Hour))
	db, _, err := webui.OpenDB(t.Context(), dsn, true)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(t.Context(), `DELETE FROM chat`)
	require.Error(t, err)
}
