package consumer

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

func TestFastCheckers(t *testing.T) {
	t.Parallel()
	for _, r := range Resources {
		require.NotNil(t, fastCheckers[r], "%s: its schema has no fast path, every record goes through the library", r)
	}
}

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

// TestParseRecordFastPath: realistic records take the fast path, and the
// result of parseRecord is the same with and without it.
func TestParseRecordFastPath(t *testing.T) {
	t.Parallel()
	for r, raws := range demoRecords(t) {
		for _, raw := range raws {
			var inst any
			require.NoError(t, json.Unmarshal(raw, &inst))
			require.True(t, fastCheckers[r].Check(inst), "%s: the fast path refuses %s", r, raw)
			fast, slow := parseRecordChecked(r, raw, fastCheckers[r]), parseRecordChecked(r, raw, nil)
			require.Empty(t, fast.reason, "%s: %s", r, raw)
			require.True(t, reflect.DeepEqual(fast, slow), "%s: %s", r, raw)
		}
	}
}

// FuzzParseRecordFastPath: with the fast check or without it, parseRecord
// keeps the same records and quarantines the rest with the same reason,
// byte for byte.
func FuzzParseRecordFastPath(f *testing.F) {
	for _, raws := range demoRecords(f) {
		for _, raw := range raws[:3] {
			f.Add([]byte(raw))
			// Near misses: a bad timestamp, an unknown enum value, a
			// negative count.
			for _, edit := range [][2]string{{`Z"`, `+01:00"`}, {`"user"`, `"developer"`}, {`"hour"`, `"week"`}, {`:1`, `:-1`}, {`"id":"`, `"id":7,"x":"`}} {
				if m := strings.Replace(string(raw), edit[0], edit[1], 1); m != string(raw) {
					f.Add([]byte(m))
				}
			}
		}
	}
	f.Add([]byte(`{"id":"c","startedAt":"2026-01-02T03:04:05Z","messages":[{"role":"developer","createdAt":"2026-01-02T03:04:05z"}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, r := range Resources {
			fast, slow := parseRecordChecked(r, raw, fastCheckers[r]), parseRecordChecked(r, raw, nil)
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%s: with the fast check %+v, without %+v, for %q", r, fast, slow, raw)
			}
		}
	})
}
