package tools_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/telemetry/tools"
	"github.com/aiusage/kit/spec"
)

func TestClaudeCode(t *testing.T) {
	t.Parallel()
	logs, metrics := logsOf(t, "claude_logs.json"), metricsOf(t, "claude_metrics.json")

	var s store
	// Re-sent payloads, in any order, change nothing.
	s.add(metrics, logs, metrics, logs)
	require.Equal(t, map[bucket]total{
		{"claude-code", "claude-sonnet-4-5", "alice@example.com", "2026-11-27T10"}: {tools.Tokens{Input: 100, CacheRead: 1000, CacheWrite: 200, Output: 250}, 0.0123},
		{"claude-code", "claude-haiku-4-5", "alice@example.com", "2026-11-27T10"}:  {tools.Tokens{Input: 10, Output: 20}, 0.0001},
		{"claude-code", "claude-sonnet-4-5", "alice@example.com", "2026-11-27T11"}: {tools.Tokens{Input: 5, Output: 7}, 0.0002},
		{"claude-code", "claude-sonnet-4-5", "bob@example.com", "2026-11-27T10"}:   {tools.Tokens{Input: 1, CacheRead: 3, CacheWrite: 4, Output: 2}, 0.5},
		// Session s3 sent metrics only: they count.
		{"claude-code", "claude-opus-4-1", "carol@example.com", "2026-11-27T10"}: {tools.Tokens{Input: 42, CacheRead: 700, CacheWrite: 80, Output: 60}, 0.25},
	}, roundCosts(s.totals()))

	// The usage itself: time from event.timestamp, identity, cost, keys.
	require.Len(t, logs.Usage, 4)
	u := logs.Usage[0]
	require.Equal(t, time.Date(2026, 11, 27, 10, 15, 5, 123e6, time.UTC), u.Time)
	require.Equal(t, "claude-code", u.Tool)
	require.Equal(t, "2.1.332", u.ToolVersion)
	require.Equal(t, "s1", u.SessionID)
	require.Equal(t, "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", u.Device)
	require.Equal(t, "engineering", u.Department)
	require.Equal(t, tools.OriginEvent, u.Origin)
	require.Equal(t, "claude_code.api_request", u.Source)
	require.NotNil(t, u.CostEstimate)
	require.InDelta(t, 0.0123, *u.CostEstimate, 1e-12)
	require.False(t, u.Cumulative)

	// Events: prompts, decisions, results and errors, without content.
	var types, actions, cats []string
	for _, e := range logs.Events {
		types, actions, cats = append(types, e.Type), append(actions, e.Action), append(cats, e.Category)
		require.Equal(t, "alice@example.com", e.Actor.Email)
		require.Equal(t, spec.ActorUser, e.Actor.Type)
		require.Equal(t, "claude-code", e.Tool)
		require.NotContains(t, string(e.Payload), "Fix the bug")
		require.NotContains(t, string(e.Payload), "tool_input")
	}
	require.Equal(t, []string{"claude_code.user_prompt", "claude_code.tool_decision", "claude_code.tool_result",
		"claude_code.api_error", "claude_code.user_prompt"}, types)
	require.Equal(t, []string{"prompt", "accept", "success", "error", "prompt"}, actions)
	require.Equal(t, []string{spec.CategoryOther, spec.CategoryAccess, spec.CategoryIntegration,
		spec.CategoryIntegration, spec.CategoryOther}, cats)
	var payload map[string]any
	require.NoError(t, json.Unmarshal(logs.Events[3].Payload, &payload))
	require.Equal(t, "overloaded", payload["error"])
	require.Equal(t, "529", payload["status_code"])

	// Only the prompt sent in clear is a Prompt; the redacted one is not.
	require.Len(t, logs.Prompts, 1)
	require.Equal(t, "Fix the bug", logs.Prompts[0].Text)
	require.Equal(t, logs.Events[4].ID, logs.Prompts[0].Key)

	require.Equal(t, tools.Unmapped{LogRecords: 1, Reasons: map[tools.Reason]int{tools.ReasonUnknownEvent: 1}}, logs.Unmapped)
	require.Equal(t, tools.Unmapped{DataPoints: 1, Reasons: map[tools.Reason]int{tools.ReasonNotCounted: 1}}, metrics.Unmapped)
	require.Equal(t, []tools.Assistant{{ID: "claude-code", Name: "claude-code", Version: "2.1.332",
		LastSeen: time.Date(2026, 11, 27, 11, 1, 1, 123e6, time.UTC)}}, logs.Assistants)

	// Keys: unique, and the same on every mapping.
	ks := keys(logs)
	require.Len(t, uniq(ks), len(ks))
	require.Equal(t, ks, keys(logsOf(t, "claude_logs.json")))
	require.Equal(t, keys(metrics), keys(metricsOf(t, "claude_metrics.json")))
}

