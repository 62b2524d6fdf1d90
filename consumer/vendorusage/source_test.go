package vendorusage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/vendorusage"
	"github.com/aiusage/kit/consumer/vendorusage/vendortest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

var day0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// fake is one of the two vendors' fakes with its constructor.
type fake struct {
	name string
	srv  func() *vendortest.Server
	src  func(vendorusage.Config) (*vendorusage.Source, error)
}

var fakes = []fake{
	{"openai", vendortest.NewOpenAI, vendorusage.NewOpenAI},
	{"anthropic", vendortest.NewAnthropic, vendorusage.NewAnthropic},
}

// fastConfig is a Config for f that neither waits for the rate limiter nor
// backs off long.
func fastConfig(f *vendortest.Server) vendorusage.Config {
	return vendorusage.Config{BaseURL: f.URL, Key: f.Key, Rate: 1000, Burst: 100,
		MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, MaxRetryAfter: 50 * time.Millisecond}
}

// bucket is a usage record as the tests read it.
type bucket struct {
	StartAt     string            `json:"startAt"`
	EndAt       string            `json:"endAt"`
	Granularity string            `json:"granularity"`
	Dimensions  map[string]string `json:"dimensions"`
	Metrics     map[string]any    `json:"metrics"`
}

// walk fetches every page of the window [start, end) and returns the
// records and the number of pages.
func walk(t *testing.T, src consumer.Source, start, end time.Time, limit int) ([]bucket, int) {
	t.Helper()
	var out []bucket
	q := consumer.Query{StartAt: start, EndAt: end, Granularity: spec.GranularityHour, GroupBy: spec.Dimensions, Limit: limit}
	for pages := 1; ; pages++ {
		p, err := src.Fetch(context.Background(), consumer.Usage, q)
		require.NoError(t, err)
		require.True(t, p.Paginated)
		for _, raw := range p.Records {
			var b bucket
			require.NoError(t, json.Unmarshal(raw, &b))
			out = append(out, b)
			findings, err := spec.Validate("usage-bucket", raw)
			require.NoError(t, err)
			require.True(t, spec.Valid(findings), "%s: %v", raw, findings)
		}
		if !p.HasMore {
			return out, pages
		}
		q.Cursor = p.NextCursor
	}
}

func num(t *testing.T, m map[string]any, k string) float64 {
	t.Helper()
	v, ok := m[k].(float64)
	require.True(t, ok, "metric %s in %v", k, m)
	return v
}

func TestOpenAIUsageMapping(t *testing.T) {
	t.Parallel()
	f := vendortest.NewOpenAI()
	defer f.Close()
	f.AddUser("user_a", "Ann@Example.com")
	h := day0.Add(5 * time.Hour)
	f.AddUsage(
		vendortest.Usage{Hour: h, Model: "gpt-4o", User: "user_a", APIKey: "key_1", Project: "proj_1", Requests: 2, Uncached: 100, CacheRead: 50, Output: 30},
		// Another batch and tier of the same four dimensions: summed.
		vendortest.Usage{Hour: h, Model: "gpt-4o", User: "user_a", APIKey: "key_1", Project: "proj_1", Batch: true, ServiceTier: "flex", Requests: 1, Uncached: 10, Output: 3, AudioInput: 4},
		// A user the users endpoint does not know, and usage of no user.
		vendortest.Usage{Hour: h, Model: "gpt-4o-mini", User: "user_gone", APIKey: "key_2", Requests: 1, Uncached: 7, Output: 1},
		vendortest.Usage{Hour: h.Add(time.Hour), Model: "o3", APIKey: "key_2", Project: "proj_2", Requests: 1, Uncached: 5, CacheRead: 5, Output: 2},
	)
	src, err := vendorusage.NewOpenAI(fastConfig(f))
	require.NoError(t, err)
	recs, _ := walk(t, src, day0.Add(time.Hour), day0.Add(10*time.Hour), 0)
	require.Len(t, recs, 3)
	byModel := map[string]bucket{}
	for _, b := range recs {
		require.Equal(t, "hour", b.Granularity)
		byModel[b.Dimensions["model"]] = b
	}
	a := byModel["gpt-4o"]
	require.Equal(t, map[string]string{"model": "gpt-4o", "userId": "ann@example.com", "assistantId": "openai-api-key:key_1",
		"department": "openai-project:proj_1"}, a.Dimensions)
	require.Equal(t, "2026-03-01T05:00:00Z", a.StartAt)
	require.Equal(t, "2026-03-01T06:00:00Z", a.EndAt)
	require.Equal(t, map[string]any{"requests": 3.0, "inputTokens": 160.0, "outputTokens": 33.0,
		"uncachedInputTokens": 110.0, "cacheReadTokens": 50.0, "cacheWriteTokens": 0.0}, a.Metrics)
	require.Equal(t, map[string]string{"model": "gpt-4o-mini", "userId": "openai-user:user_gone", "assistantId": "openai-api-key:key_2"},
		byModel["gpt-4o-mini"].Dimensions)
	require.Equal(t, map[string]string{"model": "o3", "assistantId": "openai-api-key:key_2", "department": "openai-project:proj_2"},
		byModel["o3"].Dimensions)
	require.Equal(t, 10.0, num(t, byModel["o3"].Metrics, "inputTokens"))
}

