package sources_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// TestOrgUsage draws an organisation's usage by day: in total, per source,
// per model and per user, summed over its two sources.
func TestOrgUsage(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newOverlapEnv(t, db)
		u, err := e.src.OrgUsage(ctx, e.org.ID, sources.OrgUsageQuery{})
		require.NoError(t, err)
		require.Equal(t, spec.GranularityDay, u.Granularity)
		require.Equal(t, 30*24*time.Hour, u.To.Sub(u.From))
		require.Len(t, u.Sources, 2)
		sum := func(ps []sqlstore.UsagePoint) (req, in int64, cost float64) {
			for _, p := range ps {
				req += p.Requests
				in += p.InputTokens
				require.NotNil(t, p.Cost)
				require.True(t, p.CostComplete)
				cost += *p.Cost
			}
			return req, in, cost
		}
		// 24 requests of 10..240 input tokens in each source, costing
		// 0.125 each in the first, 0.25 in the second.
		for name, series := range map[string][]sqlstore.UsagePoint{"total": u.Total, "by source": u.BySource, "by model": u.ByModel, "by user": u.ByUser} {
			req, in, cost := sum(series)
			require.Equal(t, int64(48), req, name)
			require.Equal(t, int64(2*10*24*25/2), in, name)
			require.InDelta(t, 24*0.125+24*0.25, cost, 1e-9, name)
		}
		perSource := map[string]int64{}
		for _, p := range u.BySource {
			perSource[p.Source] += p.Requests
			require.Empty(t, p.Model)
		}
		require.Equal(t, map[string]int64{e.srcIDs[0]: 24, e.srcIDs[1]: 24}, perSource)
		models := map[string]int64{}
		for _, p := range u.ByModel {
			models[p.Model] += p.Requests
		}
		require.Equal(t, map[string]int64{"m0": 24, "m1": 24}, models)
		users := map[string]int64{}
		for _, p := range u.ByUser {
			users[p.UserID] += p.Requests
			require.Equal(t, int64(1), p.ActiveUsers)
		}
		require.Len(t, users, 3)
		for i := 1; i < len(u.Total); i++ {
			require.True(t, u.Total[i-1].Start.Before(u.Total[i].Start))
		}

		// Hourly, a range of one day.
		h, err := e.src.OrgUsage(ctx, e.org.ID, sources.OrgUsageQuery{Granularity: spec.GranularityHour,
			From: overlapBase.Add(-30 * time.Minute), To: overlapBase.Add(23*time.Hour + time.Minute)})
		require.NoError(t, err)
		require.Equal(t, overlapBase.Add(-time.Hour), h.From)
		require.Equal(t, overlapBase.Add(24*time.Hour), h.To)
		for _, p := range h.Total {
			require.Equal(t, time.Hour, p.End.Sub(p.Start))
		}
		// A series by source and model, of one source.
		pts, err := e.src.UsageSeries(ctx, e.org.ID, sqlstore.UsageSeriesQuery{Sources: []string{e.srcIDs[1]}, Start: u.From, End: u.To,
			GroupBy: []string{sqlstore.DimensionSource, spec.DimensionModel}})
		require.NoError(t, err)
		for _, p := range pts {
			require.Equal(t, e.srcIDs[1], p.Source)
			require.NotEmpty(t, p.Model)
		}

		_, err = e.src.OrgUsage(ctx, "00000000-0000-4000-8000-000000000000", sources.OrgUsageQuery{})
		require.ErrorIs(t, err, spec.ErrNotFound)
		_, err = e.src.OrgUsage(ctx, e.org.ID, sources.OrgUsageQuery{Granularity: "week"})
		require.ErrorIs(t, err, spec.ErrInvalid)
		others, err := e.src.List(ctx, e.other.ID)
		require.NoError(t, err)
		_, err = e.src.UsageSeries(ctx, e.org.ID, sqlstore.UsageSeriesQuery{Sources: []string{others[0].ID}, Start: u.From, End: u.To})
		require.ErrorIs(t, err, spec.ErrNotFound)
	})
}

// TestSearchOrgConversations searches an organisation's conversations by
// user, assistant and time range across its two sources, page by page.
func TestSearchOrgConversations(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newOverlapEnv(t, db)
		walk := func(q sqlstore.ConversationSearch) []sqlstore.FoundConversation {
			t.Helper()
			var out []sqlstore.FoundConversation
			for range 100 {
				p, err := e.src.SearchConversations(ctx, e.org.ID, q)
				require.NoError(t, err)
				out = append(out, p.Items...)
				if p.Next == nil {
					return out
				}
				q.After = p.Next
			}
			t.Fatal("the search does not end")
			return nil
		}
		from, to := overlapBase.Add(-9*time.Hour), overlapBase.Add(-2*time.Hour)
		for _, limit := range []int{1, 2, 7} {
			all := walk(sqlstore.ConversationSearch{Limit: limit})
			require.Equal(t, 29, len(all), "two sources of 15, one tombstone left out")
			seen := map[string]bool{}
			for i, f := range all {
				key := f.Source + "/" + f.Conversation.ID
				require.False(t, seen[key], key)
				seen[key] = true
				require.Contains(t, string(f.JSON), `"sourceId":"`+f.Source+`"`)
				if i > 0 {
					prev := all[i-1].Position
					require.False(t, f.Position.StartedAt.After(prev.StartedAt))
				}
			}
			// u1 has c00, c03 ... c12 in each source.
			byUser := walk(sqlstore.ConversationSearch{Limit: limit, UserID: "u1"})
			require.Equal(t, 10, len(byUser))
			for _, f := range byUser {
				require.Equal(t, "u1", f.Conversation.User.ID)
			}
			byAssistant := walk(sqlstore.ConversationSearch{Limit: limit, AssistantID: "a1", From: from, To: to})
			require.NotEmpty(t, byAssistant)
			for _, f := range byAssistant {
				require.Equal(t, "a1", f.Conversation.Assistant.ID)
				require.False(t, f.Conversation.StartedAt.Before(from))
				require.True(t, f.Conversation.StartedAt.Before(to))
			}
			one := walk(sqlstore.ConversationSearch{Limit: limit, Sources: []string{e.srcIDs[1]}})
			require.Equal(t, 15, len(one))
		}
		_, err := e.src.SearchConversations(ctx, e.org.ID, sqlstore.ConversationSearch{Sources: []string{"nope"}})
		require.ErrorIs(t, err, spec.ErrNotFound)
		_, err = e.src.SearchConversations(ctx, e.other.ID+"x", sqlstore.ConversationSearch{})
		require.ErrorIs(t, err, spec.ErrNotFound)
	})
}
