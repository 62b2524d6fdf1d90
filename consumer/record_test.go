package consumer

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// demoRecords returns records of every resource as a provider serves them.
func demoRecords(t testing.TB) map[Resource][]json.RawMessage {
	t.Helper()
	ctx := context.Background()
	src := memsource.New()
	end := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, demodata.Fill(ctx, demodata.Config{Seed: 3, Conversations: 60, Tenant: "t", End: end}, "t", src))
	out := map[Resource][]json.RawMessage{}
	add := func(r Resource, v any) {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		out[r] = append(out[r], b)
	}
	cs, err := src.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", Limit: 100})
	require.NoError(t, err)
	for _, c := range cs.Items {
		add(Conversations, c)
	}
	as, err := src.ListAssistants(ctx, provider.AssistantQuery{Tenant: "t", Limit: 100})
	require.NoError(t, err)
	for _, a := range as.Items {
		add(Assistants, a)
	}
	es, err := src.ListEvents(ctx, provider.EventQuery{Tenant: "t", Limit: 100})
	require.NoError(t, err)
	for _, e := range es.Items {
		add(Events, e)
	}
	us, err := src.Usage(ctx, provider.UsageQuery{Tenant: "t", Start: end.AddDate(0, 0, -60), End: end, Granularity: spec.GranularityDay,
		GroupBy: []string{spec.DimensionModel}, Limit: 100})
	require.NoError(t, err)
	for _, u := range us.Items {
		add(Usage, u)
	}
	for _, r := range Resources {
		require.NotEmpty(t, out[r], "%s: no demo records", r)
	}
	return out
}

// TestParseRecordDemoRecords: realistic records of every resource are kept.
func TestParseRecordDemoRecords(t *testing.T) {
	t.Parallel()
	for r, raws := range demoRecords(t) {
		for _, raw := range raws {
			require.Empty(t, parseRecord(r, raw).reason, "%s: %s", r, raw)
		}
	}
}
