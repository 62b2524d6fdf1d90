package conformance

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/spec"
)

// checkFilters records FILT-01 to FILT-05 for every offered list resource:
//
//   - FILT-01: every record of every page of a filtered walk satisfies every
//     bound: updatedSince (>=), startedAfter and occurredAfter (>); the
//     records at an inclusive bound itself are all there.
//   - FILT-02: the filtered walk holds every record of the full walk that
//     matches the filters.
//   - FILT-03: a bound in the year 2999 gives 200 with data [] and hasMore
//     false.
//   - FILT-04: category filters events: each record of every page has the
//     category, the union over the known categories holds every event of the
//     full walk with a known category, and an unknown category gives 400 or
//     an empty page.
//   - FILT-05: unknown, wrongly cased and repeated query parameters never
//     give a 5xx; the policy observed is reported.
//
// Each filter, and each combination the interface allows (updatedSince with
// startedAfter on conversations, occurredAfter with category on events), is
// walked with a page size that makes the walk cross at least three pages
// (threePageLimit), so that a provider whose cursors forget the filters
// after the first page is caught. The bounds are values served in the full
// walk, chosen (chooseFilterBounds) so that records outside the filters
// follow the first page in keyset order where the data has such records.
func checkFilters(ctx context.Context, s *session) {
	fc := &filterChecks{s: s}
	for _, r := range s.listResources() {
		if ctx.Err() != nil {
			return
		}
		full := s.fullWalk(ctx, r)
		var out filterOutcome
		if s.enabled("FILT-01") || s.enabled("FILT-02") {
			for _, params := range filterSets(r) {
				fc.bounds(ctx, r, full, params, &out)
			}
		}
		out.record(s, endpoint(r))
		fc.farFuture(ctx, r)
		if r == Events {
			fc.category(ctx, full)
		}
		fc.oddParams(ctx, r)
	}
}

// filterChecks is what the filter checks of one run share: the session.
type filterChecks struct {
	s *session
}

// lowerBound is a timestamp filter of a list: a lower bound, inclusive or
// not, on a timestamp field of its records.
type lowerBound struct {
	param, field string
	inclusive    bool
}

// categoryParam is the events' category filter: not a timestamp bound.
const categoryParam = "category"

func lowerBounds(resource string) []lowerBound {
	switch resource {
	case Conversations:
		return []lowerBound{{"updatedSince", "updatedAt", true}, {"startedAfter", "startedAt", false}}
	case Assistants:
		return []lowerBound{{"updatedSince", "updatedAt", true}}
	case Events:
		return []lowerBound{{"occurredAfter", "occurredAt", false}}
	}
	return nil
}

func lowerBoundOf(resource, param string) (lowerBound, bool) {
	for _, f := range lowerBounds(resource) {
		if f.param == param {
			return f, true
		}
	}
	return lowerBound{}, false
}

// filterSets lists the filters walked at a resource: each alone, then the
// combinations the interface allows.
func filterSets(resource string) [][]string {
	switch resource {
	case Conversations:
		return [][]string{{"updatedSince"}, {"startedAfter"}, {"updatedSince", "startedAfter"}}
	case Assistants:
		return [][]string{{"updatedSince"}}
	case Events:
		return [][]string{{"occurredAfter"}, {"occurredAfter", categoryParam}}
	}
	return nil
}

// timestampOf returns a record's timestamp field, parsed; ok is false when
// it is missing or unparseable (TIME-01's defect, not judged here).
func timestampOf(rec record, field string) (string, time.Time, bool) {
	v, _ := rec.Obj[field].(string)
	t, err := time.Parse(time.RFC3339Nano, v)
	return v, t, err == nil
}

func (f lowerBound) holds(t, bound time.Time) bool {
	if f.inclusive {
		return !t.Before(bound)
	}
	return t.After(bound)
}

func (f lowerBound) op() string {
	if f.inclusive {
		return ">="
	}
	return ">"
}

// filterValue is one filter with its value: a timestamp bound as served
// in the data, or a category.
type filterValue struct {
	f     lowerBound // zero for the category
	value string
	at    time.Time
}

func (b filterValue) isCategory() bool { return b.f.param == "" }

