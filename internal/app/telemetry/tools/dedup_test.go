package tools_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/telemetry/tools"
)

func TestDedup(t *testing.T) {
	t.Parallel()
	u := func(key, tool, session, device string, o tools.Origin) tools.Usage {
		return tools.Usage{Key: key, Tool: tool, SessionID: session, Device: device, Origin: o}
	}
	for _, tc := range []struct {
		name string
		in   []tools.Usage
		want []string
	}{
		{"empty", nil, nil},
		{"events over metrics in a session", []tools.Usage{
			u("m1", "claude-code", "s1", "d", tools.OriginMetric), u("e1", "claude-code", "s1", "d", tools.OriginEvent),
			u("m2", "claude-code", "s2", "d", tools.OriginMetric),
		}, []string{"e1", "m2"}},
		{"events over spans over metrics", []tools.Usage{
			u("s", "codex-cli", "c", "", tools.OriginSpan), u("m", "codex-cli", "c", "", tools.OriginMetric),
			u("e", "codex-cli", "c", "", tools.OriginEvent),
		}, []string{"e"}},
		{"spans over metrics", []tools.Usage{
			u("m", "litellm", "", "", tools.OriginMetric), u("s", "litellm", "", "", tools.OriginSpan),
		}, []string{"s"}},
		{"tools apart", []tools.Usage{
			u("m", "gemini-cli", "s1", "", tools.OriginMetric), u("e", "claude-code", "s1", "", tools.OriginEvent),
		}, []string{"m", "e"}},
		{"no session: by device", []tools.Usage{
			u("m1", "claude-code", "", "d1", tools.OriginMetric), u("m2", "claude-code", "", "d2", tools.OriginMetric),
			u("e1", "claude-code", "s1", "d1", tools.OriginEvent),
		}, []string{"m2", "e1"}},
		{"no session, no device: by tool", []tools.Usage{
			u("m1", "litellm", "", "", tools.OriginMetric), u("s1", "litellm", "x", "", tools.OriginSpan),
		}, []string{"s1"}},
		{"unknown origin kept", []tools.Usage{
			u("x", "t", "s", "", ""), u("e", "t", "s", "", tools.OriginEvent),
		}, []string{"x", "e"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, u := range tools.Dedup(tc.in) {
				got = append(got, u.Key)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestAccumulator(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	cost := func(f float64) *float64 { return &f }
	cum := func(series string, start, s int, out int64, c *float64) tools.Usage {
		return tools.Usage{Key: series, Series: series, Start: at(start), Time: at(s), Cumulative: true,
			Tokens: tools.Tokens{Output: out}, CostEstimate: c}
	}
	delta := tools.Usage{Key: "d", Time: at(5), Tokens: tools.Tokens{Input: 7}}
	for _, tc := range []struct {
		name string
		in   []tools.Usage
		out  int64 // total output counted
		cost float64
	}{
		{"growth", []tools.Usage{cum("a", 0, 10, 5, nil), cum("a", 0, 20, 8, nil), cum("a", 0, 30, 20, nil)}, 20, 0},
		{"duplicates", []tools.Usage{cum("a", 0, 10, 5, nil), cum("a", 0, 10, 5, nil), cum("a", 0, 20, 8, nil), cum("a", 0, 20, 8, nil)}, 8, 0},
		{"reordered", []tools.Usage{cum("a", 0, 30, 20, nil), cum("a", 0, 10, 5, nil), cum("a", 0, 20, 8, nil)}, 20, 0},
		{"lower value is a reset", []tools.Usage{cum("a", 0, 10, 5, nil), cum("a", 0, 20, 3, nil), cum("a", 0, 30, 4, nil)}, 5 + 4, 0},
		{"new start is a restart", []tools.Usage{cum("a", 0, 10, 5, nil), cum("a", 15, 20, 6, nil), cum("a", 0, 12, 9, nil)}, 9 + 6, 0},
		{"series apart", []tools.Usage{cum("a", 0, 10, 5, nil), cum("b", 0, 10, 6, nil)}, 11, 0},
		{"cost", []tools.Usage{cum("c", 0, 10, 0, cost(0.5)), cum("c", 0, 20, 0, cost(1.25)), cum("c", 0, 30, 0, cost(0.25))}, 0, 1.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out int64
			var c float64
			for _, u := range tools.NewAccumulator().Apply(tc.in) {
				require.False(t, u.Cumulative)
				out += u.Tokens.Output
				if u.CostEstimate != nil {
					c += *u.CostEstimate
				}
			}
			require.Equal(t, tc.out, out)
			require.InDelta(t, tc.cost, c, 1e-12)
		})
	}

	// A delta point passes through; a cumulative point that adds nothing is
	// reported as such.
	acc := tools.NewAccumulator()
	got, ok := acc.Add(delta)
	require.True(t, ok)
	require.Equal(t, delta, got)
	_, ok = acc.Add(cum("z", 0, 10, 0, nil))
	require.False(t, ok)

	// Gemini CLI's cache series counts Input negatively: growth is no reset.
	g := func(s int, n int64) tools.Usage {
		return tools.Usage{Series: "g", Start: t0, Time: at(s), Cumulative: true, Tokens: tools.Tokens{Input: -n, CacheRead: n}}
	}
	var sum tools.Tokens
	for _, u := range acc.Apply([]tools.Usage{g(10, 100), g(20, 150), g(30, 40)}) {
		sum = sum.Add(u.Tokens)
	}
	require.Equal(t, tools.Tokens{Input: -190, CacheRead: 190}, sum)
}
