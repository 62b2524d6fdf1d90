package memsource

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Usage implements [provider.DataSource]. It aggregates the tenant's usage
// records whose bucket starts within [q.Start, q.End) on every call.
func (s *Source) Usage(ctx context.Context, q provider.UsageQuery) (provider.Page[spec.UsageBucket], error) {
	if err := ctx.Err(); err != nil {
		return provider.Page[spec.UsageBucket]{}, err
	}
	if err := checkLimit(q.Limit); err != nil {
		return provider.Page[spec.UsageBucket]{}, err
	}
	var step time.Duration
	switch q.Granularity {
	case spec.GranularityHour:
		step = time.Hour
	case spec.GranularityDay:
		step = 24 * time.Hour
	default:
		return provider.Page[spec.UsageBucket]{}, provider.Invalid("granularity", "granularity %q is neither %q nor %q", q.Granularity, spec.GranularityHour, spec.GranularityDay)
	}
	var group dims
	for _, d := range q.GroupBy {
		switch d {
		case spec.DimensionModel:
			group.model = true
		case spec.DimensionAssistantID:
			group.assistant = true
		case spec.DimensionUserID:
			group.user = true
		case spec.DimensionDepartment:
			group.department = true
		default:
			return provider.Page[spec.UsageBucket]{}, provider.Invalid("groupBy", "unknown dimension %q: want %s", d, strings.Join(spec.Dimensions, ", "))
		}
	}
	page := provider.Page[spec.UsageBucket]{Items: []spec.UsageBucket{}}
	if !q.Start.Before(q.End) {
		return page, nil
	}

	aggs := map[provider.UsageKey]*aggregate{}
	s.mu.RLock()
	if t := s.tenantLocked(q.Tenant); t != nil {
		// Every record of a bucket starting at or after q.Start is at or
		// after bucketStart(q.Start); records at or after q.End are in no
		// bucket starting before it.
		from := bucketStart(q.Start, step)
		lo := sort.Search(len(t.usage), func(i int) bool { return !t.usage[i].At.Before(from) })
		for i := lo; i < len(t.usage) && t.usage[i].At.Before(q.End); i++ {
			u := &t.usage[i]
			start := bucketStart(u.At, step)
			if start.Before(q.Start) {
				continue
			}
			k := group.key(start, u)
			if q.After != nil && !q.After.Less(k) {
				continue
			}
			a := aggs[k]
			if a == nil {
				a = &aggregate{conversations: map[string]struct{}{}, users: map[string]struct{}{}}
				aggs[k] = a
			}
			a.add(u)
		}
	}
	s.mu.RUnlock()

	keys := make([]provider.UsageKey, 0, len(aggs))
	for k := range aggs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareUsageKeys)
	if len(keys) > q.Limit {
		keys, page.HasMore = keys[:q.Limit], true
	}
	for _, k := range keys {
		page.Items = append(page.Items, aggs[k].bucket(k, step, q.Granularity, group))
	}
	return page, nil
}

// bucketStart returns the start of the UTC hour or day holding t.
func bucketStart(t time.Time, step time.Duration) time.Time {
	t = t.UTC()
	if step == time.Hour {
		return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, time.UTC)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

func compareUsageKeys(a, b provider.UsageKey) int {
	switch {
	case a.Less(b):
		return -1
	case b.Less(a):
		return 1
	}
	return 0
}

// dims says which dimensions are grouped.
type dims struct {
	model, assistant, user, department bool
}

// key returns the position of u's bucket starting at start: the grouped
// dimensions' values, "" for the others.
func (d dims) key(start time.Time, u *provider.UsageRecord) provider.UsageKey {
	k := provider.UsageKey{Start: start}
	if d.model {
		k.Model = u.Model
	}
	if d.assistant {
		k.AssistantID = u.AssistantID
	}
	if d.user {
		k.UserID = u.UserID
	}
	if d.department {
		k.Department = u.Department
	}
	return k
}

// aggregate accumulates the metrics of one bucket and group.
type aggregate struct {
	m             spec.UsageMetrics
	conversations map[string]struct{}
	users         map[string]struct{}
}

func (a *aggregate) add(u *provider.UsageRecord) {
	a.m.Requests++
	a.m.InputTokens += u.InputTokens
	a.m.OutputTokens += u.OutputTokens
	a.m.Cost += u.Cost
	if u.ConversationID != "" {
		a.conversations[u.ConversationID] = struct{}{}
	}
	if u.UserID != "" {
		a.users[u.UserID] = struct{}{}
	}
}

func (a *aggregate) bucket(k provider.UsageKey, step time.Duration, granularity string, d dims) spec.UsageBucket {
	m := a.m
	m.Conversations = int64(len(a.conversations))
	m.ActiveUsers = int64(len(a.users))
	m.Cost = provider.RoundCost(m.Cost)
	b := spec.UsageBucket{
		StartAt:     spec.NewTime(k.Start),
		EndAt:       spec.NewTime(k.Start.Add(step)),
		Granularity: granularity,
		Metrics:     m,
	}
	str := func(s string) *string { return &s }
	if d.model {
		b.Dimensions.Model = str(k.Model)
	}
	if d.assistant {
		b.Dimensions.AssistantID = str(k.AssistantID)
	}
	if d.user {
		b.Dimensions.UserID = str(k.UserID)
	}
	if d.department {
		b.Dimensions.Department = str(k.Department)
	}
	return b
}
