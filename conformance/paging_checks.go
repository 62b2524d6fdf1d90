package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// checkPaging records PAGE-01 to PAGE-12 for every offered list resource
// (PAGE-06 and PAGE-07 also at /usage when it is offered):
//
//   - PAGE-01: the full walk ends and never repeats a cursor.
//   - PAGE-02: ids are unique in the full walk, and a walk with limit=1 over a
//     bounded prefix covers exactly the records the full walk has there.
//   - PAGE-03: a group of records sharing the sort timestamp, walked with
//     limits that cut inside it, comes back with nothing skipped or doubled.
//   - PAGE-04: two walks give the same id sequence (once more on a difference).
//   - PAGE-05: a cursor replayed, right away and after later pages, gives the
//     same page.
//   - PAGE-06: malformed cursors give 400.
//   - PAGE-07: another endpoint's cursor gives 400.
//   - PAGE-08: a cursor sent with other filters gives 400.
//   - PAGE-09: len(data) <= limit; limit 0, -1 and 1001 give 400 or a clamped
//     200.
//   - PAGE-10: cursors do not decode to readable JSON or a bare integer.
//   - PAGE-11: pages empty with hasMore true are reported.
//   - PAGE-12: the full walk is in keyset order.
func checkPaging(ctx context.Context, s *session) {
	cursors := map[string]*pgCursor{}
	firstCursor := func(r string) *pgCursor {
		if c, ok := cursors[r]; ok {
			return c
		}
		c := s.pgFirstCursor(ctx, r)
		cursors[r] = c
		return c
	}
	for _, r := range s.listResources() {
		if ctx.Err() != nil {
			return
		}
		full := s.fullWalk(ctx, r)
		pgWalkEnds(ctx, s, r, full)
		// Cursors that are not retry-safe spoil every later walk that
		// meets a cursor again (cursors may be deterministic): PAGE-02's
		// limit=1 walk, PAGE-03 and PAGE-04 then leave the defect to PAGE-05.
		unsafe := pgRetrySafe(ctx, s, r, full)
		generic := pgNoGaps(ctx, s, r, full, unsafe)
		pgTies(ctx, s, r, full, generic, unsafe)
		second := pgDeterministic(ctx, s, r, full, unsafe)
		pgPageSize(ctx, s, r, full)
		pgEmptyMore(s, r, full, second)
		pgKeysetOrder(s, r, full)
		pgOpaque(ctx, s, r, full, firstCursor)
	}
	for _, r := range s.resources() {
		if ctx.Err() != nil {
			return
		}
		pgMalformedCursors(ctx, s, r, firstCursor)
		pgForeignCursor(ctx, s, r, firstCursor)
		if r != Usage {
			pgCursorFilters(ctx, s, r, firstCursor)
		}
	}
}

// --- helpers

// pgWalk is a bounded walk made by the paging and filter checks themselves.
type pgWalk struct {
	Records []record
	Pages   []*exchange
	Cursors []string
	// More says the last page read said hasMore: the walk was cut short by
	// its page bound or its stop function.
	More bool
	// Problem, when not empty, says why the walk stopped early; Ex is the
	// exchange to blame.
	Problem string
	Ex      *exchange
}

// pgDecodePage decodes a list page: its records and envelope, or why not.
func pgDecodePage(resource string, ex *exchange) ([]record, listPage, string) {
	if ex.Status != http.StatusOK {
		return nil, listPage{}, fmt.Sprintf("GET %s answered %s", endpoint(resource), ex.describe())
	}
	env, err := ex.envelope()
	if err != nil {
		return nil, env, fmt.Sprintf("the page is not a valid list envelope: %v", err)
	}
	recs := make([]record, 0, len(env.Data))
	for _, raw := range env.Data {
		recs = append(recs, decodeRecord(resource, raw))
	}
	return recs, env, ""
}

// pgDecodePage is pgDecodePage with the session's decoded records.
func (s *session) pgDecodePage(resource string, ex *exchange) ([]record, listPage, string) {
	if ex.Status != http.StatusOK {
		return pgDecodePage(resource, ex)
	}
	env, err := ex.envelope()
	if err != nil {
		return pgDecodePage(resource, ex)
	}
	recs := make([]record, 0, len(env.Data))
	for _, raw := range env.Data {
		recs = append(recs, s.decodeRecord(resource, raw))
	}
	return recs, env, ""
}

