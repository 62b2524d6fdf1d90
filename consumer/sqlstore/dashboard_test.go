package sqlstore_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

func f64(v float64) *float64 { return &v }

// TestUsageSeries groups the buckets of two sources by day and source,
// model or user: sums, distinct users, and costs where known.
func TestUsageSeries(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		for _, src := range []string{"a", "b", "x"} {
			l := acquire(t, s, lease(src, consumer.Usage, "p"))
			noCost := bucket{gran: spec.GranularityHour, start: at(25 * time.Hour), dims: map[string]string{"model": "m2", "userId": "u2"}, requests: 2, in: 7}.record()
			noCost.JSON = []byte(`{"metrics":{"requests":2,"inputTokens":7}}`)
			save(t, s, l, 1,
				bucket{gran: spec.GranularityHour, start: at(time.Hour), dims: map[string]string{"model": "m1", "userId": "u1"}, requests: 1, in: 10, out: 1, cost: 0.25}.record(),
				bucket{gran: spec.GranularityHour, start: at(2 * time.Hour), dims: map[string]string{"model": "m2", "userId": "u" + src}, requests: 3, in: 20, cost: 0.5}.record(),
				noCost)
		}
		series := func(q sqlstore.UsageSeriesQuery) []sqlstore.UsagePoint {
			t.Helper()
			if q.Start.IsZero() {
				q.Start, q.End = at(0), at(48*time.Hour)
			}
			if q.Sources == nil {
				q.Sources = []string{"b", "a"}
			}
			p, err := s.UsageSeries(ctx, q)
			require.NoError(t, err)
			return p
		}
		day0, day1 := at(0), at(24*time.Hour)
		pt := func(start time.Time, req, in, out, active int64, cost *float64, complete bool) sqlstore.UsagePoint {
			return sqlstore.UsagePoint{Start: start, End: start.Add(24 * time.Hour), Requests: req, InputTokens: in, OutputTokens: out,
				ActiveUsers: active, Cost: cost, CostComplete: complete}
		}
		// Totals by day.
		require.Equal(t, []sqlstore.UsagePoint{
			pt(day0, 8, 60, 2, 3, f64(1.5), true),
			pt(day1, 4, 14, 0, 1, nil, false),
		}, series(sqlstore.UsageSeriesQuery{}))
		// By day and source.
		bySource := series(sqlstore.UsageSeriesQuery{GroupBy: []string{sqlstore.DimensionSource}})
		want := []sqlstore.UsagePoint{pt(day0, 4, 30, 1, 2, f64(0.75), true), pt(day0, 4, 30, 1, 2, f64(0.75), true),
			pt(day1, 2, 7, 0, 1, nil, false), pt(day1, 2, 7, 0, 1, nil, false)}
		want[0].Source, want[1].Source, want[2].Source, want[3].Source = "a", "b", "a", "b"
		require.Equal(t, want, bySource)
		// By day and model, by day and user.
		byModel := series(sqlstore.UsageSeriesQuery{GroupBy: []string{spec.DimensionModel}})
		require.Len(t, byModel, 3)
		require.Equal(t, []string{"m1", "m2", "m2"}, []string{byModel[0].Model, byModel[1].Model, byModel[2].Model})
		require.Equal(t, int64(6), byModel[1].Requests)
		byUser := series(sqlstore.UsageSeriesQuery{GroupBy: []string{spec.DimensionUserID}})
		var users []string
		for _, p := range byUser {
			users = append(users, p.Start.Format("02")+":"+p.UserID)
			require.Equal(t, int64(1), p.ActiveUsers)
		}
		require.Equal(t, []string{"01:u1", "01:ua", "01:ub", "02:u2"}, users)
		// By hour, source and model; the other tenant's source is its own.
		hourly := series(sqlstore.UsageSeriesQuery{Granularity: spec.GranularityHour, GroupBy: []string{spec.DimensionModel, sqlstore.DimensionSource}, Sources: []string{"x"}})
		require.Len(t, hourly, 3)
		require.Equal(t, "x", hourly[0].Source)
		require.Equal(t, at(time.Hour), hourly[0].Start)
		require.Equal(t, at(2*time.Hour), hourly[0].End)
		require.Empty(t, series(sqlstore.UsageSeriesQuery{Sources: []string{}}))

		// Kept to some users: their buckets only, matched whatever the case.
		l := acquire(t, s, lease("y", consumer.Usage, "p"))
		save(t, s, l, 1,
			bucket{gran: spec.GranularityDay, start: day0, dims: map[string]string{"model": "m3", "userId": "Carol@Example.COM"}, requests: 5, in: 9}.record(),
			bucket{gran: spec.GranularityDay, start: day0, dims: map[string]string{"model": "m3"}, requests: 7, in: 1, cost: 2}.record())
		one := series(sqlstore.UsageSeriesQuery{UserIDs: []string{"U1"}})
		require.Equal(t, []sqlstore.UsagePoint{pt(day0, 2, 20, 2, 1, f64(0.5), true)}, one)
		two := series(sqlstore.UsageSeriesQuery{UserIDs: []string{"ub", "UA", "ua"}, GroupBy: []string{spec.DimensionUserID}})
		require.Len(t, two, 2)
		require.Equal(t, []string{"ua", "ub"}, []string{two[0].UserID, two[1].UserID})
		require.Equal(t, int64(3), two[0].Requests)
		carol := series(sqlstore.UsageSeriesQuery{Sources: []string{"a", "y"}, UserIDs: []string{"carol@example.com"}})
		require.Equal(t, []sqlstore.UsagePoint{pt(day0, 5, 9, 0, 1, f64(0), true)}, carol)
		require.Empty(t, series(sqlstore.UsageSeriesQuery{Sources: []string{"a", "y"}, UserIDs: []string{"carol"}}))
		many := make([]string, sqlstore.MaxSeriesUsers+1)
		for i := range many {
			many[i] = fmt.Sprintf("u%d", i)
		}

		for name, q := range map[string]sqlstore.UsageSeriesQuery{
			"granularity": {Sources: []string{"a"}, Start: day0, End: day1, Granularity: "week"},
			"dimension":   {Sources: []string{"a"}, Start: day0, End: day1, GroupBy: []string{"team"}},
			"twice":       {Sources: []string{"a"}, Start: day0, End: day1, GroupBy: []string{"source", "source"}},
			"no range":    {Sources: []string{"a"}},
			"backwards":   {Sources: []string{"a"}, Start: day1, End: day0},
			"too long":    {Sources: []string{"a"}, Start: day0, End: day0.Add(32 * 24 * time.Hour), Granularity: spec.GranularityHour},
			"empty user":  {Sources: []string{"a"}, Start: day0, End: day1, UserIDs: []string{""}},
			"many users":  {Sources: []string{"a"}, Start: day0, End: day1, UserIDs: many},
		} {
			_, err := s.UsageSeries(ctx, q)
			require.ErrorIs(t, err, spec.ErrInvalid, name)
		}
	})
}

