package tools_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/telemetry/tools"
)

// TestClaudeCodeSpans: Claude Code's beta spans follow the GenAI rules (their
// input includes the cache tokens), so on their own they give the same
// numbers as the api_request events of the same requests; sent beside the
// events they are not counted a second time, in any order.
func TestClaudeCodeSpans(t *testing.T) {
	t.Parallel()
	spans, logs := tracesOf(t, "claude_traces.json"), logsOf(t, "claude_logs.json")
	var alone store
	alone.add(spans, spans)
	require.Equal(t, map[bucket]total{
		{"claude-code", "claude-sonnet-4-5", "alice@example.com", "2026-11-27T10"}: {Tokens: tools.Tokens{Input: 100, CacheRead: 1000, CacheWrite: 200, Output: 250}},
		{"claude-code", "claude-haiku-4-5", "alice@example.com", "2026-11-27T10"}:  {Tokens: tools.Tokens{Input: 10, Output: 20}},
	}, alone.totals())
	require.Equal(t, tools.Unmapped{Spans: 2, Reasons: map[tools.Reason]int{tools.ReasonAggregate: 1, tools.ReasonNoTokens: 1}}, spans.Unmapped)
	require.Equal(t, "s1", spans.Usage[0].SessionID)

	var eventsOnly, both, reversed store
	eventsOnly.add(logs)
	both.add(logs, spans, logs)
	reversed.add(spans, logs)
	require.Equal(t, roundCosts(eventsOnly.totals()), roundCosts(both.totals()))
	require.Equal(t, roundCosts(eventsOnly.totals()), roundCosts(reversed.totals()))
}

// TestDeprecatedGenAIEvents: the per-message events of the older GenAI
// conventions carry no token counts and are not counted (nor kept as
// events or prompts), however their name is sent.
func TestDeprecatedGenAIEvents(t *testing.T) {
	t.Parallel()
	logs := logsOf(t, "genai_deprecated_logs.json")
	require.Empty(t, logs.Usage)
	require.Empty(t, logs.Events)
	require.Empty(t, logs.Prompts)
	require.Equal(t, tools.Unmapped{LogRecords: 5, Reasons: map[tools.Reason]int{tools.ReasonNotCounted: 5}}, logs.Unmapped)
	require.Len(t, logs.Assistants, 1)

	m := metricsOf(t, "genai_metrics.json")
	var withEvents, without store
	withEvents.add(logs, m)
	without.add(m)
	require.Equal(t, without.totals(), withEvents.totals())
}

// TestLiteLLMMetadata: the person, team and key of LiteLLM's metadata.*
// attributes: the end user where it is an email, else the key's user; the
// team as department unless one is set; the key's alias or hash as device.
func TestLiteLLMMetadata(t *testing.T) {
	t.Parallel()
	tr := tracesOf(t, "litellm_traces.json")
	var s store
	s.add(tr, tr)
	const model = "gpt-4o-2024-08-06"
	require.Equal(t, map[bucket]total{
		// input_tokens includes the cache read; total_tokens is not counted.
		{"litellm", model, "carol@example.com", "2026-11-27T17"}: {Tokens: tools.Tokens{Input: 300, CacheRead: 200, Output: 80}},
		{"litellm", model, "erin@example.com", "2026-11-27T17"}:  {Tokens: tools.Tokens{Input: 40, Output: 10}},
		{"litellm", model, "", "2026-11-27T17"}:                  {Tokens: tools.Tokens{Input: 7, Output: 3}},
	}, s.totals())
	require.Len(t, tr.Usage, 3)
	type who struct{ Email, Team, Department, Device string }
	var got []who
	for _, u := range tr.Usage {
		got = append(got, who{u.Email, u.Team, u.Department, u.Device})
	}
	require.Equal(t, []who{
		{"carol@example.com", "platform", "platform", "carol-key"},
		{"erin@example.com", "team-7", "team-7", "carol-key"},
		{"", "platform", "research", "99dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b"},
	}, got)

	// Without metadata.* nothing changes: the team an administrator sets
	// (team.id) is not taken as the department.
	other := tracesOf(t, "genai_traces.json")
	require.Equal(t, who{"frank@example.com", "platform", "", ""},
		who{other.Usage[0].Email, other.Usage[0].Team, other.Usage[0].Department, other.Usage[0].Device})
}

