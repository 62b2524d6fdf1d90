package conformance

import (
	"slices"
	"sort"

	"github.com/aiusage/kit/spec"
)

// filterPlan is a case with what the full walk says of it.
type filterPlan struct {
	c       filterCase
	matched []int // indices in the full walk of the records matching c
	limit   int
	// exposed counts records of the full walk that do not match c and
	// follow the last record of the first page in keyset order: those a
	// cursor that forgot the filters would bring.
	exposed int
	// binding: every filter of c leaves out some record the others keep.
	binding bool
}

// maxFilteredPages bounds the pages of a filtered walk the page size is
// lowered to.
const maxFilteredPages = 100

// planCase works out the plan of c over the records of the full walk: the
// page size is threePageLimit of the matching records, lowered (down to 1,
// for at most maxFilteredPages pages) when that lets records outside the
// filters follow the first page.
func planCase(recs []record, cols filterColumns, c filterCase) filterPlan {
	p := filterPlan{c: c, binding: true}
	// outside[i] counts the records from i on that do not match c.
	outside := make([]int, len(recs)+1)
	for i := len(recs) - 1; i >= 0; i-- {
		outside[i] = outside[i+1]
		ok, judged := c.matchesAt(cols, i)
		if judged && !ok {
			outside[i]++
		}
		if ok && judged && recs[i].ID != "" {
			p.matched = append(p.matched, i)
		}
	}
	slices.Reverse(p.matched)
	m := len(p.matched)
	exposed := func(limit int) int {
		if m <= limit {
			return 0
		}
		return outside[p.matched[limit-1]+1]
	}
	p.limit = threePageLimit(m)
	p.exposed = exposed(p.limit)
	if p.exposed == 0 {
		// exposed falls as the limit grows: the largest limit that
		// exposes, if any.
		lo := max(1, (m+maxFilteredPages-1)/maxFilteredPages)
		if lo < p.limit && exposed(lo) > 0 {
			hi := p.limit // exposed(hi) == 0
			for hi-lo > 1 {
				mid := (lo + hi) / 2
				if exposed(mid) > 0 {
					lo = mid
				} else {
					hi = mid
				}
			}
			p.limit, p.exposed = lo, exposed(lo)
		}
	}
	if len(c) > 1 {
		for i := range c {
			others := append(slices.Clone(c[:i]), c[i+1:]...)
			cuts := false
			for j := range recs {
				ok, judged := others.matchesAt(cols, j)
				if own, oj := c[i].holdsAt(cols, j); judged && ok && oj && !own {
					cuts = true
					break
				}
			}
			p.binding = p.binding && cuts
		}
	}
	return p
}

// betterPlan reports whether plan a is a better test than b: three pages or
// more, then records outside the filters after the first page, then every
// filter binding, then a walk of about 30 records.
func betterPlan(a, b filterPlan) bool {
	ka := [3]bool{len(a.matched) >= 3, a.exposed > 0, a.binding}
	kb := [3]bool{len(b.matched) >= 3, b.exposed > 0, b.binding}
	for i := range ka {
		if ka[i] != kb[i] {
			return ka[i]
		}
	}
	da, db := len(a.matched)-30, len(b.matched)-30
	return max(da, -da) < max(db, -db)
}

// candidateValues returns the values a filter is tried at: up to n values of
// the field served in recs, spread over their range (for the category, the
// categories served).
func candidateValues(recs []record, resource, param string, n int) []filterValue {
	if param == categoryParam {
		var out []filterValue
		for _, c := range spec.EventCategories {
			for _, rec := range recs {
				if got, _ := rec.Obj["category"].(string); got == c {
					out = append(out, filterValue{value: c})
					break
				}
			}
		}
		return out
	}
	f, ok := lowerBoundOf(resource, param)
	if !ok {
		return nil
	}
	var vals []filterValue
	seen := map[int64]bool{}
	for _, rec := range recs {
		if v, t, ok := timestampOf(rec, f.field); ok && !seen[t.UnixNano()] {
			seen[t.UnixNano()] = true
			vals = append(vals, filterValue{f: f, value: v, at: t})
		}
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i].at.Before(vals[j].at) })
	if len(vals) <= n {
		return vals
	}
	out := make([]filterValue, 0, n)
	for i := range n {
		out = append(out, vals[i*(len(vals)-1)/(n-1)])
	}
	return out
}

// chooseFilterBounds picks the case of params to walk: among values served
// in the full walk, the one betterPlan prefers. ok is false when no record
// has the fields to filter at.
func chooseFilterBounds(recs []record, resource string, params []string) (filterPlan, bool) {
	per := 24
	if len(params) > 1 {
		per = 8
	}
	cases := []filterCase{nil}
	for _, p := range params {
		cands := candidateValues(recs, resource, p, per)
		if len(cands) == 0 {
			return filterPlan{}, false
		}
		var next []filterCase
		for _, c := range cases {
			for _, v := range cands {
				next = append(next, append(slices.Clone(c), v))
			}
		}
		cases = next
	}
	cols := readColumns(recs, resource, params)
	var best filterPlan
	for i, c := range cases {
		p := planCase(recs, cols, c)
		if i == 0 || betterPlan(p, best) {
			best = p
		}
	}
	return best, true
}
