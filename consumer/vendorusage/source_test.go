package vendorusage_test

import (
	"context"
	"encoding/json"
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
