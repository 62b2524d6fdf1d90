package sqlsource

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// usageFixture records n usage rows of tenant over [from, to) (and a few
// just outside it and on its boundaries) and returns them.
func usageFixture(t *testing.T, s *Source, tenant string, from, to time.Time, n int, seed uint64) []provider.UsageRecord {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	pick := func(vals ...string) string { return vals[r.IntN(len(vals))] }
	span := to.Sub(from)
	var recs []provider.UsageRecord
	for i := range n {
		at := from.Add(time.Duration(r.Int64N(int64(span))))
		switch i {
		case 0:
			at = from // first instant: in
		case 1:
			at = to // end: out
		case 2:
			at = to.Add(-time.Millisecond) // last millisecond: in
		case 3:
			at = from.Add(-time.Millisecond) // out
		case 4:
			at = from.Add(time.Hour - time.Millisecond)
		case 5:
			at = from.Add(time.Hour)
		}
		recs = append(recs, provider.UsageRecord{
			ID:             fmt.Sprintf("r%04d", i),
			At:             at,
			ConversationID: pick("c1", "c2", "c3", "", "C1", "c1"),
			UserID:         pick("u1", "U1", "ü", "", "u_2"),
			Department:     pick("eng", "Eng", "", "sales"),
			Model:          pick("a", "B", "_", "é", ""),
			AssistantID:    pick("", "as1", "as2"),
			InputTokens:    r.Int64N(1000),
			OutputTokens:   r.Int64N(500),
			Cost:           float64(r.IntN(10000)) / 1000,
		})
	}
	require.NoError(t, s.WriteBatch(t.Context(), func(w provider.Writer) error {
		for _, u := range recs {
			if err := w.RecordUsage(t.Context(), tenant, u); err != nil {
				return err
			}
		}
		return nil
	}))
	return recs
}

type usageAcc struct {
	key          provider.UsageKey
	m            spec.UsageMetrics
	convs, users map[string]bool
}

// expectUsage aggregates recs as Usage must, in key order.
func expectUsage(recs []provider.UsageRecord, start, end time.Time, width time.Duration, groupBy []string) []*usageAcc {
	has := func(d string) bool { return slices.Contains(groupBy, d) }
	groups := map[provider.UsageKey]*usageAcc{}
	for _, u := range recs {
		b := u.At.UTC().Truncate(width)
		if b.Before(start) || !b.Before(end) {
			continue
		}
		k := provider.UsageKey{Start: b}
		if has(spec.DimensionModel) {
			k.Model = u.Model
		}
		if has(spec.DimensionAssistantID) {
			k.AssistantID = u.AssistantID
		}
		if has(spec.DimensionUserID) {
			k.UserID = u.UserID
		}
		if has(spec.DimensionDepartment) {
			k.Department = u.Department
		}
		g := groups[k]
		if g == nil {
			g = &usageAcc{key: k, convs: map[string]bool{}, users: map[string]bool{}}
			groups[k] = g
		}
		g.m.Requests++
		g.m.InputTokens += u.InputTokens
		g.m.OutputTokens += u.OutputTokens
		g.m.Cost += u.Cost
		if u.ConversationID != "" {
			g.convs[u.ConversationID] = true
		}
		if u.UserID != "" {
			g.users[u.UserID] = true
		}
	}
	var out []*usageAcc
	for _, g := range groups {
		g.m.Conversations = int64(len(g.convs))
		g.m.ActiveUsers = int64(len(g.users))
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *usageAcc) int {
		switch {
		case a.key.Less(b.key):
			return -1
		case b.key.Less(a.key):
			return 1
		}
		return 0
	})
	return out
}

// walkUsage returns every bucket of q, page by page.
func walkUsage(t *testing.T, s *Source, q provider.UsageQuery) []spec.UsageBucket {
	t.Helper()
	var all []spec.UsageBucket
	for range 10_000 {
		p, err := s.Usage(t.Context(), q)
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Items), q.Limit)
		for i := range p.Items {
			k := provider.BucketKey(&p.Items[i])
			if q.After != nil {
				require.True(t, q.After.Less(k), "%+v served after %+v", k, *q.After)
			}
			q.After = &k
		}
		all = append(all, p.Items...)
		if !p.HasMore {
			return all
		}
		require.Len(t, p.Items, q.Limit)
	}
	t.Fatal("no end")
	return nil
}

// subsets returns every subset of spec.Dimensions, each in canonical order.
func subsets() [][]string {
	var out [][]string
	for mask := range 1 << len(spec.Dimensions) {
		var s []string
		for i, d := range spec.Dimensions {
			if mask&(1<<i) != 0 {
				s = append(s, d)
			}
		}
		out = append(out, s)
	}
	return out
}

