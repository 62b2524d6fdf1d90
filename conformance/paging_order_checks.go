package conformance

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
)

// Paging checks about the records a walk returns (checkPaging runs them):
// PAGE-02, none skipped or doubled; PAGE-03, not at ties of the sort
// timestamp either; PAGE-12, keyset order.

// keysetViolation returns the index of the first record that does not sort
// after the record before it, leaving out records without an id or a
// parseable sort timestamp and repeats of the same record; -1 when the
// records are in keyset order.
func keysetViolation(resource string, recs []record) (int, int) {
	prev := -1
	for i, r := range recs {
		if r.ID == "" || r.At.IsZero() {
			continue
		}
		if _, ok := r.Obj[sortField(resource)].(string); !ok {
			continue
		}
		if prev >= 0 {
			p := recs[prev]
			if !keyLess(p, r) && !(p.ID == r.ID && p.At.Equal(r.At)) {
				return i, prev
			}
		}
		prev = i
	}
	return -1, -1
}

// --- PAGE-02

// noGaps is PAGE-02. It reports whether paging lost or repeated records
// other than at ties of the sort timestamp (a defect PAGE-03 leaves to it).
func (p *pagingChecks) noGaps(ctx context.Context, r string, full *walk, unsafe bool) bool {
	s := p.s
	const id = "PAGE-02"
	ep := endpoint(r)
	if !s.enabled(id) {
		return false
	}
	if !full.Complete() {
		s.skip(id, ep, "the full walk did not complete: "+full.Problem)
		return false
	}
	if i := firstDuplicate(full.Records); i >= 0 {
		s.fail(id, ep, fmt.Sprintf("id %q appears more than once in the walk (record %d of %d)", truncateID(full.Records[i].ID), i, len(full.Records)), recordEvidence(r, full.Pages, i, "id"))
		return true
	}
	if unsafe {
		s.pass(id, ep, fmt.Sprintf("ids unique in %d records; the limit=1 comparison is left out: cursors are not retry-safe (PAGE-05)", len(full.Records)))
		return false
	}
	const prefix = 30
	n := min(prefix, len(full.Records))
	if n < 2 {
		s.pass(id, ep, fmt.Sprintf("%d records, ids unique; too few records to compare a walk with limit=1", len(full.Records)))
		return false
	}
	for _, rec := range full.Records[:min(len(full.Records), n+1)] {
		if rec.At.IsZero() || rec.ID == "" {
			s.pass(id, ep, fmt.Sprintf("ids unique in %d records; the limit=1 comparison is left out: the first records lack an id or a parseable %s", len(full.Records), sortField(r)))
			return false
		}
	}
	if i, _ := keysetViolation(r, full.Records[:min(len(full.Records), 2*n)]); i >= 0 {
		s.pass(id, ep, fmt.Sprintf("ids unique in %d records; the limit=1 comparison is left out: the walk is not in keyset order (PAGE-12)", len(full.Records)))
		return false
	}
	ref := full.Records
	for attempt := 0; ; attempt++ {
		pw := s.walkPages(ctx, r, nil, 1, n, nil)
		if i := firstDuplicate(pw.Records); i >= 0 {
			s.fail(id, ep, fmt.Sprintf("the walk with limit=1 returned id %q twice (record %d)", truncateID(pw.Records[i].ID), i), recordEvidence(r, pw.Pages, i, "id"))
			return true
		}
		if pw.Problem != "" {
			s.skip(id, ep, "the walk with limit=1 stopped early: "+pw.Problem)
			return false
		}
		d := comparePrefix(r, ref, pw)
		switch {
		case d.msg == "":
			s.pass(id, ep, fmt.Sprintf("ids unique in %d records; a walk with limit=1 over the first %d records skipped and repeated none", len(full.Records), len(pw.Records)))
			return false
		case d.msg == "order":
			s.pass(id, ep, fmt.Sprintf("ids unique in %d records; the limit=1 walk is not in keyset order, so its gaps are not judged (PAGE-12)", len(full.Records)))
			return false
		case d.tiesOnly:
			s.pass(id, ep, fmt.Sprintf("ids unique in %d records; the limit=1 walk skipped only records sharing a %s with another, which PAGE-03 judges", len(full.Records), sortField(r)))
			return false
		}
		if attempt == 1 {
			s.fail(id, ep, d.msg, d.ev)
			return true
		}
		// The data may have changed since the full walk: compare with a
		// fresh first page before blaming the provider.
		ex := s.get(ctx, endpoint(r), url.Values{"limit": {strconv.Itoa(min(1000, 2*n))}})
		recs, _, problem := decodeListPage(r, ex)
		if problem != "" {
			s.skip(id, ep, "the fresh first page for a second attempt failed: "+problem)
			return false
		}
		ref = recs
		if !slices.Equal(recordIDs(recs), recordIDs(full.Records[:min(len(full.Records), len(recs))])) {
			continue // live writes: try again against the fresh page
		}
		s.fail(id, ep, d.msg, d.ev)
		return true
	}
}

