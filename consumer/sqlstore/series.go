package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// DimensionSource groups a usage series by source ([UsageSeriesQuery]).
const DimensionSource = "source"

// MaxSeriesUsers bounds the userIds a [UsageSeriesQuery] may keep to.
const MaxSeriesUsers = 20

// MaxSeriesPoints bounds the points of one [Store.UsageSeries]: a query
// that would give more is [spec.ErrTooLarge].
const MaxSeriesPoints = 100_000

// UsageSeriesQuery selects a usage series: what a dashboard draws.
type UsageSeriesQuery struct {
	// Sources are the sources whose buckets add up. None: an empty series.
	Sources []string
	// Start and End bound the buckets, Start <= startAt < End, after
	// rounding Start down and End up to the granularity's UTC boundaries.
	// At most [provider.MaxHourlyRange] apart for hours,
	// [provider.MaxDailyRange] for days.
	Start, End time.Time
	// Granularity is spec.GranularityHour or spec.GranularityDay; "" is
	// days.
	Granularity string
	// GroupBy lists the dimensions to group by, each at most once, in any
	// order: DimensionSource and those of spec.Dimensions (model,
	// assistantId, userId, department).
	GroupBy []string
	// UserIDs, when not empty, keep to the stored buckets of these
	// userIds: a bucket counts when its userId, lower-cased, is one of
	// them lower-cased (ASCII letters on SQLite). Buckets not attributed to
	// a user (userId "") never match. At most [MaxSeriesUsers].
	UserIDs []string
}

// UsagePoint is one bucket of a usage series: one time slot and one
// combination of the grouped values.
type UsagePoint struct {
	Start, End time.Time
	// The grouped values; "" for a dimension not grouped, or not known (a
	// stored bucket not grouped by it: a usage bucket by model only counts
	// for userId "").
	Source, Model, AssistantID, UserID, Department string
	// Additive metrics: sums of the stored buckets'.
	Requests, Conversations, InputTokens, OutputTokens int64
	// ActiveUsers is a distinct count of userId within the point when the
	// stored buckets were grouped by userId (see the package
	// documentation).
	ActiveUsers int64
	// Cost is the sum of the costs of the stored buckets that reported
	// one; nil when none did.
	Cost *float64
	// CostComplete reports that every stored bucket summed reported a
	// cost: when false and Cost is set, Cost is a lower bound.
	CostComplete bool
	// EstimatedCost is the part of Cost that is tools' estimates (see
	// [Store.Usage]); nil when none is.
	EstimatedCost *float64
	// DailyCost is the part of Cost that vendors report per day and
	// project, not per person or hour (see [Store.Usage]); nil when none is.
	DailyCost *float64
}