func TestUsageSums(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		s := newSource(t, db)
		from := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
		to := from.Add(3 * 24 * time.Hour)
		recs := usageFixture(t, s, "t1", from, to, 600, 7)
		usageFixture(t, s, "t2", from, to, 50, 8) // another tenant's, never counted

		require.Len(t, subsets(), 16)
		for _, gran := range []string{spec.GranularityHour, spec.GranularityDay} {
			width := 24 * time.Hour
			if gran == spec.GranularityHour {
				width = time.Hour
			}
			for _, groupBy := range subsets() {
				want := expectUsage(recs, from, to, width, groupBy)
				for _, limit := range []int{7, 1000} {
					got := walkUsage(t, s, provider.UsageQuery{Tenant: "t1", Start: from, End: to, Granularity: gran, GroupBy: groupBy, Limit: limit})
					require.Len(t, got, len(want), "%s %v limit %d", gran, groupBy, limit)
					var total int64
					for i, b := range got {
						w := want[i]
						msg := fmt.Sprintf("%s %v limit %d bucket %d", gran, groupBy, limit, i)
						require.Equal(t, w.key, provider.BucketKey(&b), msg)
						require.Equal(t, spec.NewTime(w.key.Start), b.StartAt, msg)
						require.Equal(t, spec.NewTime(w.key.Start.Add(width)), b.EndAt, msg)
						require.Equal(t, gran, b.Granularity, msg)
						d := b.Dimensions
						require.Equal(t, slices.Contains(groupBy, spec.DimensionModel), d.Model != nil, msg)
						require.Equal(t, slices.Contains(groupBy, spec.DimensionAssistantID), d.AssistantID != nil, msg)
						require.Equal(t, slices.Contains(groupBy, spec.DimensionUserID), d.UserID != nil, msg)
						require.Equal(t, slices.Contains(groupBy, spec.DimensionDepartment), d.Department != nil, msg)
						require.InDelta(t, w.m.Cost, b.Metrics.Cost, 1e-9, msg)
						wm, gm := w.m, b.Metrics
						wm.Cost, gm.Cost = 0, 0
						require.Equal(t, wm, gm, msg)
						total += gm.Requests
					}
					require.Equal(t, int64(len(recs)-2), total, "%s %v: two records lie outside the range", gran, groupBy)
				}
			}
		}

		// Every page size walks the same buckets.
		groupBy := []string{spec.DimensionModel, spec.DimensionDepartment}
		want := walkUsage(t, s, provider.UsageQuery{Tenant: "t1", Start: from, End: to, Granularity: spec.GranularityDay, GroupBy: groupBy, Limit: 1000})
		for limit := 1; limit <= len(want)+1; limit++ {
			got := walkUsage(t, s, provider.UsageQuery{Tenant: "t1", Start: from, End: to, Granularity: spec.GranularityDay, GroupBy: groupBy, Limit: limit})
			require.Equal(t, want, got, "limit %d", limit)
		}
	})
}

func TestUsageRange(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newSource(t, db)
		day := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
		for i, at := range []time.Time{day.Add(-time.Millisecond), day, day.Add(time.Hour - time.Millisecond), day.Add(time.Hour), day.Add(24*time.Hour - time.Millisecond), day.Add(24 * time.Hour)} {
			require.NoError(t, s.RecordUsage(ctx, "t", provider.UsageRecord{ID: fmt.Sprint(i), At: at, InputTokens: 1 << i}))
		}
		usage := func(gran string, start, end time.Time) []int64 {
			p, err := s.Usage(ctx, provider.UsageQuery{Tenant: "t", Start: start, End: end, Granularity: gran, Limit: 100})
			require.NoError(t, err)
			var out []int64
			for _, b := range p.Items {
				out = append(out, b.Metrics.InputTokens)
			}
			return out
		}
		require.Equal(t, []int64{2 | 4 | 8 | 16}, usage(spec.GranularityDay, day, day.Add(24*time.Hour)))
		require.Equal(t, []int64{1, 2 | 4 | 8 | 16, 32}, usage(spec.GranularityDay, day.Add(-24*time.Hour), day.Add(48*time.Hour)))
		require.Equal(t, []int64{2 | 4, 8}, usage(spec.GranularityHour, day, day.Add(2*time.Hour)))
		require.Equal(t, []int64{2 | 4}, usage(spec.GranularityHour, day, day.Add(time.Hour)))
		require.Equal(t, []int64{8, 16}, usage(spec.GranularityHour, day.Add(time.Hour), day.Add(24*time.Hour)))
		require.Empty(t, usage(spec.GranularityHour, day.Add(2*time.Hour), day.Add(23*time.Hour)))
		require.Empty(t, usage(spec.GranularityDay, day, day))
		require.Empty(t, usage(spec.GranularityDay, day.Add(24*time.Hour), day))
		// Empty buckets are left out; ungrouped, Dimensions is empty.
		p, err := s.Usage(ctx, provider.UsageQuery{Tenant: "t", Start: day, End: day.Add(24 * time.Hour), Granularity: spec.GranularityHour, Limit: 100})
		require.NoError(t, err)
		require.Len(t, p.Items, 3)
		require.Equal(t, spec.UsageDimensions{}, p.Items[0].Dimensions)
	})
}