type prefixDefect struct {
	msg string
	ev  *Evidence
	// tiesOnly: every record skipped shares its sort timestamp with another.
	tiesOnly bool
}

// comparePrefix compares a walk with limit=1 over a prefix, without
// repeated ids, with the records ref of a walk with a large page (in keyset
// order): its msg is "" when they agree, "order" when the limit=1 walk is
// out of order (not judged here), or else the records skipped.
func comparePrefix(r string, ref []record, pw *boundedWalk) prefixDefect {
	if len(pw.Records) == 0 {
		return prefixDefect{}
	}
	if i, _ := keysetViolation(r, pw.Records); i >= 0 {
		return prefixDefect{msg: "order"}
	}
	last := pw.Records[len(pw.Records)-1]
	if last.At.IsZero() {
		return prefixDefect{}
	}
	got := map[string]bool{}
	for _, rec := range pw.Records {
		got[rec.ID] = true
	}
	var missing []string
	for _, rec := range ref {
		if keyLess(last, rec) {
			break
		}
		if !got[rec.ID] {
			missing = append(missing, rec.ID)
		}
	}
	if len(missing) == 0 {
		return prefixDefect{}
	}
	times := map[int64]int{}
	for _, rec := range ref {
		times[rec.At.UnixNano()]++
	}
	tiesOnly := true
	for _, rec := range ref {
		if slices.Contains(missing, rec.ID) && times[rec.At.UnixNano()] < 2 {
			tiesOnly = false
		}
	}
	// Blame the page that jumped over the first missing record: the first
	// page whose record sorts after it.
	var miss record
	for _, rec := range ref {
		if rec.ID == missing[0] {
			miss = rec
			break
		}
	}
	at := len(pw.Records) - 1
	for i, rec := range pw.Records {
		if keyLess(miss, rec) {
			at = i
			break
		}
	}
	return prefixDefect{msg: fmt.Sprintf("the walk with limit=1 skipped %d of the first records of the walk with limit=1000, first %q (%s %s)",
		len(missing), truncateID(miss.ID), sortField(r), miss.Time), ev: recordEvidence(r, pw.Pages, at, ""), tiesOnly: tiesOnly}
}

// --- PAGE-03