func uniq(ss []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	return m
}

func TestCodex(t *testing.T) {
	t.Parallel()
	logs := logsOf(t, "codex_logs.json")
	var s store
	s.add(logs, logs)
	require.Equal(t, map[bucket]total{
		// input_token_count includes cached_token_count; the second request's counts arrive as strings.
		{"codex-cli", "gpt-5-codex", "dave@example.com", "2026-11-27T09"}: {Tokens: tools.Tokens{Input: 200 + 500, CacheRead: 1000, CacheWrite: 25, Output: 300 + 40}},
	}, s.totals())
	require.Len(t, logs.Usage, 2)
	require.Nil(t, logs.Usage[0].CostEstimate)
	require.Equal(t, "c-1", logs.Usage[0].SessionID)
	require.Equal(t, "0.171.0", logs.Usage[0].ToolVersion)

	var types, actions []string
	for _, e := range logs.Events {
		types, actions = append(types, e.Type), append(actions, e.Action)
		require.NotContains(t, string(e.Payload), "permission denied")
		require.NotContains(t, string(e.Payload), "command")
	}
	require.Equal(t, []string{"codex.conversation_starts", "codex.user_prompt", "codex.tool_decision", "codex.tool_result"}, types)
	require.Equal(t, []string{"start", "prompt", "approved", "failure"}, actions)
	require.Empty(t, logs.Prompts)
	require.Equal(t, tools.Unmapped{LogRecords: 2, Reasons: map[tools.Reason]int{
		tools.ReasonUnknownEvent: 1, tools.ReasonNotCounted: 1}}, logs.Unmapped)
}

func TestGeminiLogs(t *testing.T) {
	t.Parallel()
	logs := logsOf(t, "gemini_logs.json")
	var s store
	s.add(logs)
	require.Equal(t, map[bucket]total{
		// input includes the cache; thoughts are billed as output; the GenAI twin event is not counted.
		{"gemini-cli", "gemini-2.5-pro", "erin@example.com", "2026-11-27T14"}:   {Tokens: tools.Tokens{Input: 300, CacheRead: 200, Output: 80}},
		{"gemini-cli", "gemini-2.5-flash", "erin@example.com", "2026-11-27T15"}: {Tokens: tools.Tokens{Input: 100, Output: 10}},
	}, s.totals())
	require.Equal(t, "inst-9", logs.Usage[0].Device)
	require.Equal(t, "g-1", logs.Usage[0].SessionID)
	require.Len(t, logs.Events, 2)
	require.Equal(t, spec.CategoryResourceLifecycle, logs.Events[0].Category)
	require.Len(t, logs.Prompts, 1)
	require.Equal(t, "Explain this.", logs.Prompts[0].Text)
	require.Equal(t, tools.Unmapped{LogRecords: 1, Reasons: map[tools.Reason]int{tools.ReasonCountedElsewhere: 1}}, logs.Unmapped)
}
