package conformance

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/spec"
)

// checkFilters records FILT-01 to FILT-05 for every offered list resource:
//
//   - FILT-01: at an observed value T (near the end of the list, so the
//     filtered walk is short), every record of the updatedSince=T walk has
//     updatedAt >= T, of startedAfter=T (conversations) startedAt > T, of
//     occurredAfter=T (events) occurredAt > T.
//   - FILT-02: the filtered walk holds every record of the full walk that
//     matches the filter.
//   - FILT-03: a bound in the year 2999 gives 200 with data [] and hasMore
//     false.
//   - FILT-04: category filters events: each item has the category, the
//     union over the known categories holds every event of the full walk with
//     a known category, and an unknown category gives 400 or an empty page.
//   - FILT-05: unknown, wrongly cased and repeated query parameters never
//     give a 5xx; the policy observed is reported.
func checkFilters(ctx context.Context, s *session) {
	for _, r := range s.listResources() {
		if ctx.Err() != nil {
			return
		}
		full := s.fullWalk(ctx, r)
		var out ftOutcome
		for _, f := range ftFilters(r) {
			ftBound(ctx, s, r, full, f, &out)
		}
		out.record(s, endpoint(r))
		ftFarFuture(ctx, s, r)
		if r == Events {
			ftCategory(ctx, s, full)
		}
		ftOddParams(ctx, s, r)
	}
}

// ftFilter is a timestamp filter of a list.
type ftFilter struct {
	param, field string
	inclusive    bool
}

func ftFilters(resource string) []ftFilter {
	switch resource {
	case Conversations:
		return []ftFilter{{"updatedSince", "updatedAt", true}, {"startedAfter", "startedAt", false}}
	case Assistants:
		return []ftFilter{{"updatedSince", "updatedAt", true}}
	case Events:
		return []ftFilter{{"occurredAfter", "occurredAt", false}}
	}
	return nil
}

// ftTime returns a record's timestamp field, parsed; ok is false when it is
// missing or unparseable (TIME-01's defect, not judged here).
func ftTime(rec record, field string) (string, time.Time, bool) {
	v, _ := rec.Obj[field].(string)
	t, err := time.Parse(time.RFC3339Nano, v)
	return v, t, err == nil
}

func (f ftFilter) holds(t, bound time.Time) bool {
	if f.inclusive {
		return !t.Before(bound)
	}
	return t.After(bound)
}

// ftOutcome collects, per check, what held and what could not be judged
// over the filters of a resource.
type ftOutcome struct {
	held, skipped map[string][]string
}

func (o *ftOutcome) add(m *map[string][]string, id, msg string) {
	if *m == nil {
		*m = map[string][]string{}
	}
	(*m)[id] = append((*m)[id], msg)
}

func (o *ftOutcome) pass(id, msg string) { o.add(&o.held, id, msg) }
func (o *ftOutcome) skip(id, msg string) { o.add(&o.skipped, id, msg) }