func (b filterValue) param() string {
	if b.isCategory() {
		return categoryParam
	}
	return b.f.param
}

// holds reports whether rec satisfies the bound; judged is false when its
// field is missing or unparseable.
func (b filterValue) holds(rec record) (ok, judged bool) {
	return b.holdsCell(readCell(rec, b.f, b.isCategory()))
}

// holdsCell is holds for a record's value already read.
func (b filterValue) holdsCell(c filterCell) (ok, judged bool) {
	if !c.ok {
		return false, false
	}
	if b.isCategory() {
		return c.str == b.value, true
	}
	return b.f.holds(c.at, b.at), true
}

// filterCase is a set of filters walked together.
type filterCase []filterValue

func (c filterCase) query() url.Values {
	q := url.Values{}
	for _, b := range c {
		q.Set(b.param(), b.value)
	}
	return q
}

func (c filterCase) String() string { return describeFilters(c.query()) }

// filterCell is one record's value of one filter's field, read once.
type filterCell struct {
	at  time.Time
	str string
	ok  bool // the field is there and parses
}

// filterColumns holds, per filter parameter, the cells of every record of a
// walk, so that the many cases chooseFilterBounds tries do not parse a
// timestamp each time.
type filterColumns map[string][]filterCell

// readCell reads rec's value of filter f (of the category when category).
func readCell(rec record, f lowerBound, category bool) filterCell {
	if category {
		c, ok := rec.Obj["category"].(string)
		return filterCell{str: c, ok: ok}
	}
	_, t, ok := timestampOf(rec, f.field)
	return filterCell{at: t, ok: ok}
}

func readColumns(recs []record, resource string, params []string) filterColumns {
	cols := filterColumns{}
	for _, p := range params {
		cells := make([]filterCell, len(recs))
		f, isTime := lowerBoundOf(resource, p)
		for i, rec := range recs {
			cells[i] = readCell(rec, f, !isTime)
		}
		cols[p] = cells
	}
	return cols
}

// holdsAt is holds for record i of cols.
func (b filterValue) holdsAt(cols filterColumns, i int) (ok, judged bool) {
	return b.holdsCell(cols[b.param()][i])
}

// matchesAt is matches for record i of cols.
func (c filterCase) matchesAt(cols filterColumns, i int) (ok, judged bool) {
	ok = true
	for _, b := range c {
		h, j := b.holdsAt(cols, i)
		if !j {
			return false, false
		}
		ok = ok && h
	}
	return ok, true
}

// sortKeyOnly reports whether every filter of c bounds the sort timestamp
// of resource: a cursor that forgot such filters after the first page
// would still return only matching records (they all sort after it).
func (c filterCase) sortKeyOnly(resource string) bool {
	for _, b := range c {
		if b.isCategory() || b.f.field != sortField(resource) {
			return false
		}
	}
	return true
}

// filterOutcome collects, per check, what held and what could not be judged
// over the filters of a resource.
type filterOutcome struct {
	held, skipped map[string][]string
}

func (o *filterOutcome) add(m *map[string][]string, id, msg string) {
	if *m == nil {
		*m = map[string][]string{}
	}
	(*m)[id] = append((*m)[id], msg)
}

func (o *filterOutcome) pass(id, msg string) { o.add(&o.held, id, msg) }
func (o *filterOutcome) skip(id, msg string) { o.add(&o.skipped, id, msg) }

// record passes a check when something held (failures recorded already
// take precedence), or else skips it with the reasons.
func (o *filterOutcome) record(s *session, ep string) {
	for _, id := range []string{"FILT-01", "FILT-02"} {
		switch {
		case len(o.held[id]) > 0:
			msg := strings.Join(o.held[id], "; ")
			if len(o.skipped[id]) > 0 {
				msg += "; not judged: " + strings.Join(o.skipped[id], "; ")
			}
			s.pass(id, ep, msg)
		case len(o.skipped[id]) > 0:
			s.skip(id, ep, strings.Join(o.skipped[id], "; "))
		}
	}
}

