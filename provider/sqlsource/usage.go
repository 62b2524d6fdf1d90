package sqlsource

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
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

// usagePlan is a usage query resolved to SQL terms.
type usagePlan struct {
	width   int64   // bucket width, ms
	lo, hi  int64   // bucket range [lo, hi), ms, on bucket boundaries
	grouped [4]bool // by index of spec.Dimensions
	after   *provider.UsageKey
	tenant  string
	limit   int
	// postgres selects the PostgreSQL form of the query.
	postgres bool
}

func planUsage(q *provider.UsageQuery) (*usagePlan, error) {
	p := &usagePlan{tenant: q.Tenant, after: q.After, limit: q.Limit}
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

// Columns of usage_rollups, by index of spec.Dimensions.
var usageColumns = [4]string{"model", "assistant_id", "user_id", "department"}

// indexOrder lists the dimensions (by index of spec.Dimensions) in the
// order of the key of usage_rollups: model, department, assistant_id,
// user_id. A GROUP BY on a prefix of it reads the cells in group order.
var indexOrder = [4]int{0, 3, 1, 2}

// sql returns the query that aggregates the cells of buckets [lo, hi) into
// at most limit groups, in UsageKey order (dimensions compare byte by byte:
// BINARY on SQLite, COLLATE "C" columns on PostgreSQL), after the keyset
// position.
func (p *usagePlan) sql(lo, hi int64, limit int) (string, []any) {
	args := sqldb.Args{p.tenant, p.width, lo, hi}
	key := []string{"bucket"} // canonical order
	for i, c := range usageColumns {
		if p.grouped[i] {
			key = append(key, c)
		}
	}
	group := []string{"bucket"} // index order
	for _, i := range indexOrder {
		if p.grouped[i] {
			group = append(group, usageColumns[i])
		}
	}
	keyList := strings.Join(key, ", ")

	var b strings.Builder
	b.WriteString("SELECT " + keyList + `, CAST(sum(requests) AS BIGINT),` +
		` count(DISTINCT NULLIF(conversation_id, '')), count(DISTINCT NULLIF(user_id, '')),` +
		` CAST(sum(input_tokens) AS BIGINT), CAST(sum(output_tokens) AS BIGINT), `)
	if p.postgres {
		// A floating-point sum depends on the order of its terms, which
		// varies with the plan: summed as NUMERIC, a bucket's cost is the
		// same number on every page and every run.
		b.WriteString(`CAST(sum(CAST(cost AS NUMERIC)) AS DOUBLE PRECISION)`)
	} else {
		b.WriteString(`sum(cost)`)
	}
	b.WriteString(" FROM usage_rollups WHERE tenant = $1 AND width = $2 AND bucket >= $3 AND bucket < $4")
	b.WriteString(" GROUP BY " + strings.Join(group, ", "))
	if p.after != nil && lo <= ms(p.after.Start) {
		a := []string{args.Add(ms(p.after.Start))}
		vals := [4]string{p.after.Model, p.after.AssistantID, p.after.UserID, p.after.Department}
		for i := range vals {
			if p.grouped[i] {
				a = append(a, args.Add(vals[i]))
			}
		}
		fmt.Fprintf(&b, " HAVING (%s) > (%s)", keyList, strings.Join(a, ", "))
	}
	fmt.Fprintf(&b, " ORDER BY %s LIMIT %s", keyList, args.Add(limit))
	return b.String(), args
}

// Usage returns a page of usage buckets aggregated in SQL from the requests
// written by [Source.RecordUsage]: buckets of q.Granularity (UTC hours or
// days) with q.Start <= startAt < q.End, one per combination of the grouped
// dimensions that has requests (empty buckets are left out), in
// [provider.UsageKey] order, starting after q.After. Requests counts
// requests, Conversations and ActiveUsers count distinct non-empty
// conversation and user ids, tokens and cost are sums. Dimensions hold
// exactly the grouped keys, "" for an unknown value. A bad granularity,
// groupBy or limit is [provider.ErrInvalid].
//
// A page reads the buckets it needs, not the whole range: it aggregates a
// window of buckets at a time, sized from the groups per bucket seen so far,
// until it has the page.
func (s *Source) Usage(ctx context.Context, q provider.UsageQuery) (provider.Page[spec.UsageBucket], error) {
	p, err := planUsage(&q)
	if err != nil {
		return provider.Page[spec.UsageBucket]{}, err
	}
	p.postgres = s.db.Dialect == sqldb.Postgres
	need := p.limit + 1 // the extra one decides HasMore
	items := make([]spec.UsageBucket, 0, min(need, 128))
	n := int64(1) // buckets in the next window
	for lo := p.lo; lo < p.hi && len(items) < need; {
		hi := p.hi
		if n < (p.hi-lo)/p.width {
			hi = lo + n*p.width
		}
		before := len(items)
		items, err = s.usageWindows(ctx, p, lo, hi, need, items, q.Granularity)
		if err != nil {
			return provider.Page[spec.UsageBucket]{}, err
		}
		got, buckets := int64(len(items)-before), (hi-lo)/p.width
		switch {
		case p.after != nil && lo <= ms(p.after.Start):
			// The position's bucket was partly served already: it says
			// nothing of the groups per bucket.
			n = 1
		case got == 0:
			n = buckets * 4
		default:
			// Enough buckets for the rest of the page at this density,
			// growing at most sixteenfold.
			est := (int64(need-len(items))*buckets*5/4 + got - 1) / got
			n = min(max(est, 1), buckets*16)
		}
		lo = hi
	}
	page := provider.Page[spec.UsageBucket]{Items: items}
	if len(items) > p.limit {
		page.Items, page.HasMore = items[:p.limit], true
	}
	return page, nil
}

// maxUsageParallel bounds the queries one Usage call runs at once.
const maxUsageParallel = 4

// usageWindows appends to items the groups of buckets [lo, hi), until items
// holds need groups. A window of several buckets is split into parts
// aggregated concurrently, on as many connections as there are CPUs (up to
// maxUsageParallel): aggregating is CPU-bound and each part is independent.
func (s *Source) usageWindows(ctx context.Context, p *usagePlan, lo, hi int64, need int, items []spec.UsageBucket, granularity string) ([]spec.UsageBucket, error) {
	buckets := (hi - lo) / p.width
	parts := min(int64(runtime.GOMAXPROCS(0)), maxUsageParallel, buckets)
	if parts <= 1 {
		return s.usageWindow(ctx, p, lo, hi, need-len(items), items, granularity)
	}
	limit := need - len(items)
	results := make([][]spec.UsageBucket, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for i := range parts {
		from, to := lo+buckets*i/parts*p.width, lo+buckets*(i+1)/parts*p.width
		wg.Go(func() {
			results[i], errs[i] = s.usageWindow(ctx, p, from, to, limit, nil, granularity)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for _, r := range results {
		items = append(items, r[:min(len(r), need-len(items))]...)
	}
	return items, nil
}

// usageWindow appends the groups of buckets [lo, hi) to items, at most limit.
func (s *Source) usageWindow(ctx context.Context, p *usagePlan, lo, hi int64, limit int, items []spec.UsageBucket, granularity string) ([]spec.UsageBucket, error) {
	query, args := p.sql(lo, hi, limit)
	st, err := s.prepared(ctx, query)
	if err != nil {
		return nil, dbError(ctx, "usage", err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, dbError(ctx, "usage", err)
	}
	defer rows.Close()

	width := time.Duration(p.width) * time.Millisecond
	var dimVals [4]string
	dest := make([]any, 0, 11)
	for rows.Next() {
		var (
			bucket int64
			m      spec.UsageMetrics
		)
		dest = append(dest[:0], &bucket)
		for i := range dimVals {
			if p.grouped[i] {
				dest = append(dest, &dimVals[i])
			}
		}
		dest = append(dest, &m.Requests, &m.Conversations, &m.ActiveUsers, &m.InputTokens, &m.OutputTokens, &m.Cost)
		if err := rows.Scan(dest...); err != nil {
			return nil, dbError(ctx, "usage", err)
		}
		m.Cost = provider.RoundCost(m.Cost)
		start := fromMS(bucket)
		u := spec.UsageBucket{
			StartAt:     spec.NewTime(start),
			EndAt:       spec.NewTime(start.Add(width)),
			Granularity: granularity,
			Metrics:     m,
		}
		dim := func(i int) *string {
			if !p.grouped[i] {
				return nil
			}
			v := dimVals[i]
			return &v
		}
		u.Dimensions = spec.UsageDimensions{Model: dim(0), AssistantID: dim(1), UserID: dim(2), Department: dim(3)}
		items = append(items, u)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(ctx, "usage", err)
	}
	return items, nil
}