// pgWalkPages follows a list from its first page with filters q and page
// size limit, for at most maxPages pages, stopping early after a page for
// which stop (when not nil) returns true.
func (s *session) pgWalkPages(ctx context.Context, resource string, q url.Values, limit, maxPages int, stop func([]record) bool, opts ...reqOpt) *pgWalk {
	w := &pgWalk{}
	seen := map[string]bool{}
	cursor := ""
	for page := 0; page < maxPages; page++ {
		pq := pgClone(q)
		if limit > 0 {
			pq.Set("limit", strconv.Itoa(limit))
		}
		if cursor != "" {
			pq.Set("cursor", cursor)
		}
		ex := s.get(ctx, endpoint(resource), pq, opts...)
		w.Pages = append(w.Pages, ex)
		recs, env, problem := s.pgDecodePage(resource, ex)
		if problem != "" {
			w.Problem, w.Ex = problem, ex
			return w
		}
		w.Records = append(w.Records, recs...)
		w.More = env.HasMore
		if !env.HasMore {
			return w
		}
		if env.cursor() == "" {
			w.Problem, w.Ex = "hasMore is true but nextCursor is missing", ex
			return w
		}
		if seen[env.cursor()] {
			w.Problem, w.Ex = "a cursor came back a second time", ex
			return w
		}
		seen[env.cursor()] = true
		cursor = env.cursor()
		w.Cursors = append(w.Cursors, cursor)
		if stop != nil && stop(recs) {
			return w
		}
	}
	return w
}