// filteredWalkNote says what a filtered walk could not show: fewer than three
// pages, or no record outside the filters after the first page.
func filteredWalkNote(r string, p filterPlan, fw *walk) string {
	if !fw.Complete() {
		return fmt.Sprintf(" (the walk stopped after %s: %s)", plural(len(fw.Sizes), "page"), fw.Problem)
	}
	var notes []string
	if len(fw.Sizes) < 3 {
		notes = append(notes, fmt.Sprintf("the data holds only %d matching records, so the walk had %s, fewer than the three the check asks for",
			len(p.matched), plural(len(fw.Sizes), "page")))
	}
	if p.exposed == 0 && !p.c.sortKeyOnly(r) && len(fw.Sizes) > 1 {
		notes = append(notes, "no record outside the filters follows the first page in keyset order, so a cursor that forgot the filters after page 1 could not show here")
	}
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, "; ") + ")"
}

// bounds is FILT-01 and FILT-02 (and FILT-04 for a category among the
// filters) for one set of filters of a resource. It records failures, and
// adds what held or could not be judged to out.
func (fc *filterChecks) bounds(ctx context.Context, r string, full *walk, params []string, out *filterOutcome) {
	s := fc.s
	ep := endpoint(r)
	name := strings.Join(params, "+")
	p, ok := chooseFilterBounds(full.Records, r, params)
	if !ok {
		out.skip("FILT-01", fmt.Sprintf("no record with the fields to filter %s at", name))
		out.skip("FILT-02", fmt.Sprintf("no record with the fields to filter %s at", name))
		return
	}
	what := fmt.Sprintf("%s (limit=%d)", p.c, p.limit)
	fw := s.walkList(ctx, r, p.c.query(), p.limit)
	if len(fw.Sizes) == 0 {
		ex := fw.Pages[0]
		if ex.Status == http.StatusOK {
			out.skip("FILT-01", fmt.Sprintf("%s: the first page is not a valid list envelope (ENV-01's)", what))
			out.skip("FILT-02", fmt.Sprintf("%s: the first page is not a valid list envelope (ENV-01's)", what))
			return
		}
		if ex.Status == 0 || ex.Status >= 500 {
			out.skip("FILT-01", fmt.Sprintf("%s: %s", what, fw.Problem))
			out.skip("FILT-02", fmt.Sprintf("%s: %s", what, fw.Problem))
			return
		}
		out.skip("FILT-01", fmt.Sprintf("%s answered %s", what, ex.describe()))
		s.fail("FILT-02", ep, fmt.Sprintf("%s, with values served in the records, answered %s; want the matching records", what, ex.describe()), ex.evidence(""))
		return
	}
	w := &boundsWalk{r: r, ep: ep, what: what, note: filteredWalkNote(r, p, fw), p: p, full: full, fw: fw, got: map[string]bool{}}
	for _, rec := range fw.Records {
		w.got[rec.ID] = true
	}
	fc.boundsHold(w, out)
	fc.boundsComplete(w, out)
}

// boundsWalk is a filtered walk of [filterChecks.bounds] with what its
// checks share.
type boundsWalk struct {
	r, ep, what string
	// note says what the walk could not show (filteredWalkNote).
	note     string
	p        filterPlan
	full, fw *walk
	// got holds the ids the filtered walk returned.
	got map[string]bool
}

// atBound returns the inclusive bound of the walk that rec's timestamp is
// exactly at; ok is false when there is none.
func (w *boundsWalk) atBound(rec record) (filterValue, bool) {
	for _, b := range w.p.c {
		if !b.isCategory() && b.f.inclusive {
			if _, t, ok := timestampOf(rec, b.f.field); ok && t.Equal(b.at) {
				return b, true
			}
		}
	}
	return filterValue{}, false
}