// TestUsageWindows walks sparse data (bursts separated by long gaps) over
// long ranges, where a page reads several windows of buckets, some empty;
// the rows come from single writes and batches, several into one cell.
func TestUsageWindows(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newSource(t, db)
		s.batchCells = 7 // batches add their cells to usage_rollups several times
		from := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
		r := rand.New(rand.NewPCG(3, 4))
		var recs []provider.UsageRecord
		for burst, day := range []int{0, 1, 2, 40, 41, 200, 364} {
			for i := range 5 + burst*7 {
				recs = append(recs, provider.UsageRecord{
					ID:             fmt.Sprintf("b%d-%d", burst, i),
					At:             from.Add(time.Duration(day)*24*time.Hour + time.Duration(r.IntN(30))*time.Hour + time.Duration(r.IntN(3600_000))*time.Millisecond),
					ConversationID: fmt.Sprintf("c%d", r.IntN(4)),
					UserID:         fmt.Sprintf("u%d", r.IntN(3)),
					Model:          []string{"a", "b"}[r.IntN(2)],
					InputTokens:    int64(r.IntN(100)),
					Cost:           0.25,
				})
			}
		}
		for i, u := range recs {
			if i%3 == 0 {
				require.NoError(t, s.RecordUsage(ctx, "t", u))
			}
		}
		require.NoError(t, s.WriteBatch(ctx, func(w provider.Writer) error {
			for i, u := range recs {
				if i%3 != 0 {
					if err := w.RecordUsage(ctx, "t", u); err != nil {
						return err
					}
				}
			}
			return nil
		}))

		for _, tc := range []struct {
			gran       string
			width      time.Duration
			start, end time.Time
		}{
			{spec.GranularityDay, 24 * time.Hour, from, from.Add(366 * 24 * time.Hour)},
			{spec.GranularityDay, 24 * time.Hour, from.Add(10 * 24 * time.Hour), from.Add(201 * 24 * time.Hour)},
			{spec.GranularityHour, time.Hour, from.Add(-24 * time.Hour), from.Add(31 * 24 * time.Hour)},
			{spec.GranularityHour, time.Hour, from.Add(30 * 24 * time.Hour), from.Add(61 * 24 * time.Hour)},
		} {
			for _, groupBy := range [][]string{nil, {spec.DimensionModel}, {spec.DimensionUserID}, {spec.DimensionModel, spec.DimensionAssistantID, spec.DimensionUserID}} {
				want := expectUsage(recs, tc.start, tc.end, tc.width, groupBy)
				require.NotEmpty(t, want)
				for _, limit := range []int{1, 2, 3, 5, 17, 1000} {
					got := walkUsage(t, s, provider.UsageQuery{Tenant: "t", Start: tc.start, End: tc.end, Granularity: tc.gran, GroupBy: groupBy, Limit: limit})
					require.Len(t, got, len(want), "%s %v limit %d", tc.gran, groupBy, limit)
					for i := range got {
						require.Equal(t, want[i].key, provider.BucketKey(&got[i]))
						wm, gm := want[i].m, got[i].Metrics
						require.InDelta(t, wm.Cost, gm.Cost, 1e-9)
						wm.Cost, gm.Cost = 0, 0
						require.Equal(t, wm, gm)
					}
				}
			}
		}
	})
}

// The code relies on the canonical order of the dimensions.
func TestDimensionOrder(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{spec.DimensionModel, spec.DimensionAssistantID, spec.DimensionUserID, spec.DimensionDepartment}, spec.Dimensions)
}

func TestBucketArithmetic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ m, w, floor, ceil int64 }{
		{0, 10, 0, 0}, {1, 10, 0, 10}, {9, 10, 0, 10}, {10, 10, 10, 10},
		{-1, 10, -10, 0}, {-10, 10, -10, -10}, {-11, 10, -20, -10},
	} {
		require.Equal(t, tc.floor, sqldb.FloorTo(tc.m, tc.w), "floorTo(%d, %d)", tc.m, tc.w)
		require.Equal(t, tc.ceil, sqldb.CeilTo(tc.m, tc.w), "ceilTo(%d, %d)", tc.m, tc.w)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC)
	require.Equal(t, at.UnixMilli()+1, sqldb.MillisCeil(at))
	require.Equal(t, at.UnixMilli(), sqldb.MillisCeil(at.Truncate(time.Millisecond)))
}