func TestUnsupportedResources(t *testing.T) {
	t.Parallel()
	for _, fk := range fakes {
		src, err := fk.src(vendorusage.Config{Key: "k", BaseURL: "http://127.0.0.1:1"})
		require.NoError(t, err)
		for _, r := range []consumer.Resource{consumer.Conversations, consumer.Assistants, consumer.Events} {
			_, err := src.Fetch(context.Background(), r, consumer.Query{})
			require.ErrorIs(t, err, provider.ErrUnsupported, "%s %s", fk.name, r)
		}
	}
}

func TestAnthropicUsageMapping(t *testing.T) {
	t.Parallel()
	f := vendortest.NewAnthropic()
	defer f.Close()
	f.AddUser("user_01A", "Bo@Example.com")
	h := day0.Add(3 * time.Hour)
	f.AddUsage(
		vendortest.Usage{Hour: h, Model: "claude-sonnet-4", User: "user_01A", APIKey: "apikey_1", Project: "wrkspc_1", ServiceTier: "standard",
			Uncached: 10, CacheRead: 100, CacheWrite5m: 20, CacheWrite1h: 5, Output: 40, WebSearches: 3},
		vendortest.Usage{Hour: h, Model: "claude-sonnet-4", User: "user_01A", APIKey: "apikey_1", Project: "wrkspc_1", ServiceTier: "batch",
			Uncached: 1, Output: 2},
		// The default workspace (null while grouped) and no account.
		vendortest.Usage{Hour: h, Model: "claude-haiku-4", APIKey: "apikey_2", Uncached: 3, Output: 4},
	)
	src, err := vendorusage.NewAnthropic(fastConfig(f))
	require.NoError(t, err)
	recs, _ := walk(t, src, day0, day0.Add(6*time.Hour), 0)
	require.Len(t, recs, 2)
	byModel := map[string]bucket{}
	for _, b := range recs {
		byModel[b.Dimensions["model"]] = b
	}
	s := byModel["claude-sonnet-4"]
	require.Equal(t, map[string]string{"model": "claude-sonnet-4", "userId": "bo@example.com", "assistantId": "anthropic-api-key:apikey_1",
		"department": "anthropic-workspace:wrkspc_1"}, s.Dimensions)
	require.Equal(t, map[string]any{"requests": 0.0, "inputTokens": 136.0, "outputTokens": 42.0,
		"uncachedInputTokens": 11.0, "cacheReadTokens": 100.0, "cacheWriteTokens": 25.0}, s.Metrics)
	require.Equal(t, map[string]string{"model": "claude-haiku-4", "assistantId": "anthropic-api-key:apikey_2",
		"department": "anthropic-workspace:default"}, byModel["claude-haiku-4"].Dimensions)
	// The request asked for the hourly report grouped by every dimension.
	var usageReq *vendortest.Request
	for _, r := range f.Requests() {
		if r.Path == "/v1/organizations/usage_report/messages" {
			usageReq = &r
		}
		require.Equal(t, f.Key, r.Header.Get("X-Api-Key"))
		require.Equal(t, "2023-06-01", r.Header.Get("Anthropic-Version"))
		require.Empty(t, r.Header.Get("Authorization"))
	}
	require.NotNil(t, usageReq)
	require.Equal(t, []string{"1h"}, usageReq.Query["bucket_width"])
	require.Equal(t, []string{"2026-03-01T00:00:00Z"}, usageReq.Query["starting_at"])
	require.ElementsMatch(t, []string{"api_key_id", "workspace_id", "model", "service_tier", "account_id"}, usageReq.Query["group_by[]"])
}