func (p *pagingChecks) ties(ctx context.Context, r string, full *walk, generic, unsafe bool) {
	s := p.s
	const id = "PAGE-03"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	if unsafe {
		s.skip(id, ep, "cursors are not retry-safe (PAGE-05)")
		return
	}
	if generic {
		s.skip(id, ep, "paging skips or repeats records even away from ties (PAGE-02)")
		return
	}
	if !full.Complete() {
		s.skip(id, ep, "the full walk did not complete: "+full.Problem)
		return
	}
	if i, _ := keysetViolation(r, full.Records); i >= 0 {
		s.skip(id, ep, "the walk is not in keyset order (PAGE-12)")
		return
	}
	g, ok := pickTieGroup(full.Records)
	if !ok {
		s.skip(id, ep, fmt.Sprintf("no two of %d records share a %s: no ties to cut", len(full.Records), sortField(r)))
		return
	}
	members := full.Records[g.start : g.start+g.size]
	T := members[0]
	inGroup := map[string]bool{}
	for _, m := range members {
		inGroup[m.ID] = true
	}
	q := url.Values{}
	if r == Events {
		if g.start > 0 {
			q.Set("occurredAfter", full.Records[g.start-1].Time)
		}
	} else {
		q.Set("updatedSince", T.Time)
	}
	limits := tieLimits(g.size)
	checked := 0
	for _, l := range limits {
		maxPages := (g.size+l-1)/l + 2
		pw := s.walkPages(ctx, r, q, l, maxPages, func(recs []record) bool {
			return len(recs) > 0 && recs[len(recs)-1].At.After(T.At)
		})
		if pw.Problem != "" {
			s.skip(id, ep, "a walk over the tie group stopped early: "+pw.Problem)
			continue
		}
		if i := firstDuplicate(pw.Records); i >= 0 {
			s.fail(id, ep, fmt.Sprintf("with limit=%d, id %q came back twice in a group of %d records sharing %s %s", l, truncateID(pw.Records[i].ID), g.size, sortField(r), T.Time), recordEvidence(r, pw.Pages, i, "id"))
			continue
		}
		got := map[string]bool{}
		passed := !pw.More
		for _, rec := range pw.Records {
			got[rec.ID] = true
			if rec.At.After(T.At) {
				passed = true
			}
		}
		found := 0
		for _, m := range members {
			if got[m.ID] {
				found++
			}
		}
		if found == 0 {
			s.skip(id, ep, fmt.Sprintf("the walk filtered at %s returned none of the tie group (see FILT-01)", describeFilters(q)))
			continue
		}
		if !passed {
			s.skip(id, ep, fmt.Sprintf("with limit=%d the walk did not get past the tie group within %d pages", l, maxPages))
			continue
		}
		if found < g.size {
			var miss string
			for _, m := range members {
				if !got[m.ID] {
					miss = m.ID
					break
				}
			}
			// Blame the first page after which a member is missing: the
			// page that holds the first record sorting after the gap.
			at := len(pw.Records) - 1
			for i, rec := range pw.Records {
				if rec.ID > miss && rec.At.Equal(T.At) || rec.At.After(T.At) {
					at = i
					break
				}
			}
			s.fail(id, ep, fmt.Sprintf("with limit=%d, %d of %d records sharing %s %s were skipped, first %q",
				l, g.size-found, g.size, sortField(r), T.Time, truncateID(miss)), recordEvidence(r, pw.Pages, at, ""))
			continue
		}
		checked++
	}
	if checked > 0 {
		s.pass(id, ep, fmt.Sprintf("a group of %d records sharing %s %s, walked with limits %v, came back whole with no repeat", g.size, sortField(r), T.Time, limits))
	}
}

// tieGroup is a run of consecutive records of a walk sharing the sort
// timestamp: records[start:start+size].
type tieGroup struct{ start, size int }

// pickTieGroup returns the group of records sharing the sort timestamp that
// PAGE-03 walks: the largest of at most 300 records, else the smallest. ok
// is false when no two records share one.
func pickTieGroup(recs []record) (tieGroup, bool) {
	var groups []tieGroup
	for i := 0; i < len(recs); {
		j := i + 1
		if !recs[i].At.IsZero() {
			for j < len(recs) && recs[j].At.Equal(recs[i].At) {
				j++
			}
		}
		if j-i >= 2 {
			groups = append(groups, tieGroup{i, j - i})
		}
		i = j
	}
	if len(groups) == 0 {
		return tieGroup{}, false
	}
	best := -1
	for k, g := range groups {
		switch {
		case best < 0:
			best = k
		case g.size <= 300 && (groups[best].size > 300 || g.size > groups[best].size):
			best = k
		case g.size > 300 && groups[best].size > 300 && g.size < groups[best].size:
			best = k
		}
	}
	return groups[best], true
}

// tieLimits returns the page sizes a tie group of size records is walked
// with: pages that cut it in several places, in at most about 40 pages.
func tieLimits(size int) []int {
	var limits []int
	for _, l := range []int{1, 2, (size + 1) / 2, size - 1} {
		if l >= 1 && l < size && l <= 1000 && (size+l)/l <= 40 && !slices.Contains(limits, l) {
			limits = append(limits, l)
		}
	}
	if len(limits) == 0 {
		limits = []int{min(size-1, 999)}
	}
	return limits
}

// --- PAGE-12

func (p *pagingChecks) keysetOrder(r string, full *walk) {
	s := p.s
	const id = "PAGE-12"
	ep := endpoint(r)
	if !full.Complete() {
		s.skip(id, ep, "the full walk did not complete: "+full.Problem)
		return
	}
	i, prev := keysetViolation(r, full.Records)
	if i < 0 {
		s.pass(id, ep, fmt.Sprintf("%d records in (%s, id) order", len(full.Records), sortField(r)))
		return
	}
	a, b := full.Records[prev], full.Records[i]
	s.fail(id, ep, fmt.Sprintf("record %d (%s %s, id %q) comes after (%s %s, id %q): want (%s, id) ascending, ids byte by byte",
		i, sortField(r), b.Time, truncateID(b.ID), sortField(r), a.Time, truncateID(a.ID), sortField(r)), recordEvidence(r, full.Pages, i, sortField(r)))
}