// TestCodexTurnCost: Codex CLI's turn cost is a cost estimate of its own,
// beside the tokens of the turn's events: it adds no tokens and no
// request, is never dropped by the one-source rule, and a turn cost
// without a value is not counted.
func TestCodexTurnCost(t *testing.T) {
	t.Parallel()
	logs := logsOf(t, "codex_turn_cost_logs.json")
	var s store
	s.add(logs, logs)
	require.Equal(t, map[bucket]total{
		{"codex-cli", "gpt-5-codex", "dave@example.com", "2026-11-27T12"}: {
			Tokens: tools.Tokens{Input: 200, CacheRead: 1000, Output: 300}, Cost: 0.012845},
	}, roundCosts(s.totals()))
	require.Len(t, logs.Usage, 3)
	require.Equal(t, tools.OriginEvent, logs.Usage[0].Origin)
	for _, u := range logs.Usage[1:] {
		require.Equal(t, tools.OriginEstimate, u.Origin)
		require.False(t, u.Origin.PerRequest())
		require.True(t, u.Tokens.IsZero())
		require.Equal(t, "c-9", u.SessionID)
	}
	require.Equal(t, tools.Unmapped{LogRecords: 1, Reasons: map[tools.Reason]int{tools.ReasonNotCounted: 1}}, logs.Unmapped)
}

// TestCopilotMetrics: Copilot's own metrics (github.copilot.* and the
// older copilot_chat.* it still sends beside them) are known and not
// counted; its draft GenAI counters repeat gen_ai.client.token.usage and
// are dropped by the one-source rule.
func TestCopilotMetrics(t *testing.T) {
	t.Parallel()
	m := metricsOf(t, "copilot_metrics.json")
	var s store
	s.add(m, m)
	require.Equal(t, map[bucket]total{
		{"copilot-chat", "gpt-4.1-2025-04-14", "frank@example.com", "2026-11-27T16"}: {Tokens: tools.Tokens{Input: 1000, Output: 200}},
	}, s.totals())
	require.Equal(t, tools.Unmapped{DataPoints: 3, Reasons: map[tools.Reason]int{tools.ReasonNotCounted: 3}}, m.Unmapped)
	var drafts int
	for _, u := range m.Usage {
		if u.Origin == tools.OriginDraftMetric {
			drafts++
		}
	}
	require.Equal(t, 4, drafts, "the draft counters are mapped, and the one-source rule drops them")
}

// TestDraftGenAICounters: a tool sending only the draft counters is
// counted by them: input split by gen_ai.token.cache, cumulative series
// turned into deltas in any order; the detailed breakdowns and the
// duration are not counted.
func TestDraftGenAICounters(t *testing.T) {
	t.Parallel()
	m1, m2 := metricsOf(t, "genai_draft_metrics_1.json"), metricsOf(t, "genai_draft_metrics_2.json")
	want := map[bucket]total{
		{"agent-app", "gpt-4.1", "heidi@example.com", "2026-11-27T19"}: {Tokens: tools.Tokens{Input: 160, CacheRead: 400, CacheWrite: 50, Output: 90}},
	}
	for _, order := range [][]tools.Batch{{m1, m2}, {m2, m1, m2}, {m1, m1, m2, m2}} {
		var s store
		s.add(order...)
		require.Equal(t, want, s.totals())
	}
	require.Equal(t, tools.Unmapped{DataPoints: 2, Reasons: map[tools.Reason]int{tools.ReasonNotCounted: 2}}, m1.Unmapped)
	require.True(t, m1.Usage[0].Cumulative)
}

// TestDedupOrigins: metrics outrank the draft counters; a cost estimate of
// its own is always kept and outranks nothing.
func TestDedupOrigins(t *testing.T) {
	t.Parallel()
	u := func(key string, o tools.Origin) tools.Usage {
		return tools.Usage{Key: key, Tool: "t", SessionID: "s", Origin: o}
	}
	var got []string
	for _, x := range tools.Dedup([]tools.Usage{u("d", tools.OriginDraftMetric), u("m", tools.OriginMetric), u("c", tools.OriginEstimate)}) {
		got = append(got, x.Key)
	}
	require.Equal(t, []string{"m", "c"}, got)
	got = nil
	for _, x := range tools.Dedup([]tools.Usage{u("d", tools.OriginDraftMetric), u("c", tools.OriginEstimate)}) {
		got = append(got, x.Key)
	}
	require.Equal(t, []string{"d", "c"}, got)
	got = nil
	for _, x := range tools.Dedup([]tools.Usage{u("c", tools.OriginEstimate), u("e", tools.OriginEvent), u("m", tools.OriginMetric)}) {
		got = append(got, x.Key)
	}
	require.Equal(t, []string{"c", "e"}, got)
}