func TestCosts(t *testing.T) {
	t.Parallel()
	for _, fk := range fakes {
		t.Run(fk.name, func(t *testing.T) {
			t.Parallel()
			f := fk.srv()
			defer f.Close()
			model := func(m string) string {
				if fk.name == "anthropic" {
					return m
				}
				return ""
			}
			item := func(m, dir string) string {
				if fk.name == "anthropic" {
					return m + " " + dir + " tokens"
				}
				return m + ", " + dir
			}
			d1, d2 := day0.Add(24*time.Hour), day0.Add(48*time.Hour)
			f.AddCost(
				vendortest.Cost{Day: d1, Project: "p1", LineItem: item("gpt-x", "input"), Model: model("gpt-x"), USD: "0.1"},
				vendortest.Cost{Day: d1, Project: "p1", LineItem: item("gpt-x", "output"), Model: model("gpt-x"), USD: "0.2"},
				vendortest.Cost{Day: d1, LineItem: "web search tool calls", USD: "1.000001"},
				vendortest.Cost{Day: d2, Project: "p2", LineItem: item("gpt-y", "input"), Model: model("gpt-y"), USD: "12.3456789"},
				// A day outside the window.
				vendortest.Cost{Day: day0.Add(72 * time.Hour), Project: "p2", LineItem: item("gpt-y", "input"), Model: model("gpt-y"), USD: "5"},
			)
			src, err := fk.src(fastConfig(f))
			require.NoError(t, err)
			// From mid-day 0: the costs of days 1 and 2 belong to the window, not day 0's.
			recs, _ := walk(t, src, day0.Add(5*time.Hour), day0.Add(72*time.Hour), 0)
			require.Len(t, recs, 3)
			prefix, costs := "openai-project:", "openai-costs"
			noProject := map[string]string{"assistantId": costs}
			if fk.name == "anthropic" {
				prefix, costs = "anthropic-workspace:", "anthropic-costs"
				noProject = map[string]string{"assistantId": costs, "department": "anthropic-workspace:default"}
			}
			got := map[string]bucket{}
			for _, b := range recs {
				got[b.StartAt+" "+b.Dimensions["department"]] = b
				require.Equal(t, costs, b.Dimensions["assistantId"])
				require.Empty(t, b.Dimensions["userId"])
				require.Equal(t, b.Metrics["cost"], b.Metrics["dailyCost"])
			}
			a := got["2026-03-02T00:00:00Z "+prefix+"p1"]
			require.Equal(t, map[string]string{"model": "gpt-x", "assistantId": costs, "department": prefix + "p1"}, a.Dimensions)
			require.Equal(t, "2026-03-02T01:00:00Z", a.EndAt)
			require.InDelta(t, 0.3, num(t, a.Metrics, "cost"), 1e-12)
			w := got["2026-03-02T00:00:00Z "+noProject["department"]]
			require.Equal(t, noProject, w.Dimensions)
			require.InDelta(t, 1.000001, num(t, w.Metrics, "cost"), 1e-12)
			require.InDelta(t, 12.3456789, num(t, got["2026-03-03T00:00:00Z "+prefix+"p2"].Metrics, "cost"), 1e-12)
		})
	}
}