// boundsHold is FILT-01 (FILT-04 for the category): every record of every
// page satisfies every filter, and an inclusive bound keeps the records at
// the bound itself.
func (fc *filterChecks) boundsHold(w *boundsWalk, out *filterOutcome) {
	s, ep, what, p, fw := fc.s, w.ep, w.what, w.p, w.fw
	bad := 0
	for i, rec := range fw.Records {
		for _, b := range p.c {
			ok, judged := b.holds(rec)
			if !judged || ok {
				continue
			}
			page, _ := fw.pageOf(i)
			if b.isCategory() {
				got, _ := rec.Obj["category"].(string)
				s.fail("FILT-04", ep, fmt.Sprintf("page %d of %s returned %q with category %q; want %s",
					page, what, truncateID(rec.ID), got, b.value), fw.evidence(i, "category"))
				continue
			}
			bad++
			v, _, _ := timestampOf(rec, b.f.field)
			s.fail("FILT-01", ep, fmt.Sprintf("page %d of %s returned %q with %s %s; want %s %s %s",
				page, what, truncateID(rec.ID), b.f.field, v, b.f.field, b.f.op(), b.value), fw.evidence(i, b.f.field))
		}
	}
	// The records of the full walk that match and sit at an inclusive
	// bound must be there (FILT-02 leaves them here).
	if w.full.Complete() && fw.Complete() {
		for _, i := range p.matched {
			rec := w.full.Records[i]
			if b, ok := w.atBound(rec); ok && !w.got[rec.ID] {
				bad++
				s.fail("FILT-01", ep, fmt.Sprintf("%s left out %q whose %s is exactly %s: %s is inclusive (>=)",
					what, truncateID(rec.ID), b.f.field, b.value, b.f.param), fw.Pages[0].evidence(""))
				break
			}
		}
	}
	if bad == 0 {
		bounds := "every bound"
		if slices.ContainsFunc(p.c, filterValue.isCategory) {
			bounds = "every timestamp bound (the category is FILT-04's)"
		}
		out.pass("FILT-01", fmt.Sprintf("%s: all %d records of %s satisfy %s%s", what, len(fw.Records), plural(len(fw.Sizes), "page"), bounds, w.note))
	}
}

// boundsComplete is FILT-02: the walk holds every matching record of the
// full walk (but those at an inclusive bound, FILT-01's).
func (fc *filterChecks) boundsComplete(w *boundsWalk, out *filterOutcome) {
	s, r, ep, what, p, full, fw := fc.s, w.r, w.ep, w.what, w.p, w.full, w.fw
	switch {
	case !full.Complete():
		out.skip("FILT-02", "the full walk did not complete: "+full.Problem)
		return
	case !fw.Complete():
		if ex, refused := fw.stoppedEarly(); refused {
			s.fail("FILT-02", ep, fmt.Sprintf("page %d of %s answered %d: the nextCursor of page %d, sent back with the same filters, was refused, so the walk cannot reach the matching records after it",
				len(fw.Pages), what, ex.Status, len(fw.Pages)-1), ex.evidence(""))
			return
		}
		out.skip("FILT-02", fmt.Sprintf("the walk with %s did not complete: %s", what, fw.Problem))
		return
	}
	times := map[int64]int{}
	for _, rec := range full.Records {
		if !rec.At.IsZero() {
			times[rec.At.UnixNano()]++
		}
	}
	var missing []record
	tiesOnly := true
	for _, i := range p.matched {
		rec := full.Records[i]
		if _, ok := w.atBound(rec); ok || w.got[rec.ID] {
			continue
		}
		missing = append(missing, rec)
		tiesOnly = tiesOnly && times[rec.At.UnixNano()] > 1
	}
	switch {
	case len(missing) == 0:
		out.pass("FILT-02", fmt.Sprintf("%s returned all %d matching records of the full walk in %s%s", what, len(p.matched), plural(len(fw.Sizes), "page"), w.note))
		return
	case tiesOnly:
		out.pass("FILT-02", fmt.Sprintf("%s left out only records sharing a %s with another, which PAGE-03 judges", what, sortField(r)))
		return
	}
	m := missing[0]
	// Blame the page that jumped over it: the first page holding a record
	// that sorts after it, or the last page when none does.
	at, where := -1, ""
	for i, rec := range fw.Records {
		if keyLess(m, rec) {
			at = i
			break
		}
	}
	if at >= 0 {
		page, _ := fw.pageOf(at)
		where = fmt.Sprintf("which belongs before record %d of page %d", at-fw.pageStart(page)+1, page)
	} else {
		at = max(len(fw.Records)-1, 0)
		where = fmt.Sprintf("which belongs after the last record of the last page (page %d)", len(fw.Sizes))
	}
	s.fail("FILT-02", ep, fmt.Sprintf("%s left out %d of %d matching records of the full walk, first %q (%s %s), %s",
		what, len(missing), len(p.matched), truncateID(m.ID), sortField(r), m.Time, where), fw.evidence(at, ""))
}

