package conformance

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
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
	p := &pagingChecks{s: s, cursors: map[string]*pageCursor{}}
	for _, r := range s.listResources() {
		if ctx.Err() != nil {
			return
		}
		full := s.fullWalk(ctx, r)
		p.walkEnds(ctx, r, full)
		// Cursors that are not retry-safe spoil every later walk that
		// meets a cursor again (cursors may be deterministic): PAGE-02's
		// limit=1 walk, PAGE-03 and PAGE-04 then leave the defect to PAGE-05.
		unsafe := p.retrySafe(ctx, r, full)
		generic := p.noGaps(ctx, r, full, unsafe)
		p.ties(ctx, r, full, generic, unsafe)
		second := p.deterministic(ctx, r, full, unsafe)
		p.pageSize(ctx, r, full)
		p.emptyMore(r, full, second)
		p.keysetOrder(r, full)
		p.opaqueCursors(ctx, r, full)
	}
	for _, r := range s.resources() {
		if ctx.Err() != nil {
			return
		}
		p.malformedCursors(ctx, r)
		p.foreignCursor(ctx, r)
		if r != Usage {
			p.cursorFilters(ctx, r)
		}
	}
}

// pagingChecks is what the paging checks of one run share: the session and
// the first-page cursors several of them reuse.
type pagingChecks struct {
	s       *session
	cursors map[string]*pageCursor // firstCursor's answers, by resource
}

// --- helpers

// boundedWalk is a bounded walk made by the paging checks themselves.
type boundedWalk struct {
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

// decodeListPage decodes a list page: its records and envelope, or why not.
func decodeListPage(resource string, ex *exchange) ([]record, listPage, string) {
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

// decodeListPage is decodeListPage with the session's decoded records.
func (s *session) decodeListPage(resource string, ex *exchange) ([]record, listPage, string) {
	if ex.Status != http.StatusOK {
		return decodeListPage(resource, ex)
	}
	env, err := ex.envelope()
	if err != nil {
		return decodeListPage(resource, ex)
	}
	recs := make([]record, 0, len(env.Data))
	for _, raw := range env.Data {
		recs = append(recs, s.decodeRecord(resource, raw))
	}
	return recs, env, ""
}

// walkPages follows a list from its first page with filters q and page
// size limit, for at most maxPages pages, stopping early after a page for
// which stop (when not nil) returns true.
func (s *session) walkPages(ctx context.Context, resource string, q url.Values, limit, maxPages int, stop func([]record) bool, opts ...reqOpt) *boundedWalk {
	w := &boundedWalk{}
	seen := map[string]bool{}
	cursor := ""
	for page := 0; page < maxPages; page++ {
		pq := cloneQuery(q)
		if limit > 0 {
			pq.Set("limit", strconv.Itoa(limit))
		}
		if cursor != "" {
			pq.Set("cursor", cursor)
		}
		ex := s.get(ctx, endpoint(resource), pq, opts...)
		w.Pages = append(w.Pages, ex)
		recs, env, problem := s.decodeListPage(resource, ex)
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

func cloneQuery(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// pageHolding returns the page of pages holding record i of the walk, and
// the index of the record in it (-1 when it cannot be told).
func pageHolding(resource string, pages []*exchange, i int) (*exchange, int) {
	n := 0
	for _, ex := range pages {
		recs, _, problem := decodeListPage(resource, ex)
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

// recordEvidence is the evidence of record i of a walk, with a pointer to
// field of it (field may be empty).
func recordEvidence(resource string, pages []*exchange, i int, field string) *Evidence {
	ex, j := pageHolding(resource, pages, i)
	ptr := ""
	if j >= 0 {
		ptr = "/data/" + strconv.Itoa(j)
		if field != "" {
			ptr += "/" + field
		}
	}
	return ex.evidence(ptr)
}

// recordIDs returns the ids of records.
func recordIDs(recs []record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// firstDuplicate returns the index of the first record whose (non-empty) id
// came before, or -1.
func firstDuplicate(recs []record) int {
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