func TestPagingByBucketLimits(t *testing.T) {
	t.Parallel()
	for _, fk := range fakes {
		t.Run(fk.name, func(t *testing.T) {
			t.Parallel()
			f := fk.srv()
			defer f.Close()
			// 100 users: the OpenAI users endpoint pages by 100, so one more
			// than that is needed; Anthropic pages by 1000.
			n := 101
			if fk.name == "anthropic" {
				n = 1001
			}
			for i := range n {
				f.AddUser(fmt.Sprintf("user_%04d", i), fmt.Sprintf("u%d@example.com", i))
			}
			// One row every 7 hours over 3 days, the last user among them; most buckets empty.
			var want int
			for h := 0; h < 72; h += 7 {
				f.AddUsage(vendortest.Usage{Hour: day0.Add(time.Duration(h) * time.Hour), Model: "m", User: fmt.Sprintf("user_%04d", n-1-h), Uncached: int64(h + 1), Output: 1})
				want++
			}
			f.AddCost(vendortest.Cost{Day: day0, USD: "1"}, vendortest.Cost{Day: day0.Add(24 * time.Hour), USD: "2"})
			src, err := fk.src(fastConfig(f))
			require.NoError(t, err)
			recs, pages := walk(t, src, day0, day0.Add(72*time.Hour), 10)
			require.Equal(t, want+2, len(recs))
			require.Equal(t, 8+1, pages, "72 hourly buckets by 10, then one page of costs")
			for _, b := range recs {
				if b.Dimensions["userId"] != "" {
					require.Contains(t, b.Dimensions["userId"], "@example.com", "every user resolved through the users' pages")
				}
			}
			var usagePages, userPages int
			for _, r := range f.Requests() {
				switch {
				case strings.HasSuffix(r.Path, "/users"):
					userPages++
				case strings.Contains(r.Path, "usage"):
					usagePages++
					require.Equal(t, []string{"10"}, r.Query["limit"])
				}
			}
			require.Equal(t, 8, usagePages)
			require.Equal(t, 2, userPages, "the users list read once, over two pages")
		})
	}
}

func TestCursorChecks(t *testing.T) {
	t.Parallel()
	f := vendortest.NewOpenAI()
	defer f.Close()
	f.AddUsage(vendortest.Usage{Hour: day0, Model: "m", Uncached: 1})
	src, err := vendorusage.NewOpenAI(fastConfig(f))
	require.NoError(t, err)
	ctx := context.Background()
	q := consumer.Query{StartAt: day0, EndAt: day0.Add(48 * time.Hour), Limit: 5}
	p, err := src.Fetch(ctx, consumer.Usage, q)
	require.NoError(t, err)
	require.True(t, p.HasMore)
	for _, bad := range []consumer.Query{
		{Cursor: "not base64!", StartAt: q.StartAt, EndAt: q.EndAt},
		{Cursor: "e30", StartAt: q.StartAt, EndAt: q.EndAt}, // {}
		{Cursor: p.NextCursor, StartAt: q.StartAt, EndAt: q.EndAt.Add(time.Hour)},
		{StartAt: q.StartAt.Add(time.Minute), EndAt: q.EndAt},
		{StartAt: q.EndAt, EndAt: q.StartAt},
		{StartAt: q.StartAt, EndAt: q.EndAt, Granularity: "day"},
		{StartAt: q.StartAt, EndAt: q.EndAt, GroupBy: []string{"model"}},
	} {
		_, err := src.Fetch(ctx, consumer.Usage, bad)
		require.ErrorIs(t, err, provider.ErrInvalid, "%+v", bad)
	}
}

func TestConfigChecks(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		cfg  vendorusage.Config
		want string
	}{
		{vendorusage.Config{}, "Config.Key"},
		{vendorusage.Config{Key: "a\nb"}, "control character"},
		{vendorusage.Config{Key: "k", BaseURL: "ftp://x"}, "Config.BaseURL"},
		{vendorusage.Config{Key: "k", BaseURL: "https://u:p@x"}, "credentials"},
		{vendorusage.Config{Key: "k", Rate: -1}, "must not be negative"},
		{vendorusage.Config{Key: "k", MinBackoff: time.Minute, MaxBackoff: time.Second}, "MaxBackoff"},
	} {
		_, err := vendorusage.NewOpenAI(tt.cfg)
		require.ErrorContains(t, err, tt.want)
	}
	src, err := vendorusage.NewAnthropic(vendorusage.Config{Key: "k"})
	require.NoError(t, err)
	require.Equal(t, "anthropic", src.Vendor())
}
