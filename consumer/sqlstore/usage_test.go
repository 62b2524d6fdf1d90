package sqlstore_test

import (
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

// row is an expected usage bucket, compactly.
type row struct {
	start                   time.Time
	dims                    map[string]string
	requests, convs, active int64
	in, out                 int64
	cost                    float64
}

func (r row) bucket(gran string) spec.UsageBucket {
	width := time.Hour
	if gran == spec.GranularityDay {
		width = 24 * time.Hour
	}
	ptr := func(d string) *string {
		v, ok := r.dims[d]
		if !ok {
			return nil
		}
		return &v
	}
	return spec.UsageBucket{
		StartAt: spec.NewTime(r.start), EndAt: spec.NewTime(r.start.Add(width)), Granularity: gran,
		Dimensions: spec.UsageDimensions{
			Model: ptr(spec.DimensionModel), AssistantID: ptr(spec.DimensionAssistantID),
			UserID: ptr(spec.DimensionUserID), Department: ptr(spec.DimensionDepartment),
		},
		Metrics: spec.UsageMetrics{
			Requests: r.requests, Conversations: r.convs, ActiveUsers: r.active,
			InputTokens: r.in, OutputTokens: r.out, Cost: r.cost,
		},
	}
}

func buckets(gran string, rows ...row) []spec.UsageBucket {
	out := make([]spec.UsageBucket, len(rows))
	for i, r := range rows {
		out[i] = r.bucket(gran)
	}
	return out
}

// usageAll walks every page of q with q.Limit and returns the buckets.
func usageAll(t *testing.T, s *sqlstore.Store, q provider.UsageQuery) []spec.UsageBucket {
	t.Helper()
	var out []spec.UsageBucket
	for pages := 0; ; pages++ {
		require.Less(t, pages, 1000)
		p, err := s.Usage(t.Context(), q)
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Items), q.Limit)
		out = append(out, p.Items...)
		if !p.HasMore {
			return out
		}
		k := provider.BucketKey(&p.Items[len(p.Items)-1])
		q.After = &k
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	d1 := t0
	d2 := t0.Add(24 * time.Hour)
	h := func(day time.Time, hour int) time.Time { return day.Add(time.Duration(hour) * time.Hour) }
	mu := func(model, user string) map[string]string {
		return map[string]string{spec.DimensionModel: model, spec.DimensionUserID: user}
	}
	m := func(model string) map[string]string { return map[string]string{spec.DimensionModel: model} }
	u := func(user string) map[string]string { return map[string]string{spec.DimensionUserID: user} }
	hour, day := spec.GranularityHour, spec.GranularityDay

	// Source "s": hour buckets grouped by model and userId.
	stored := []bucket{
		{gran: hour, start: h(d1, 0), dims: mu("m1", "u1"), requests: 2, convs: 1, active: 1, in: 10, out: 20, cost: 0.1},
		{gran: hour, start: h(d1, 0), dims: mu("m2", "u1"), requests: 1, convs: 1, active: 1, in: 5, out: 5, cost: 0.2},
		{gran: hour, start: h(d1, 1), dims: mu("m1", "u2"), requests: 3, convs: 2, active: 1, in: 30, out: 30, cost: 0.3},
		{gran: hour, start: h(d1, 2), dims: mu("m1", "u3")}, // no requests: u3 is not active
		{gran: hour, start: h(d1, 5), dims: mu("m1", "u1"), requests: 1, convs: 1, active: 1, in: 1, out: 1, cost: 0.05},
		{gran: hour, start: h(d1, 5), dims: mu("m1", ""), requests: 4, convs: 2, in: 4, out: 4, cost: 0.4},
		{gran: hour, start: h(d2, 0), dims: mu("m1", "u1"), requests: 1, convs: 1, active: 1, in: 1, out: 1, cost: 1},
		{gran: hour, start: h(d2, 23), dims: mu("m2", "u2"), requests: 1, convs: 1, active: 1, in: 2, out: 2, cost: 2},
		// Day 3 has a day bucket too, which wins over its hours.
		{gran: hour, start: h(d2.Add(24*time.Hour), 1), dims: mu("m1", "u1"), requests: 1, convs: 1, active: 1, in: 1, out: 1, cost: 1},
		{gran: day, start: d2.Add(24 * time.Hour), dims: mu("m1", "u1"), requests: 50, convs: 9, active: 1, in: 500, out: 500, cost: 5},
	}

	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		l := acquire(t, s, lease("s", consumer.Usage, "p1"))
		var recs []consumer.Record
		for _, b := range stored {
			recs = append(recs, b.record())
		}
		save(t, s, l, 1, recs...)
		d3 := d2.Add(24 * time.Hour)
		q := func(gran string, start, end time.Time, groupBy ...string) provider.UsageQuery {
			return provider.UsageQuery{Tenant: "s", Start: start, End: end, Granularity: gran, GroupBy: groupBy, Limit: 100}
		}

		// Days from hours, grouped by model.
		wantDayModel := buckets(day,
			row{d1, m("m1"), 10, 6, 2, 45, 55, 0.85},
			row{d1, m("m2"), 1, 1, 1, 5, 5, 0.2},
			row{d2, m("m1"), 1, 1, 1, 1, 1, 1},
			row{d2, m("m2"), 1, 1, 1, 2, 2, 2},
			row{d3, m("m1"), 50, 9, 1, 500, 500, 5},
		)
		require.Equal(t, wantDayModel, usageAll(t, s, q(day, d1, d3.Add(24*time.Hour), spec.DimensionModel)))
		for limit := 1; limit <= 5; limit++ {
			qq := q(day, d1, d3.Add(24*time.Hour), spec.DimensionModel)
			qq.Limit = limit
			require.Equal(t, wantDayModel, usageAll(t, s, qq), "limit %d", limit)
		}

		// Days, no grouping: distinct users across models and hours.
		require.Equal(t, buckets(day,
			row{d1, nil, 11, 7, 2, 50, 60, 1.05},
			row{d2, nil, 2, 2, 2, 3, 3, 3},
		), usageAll(t, s, q(day, d1, d3)))

		// Range: only day 2.
		require.Equal(t, wantDayModel[2:4], usageAll(t, s, q(day, d2, d3, spec.DimensionModel)))

		// Hours grouped by userId; "" sorts first; stored hours only.
		require.Equal(t, buckets(hour,
			row{h(d1, 0), u("u1"), 3, 2, 1, 15, 25, 0.3},
			row{h(d1, 1), u("u2"), 3, 2, 1, 30, 30, 0.3},
			row{h(d1, 2), u("u3"), 0, 0, 0, 0, 0, 0},
			row{h(d1, 5), u(""), 4, 2, 0, 4, 4, 0.4},
			row{h(d1, 5), u("u1"), 1, 1, 1, 1, 1, 0.05},
		), usageAll(t, s, q(hour, d1, d2, spec.DimensionUserID)))
		require.Equal(t, buckets(hour,
			row{h(d3, 1), m("m1"), 1, 1, 1, 1, 1, 1},
		), usageAll(t, s, q(hour, d3, d3.Add(24*time.Hour), spec.DimensionModel)), "day buckets are not hours")

		// A requested dimension the stored buckets did not carry is "".
		all := []string{spec.DimensionModel, spec.DimensionAssistantID, spec.DimensionUserID, spec.DimensionDepartment}
		got := usageAll(t, s, q(day, d2, d3, all...))
		require.Equal(t, buckets(day,
			row{d2, map[string]string{"model": "m1", "assistantId": "", "userId": "u1", "department": ""}, 1, 1, 1, 1, 1, 1},
			row{d2, map[string]string{"model": "m2", "assistantId": "", "userId": "u2", "department": ""}, 1, 1, 1, 2, 2, 2},
		), got)

		// Missing buckets count for nothing: sweep day 2's late hour, and
		// day 3's day bucket (its hours then stand in).
		recs2 := []consumer.Record{}
		for _, b := range stored {
			if b.start.Equal(h(d2, 23)) || b.gran == day {
				continue
			}
			recs2 = append(recs2, b.record())
		}
		save(t, s, l, 2, recs2...)
		require.NoError(t, s.EndRun(ctx, consumer.RunEnd{Lease: l, At: d3, Sweep: true, Checkpoint: consumer.Checkpoint{Run: 2}}))
		require.Equal(t, buckets(day,
			row{d2, m("m1"), 1, 1, 1, 1, 1, 1},
			row{d3, m("m1"), 1, 1, 1, 1, 1, 1},
		), usageAll(t, s, q(day, d2, d3.Add(24*time.Hour), spec.DimensionModel)))

		// Buckets not grouped by userId add their activeUsers.
		lt := acquire(t, s, lease("t", consumer.Usage, "p1"))
		save(t, s, lt, 1,
			bucket{gran: hour, start: h(d1, 3), dims: m("m1"), requests: 5, convs: 4, active: 3, cost: 0.1}.record(),
			bucket{gran: hour, start: h(d1, 4), dims: m("m1"), requests: 2, convs: 2, active: 2, cost: 0.2}.record(),
		)
		qt := q(day, d1, d2)
		qt.Tenant = "t"
		require.Equal(t, buckets(day, row{d1, nil, 7, 6, 5, 0, 0, 0.3}), usageAll(t, s, qt))
		qt.GroupBy = []string{spec.DimensionUserID}
		require.Equal(t, buckets(day, row{d1, u(""), 7, 6, 5, 0, 0, 0.3}), usageAll(t, s, qt))

		// Unknown source: no buckets. Bad queries.
		qt.Tenant = "nope"
		require.Empty(t, usageAll(t, s, qt))
		for _, bad := range []provider.UsageQuery{
			{Tenant: "s", Granularity: "week", Start: d1, End: d2, Limit: 1},
			{Tenant: "s", Granularity: day, Start: d1, End: d2, GroupBy: []string{"team"}, Limit: 1},
			{Tenant: "s", Granularity: day, Start: d1, End: d2, GroupBy: []string{"model", "model"}, Limit: 1},
			{Tenant: "s", Granularity: day, Start: d1, End: d2, Limit: 0},
		} {
			_, err := s.Usage(ctx, bad)
			require.ErrorIs(t, err, provider.ErrInvalid, "%+v", bad)
		}
	})
}
