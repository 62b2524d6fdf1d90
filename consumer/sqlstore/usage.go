package sqlstore

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Bucket widths in milliseconds.
const (
	hourMS = int64(time.Hour / time.Millisecond)
	dayMS  = int64(24 * time.Hour / time.Millisecond)
)

// Columns of consumer_records holding the dimensions, by index of
// spec.Dimensions.
var usageColumns = [4]string{"model", "assistant_id", "user_id", "department"}

// usagePlan is a usage query resolved to SQL terms.
type usagePlan struct {
	granularity string
	width       int64   // bucket width, ms
	lo, hi      int64   // bucket range [lo, hi), ms, on bucket boundaries
	grouped     [4]bool // by index of spec.Dimensions
	after       *provider.UsageKey
	// sources are the sources whose buckets add up: one for the collected
	// view of a source, those of a [Merged] tenant otherwise.
	sources  []string
	limit    int
	postgres bool
	// series asks for what [Store.UsageSeries] reads: the groups also by
	// source when bySource, and after the metrics the number of stored
	// buckets summed and of those that carried a cost. Usage reads neither.
	series, bySource bool
	// users, lower-cased, keep to the buckets of these userIds (only
	// [Store.UsageSeries]); none: every bucket.
	users []string
}

func planUsage(q *provider.UsageQuery) (*usagePlan, error) {
	p := &usagePlan{granularity: q.Granularity, sources: []string{q.Tenant}, after: q.After, limit: q.Limit}
	width, grouped, err := q.Check()
	if err != nil {
		return nil, err
	}
	p.width, p.grouped = width.Milliseconds(), grouped
	// Buckets b with Start <= b < End: from Start rounded up to a bucket
	// boundary, to End rounded up; none before the position's bucket.
	p.lo = sqldb.CeilTo(sqldb.MillisCeil(q.Start), p.width)
	p.hi = sqldb.CeilTo(sqldb.MillisCeil(q.End), p.width)
	if q.After != nil {
		p.lo = max(p.lo, sqldb.CeilTo(sqldb.MillisCeil(q.After.Start), p.width))
	}
	return p, nil
}

// floorSQL is the SQL of sqldb.FloorTo(col, w).
func floorSQL(col string, w int64) string {
	return fmt.Sprintf("(%[1]s - ((%[1]s %% %[2]d) + %[2]d) %% %[2]d)", col, w)
}