// farFuture is FILT-03.
func (fc *filterChecks) farFuture(ctx context.Context, r string) {
	s := fc.s
	const id = "FILT-03"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	const future = "2999-01-01T00:00:00Z"
	bad := 0
	var params []string
	for _, f := range lowerBounds(r) {
		params = append(params, f.param)
		ex := s.get(ctx, ep, url.Values{f.param: {future}})
		if ex.Status == 0 {
			s.errored(id, ep, ex, fmt.Sprintf("no answer to %s=%s: %v", f.param, future, ex.Err))
			bad++
			continue
		}
		if ex.Status != http.StatusOK {
			s.fail(id, ep, fmt.Sprintf("%s=%s answered %d; want 200 with an empty page", f.param, future, ex.Status), ex.evidence(""))
			bad++
			continue
		}
		env, err := ex.envelope()
		switch {
		case err != nil:
			s.fail(id, ep, fmt.Sprintf("%s=%s answered 200 with a body that is not a valid list envelope: %v; want {\"data\": [], \"hasMore\": false}", f.param, future, err), ex.evidence(""))
			bad++
		case len(env.Data) > 0:
			s.fail(id, ep, fmt.Sprintf("%s=%s answered %d records; want none", f.param, future, len(env.Data)), ex.evidence("/data"))
			bad++
		case env.HasMore:
			s.fail(id, ep, fmt.Sprintf("%s=%s answered an empty page with hasMore true; want false", f.param, future), ex.evidence("/hasMore"))
			bad++
		}
	}
	if bad == 0 {
		s.pass(id, ep, fmt.Sprintf("%s in the year 2999 answered 200 with data [] and hasMore false", strings.Join(params, " and ")))
	}
}

// category is FILT-04: each category walked across pages.
func (fc *filterChecks) category(ctx context.Context, full *walk) {
	s := fc.s
	const id = "FILT-04"
	ep := endpoint(Events)
	if !s.enabled(id) {
		return
	}
	counts := map[string]int{}
	for _, rec := range full.Records {
		if c, _ := rec.Obj["category"].(string); c != "" {
			counts[c]++
		}
	}
	bad := 0
	union := map[string]bool{}
	unionOK := true
	var short []string
	pages := 0
	for _, c := range spec.EventCategories {
		limit := threePageLimit(counts[c])
		cw := s.walkList(ctx, Events, url.Values{"category": {c}}, limit)
		if len(cw.Sizes) == 0 {
			unionOK = false
			ex := cw.Pages[0]
			if ex.Status == 0 || ex.Status >= 500 {
				continue // HTTP-01's
			}
			if ex.Status == http.StatusOK {
				continue // not an envelope: ENV-01's
			}
			s.fail(id, ep, fmt.Sprintf("category=%s, a value of this version, answered %d; want the events of that category", c, ex.Status), ex.evidence(""))
			bad++
			continue
		}
		if !cw.Complete() {
			unionOK = false
			if ex, refused := cw.stoppedEarly(); refused {
				s.fail(id, ep, fmt.Sprintf("page %d of category=%s (limit=%d) answered %d: the nextCursor of page %d, sent back with the same category, was refused",
					len(cw.Pages), c, limit, ex.Status, len(cw.Pages)-1), ex.evidence(""))
				bad++
			}
		}
		pages += len(cw.Sizes)
		if cw.Complete() && counts[c] > 0 && len(cw.Sizes) < 3 {
			short = append(short, fmt.Sprintf("%s (%d events)", c, counts[c]))
		}
		for i, rec := range cw.Records {
			union[rec.ID] = true
			if got, _ := rec.Obj["category"].(string); got != c {
				page, _ := cw.pageOf(i)
				s.fail(id, ep, fmt.Sprintf("page %d of category=%s (limit=%d) returned %q with category %q", page, c, limit, truncateID(rec.ID), got), cw.evidence(i, "category"))
				bad++
				break
			}
		}
	}
	compared := 0
	if unionOK && full.Complete() {
		var missing []record
		for _, rec := range full.Records {
			c, _ := rec.Obj["category"].(string)
			if rec.ID == "" || !slices.Contains(spec.EventCategories, c) {
				continue
			}
			compared++
			if !union[rec.ID] {
				missing = append(missing, rec)
			}
		}
		if len(missing) > 0 {
			m := missing[0]
			c, _ := m.Obj["category"].(string)
			cw := s.walkList(ctx, Events, url.Values{"category": {c}}, threePageLimit(counts[c]))
			s.fail(id, ep, fmt.Sprintf("%d of %d events with a known category are missing from the walks by category, first %q (category %s)",
				len(missing), compared, truncateID(m.ID), c), cw.Pages[0].evidence(""))
			bad++
		}
	}
	const unknown = "NoSuchCategory"
	ex := s.get(ctx, ep, url.Values{"category": {unknown}})
	switch ex.Status {
	case http.StatusBadRequest:
	case http.StatusOK:
		env, err := ex.envelope()
		switch {
		case err != nil:
			s.fail(id, ep, fmt.Sprintf("category=%s answered 200 with a body that is not a valid list envelope: %v; want 400 or an empty page", unknown, err), ex.evidence(""))
			bad++
		case len(env.Data) > 0:
			s.fail(id, ep, fmt.Sprintf("category=%s answered 200 with %d events; want 400 or an empty page", unknown, len(env.Data)), ex.evidence("/data"))
			bad++
		}
	case 0:
		s.errored(id, ep, ex, fmt.Sprintf("no answer to category=%s: %v", unknown, ex.Err))
		bad++
	default:
		s.fail(id, ep, fmt.Sprintf("category=%s answered %d; want 400 or an empty page", unknown, ex.Status), ex.evidence(""))
		bad++
	}
	if bad == 0 {
		msg := fmt.Sprintf("each walk by category (%d pages in all) returned only that category on every page; an unknown category answered %d", pages, ex.Status)
		if compared > 0 {
			msg += fmt.Sprintf("; together they hold all %d events with a known category", compared)
		}
		if len(short) > 0 {
			msg += "; too few events for three pages in " + strings.Join(short, ", ")
		}
		s.pass(id, ep, msg)
	}
}