// TestSearchConversations searches the conversations of two sources by
// user, assistant and time range, newest first, with every page size: no
// conversation skipped or repeated, tombstones and Missing ones left out.
func TestSearchConversations(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		type found struct {
			started    time.Time
			id, source string
			user, asst string
		}
		var all []found
		for _, src := range []string{"a", "b", "x"} {
			l := acquire(t, s, lease(src, consumer.Conversations, "p"))
			var recs []consumer.Record
			for i := range 20 {
				id := fmt.Sprintf("c%02d", (i*3)%20)
				started := at(time.Duration(i/4) * time.Hour) // ties within and across sources
				user, asst := fmt.Sprintf("u%d", i%3), fmt.Sprintf("a%d", i%2)
				body, err := json.Marshal(map[string]any{"id": id, "startedAt": spec.NewTime(started), "updatedAt": spec.NewTime(at(48 * time.Hour)),
					"user": map[string]any{"id": user}, "assistant": map[string]any{"id": asst}})
				require.NoError(t, err)
				recs = append(recs, consumer.Record{ID: id, Time: at(48 * time.Hour), StartedAt: started, JSON: body})
				if src != "x" && i != 5 {
					all = append(all, found{started, id, src, user, asst})
				}
			}
			recs[5].Deleted = true
			recs[5].JSON = []byte(fmt.Sprintf(`{"id":%q,"startedAt":%q,"updatedAt":%q,"deletedAt":%q}`, recs[5].ID,
				spec.NewTime(recs[5].StartedAt), spec.NewTime(at(48*time.Hour)), spec.NewTime(at(48*time.Hour))))
			save(t, s, l, 1, recs...)
		}
		slices.SortFunc(all, func(x, y found) int {
			if c := y.started.Compare(x.started); c != 0 {
				return c
			}
			if x.id != y.id {
				if x.id > y.id {
					return -1
				}
				return 1
			}
			if x.source > y.source {
				return -1
			}
			return 1
		})
		search := func(q sqlstore.ConversationSearch) []found {
			t.Helper()
			var out []found
			for n := 0; ; n++ {
				require.Less(t, n, 200)
				p, err := s.SearchConversations(ctx, q)
				require.NoError(t, err)
				require.LessOrEqual(t, len(p.Items), q.Limit)
				for _, it := range p.Items {
					var v struct {
						SourceID string `json:"sourceId"`
					}
					require.NoError(t, json.Unmarshal(it.JSON, &v))
					require.Equal(t, it.Source, v.SourceID)
					out = append(out, found{it.Conversation.StartedAt.Time, it.Conversation.ID, it.Source, it.Conversation.User.ID, it.Conversation.Assistant.ID})
				}
				if p.Next == nil {
					return out
				}
				q.After = p.Next
			}
		}
		from, to := at(time.Hour), at(4*time.Hour)
		for _, limit := range []int{1, 2, 7, 100} {
			for name, tc := range map[string]struct {
				q    sqlstore.ConversationSearch
				keep func(found) bool
			}{
				"all":       {sqlstore.ConversationSearch{}, func(found) bool { return true }},
				"user":      {sqlstore.ConversationSearch{UserID: "u1"}, func(f found) bool { return f.user == "u1" }},
				"assistant": {sqlstore.ConversationSearch{AssistantID: "a0"}, func(f found) bool { return f.asst == "a0" }},
				"both":      {sqlstore.ConversationSearch{UserID: "u2", AssistantID: "a1"}, func(f found) bool { return f.user == "u2" && f.asst == "a1" }},
				"range": {sqlstore.ConversationSearch{From: from, To: to, UserID: "u0"}, func(f found) bool {
					return f.user == "u0" && !f.started.Before(from) && f.started.Before(to)
				}},
				"nobody": {sqlstore.ConversationSearch{UserID: "u9"}, func(found) bool { return false }},
			} {
				var want []found
				for _, f := range all {
					if tc.keep(f) {
						want = append(want, f)
					}
				}
				q := tc.q
				q.Sources, q.Limit = []string{"b", "a"}, limit
				require.Equal(t, want, search(q), "%s, limit %d", name, limit)
			}
		}
		p, err := s.SearchConversations(ctx, sqlstore.ConversationSearch{})
		require.NoError(t, err)
		require.Empty(t, p.Items)
		p, err = s.SearchConversations(ctx, sqlstore.ConversationSearch{Sources: []string{"a"}})
		require.NoError(t, err)
		require.Len(t, p.Items, 19, "the default limit")
		_, err = s.SearchConversations(ctx, sqlstore.ConversationSearch{Sources: []string{"a"}, Limit: provider.MaxLimit + 1})
		require.ErrorIs(t, err, spec.ErrInvalid)
		_, err = s.SearchConversations(ctx, sqlstore.ConversationSearch{Sources: []string{"a"}, From: to, To: from})
		require.ErrorIs(t, err, spec.ErrInvalid)
	})
}