// sql returns the query aggregating the stored buckets into at most
// p.limit+1 groups in UsageKey order (dimensions compare byte by byte:
// BINARY on SQLite, COLLATE "C" columns on PostgreSQL), after the keyset
// position.
//
// Hour groups add up the stored hour buckets. Day groups add up the stored
// day buckets of each day, or, for a day without any, its hour buckets.
// Buckets marked Missing count for nothing. ActiveUsers counts the distinct
// non-empty userId values of the buckets grouped by userId that have
// requests, plus the activeUsers of the buckets not grouped by userId.
func (p *usagePlan) sql() (string, []any) {
	var args sqldb.Args
	// One source: r.source = $1, the query the collected view of a source
	// has always run; several: an IN list, each source one range of the
	// index of usage buckets.
	inSources := args.Add(p.sources[0])
	if len(p.sources) > 1 {
		ph := []string{inSources}
		for _, src := range p.sources[1:] {
			ph = append(ph, args.Add(src))
		}
		inSources = "IN (" + strings.Join(ph, ", ") + ")"
	} else {
		inSources = "= " + inSources
	}
	lo, hi := args.Add(p.lo), args.Add(p.hi)
	key := []string{"b"}
	if p.bySource {
		key = append(key, "source")
	}
	for i, c := range usageColumns {
		if p.grouped[i] {
			key = append(key, c)
		}
	}
	keyList := strings.Join(key, ", ")

	// Every sum is of terms within [0, maxMetric] and never fails: as
	// NUMERIC on PostgreSQL (exact, unbounded), with total() on SQLite
	// (a float, exact for integers up to 2^53); Usage clamps it to
	// maxMetric. Whatever the stored metrics, no sum overflows or turns
	// negative.
	sum := func(col string) string {
		if p.postgres {
			// Summed as NUMERIC, a floating-point sum does not depend on
			// the order of its terms, which varies with the plan: a
			// bucket's cost is the same number on every page and run.
			return fmt.Sprintf("CAST(sum(CAST(LEAST(GREATEST(%s, 0), %d) AS NUMERIC)) AS DOUBLE PRECISION)", col, maxMetric)
		}
		return fmt.Sprintf("total(min(max(%s, 0), %d))", col, maxMetric)
	}
	var b strings.Builder
	b.WriteString("SELECT " + keyList + ", " + sum("requests") + ", " + sum("conversations") + "," +
		" count(DISTINCT CASE WHEN by_user = 1 AND requests > 0 AND user_id <> '' THEN user_id END)" +
		" + " + sum("CASE WHEN by_user = 1 THEN 0 ELSE active_users END") + ", " +
		sum("input_tokens") + ", " + sum("output_tokens") + ", " + sum("cost") + ", " + sum("estimated_cost") + ", " + sum("daily_cost"))
	if p.series {
		b.WriteString(", count(*), sum(has_cost)")
	}
	b.WriteString("\nFROM (SELECT " + floorSQL("r.time_ms", p.width) + ` AS b, r.source, r.model, r.assistant_id, r.user_id, r.department,
	r.requests, r.conversations, r.active_users, r.input_tokens, r.output_tokens, r.cost, r.estimated_cost, r.daily_cost,
	CASE WHEN (',' || r.grouped || ',') LIKE '%,userId,%' THEN 1 ELSE 0 END AS by_user`)
	if p.series {
		b.WriteString(", CASE WHEN r.has_cost THEN 1 ELSE 0 END AS has_cost")
	}
	b.WriteString(`
	FROM consumer_records r
	WHERE r.source ` + inSources + ` AND r.resource = 'usage' AND r.missing_at IS NULL AND r.time_ms >= ` + lo + ` AND r.time_ms < ` + hi)
	if p.width == hourMS {
		b.WriteString(` AND r.granularity = 'hour'`)
	} else {
		// The day buckets looked for are bounded by the sources and the
		// range too (lo and hi lie on day boundaries): PostgreSQL may run
		// the subquery once as a hashed set, which unbounded held the day
		// buckets of every source in the database.
		b.WriteString(` AND (r.granularity = 'day' OR (r.granularity = 'hour' AND NOT EXISTS (SELECT 1 FROM consumer_records d
		WHERE d.source = r.source AND d.resource = 'usage' AND d.time_ms = ` + floorSQL("r.time_ms", dayMS) + `
		AND d.source ` + inSources + ` AND d.time_ms >= ` + lo + ` AND d.time_ms < ` + hi + `
		AND d.granularity = 'day' AND d.missing_at IS NULL)))`)
	}
	if len(p.users) > 0 {
		// Within the range of the index of usage buckets the sources and
		// times select: the filter bounds no more rows than they do.
		ph := make([]string, len(p.users))
		for i, u := range p.users {
			ph[i] = args.Add(u)
		}
		b.WriteString("\n\tAND lower(r.user_id) IN (" + strings.Join(ph, ", ") + ")")
	}
	b.WriteString(") t")
	if p.after != nil && p.lo <= ms(p.after.Start) {
		// Only Usage pages, never by source.
		a := []string{args.Add(ms(p.after.Start))}
		vals := [4]string{p.after.Model, p.after.AssistantID, p.after.UserID, p.after.Department}
		for i := range vals {
			if p.grouped[i] {
				a = append(a, args.Add(vals[i]))
			}
		}
		// Every row of a group has the group's key: the position filters
		// rows before they are summed.
		fmt.Fprintf(&b, "\nWHERE (%s) > (%s)", keyList, strings.Join(a, ", "))
	}
	fmt.Fprintf(&b, "\nGROUP BY %s ORDER BY %s LIMIT %s", keyList, keyList, args.Add(p.limit+1))
	return b.String(), args
}

// costPart returns a metric that is a part of the cost (estimatedCost,
// dailyCost) of a group whose stored buckets' parts sum to sum and whose
// cost is cost: nil when no part of the cost is such, else the sum rounded
// as costs are, never above cost (sums of the same terms may round apart).
func costPart(sum, cost float64) *float64 {
	e := min(provider.RoundCost(clampMetric(sum)), cost)
	if !(e > 0) {
		return nil
	}
	return &e
}