func pgClone(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// pgPageOf returns the page of pages holding record i of the walk, and the
// index of the record in it (-1 when it cannot be told).
func pgPageOf(resource string, pages []*exchange, i int) (*exchange, int) {
	n := 0
	for _, ex := range pages {
		recs, _, problem := pgDecodePage(resource, ex)
		if problem != "" {
			continue
		}
		if i < n+len(recs) {
			return ex, i - n
		}
		n += len(recs)
	}
	if len(pages) > 0 {
		return pages[len(pages)-1], -1
	}
	return &exchange{}, -1
}

// pgEvidence is the evidence of record i of a walk, with a pointer to field
// of it (field may be empty).
func pgEvidence(resource string, pages []*exchange, i int, field string) *Evidence {
	ex, j := pgPageOf(resource, pages, i)
	ptr := ""
	if j >= 0 {
		ptr = "/data/" + strconv.Itoa(j)
		if field != "" {
			ptr += "/" + field
		}
	}
	return ex.evidence(ptr)
}

// pgIDs returns the ids of records.
func pgIDs(recs []record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// pgFirstDup returns the index of the first record whose (non-empty) id came
// before, or -1.
func pgFirstDup(recs []record) int {
	seen := map[string]bool{}
	for i, r := range recs {
		if r.ID == "" {
			continue
		}
		if seen[r.ID] {
			return i
		}
		seen[r.ID] = true
	}
	return -1
}

// pgOrderViolation returns the index of the first record that does not sort
// after the record before it, leaving out records without an id or a
// parseable sort timestamp and repeats of the same record; -1 when the
// records are in keyset order.
func pgOrderViolation(resource string, recs []record) (int, int) {
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

// pgCursor is a cursor of a resource's first page with limit=1.
type pgCursor struct {
	Value string
	Query url.Values // the query of the request that returned it
	Ex    *exchange
}

// pgFirstCursor asks a resource's first page with limit=1 and returns its
// nextCursor, or nil when there is none.
func (s *session) pgFirstCursor(ctx context.Context, resource string) *pgCursor {
	q := url.Values{"limit": {"1"}}
	ex := s.get(ctx, endpoint(resource), q)
	if ex.Status != http.StatusOK {
		return nil
	}
	env, err := ex.envelope()
	if err != nil || !env.HasMore || env.cursor() == "" {
		return nil
	}
	return &pgCursor{Value: env.cursor(), Query: q, Ex: ex}
}

// pgPageLoop reports whether a walk stopped at the page cap made no
// progress in its last pages: they were empty or repeated records already
// seen.
func pgPageLoop(resource string, w *walk) bool {
	if len(w.Pages) < 3 {
		return false
	}
	seen := map[string]bool{}
	tail := w.Pages[len(w.Pages)-3:]
	n := 0
	for _, ex := range w.Pages[:len(w.Pages)-3] {
		recs, _, _ := pgDecodePage(resource, ex)
		for _, r := range recs {
			seen[r.ID] = true
		}
	}
	for _, ex := range tail {
		recs, _, problem := pgDecodePage(resource, ex)
		if problem != "" {
			return false
		}
		for _, r := range recs {
			if !seen[r.ID] {
				return false
			}
			n++
		}
	}
	return true
}

// --- PAGE-01

func pgWalkEnds(ctx context.Context, s *session, r string, full *walk) {
	const id = "PAGE-01"
	ep := endpoint(r)
	switch {
	case full.Complete():
	case strings.HasPrefix(full.Problem, "a cursor came back"):
		s.fail(id, ep, fmt.Sprintf("after %d pages, nextCursor repeated a cursor already followed: the walk would never end", len(full.Pages)), full.Ex.evidence("/nextCursor"))
		return
	case strings.HasPrefix(full.Problem, "hasMore is true but nextCursor"):
		s.skip(id, ep, "the walk stopped at a page with hasMore true and no nextCursor (ENV-03)")
		return
	case strings.HasPrefix(full.Problem, "stopped after the page cap"):
		if pgPageLoop(r, full) {
			last := full.Pages[len(full.Pages)-1]
			s.fail(id, ep, fmt.Sprintf("the walk did not end within %d pages and its last pages brought no new record: it would never end", len(full.Pages)), last.evidence(""))
		} else {
			s.skip(id, ep, fmt.Sprintf("the walk %s and was still bringing new records: raise the page cap", full.Problem))
		}
		return
	default:
		s.skip(id, ep, "the walk stopped early: "+full.Problem)
		return
	}
	msg := fmt.Sprintf("the walk ended after %d pages and %d records without repeating a cursor", len(full.Pages), len(full.Records))
	// A walk of one or two pages has had little chance to loop: walk again
	// with a small page, for a bounded number of pages.
	if len(full.Pages) < 3 && len(full.Records) > 7 && s.enabled(id) {
		const limit, maxPages = 7, 20
		pw := s.pgWalkPages(ctx, r, nil, limit, maxPages, nil)
		switch {
		case strings.HasPrefix(pw.Problem, "a cursor came back"):
			s.fail(id, ep, fmt.Sprintf("with limit=%d, page %d's nextCursor repeated a cursor already followed: the walk would never end", limit, len(pw.Pages)), pw.Ex.evidence("/nextCursor"))
			return
		case pw.Problem == "" && !pw.More:
			msg += fmt.Sprintf("; so did a walk with limit=%d (%d pages)", limit, len(pw.Pages))
		case pw.Problem == "":
			msg += fmt.Sprintf("; a walk with limit=%d repeated no cursor in %d pages", limit, len(pw.Pages))
		}
	}
	// A page that ends exactly on the last record is where a provider that
	// sets hasMore from "the page is full" goes wrong: walk with the number
	// of records as the page size, for a few pages.
	if n := len(full.Records); n > 0 && n <= 1000 && s.enabled(id) {
		pw := s.pgWalkPages(ctx, r, nil, n, 4, nil)
		if strings.HasPrefix(pw.Problem, "a cursor came back") {
			s.fail(id, ep, fmt.Sprintf("with limit=%d (the number of records), page %d's nextCursor repeated a cursor already followed: the walk would never end", n, len(pw.Pages)), pw.Ex.evidence("/nextCursor"))
			return
		}
	}
	s.pass(id, ep, msg)
}

// --- PAGE-02

// pgNoGaps is PAGE-02. It reports whether paging lost or repeated records
// other than at ties of the sort timestamp (a defect PAGE-03 leaves to it).
func pgNoGaps(ctx context.Context, s *session, r string, full *walk, unsafe bool) bool {
	const id = "PAGE-02"
	ep := endpoint(r)
	if !s.enabled(id) {
		return false
	}
	if !full.Complete() {
		s.skip(id, ep, "the full walk did not complete: "+full.Problem)
		return false
	}
	if i := pgFirstDup(full.Records); i >= 0 {
		s.fail(id, ep, fmt.Sprintf("id %q appears more than once in the walk (record %d of %d)", truncateID(full.Records[i].ID), i, len(full.Records)), pgEvidence(r, full.Pages, i, "id"))
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
	if i, _ := pgOrderViolation(r, full.Records[:min(len(full.Records), 2*n)]); i >= 0 {
		s.pass(id, ep, fmt.Sprintf("ids unique in %d records; the limit=1 comparison is left out: the walk is not in keyset order (PAGE-12)", len(full.Records)))
		return false
	}
	ref := full.Records
	for attempt := 0; ; attempt++ {
		pw := s.pgWalkPages(ctx, r, nil, 1, n, nil)
		if i := pgFirstDup(pw.Records); i >= 0 {
			s.fail(id, ep, fmt.Sprintf("the walk with limit=1 returned id %q twice (record %d)", truncateID(pw.Records[i].ID), i), pgEvidence(r, pw.Pages, i, "id"))
			return true
		}
		if pw.Problem != "" {
			s.skip(id, ep, "the walk with limit=1 stopped early: "+pw.Problem)
			return false
		}
		d := pgPrefixDefect(r, ref, pw)
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
		recs, _, problem := pgDecodePage(r, ex)
		if problem != "" {
			s.skip(id, ep, "the fresh first page for a second attempt failed: "+problem)
			return false
		}
		ref = recs
		if !slices.Equal(pgIDs(recs), pgIDs(full.Records[:min(len(full.Records), len(recs))])) {
			continue // live writes: try again against the fresh page
		}
		s.fail(id, ep, d.msg, d.ev)
		return true
	}
}

type pgDefect struct {
	msg string
	ev  *Evidence
	// tiesOnly: every record skipped shares its sort timestamp with another.
	tiesOnly bool
}

// pgPrefixDefect compares a walk with limit=1 over a prefix, without
// repeated ids, with the records ref of a walk with a large page (in keyset
// order): its msg is "" when they agree, "order" when the limit=1 walk is
// out of order (not judged here), or else the records skipped.
func pgPrefixDefect(r string, ref []record, pw *pgWalk) pgDefect {
	if len(pw.Records) == 0 {
		return pgDefect{}
	}
	if i, _ := pgOrderViolation(r, pw.Records); i >= 0 {
		return pgDefect{msg: "order"}
	}
	last := pw.Records[len(pw.Records)-1]
	if last.At.IsZero() {
		return pgDefect{}
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
		return pgDefect{}
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
	return pgDefect{msg: fmt.Sprintf("the walk with limit=1 skipped %d of the first records of the walk with limit=1000, first %q (%s %s)",
		len(missing), truncateID(miss.ID), sortField(r), miss.Time), ev: pgEvidence(r, pw.Pages, at, ""), tiesOnly: tiesOnly}
}

// --- PAGE-03

func pgTies(ctx context.Context, s *session, r string, full *walk, generic, unsafe bool) {
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
	if i, _ := pgOrderViolation(r, full.Records); i >= 0 {
		s.skip(id, ep, "the walk is not in keyset order (PAGE-12)")
		return
	}
	// Groups of consecutive records sharing the sort timestamp.
	type group struct{ start, size int }
	var groups []group
	for i := 0; i < len(full.Records); {
		j := i + 1
		if !full.Records[i].At.IsZero() {
			for j < len(full.Records) && full.Records[j].At.Equal(full.Records[i].At) {
				j++
			}
		}
		if j-i >= 2 {
			groups = append(groups, group{i, j - i})
		}
		i = j
	}
	if len(groups) == 0 {
		s.skip(id, ep, fmt.Sprintf("no two of %d records share a %s: no ties to cut", len(full.Records), sortField(r)))
		return
	}
	// The largest group of at most 300 records, else the smallest.
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
	g := groups[best]
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
	var limits []int
	for _, l := range []int{1, 2, (g.size + 1) / 2, g.size - 1} {
		if l >= 1 && l < g.size && l <= 1000 && (g.size+l)/l <= 40 && !slices.Contains(limits, l) {
			limits = append(limits, l)
		}
	}
	if len(limits) == 0 {
		limits = []int{min(g.size-1, 999)}
	}
	checked := 0
	for _, l := range limits {
		maxPages := (g.size+l-1)/l + 2
		pw := s.pgWalkPages(ctx, r, q, l, maxPages, func(recs []record) bool {
			return len(recs) > 0 && recs[len(recs)-1].At.After(T.At)
		})
		if pw.Problem != "" {
			s.skip(id, ep, "a walk over the tie group stopped early: "+pw.Problem)
			continue
		}
		if i := pgFirstDup(pw.Records); i >= 0 {
			s.fail(id, ep, fmt.Sprintf("with limit=%d, id %q came back twice in a group of %d records sharing %s %s", l, truncateID(pw.Records[i].ID), g.size, sortField(r), T.Time), pgEvidence(r, pw.Pages, i, "id"))
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
				l, g.size-found, g.size, sortField(r), T.Time, truncateID(miss)), pgEvidence(r, pw.Pages, at, ""))
			continue
		}
		checked++
	}
	if checked > 0 {
		s.pass(id, ep, fmt.Sprintf("a group of %d records sharing %s %s, walked with limits %v, came back whole with no repeat", g.size, sortField(r), T.Time, limits))
	}
}

// --- PAGE-04

func pgDeterministic(ctx context.Context, s *session, r string, full *walk, unsafe bool) *walk {
	const id = "PAGE-04"
	ep := endpoint(r)
	if !s.enabled(id) {
		return nil
	}
	if unsafe {
		s.skip(id, ep, "cursors are not retry-safe (PAGE-05): walks cannot be compared")
		return nil
	}
	if !full.Complete() {
		s.skip(id, ep, "the full walk did not complete: "+full.Problem)
		return nil
	}
	prev := full
	for attempt := 0; attempt < 2; attempt++ {
		// An option makes walkList walk afresh instead of memoising.
		w := s.walkList(ctx, r, url.Values{}, 1000, bearer(s.cfg.Token))
		if !w.Complete() {
			s.skip(id, ep, "the second walk did not complete: "+w.Problem)
			return w
		}
		a, b := pgIDs(prev.Records), pgIDs(w.Records)
		if slices.Equal(a, b) {
			msg := fmt.Sprintf("two walks gave the same sequence of %d ids", len(b))
			if attempt == 1 {
				msg += " (a first comparison differed; the data may have changed between the walks)"
			}
			s.pass(id, ep, msg)
			return w
		}
		if attempt == 1 {
			i := 0
			for i < len(a) && i < len(b) && a[i] == b[i] {
				i++
			}
			detail := fmt.Sprintf("one walk has %d records, the other %d", len(a), len(b))
			if i < len(a) && i < len(b) {
				detail = fmt.Sprintf("record %d is %q in one walk and %q in the other", i, truncateID(a[i]), truncateID(b[i]))
			}
			s.fail(id, ep, "three walks in a row gave different id sequences: "+detail, pgEvidence(r, w.Pages, min(i, max(len(b)-1, 0)), "id"))
			return w
		}
		prev = w
	}
	return nil
}

// --- PAGE-05

// pgRetrySafe is PAGE-05; it reports whether it found cursors not
// retry-safe.
func pgRetrySafe(ctx context.Context, s *session, r string, full *walk) (unsafe bool) {
	const id = "PAGE-05"
	ep := endpoint(r)
	if !s.enabled(id) {
		return false
	}
	n := len(full.Records)
	if n < 2 {
		s.skip(id, ep, fmt.Sprintf("%d records: a second page is needed to replay a cursor", n))
		return false
	}
	limit := max(1, min(10, n/3))
	base := url.Values{"limit": {strconv.Itoa(limit)}}
	page := func(cursor string) (*exchange, []record, listPage, string) {
		q := pgClone(base)
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		ex := s.get(ctx, ep, q)
		recs, env, problem := pgDecodePage(r, ex)
		return ex, recs, env, problem
	}
	_, first, env, problem := page("")
	if problem != "" {
		s.skip(id, ep, "the first page failed: "+problem)
		return false
	}
	if !env.HasMore || env.cursor() == "" {
		s.skip(id, ep, fmt.Sprintf("the first page with limit=%d had no nextCursor", limit))
		return false
	}
	c1 := env.cursor()
	_, a, envA, problem := page(c1)
	if problem != "" {
		s.skip(id, ep, "the first use of a cursor failed: "+problem)
		return false
	}
	changed := func() bool {
		_, again, _, problem := page("")
		return problem != "" || !slices.Equal(pgIDs(again), pgIDs(first))
	}
	compare := func(when string, ex *exchange, b []record, problem string) bool {
		if problem != "" {
			if changed() {
				s.skip(id, ep, "the data changed during the check")
				return false
			}
			s.fail(id, ep, fmt.Sprintf("a cursor that worked once failed %s: %s", when, problem), ex.evidence(""))
			unsafe = true
			return false
		}
		if !slices.Equal(pgIDs(a), pgIDs(b)) {
			if changed() {
				s.skip(id, ep, "the data changed during the check")
				return false
			}
			s.fail(id, ep, fmt.Sprintf("the same cursor gave ids %v the first time and %v %s", pgShortIDs(a), pgShortIDs(b), when), ex.evidence("/data"))
			unsafe = true
			return false
		}
		return true
	}
	exB, b, _, problem := page(c1)
	if !compare("when replayed at once", exB, b, problem) {
		return unsafe
	}
	if envA.HasMore && envA.cursor() != "" {
		if _, _, _, problem := page(envA.cursor()); problem != "" {
			s.skip(id, ep, "the page after the replayed one failed: "+problem)
			return false
		}
		exC, c, _, problem := page(c1)
		if !compare("when replayed after a later page", exC, c, problem) {
			return unsafe
		}
		s.pass(id, ep, fmt.Sprintf("a cursor replayed at once and after a later page gave the same %d ids in the same order", len(a)))
		return false
	}
	s.pass(id, ep, fmt.Sprintf("a cursor replayed gave the same %d ids in the same order", len(a)))
	return false
}

func pgShortIDs(recs []record) []string {
	ids := pgIDs(recs)
	if len(ids) > 5 {
		ids = append(ids[:5:5], "...")
	}
	for i, v := range ids {
		ids[i] = truncateID(v)
	}
	return ids
}

// --- PAGE-06

// pgMalformed returns the malformed variants of a cursor (of any cursor
// when c is empty), by name.
func pgMalformed(c string) [][2]string {
	out := [][2]string{{"garbage", "this-is-not-a-cursor"}}
	if len(c) >= 4 {
		out = append(out, [2]string{"truncated", c[:len(c)/2]})
		b := []byte(c)
		i := len(b) / 2
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		out = append(out, [2]string{"one character changed", string(b)})
	}
	long := strings.Repeat("A", 8192)
	if c != "" {
		long = strings.Repeat(c, 8192/len(c)+1)[:8192]
	}
	out = append(out,
		[2]string{"empty", ""},
		[2]string{"8 KiB long", long},
		[2]string{"with a NUL byte", c + "\x00"},
		[2]string{"with quotes", `'"` + c + `"'`},
	)
	return out
}

func pgMalformedCursors(ctx context.Context, s *session, r string, firstCursor func(string) *pgCursor) {
	const id = "PAGE-06"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	base := url.Values{"limit": {"1"}}
	c := ""
	if fc := firstCursor(r); fc != nil {
		c, base = fc.Value, fc.Query
	}
	bad := 0
	variants := pgMalformed(c)
	for _, v := range variants {
		q := pgClone(base)
		q.Set("cursor", v[1])
		ex := s.get(ctx, ep, q)
		switch {
		case ex.Status == http.StatusBadRequest:
		case ex.Status == 0:
			s.errored(id, ep, ex, fmt.Sprintf("no answer to a cursor %s: %v", v[0], ex.Err))
			bad++
		case v[0] == "8 KiB long" && (ex.Status == http.StatusRequestURITooLong || ex.Status == http.StatusRequestHeaderFieldsTooLarge):
		case ex.Status == http.StatusOK:
			s.fail(id, ep, fmt.Sprintf("a cursor %s answered 200 with a page; want 400", v[0]), ex.evidence(""))
			bad++
		default:
			s.fail(id, ep, fmt.Sprintf("a cursor %s answered %d; want 400", v[0], ex.Status), ex.evidence(""))
			bad++
		}
	}
	if bad == 0 {
		kind := "cursors"
		if c == "" {
			kind = "cursors (no real cursor to alter: the list has one page)"
		}
		s.pass(id, ep, fmt.Sprintf("%d malformed %s answered 400", len(variants), kind))
	}
}

// --- PAGE-07

func pgForeignCursor(ctx context.Context, s *session, r string, firstCursor func(string) *pgCursor) {
	const id = "PAGE-07"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	prefer := map[string][]string{
		Conversations: {Events, Assistants, Usage},
		Assistants:    {Conversations, Events, Usage},
		Events:        {Conversations, Assistants, Usage},
		Usage:         {Conversations, Events, Assistants},
	}
	for _, other := range prefer[r] {
		if !s.offered[other] || !slices.Contains(s.cfg.Resources, other) {
			continue
		}
		fc := firstCursor(other)
		if fc == nil {
			continue
		}
		q := url.Values{"limit": {"1"}, "cursor": {fc.Value}}
		ex := s.get(ctx, ep, q)
		switch ex.Status {
		case http.StatusBadRequest:
			s.pass(id, ep, fmt.Sprintf("a cursor of %s answered 400", endpoint(other)))
		case 0:
			s.errored(id, ep, ex, fmt.Sprintf("no answer to a cursor of %s: %v", endpoint(other), ex.Err))
		default:
			s.fail(id, ep, fmt.Sprintf("a cursor issued by %s answered %d here; want 400", endpoint(other), ex.Status), ex.evidence(""))
		}
		return
	}
	s.skip(id, ep, "no other endpoint offered a nextCursor on its first page with limit=1")
}

// --- PAGE-08

func pgCursorFilters(ctx context.Context, s *session, r string, firstCursor func(string) *pgCursor) {
	const id = "PAGE-08"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	fc := firstCursor(r)
	if fc == nil {
		s.skip(id, ep, "the first page with limit=1 offered no nextCursor: no cursor to reuse")
		return
	}
	param := "updatedSince"
	if r == Events {
		param = "occurredAfter"
	}
	q := pgClone(fc.Query)
	q.Set("cursor", fc.Value)
	q.Set(param, "1970-01-01T00:00:00Z")
	ex := s.get(ctx, ep, q)
	switch ex.Status {
	case http.StatusBadRequest:
		s.pass(id, ep, fmt.Sprintf("a cursor sent with an added %s answered 400", param))
	case 0:
		s.errored(id, ep, ex, fmt.Sprintf("no answer: %v", ex.Err))
	default:
		s.fail(id, ep, fmt.Sprintf("a cursor issued without filters, sent with %s=1970-01-01T00:00:00Z, answered %d; want 400", param, ex.Status), ex.evidence(""))
	}
}

// --- PAGE-09

func pgPageSize(ctx context.Context, s *session, r string, full *walk) {
	const id = "PAGE-09"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	bad := 0
	for _, ex := range full.Pages {
		recs, _, problem := pgDecodePage(r, ex)
		if problem == "" && len(recs) > 1000 {
			s.fail(id, ep, fmt.Sprintf("limit=1000 answered %d records", len(recs)), ex.evidence("/data"))
			bad++
			break
		}
	}
	for _, l := range []int{1, 7, 0} {
		q := url.Values{}
		want := 1000
		if l > 0 {
			q.Set("limit", strconv.Itoa(l))
			want = l
		}
		ex := s.get(ctx, ep, q)
		recs, _, problem := pgDecodePage(r, ex)
		if problem != "" {
			if ex.Status == 0 || ex.Status >= 500 || ex.Status == http.StatusOK {
				continue // HTTP-01's, or a page that is not an envelope: ENV-01's
			}
			s.fail(id, ep, fmt.Sprintf("a page with limit %s failed: %s", q.Get("limit"), problem), ex.evidence(""))
			bad++
			continue
		}
		if len(recs) > want {
			what := fmt.Sprintf("limit=%d answered %d records", l, len(recs))
			if l == 0 {
				what = fmt.Sprintf("the default page answered %d records, more than the maximum of 1000", len(recs))
			}
			s.fail(id, ep, what, ex.evidence("/data"))
			bad++
		}
	}
	for _, v := range []string{"0", "-1", "1001"} {
		ex := s.get(ctx, ep, url.Values{"limit": {v}})
		switch {
		case ex.Status == http.StatusBadRequest:
		case ex.Status == 0:
			s.errored(id, ep, ex, fmt.Sprintf("no answer to limit=%s: %v", v, ex.Err))
			bad++
		case ex.Status == http.StatusOK:
			recs, _, problem := pgDecodePage(r, ex)
			if problem == "" && len(recs) > 1000 {
				s.fail(id, ep, fmt.Sprintf("limit=%s answered 200 with %d records; want 400 or a page of at most 1000", v, len(recs)), ex.evidence("/data"))
				bad++
			}
		default:
			s.fail(id, ep, fmt.Sprintf("limit=%s answered %d; want 400 (or a clamped page)", v, ex.Status), ex.evidence(""))
			bad++
		}
	}
	if bad == 0 {
		s.pass(id, ep, "pages hold at most limit records (every page of the run is checked); limit 0, -1 and 1001 are refused or clamped")
	}
}

// --- PAGE-10

// pgReadableCursor reports what a cursor reveals when it is plain JSON or a
// bare integer, as is or base64-decoded with either alphabet.
func pgReadableCursor(c string) (string, bool) {
	candidates := []string{c}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(c); err == nil {
			candidates = append(candidates, string(b))
		}
	}
	for _, t := range candidates {
		t = strings.TrimSpace(t)
		if t == "" || !utf8.ValidString(t) {
			continue
		}
		if _, err := strconv.ParseInt(t, 10, 64); err == nil {
			return t, true
		}
		if (t[0] == '{' || t[0] == '[' || t[0] == '"') && json.Valid([]byte(t)) {
			if len(t) > 120 {
				t = t[:120] + "..."
			}
			return t, true
		}
	}
	return "", false
}

func pgOpaque(ctx context.Context, s *session, r string, full *walk, firstCursor func(string) *pgCursor) {
	const id = "PAGE-10"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	type seen struct {
		c  string
		ex *exchange
	}
	var cs []seen
	for i, c := range full.Cursors {
		if i >= 5 {
			break
		}
		cs = append(cs, seen{c, full.Pages[i]})
	}
	if fc := firstCursor(r); fc != nil {
		cs = append(cs, seen{fc.Value, fc.Ex})
	}
	if len(cs) == 0 {
		s.skip(id, ep, "no page offered a nextCursor: no cursor to look at")
		return
	}
	for _, c := range cs {
		if text, ok := pgReadableCursor(c.c); ok {
			s.fail(id, ep, fmt.Sprintf("a cursor decodes to %q: clients will build or edit cursors; make them opaque", text), c.ex.evidence("/nextCursor"))
			return
		}
	}
	s.pass(id, ep, fmt.Sprintf("%d cursors decode to neither JSON nor a bare integer", len(cs)))
}

// --- PAGE-11

func pgEmptyMore(s *session, r string, walks ...*walk) {
	const id = "PAGE-11"
	ep := endpoint(r)
	n, pages := 0, 0
	for _, w := range walks {
		if w != nil {
			n += w.EmptyMore
			pages += len(w.Pages)
		}
	}
	if n == 0 {
		s.pass(id, ep, fmt.Sprintf("no empty page with hasMore true in %d pages", pages))
		return
	}
	s.pass(id, ep, fmt.Sprintf("%d of %d pages were empty with hasMore true (allowed; the walks still ended)", n, pages))
}

// --- PAGE-12

func pgKeysetOrder(s *session, r string, full *walk) {
	const id = "PAGE-12"
	ep := endpoint(r)
	if !full.Complete() {
		s.skip(id, ep, "the full walk did not complete: "+full.Problem)
		return
	}
	i, p := pgOrderViolation(r, full.Records)
	if i < 0 {
		s.pass(id, ep, fmt.Sprintf("%d records in (%s, id) order", len(full.Records), sortField(r)))
		return
	}
	a, b := full.Records[p], full.Records[i]
	s.fail(id, ep, fmt.Sprintf("record %d (%s %s, id %q) comes after (%s %s, id %q): want (%s, id) ascending, ids byte by byte",
		i, sortField(r), b.Time, truncateID(b.ID), sortField(r), a.Time, truncateID(a.ID), sortField(r)), pgEvidence(r, full.Pages, i, sortField(r)))
}

// describeFilters writes filters for a message, unescaped.
func describeFilters(q url.Values) string {
	if len(q) == 0 {
		return "no filter"
	}
	return describeQuery(q)
}

// describeQuery writes query parameters unescaped, sorted, cursor last.
func describeQuery(q url.Values) string {
	var parts, last []string
	for k, vs := range q {
		for _, v := range vs {
			if k == "cursor" {
				last = append(last, k+"="+v)
				continue
			}
			parts = append(parts, k+"="+v)
		}
	}
	slices.Sort(parts)
	return strings.Join(append(parts, last...), "&")
}