// record passes a check when something held (failures recorded already
// take precedence), or else skips it with the reasons.
func (o *ftOutcome) record(s *session, ep string) {
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

// ftBound is FILT-01 and FILT-02 for one filter of a resource. It records
// failures, and adds what held or could not be judged to out.
func ftBound(ctx context.Context, s *session, r string, full *walk, f ftFilter, out *ftOutcome) {
	ep := endpoint(r)
	if !s.enabled("FILT-01") && !s.enabled("FILT-02") {
		return
	}
	type val struct {
		s string
		t time.Time
	}
	var vals []val
	for _, rec := range full.Records {
		if v, t, ok := ftTime(rec, f.field); ok {
			vals = append(vals, val{v, t})
		}
	}
	if len(vals) == 0 {
		out.skip("FILT-01", fmt.Sprintf("no record with a parseable %s to filter %s at", f.field, f.param))
		out.skip("FILT-02", fmt.Sprintf("no record with a parseable %s to filter %s at", f.field, f.param))
		return
	}
	sort.SliceStable(vals, func(i, j int) bool { return vals[i].t.Before(vals[j].t) })
	bound := vals[len(vals)*9/10]
	fw := s.walkList(ctx, r, url.Values{f.param: {bound.s}}, 1000)
	if len(fw.Pages) == 1 && fw.Ex != nil && fw.Ex.Status != http.StatusOK {
		ex := fw.Ex
		if ex.Status == 0 || ex.Status >= 500 {
			out.skip("FILT-01", fmt.Sprintf("%s=%s: %s", f.param, bound.s, fw.Problem))
			out.skip("FILT-02", fmt.Sprintf("%s=%s: %s", f.param, bound.s, fw.Problem))
			return
		}
		out.skip("FILT-01", fmt.Sprintf("%s=%s answered %d", f.param, bound.s, ex.Status))
		s.fail("FILT-02", ep, fmt.Sprintf("%s=%s, a value served in %s, answered %d; want the matching records", f.param, bound.s, f.field, ex.Status), ex.evidence(""))
		return
	}
	// FILT-01: every record returned satisfies the bound.
	op := ">"
	if f.inclusive {
		op = ">="
	}
	bad := 0
	for i, rec := range fw.Records {
		v, t, ok := ftTime(rec, f.field)
		if !ok || f.holds(t, bound.t) {
			continue
		}
		bad++
		s.fail("FILT-01", ep, fmt.Sprintf("%s=%s returned %q with %s %s; want %s %s %s",
			f.param, bound.s, truncateID(rec.ID), f.field, v, f.field, op, bound.s), pgEvidence(r, fw.Pages, i, f.field))
	}
	// An inclusive bound keeps the records at the bound itself: those of
	// the full walk must be there (FILT-02 leaves them to this check).
	if f.inclusive && full.Complete() && fw.Complete() {
		got := map[string]bool{}
		for _, rec := range fw.Records {
			got[rec.ID] = true
		}
		for _, rec := range full.Records {
			if _, t, ok := ftTime(rec, f.field); ok && rec.ID != "" && t.Equal(bound.t) && !got[rec.ID] {
				bad++
				s.fail("FILT-01", ep, fmt.Sprintf("%s=%s left out %q whose %s is exactly %s: %s is inclusive (>=)",
					f.param, bound.s, truncateID(rec.ID), f.field, bound.s, f.param), fw.Pages[0].evidence(""))
				break
			}
		}
	}
	if bad == 0 {
		out.pass("FILT-01", fmt.Sprintf("%d records of %s=%s all have %s %s %s", len(fw.Records), f.param, bound.s, f.field, op, bound.s))
	}
	// FILT-02: every matching record of the full walk is returned (those
	// at the bound itself are FILT-01's).
	if !full.Complete() {
		out.skip("FILT-02", "the full walk did not complete: "+full.Problem)
		return
	}
	if !fw.Complete() {
		out.skip("FILT-02", fmt.Sprintf("the walk with %s=%s did not complete: %s", f.param, bound.s, fw.Problem))
		return
	}
	got := map[string]bool{}
	for _, rec := range fw.Records {
		got[rec.ID] = true
	}
	var missing []record
	want := 0
	for _, rec := range full.Records {
		_, t, ok := ftTime(rec, f.field)
		if !ok || rec.ID == "" || !t.After(bound.t) {
			continue
		}
		want++
		if !got[rec.ID] {
			missing = append(missing, rec)
		}
	}
	if len(missing) == 0 {
		out.pass("FILT-02", fmt.Sprintf("%s=%s returned all %d records of the full walk beyond the bound", f.param, bound.s, want))
		return
	}
	m := missing[0]
	v, _, _ := ftTime(m, f.field)
	ex := &exchange{}
	if len(fw.Pages) > 0 {
		ex = fw.Pages[0]
	}
	s.fail("FILT-02", ep, fmt.Sprintf("%s=%s left out %d of %d records of the full walk beyond the bound, first %q (%s %s)",
		f.param, bound.s, len(missing), want, truncateID(m.ID), f.field, v), ex.evidence(""))
}

// ftFarFuture is FILT-03.
func ftFarFuture(ctx context.Context, s *session, r string) {
	const id = "FILT-03"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	const future = "2999-01-01T00:00:00Z"
	bad := 0
	var params []string
	for _, f := range ftFilters(r) {
		params = append(params, f.param)
		ex := s.get(ctx, ep, url.Values{f.param: {future}})
		if ex.Status == 0 {
			s.errored(id, ep, ex, fmt.Sprintf("no answer to %s=%s: %v", f.param, future, ex.Err))
			bad++
			continue
		}
		var env envelope
		switch {
		case ex.Status != http.StatusOK:
			s.fail(id, ep, fmt.Sprintf("%s=%s answered %d; want 200 with an empty page", f.param, future, ex.Status), ex.evidence(""))
			bad++
		case ex.jsonBody(&env) != nil:
			s.fail(id, ep, fmt.Sprintf("%s=%s answered 200 with a body that is not a list envelope", f.param, future), ex.evidence(""))
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

// ftCategory is FILT-04.
func ftCategory(ctx context.Context, s *session, full *walk) {
	const id = "FILT-04"
	ep := endpoint(Events)
	if !s.enabled(id) {
		return
	}
	bad := 0
	union := map[string]bool{}
	unionOK := true
	for _, c := range spec.EventCategories {
		cw := s.walkList(ctx, Events, url.Values{"category": {c}}, 1000)
		if len(cw.Pages) == 1 && cw.Ex != nil && cw.Ex.Status != http.StatusOK {
			unionOK = false
			if cw.Ex.Status == 0 || cw.Ex.Status >= 500 {
				continue // HTTP-01's
			}
			s.fail(id, ep, fmt.Sprintf("category=%s, a value of this version, answered %d; want the events of that category", c, cw.Ex.Status), cw.Ex.evidence(""))
			bad++
			continue
		}
		if !cw.Complete() {
			unionOK = false
		}
		for i, rec := range cw.Records {
			union[rec.ID] = true
			if got, _ := rec.Obj["category"].(string); got != c {
				s.fail(id, ep, fmt.Sprintf("category=%s returned %q with category %q", c, truncateID(rec.ID), got), pgEvidence(Events, cw.Pages, i, "category"))
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
			ex := s.get(ctx, ep, url.Values{"category": {c}})
			s.fail(id, ep, fmt.Sprintf("%d of %d events with a known category are missing from the walks by category, first %q (category %s)",
				len(missing), compared, truncateID(m.ID), c), ex.evidence(""))
			bad++
		}
	}
	const unknown = "NoSuchCategory"
	ex := s.get(ctx, ep, url.Values{"category": {unknown}})
	switch ex.Status {
	case http.StatusBadRequest:
	case http.StatusOK:
		var env envelope
		if err := ex.jsonBody(&env); err != nil || len(env.Data) > 0 {
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
		msg := fmt.Sprintf("each walk by category returned only that category; an unknown category answered %d", ex.Status)
		if compared > 0 {
			msg += fmt.Sprintf("; together they hold all %d events with a known category", compared)
		}
		s.pass(id, ep, msg)
	}
}

// ftOddParams is FILT-05.
func ftOddParams(ctx context.Context, s *session, r string) {
	const id = "FILT-05"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	count := func(ex *exchange) int {
		var env envelope
		if ex.jsonBody(&env) != nil {
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
	try("?LIMIT=1", url.Values{"LIMIT": {"1"}}, func(ex *exchange) string {
		if n := count(ex); n <= 1 {
			return "is read as limit (" + strconv.Itoa(n) + " record)"
		}
		return "is ignored as unknown"
	})
	try("?limit=1&limit=2", url.Values{"limit": {"1", "2"}}, func(ex *exchange) string {
		switch count(ex) {
		case 1:
			return "takes the first value"
		case 2:
			return "takes the last value"
		}
		return fmt.Sprintf("answered %d records", count(ex))
	})
	if bad == 0 {
		s.pass(id, ep, "policy: "+strings.Join(policy, "; "))
	}
}