// sumInt returns a sum of metrics as served: rounded and clamped to [0,
// maxMetric].
func sumInt(f float64) int64 { return int64(math.Round(clampMetric(f))) }

// Usage returns a page of usage buckets of q.Granularity aggregated from the
// buckets collected from source q.Tenant, with q.Start <= startAt < q.End,
// one per combination of the grouped dimensions, in [provider.UsageKey]
// order, starting after q.After. Dimensions hold exactly the grouped keys;
// a dimension the stored buckets did not carry counts as "". See the
// package documentation for how metrics are summed and where ActiveUsers
// and Conversations are approximations. Metrics.EstimatedCost sums the
// buckets' metrics.estimatedCost (the part of their cost that is a tool's
// estimate, a member the service's telemetry buckets carry), nil when that
// is 0; Metrics.DailyCost likewise sums metrics.dailyCost (the part that a
// vendor reports per day and project, which the OpenAI and Anthropic
// sources' cost buckets carry). An unknown source has no buckets. A
// bad granularity, groupBy or limit is [provider.ErrInvalid]. It implements
// [provider.DataSource].
func (s *Store) Usage(ctx context.Context, q provider.UsageQuery) (provider.Page[spec.UsageBucket], error) {
	p, err := planUsage(&q)
	if err != nil {
		return provider.Page[spec.UsageBucket]{}, err
	}
	return s.usage(ctx, p)
}

// usage runs the page p plans.
func (s *Store) usage(ctx context.Context, p *usagePlan) (provider.Page[spec.UsageBucket], error) {
	p.postgres = s.db.Dialect == sqldb.Postgres
	if p.lo >= p.hi {
		return provider.Page[spec.UsageBucket]{Items: []spec.UsageBucket{}}, nil
	}
	query, args := p.sql()
	st, err := s.prepared(ctx, query)
	if err != nil {
		return provider.Page[spec.UsageBucket]{}, dbError(ctx, "usage", err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return provider.Page[spec.UsageBucket]{}, dbError(ctx, "usage", err)
	}
	defer rows.Close()

	width := time.Duration(p.width) * time.Millisecond
	items := make([]spec.UsageBucket, 0, min(p.limit+1, 128))
	var dimVals [4]string
	dest := make([]any, 0, 11)
	for rows.Next() {
		var (
			bucket                       int64
			m                            spec.UsageMetrics
			reqs, convs, active, in, out float64
			estimated, daily             float64
		)
		dest = append(dest[:0], &bucket)
		for i := range dimVals {
			if p.grouped[i] {
				dest = append(dest, &dimVals[i])
			}
		}
		dest = append(dest, &reqs, &convs, &active, &in, &out, &m.Cost, &estimated, &daily)
		if err := rows.Scan(dest...); err != nil {
			return provider.Page[spec.UsageBucket]{}, dbError(ctx, "usage", err)
		}
		m.Requests, m.Conversations, m.ActiveUsers = sumInt(reqs), sumInt(convs), sumInt(active)
		m.InputTokens, m.OutputTokens = sumInt(in), sumInt(out)
		m.Cost = provider.RoundCost(clampMetric(m.Cost))
		m.EstimatedCost = costPart(estimated, m.Cost)
		m.DailyCost = costPart(daily, m.Cost)
		start := fromMS(bucket)
		dim := func(i int) *string {
			if !p.grouped[i] {
				return nil
			}
			v := dimVals[i]
			return &v
		}
		items = append(items, spec.UsageBucket{
			StartAt:     spec.NewTime(start),
			EndAt:       spec.NewTime(start.Add(width)),
			Granularity: p.granularity,
			Dimensions:  spec.UsageDimensions{Model: dim(0), AssistantID: dim(1), UserID: dim(2), Department: dim(3)},
			Metrics:     m,
		})
	}
	if err := rows.Err(); err != nil {
		return provider.Page[spec.UsageBucket]{}, dbError(ctx, "usage", err)
	}
	page := provider.Page[spec.UsageBucket]{Items: items}
	if len(items) > p.limit {
		page.Items, page.HasMore = items[:p.limit], true
	}
	return page, nil
}