// oddParams is FILT-05.
func (fc *filterChecks) oddParams(ctx context.Context, r string) {
	s := fc.s
	const id = "FILT-05"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	count := func(ex *exchange) int {
		env, err := ex.envelope()
		if err != nil {
			return -1
		}
		return len(env.Data)
	}
	var policy []string
	bad := 0
	try := func(what string, q url.Values, describe func(ex *exchange) string) {
		ex := s.get(ctx, ep, q)
		switch {
		case ex.Status == 0:
			s.errored(id, ep, ex, fmt.Sprintf("no answer to %s: %v", what, ex.Err))
			bad++
		case ex.Status >= 500:
			s.fail(id, ep, fmt.Sprintf("%s answered %d", what, ex.Status), ex.evidence(""))
			bad++
		case ex.Status == http.StatusOK:
			policy = append(policy, what+" "+describe(ex))
		default:
			policy = append(policy, fmt.Sprintf("%s answered %d (refused)", what, ex.Status))
		}
	}
	try("?foo=bar", url.Values{"foo": {"bar"}, "limit": {"1"}}, func(*exchange) string { return "is ignored" })
	const notEnvelope = "answered 200 with a body that is not a valid list envelope (ENV-01's)"
	try("?LIMIT=1", url.Values{"LIMIT": {"1"}}, func(ex *exchange) string {
		switch n := count(ex); {
		case n < 0:
			return notEnvelope
		case n <= 1:
			return "is read as limit (" + strconv.Itoa(n) + " record)"
		}
		return "is ignored as unknown"
	})
	try("?limit=1&limit=2", url.Values{"limit": {"1", "2"}}, func(ex *exchange) string {
		switch n := count(ex); n {
		case -1:
			return notEnvelope
		case 1:
			return "takes the first value"
		case 2:
			return "takes the last value"
		default:
			return fmt.Sprintf("answered %d records", n)
		}
	})
	if bad == 0 {
		s.pass(id, ep, "policy: "+strings.Join(policy, "; "))
	}
}