// UsageSeries returns the usage of q.Sources (of q.UserIDs, when given) by
// q.Granularity and q.GroupBy, in order of Start, then Source, Model, AssistantID, UserID and
// Department (byte by byte), without empty points. It adds up the stored
// buckets as [Store.Usage] does; grouped by source, the buckets of each
// source apart. A bad granularity, groupBy or range is [spec.ErrInvalid];
// more than [MaxSeriesPoints] points, [spec.ErrTooLarge].
func (s *Store) UsageSeries(ctx context.Context, q UsageSeriesQuery) ([]UsagePoint, error) {
	p, err := planSeries(&q)
	if err != nil {
		return nil, err
	}
	if len(p.sources) == 0 || p.lo >= p.hi {
		return []UsagePoint{}, nil
	}
	p.postgres = s.db.Dialect == sqldb.Postgres
	query, args := p.sql()
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, dbError(ctx, "usage series", err)
	}
	defer rows.Close()
	out := []UsagePoint{}
	width := time.Duration(p.width) * time.Millisecond
	for rows.Next() {
		if len(out) == MaxSeriesPoints {
			return nil, fmt.Errorf("sqlstore: usage series: more than %d points: narrow the range or the grouping: %w", MaxSeriesPoints, spec.ErrTooLarge)
		}
		var (
			bucket                             int64
			pt                                 UsagePoint
			dims                               [4]string
			reqs, convs, active, input, output float64
			cost, estimated, daily             float64
			buckets, withCost                  int64
		)
		dest := []any{&bucket}
		if p.bySource {
			dest = append(dest, &pt.Source)
		}
		for i := range dims {
			if p.grouped[i] {
				dest = append(dest, &dims[i])
			}
		}
		dest = append(dest, &reqs, &convs, &active, &input, &output, &cost, &estimated, &daily, &buckets, &withCost)
		if err := rows.Scan(dest...); err != nil {
			return nil, dbError(ctx, "usage series", err)
		}
		pt.Start = fromMS(bucket)
		pt.End = pt.Start.Add(width)
		pt.Model, pt.AssistantID, pt.UserID, pt.Department = dims[0], dims[1], dims[2], dims[3]
		pt.Requests, pt.Conversations, pt.ActiveUsers = sumInt(reqs), sumInt(convs), sumInt(active)
		pt.InputTokens, pt.OutputTokens = sumInt(input), sumInt(output)
		if withCost > 0 {
			c := provider.RoundCost(clampMetric(cost))
			pt.Cost = &c
			pt.EstimatedCost = costPart(estimated, c)
			pt.DailyCost = costPart(daily, c)
		}
		pt.CostComplete = withCost == buckets
		out = append(out, pt)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(ctx, "usage series", err)
	}
	return out, nil
}

// planSeries checks q and plans its query.
func planSeries(q *UsageSeriesQuery) (*usagePlan, error) {
	gran := q.Granularity
	if gran == "" {
		gran = spec.GranularityDay
	}
	p := &usagePlan{granularity: gran, limit: MaxSeriesPoints + 1, series: true}
	maxRange := provider.MaxDailyRange
	switch gran {
	case spec.GranularityHour:
		p.width, maxRange = hourMS, provider.MaxHourlyRange
	case spec.GranularityDay:
		p.width = dayMS
	default:
		return nil, provider.Invalid("granularity", "must be %q or %q, not %q", spec.GranularityHour, spec.GranularityDay, gran)
	}
	seen := map[string]bool{}
	for _, d := range q.GroupBy {
		i := slices.Index(spec.Dimensions, d)
		switch {
		case seen[d]:
			return nil, provider.Invalid("groupBy", "dimension %q given twice", d)
		case d == DimensionSource:
			p.bySource = true
		case i < 0:
			return nil, provider.Invalid("groupBy", "unknown dimension %q: want any of %s, %s", d, DimensionSource, strings.Join(spec.Dimensions, ", "))
		default:
			p.grouped[i] = true
		}
		seen[d] = true
	}
	if q.Start.IsZero() || q.End.IsZero() {
		return nil, provider.Invalid("startAt", "a usage series needs a start and an end")
	}
	p.lo = sqldb.FloorTo(sqldb.Millis(q.Start), p.width)
	p.hi = sqldb.CeilTo(sqldb.MillisCeil(q.End), p.width)
	if p.hi <= p.lo {
		return nil, provider.Invalid("endAt", "must be after startAt")
	}
	if time.Duration(p.hi-p.lo)*time.Millisecond > maxRange {
		return nil, provider.Invalid("endAt", "the range is more than %d days; at most %d for granularity %s",
			int(maxRange.Hours()/24), int(maxRange.Hours()/24), gran)
	}
	p.sources = slices.Compact(slices.Sorted(slices.Values(q.Sources)))
	if len(q.UserIDs) > MaxSeriesUsers {
		return nil, provider.Invalid("userId", "at most %d userIds, not %d", MaxSeriesUsers, len(q.UserIDs))
	}
	for _, u := range q.UserIDs {
		if u == "" {
			return nil, provider.Invalid("userId", "an empty userId matches no bucket")
		}
		p.users = append(p.users, strings.ToLower(u))
	}
	p.users = slices.Compact(slices.Sorted(slices.Values(p.users)))
	return p, nil
}
