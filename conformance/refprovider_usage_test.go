package conformance_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aiusage/kit/spec"
)

// --- usage

var refDims = []string{"model", "assistantId", "userId", "department"}

func (p *refProvider) serveUsage(pr refPrincipal, v url.Values) ([]byte, error) {
	q := refParams{v, p}
	gran := "day"
	if g, ok, err := q.get("granularity"); err != nil {
		return nil, err
	} else if ok {
		switch {
		case g == "hour" || g == "day":
			gran = g
		case !p.has(dBadGranularity200):
			return nil, invalid("granularity", "must be hour or day, got %q", truncate(g))
		}
	}
	var groupBy []string
	if g, ok, err := q.get("groupBy"); err != nil {
		return nil, err
	} else if ok {
		seen := map[string]bool{}
		for _, d := range strings.Split(g, ",") {
			d = strings.TrimSpace(d)
			if !slices.Contains(refDims, d) {
				return nil, invalid("groupBy", "must be a comma-separated subset of %s, got %q", strings.Join(refDims, ","), truncate(d))
			}
			if seen[d] {
				return nil, invalid("groupBy", "names %s twice", d)
			}
			seen[d] = true
		}
		for _, d := range refDims {
			if seen[d] {
				groupBy = append(groupBy, d)
			}
		}
	}
	unit := 24 * time.Hour
	if gran == "hour" {
		unit = time.Hour
	}
	start, err := q.time("startAt")
	if err != nil {
		return nil, err
	}
	end, err := q.time("endAt")
	if err != nil {
		return nil, err
	}
	startSet, endSet := !start.IsZero(), !end.IsZero()
	ceil := func(t time.Time) time.Time {
		if f := t.Truncate(unit); !f.Equal(t) {
			return f.Add(unit)
		}
		return t
	}
	if !endSet {
		end = ceil(time.Now().UTC())
		if startSet && !end.After(start) {
			end = ceil(start.Add(unit))
		}
	}
	if !startSet {
		start = end.Add(-7 * 24 * time.Hour)
	}
	start, end = start.Truncate(unit), ceil(end)
	if !end.After(start) {
		return nil, invalid("endAt", "must be after startAt")
	}
	maxRange := 366 * 24 * time.Hour
	if gran == "hour" {
		maxRange = 31 * 24 * time.Hour
	}
	if end.Sub(start) > maxRange && !p.has(dUsageRangeUnbounded) {
		return nil, invalid("endAt", "the range is over %d days for granularity %s", int(maxRange.Hours()/24), gran)
	}
	limit, err := q.limit()
	if err != nil {
		return nil, err
	}
	digest := filterDigest("granularity", gran, "groupBy", strings.Join(groupBy, ","))
	cur, err := p.readCursor(q, "usage", pr.tenant, digest)
	if err != nil {
		return nil, err
	}
	tenant := pr.tenant
	if cur != nil {
		cs, ce := time.UnixMilli(cur.Start).UTC(), time.UnixMilli(cur.End).UTC()
		if startSet && !start.Equal(cs) || endSet && !end.Equal(ce) {
			return nil, invalid("cursor", "was issued for another startAt/endAt range")
		}
		start, end = cs, ce
		if p.has(dCursorAuthority) && p.tenants[cur.Tenant] != nil {
			tenant = cur.Tenant
		}
	}
	if p.has(dGroupByIgnored) || cur != nil && p.has(dUsageGroupByFirstPage) {
		groupBy = nil
	}

	type bucket struct {
		start time.Time
		key   string
		dims  map[string]string
		m     spec.UsageMetrics
		convs map[string]bool
		users map[string]bool
	}
	buckets := map[string]*bucket{}
	for _, row := range p.tenants[tenant].usage {
		if row.at.Before(start) || !row.at.Before(end) {
			continue
		}
		bs := row.at.Truncate(unit)
		if p.has(dUsageMisaligned) && gran == "day" {
			bs = row.at.Add(-5 * time.Hour).Truncate(unit).Add(5 * time.Hour)
		}
		dims := map[string]string{}
		vals := map[string]string{"model": row.model, "assistantId": row.assistant, "userId": row.user, "department": row.department}
		var parts []string
		for _, d := range groupBy {
			dims[d] = vals[d]
			parts = append(parts, vals[d])
		}
		key := strings.Join(parts, "\x00")
		id := ms(bs) + "|" + key
		b := buckets[id]
		if b == nil {
			b = &bucket{start: bs, key: key, dims: dims, convs: map[string]bool{}, users: map[string]bool{}}
			buckets[id] = b
		}
		b.m.Requests++
		b.m.InputTokens += row.in
		b.m.OutputTokens += row.out
		b.m.Cost += row.cost
		b.convs[row.conversation] = true
		b.users[row.user] = true
	}
	list := make([]*bucket, 0, len(buckets))
	for _, b := range buckets {
		b.m.Conversations, b.m.ActiveUsers = int64(len(b.convs)), int64(len(b.users))
		if p.has(dUsageSumsDiffer) && len(groupBy) > 0 {
			b.m.Requests = b.m.Conversations
		}
		list = append(list, b)
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].start.Equal(list[j].start) {
			return list[i].start.Before(list[j].start)
		}
		return list[i].key < list[j].key
	})
	if cur != nil {
		cat := time.UnixMilli(cur.Ms).UTC()
		i := slices.IndexFunc(list, func(b *bucket) bool {
			return b.start.After(cat) || b.start.Equal(cat) && b.key > cur.Key
		})
		if i < 0 {
			i = len(list)
		}
		list = list[i:]
	}
	page, more := list, false
	if len(page) > limit {
		page, more = page[:limit], true
	}
	recs := make([][]byte, len(page))
	for i, b := range page {
		d := spec.UsageDimensions{}
		for k, v := range b.dims {
			switch k {
			case "model":
				d.Model = ptr(v)
			case "assistantId":
				d.AssistantID = ptr(v)
			case "userId":
				d.UserID = ptr(v)
			case "department":
				d.Department = ptr(v)
			}
		}
		recs[i], _ = json.Marshal(spec.UsageBucket{StartAt: spec.NewTime(b.start), EndAt: spec.NewTime(b.start.Add(unit)),
			Granularity: gran, Dimensions: d, Metrics: b.m})
	}
	var next *string
	if more {
		last := page[len(page)-1]
		s := p.seal(refCursor{Endpoint: "usage", Tenant: tenant, Filters: digest, Ms: last.start.UnixMilli(), Key: last.key,
			Start: start.UnixMilli(), End: end.UnixMilli()})
		next = &s
	}
	return p.envelope(recs, more, next), nil
}
