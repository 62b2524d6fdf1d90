package providertest

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/aiusage/kit/spec"
)

func testTimeFilters(t *testing.T, e *env) {
	convs := e.fx.items("conversations", tenant1)
	assts := e.fx.items("assistants", tenant1)
	evs := e.fx.items("events", tenant1)
	since := func(b time.Time) func(item) bool { return func(it item) bool { return !it.key.Time.Before(b) } }
	after := func(b time.Time) func(item) bool { return func(it item) bool { return it.key.Time.After(b) } }
	startedAfter := func(b time.Time) func(item) bool { return func(it item) bool { return it.started.After(b) } }

	type bound struct {
		res, param string
		at         time.Time
		keep       func(time.Time) func(item) bool
	}
	var bounds []bound
	for _, at := range []time.Time{convTie, base.Add(2*time.Hour + 501*time.Millisecond), subMilli.Truncate(time.Millisecond), base.Add(20 * time.Hour), convs[0].key.Time, convs[len(convs)-1].key.Time} {
		bounds = append(bounds, bound{"conversations", "updatedSince", at, since})
	}
	for _, at := range []time.Time{sharedStart, sharedStart.Add(time.Hour), sharedStart.Add(-time.Millisecond), base.Add(-24 * time.Hour)} {
		bounds = append(bounds, bound{"conversations", "startedAfter", at, startedAfter})
	}
	for _, at := range []time.Time{assistantTie, assts[0].key.Time, assts[len(assts)-1].key.Time} {
		bounds = append(bounds, bound{"assistants", "updatedSince", at, since})
	}
	for _, at := range []time.Time{eventTie, eventTie.Add(-time.Millisecond), evs[0].key.Time, evs[len(evs)-1].key.Time, base.Add(90*time.Minute + time.Millisecond)} {
		bounds = append(bounds, bound{"events", "occurredAfter", at, after})
	}
	for _, b := range bounds {
		items := e.fx.items(b.res, tenant1)
		path := "/" + b.res
		// The bound itself, the same instant at +02:00 and without
		// milliseconds, one millisecond later, and just around it.
		for _, v := range []struct {
			text string
			at   time.Time
		}{
			{timeParam(b.at), b.at},
			{withOffset(b.at), b.at},
			{b.at.Format(time.RFC3339Nano), b.at},
			{timeParam(b.at.Add(time.Millisecond)), b.at.Add(time.Millisecond)},
			// Finer than the precision stored: compared as the instant it is.
			{b.at.Add(500 * time.Microsecond).Format(time.RFC3339Nano), b.at.Add(500 * time.Microsecond)},
			{b.at.Add(-time.Nanosecond).Format(time.RFC3339Nano), b.at.Add(-time.Nanosecond)},
		} {
			q := vals(b.param, v.text)
			want := itemIDs(filterItems(items, b.keep(v.at)))
			w := e.c.walk(t, full, path, q, walkOpts{limits: []int{5}})
			sameIDs(t, fmt.Sprintf("walk of %s?%s", path, q.Encode()), ids(t, w.items), want)
		}
	}

	// Both conversation filters at once.
	q := vals("updatedSince", withOffset(convTie), "startedAfter", timeParam(sharedStart.Add(time.Hour)))
	want := itemIDs(filterItems(convs, func(it item) bool { return since(convTie)(it) && startedAfter(sharedStart.Add(time.Hour))(it) }))
	for _, limit := range []int{1, 2, 3, 100} {
		w := e.c.walk(t, full, "/conversations", q, walkOpts{limits: []int{limit}})
		sameIDs(t, fmt.Sprintf("walk of /conversations?%s with limit=%d", q.Encode(), limit), ids(t, w.items), want)
	}
	// occurredAfter with category.
	q = vals("occurredAfter", timeParam(eventTie.Add(-time.Millisecond)), "category", spec.CategoryAccess)
	want = itemIDs(filterItems(evs, func(it item) bool {
		return after(eventTie.Add(-time.Millisecond))(it) && it.category == spec.CategoryAccess
	}))
	w := e.c.walk(t, full, "/events", q, walkOpts{limits: []int{1}})
	sameIDs(t, "walk of /events?"+q.Encode(), ids(t, w.items), want)
}

func testFarFuture(t *testing.T, e *env) {
	for _, pq := range []struct{ path, param string }{
		{"/conversations", "updatedSince"},
		{"/conversations", "startedAfter"},
		{"/assistants", "updatedSince"},
		{"/events", "occurredAfter"},
	} {
		for _, v := range []string{"2999-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z"} {
			r := e.c.get(t, full, pq.path, vals(pq.param, v))
			p, ok := r.envelope(t)
			if ok && (len(p.Data) != 0 || p.HasMore) {
				t.Errorf("%v: want {\"data\":[],\"hasMore\":false,\"nextCursor\":null}", r)
			}
		}
	}
}

// badParam checks that GET path?q is a 400 problem naming field.
func badParam(t *testing.T, e *env, cr cred, path string, q url.Values, fields ...string) {
	t.Helper()
	e.c.get(t, cr, path, q).problem(t, http.StatusBadRequest, fields...)
}

func testBadParameters(t *testing.T, e *env) {
	usageRange := usageQuery("day", base, base.AddDate(0, 0, 2))
	timeParams := []struct {
		path, param string
		q           url.Values
	}{
		{"/conversations", "updatedSince", nil},
		{"/conversations", "startedAfter", nil},
		{"/assistants", "updatedSince", nil},
		{"/events", "occurredAfter", nil},
		{"/usage", "startAt", usageRange},
		{"/usage", "endAt", usageRange},
	}
	for _, tp := range timeParams {
		for _, v := range []string{"yesterday", "2026-13-01T00:00:00Z", "2026-03-01T00:00:00", "2026-03-01", "2026-03-01 00:00:00Z", "2026-02-30T00:00:00Z", "1772323200"} {
			badParam(t, e, full, tp.path, withParams(tp.q, tp.param, v), tp.param)
		}
	}
	listPaths := []struct {
		path string
		q    url.Values
	}{
		{"/conversations", nil},
		{"/assistants", nil},
		{"/events", nil},
		{"/usage", usageRange},
	}
	for _, lp := range listPaths {
		for _, v := range []string{"0", "-1", "1001", "abc", "1.5", "99999999999999999999"} {
			badParam(t, e, full, lp.path, withParams(lp.q, "limit", v), "limit")
		}
		for _, v := range []string{"1", "1000"} {
			e.c.list(t, full, lp.path, withParams(lp.q, "limit", v))
		}
	}
	// Unknown parameters are ignored.
	e.c.list(t, full, "/conversations", vals("foo", "bar", "limit", "2"))
}

func testCategory(t *testing.T, e *env) {
	evs := e.fx.items("events", tenant1)
	for _, c := range spec.EventCategories {
		want := itemIDs(filterItems(evs, func(it item) bool { return it.category == c }))
		for _, limit := range []int{1, 3, 1000} {
			w := e.c.walk(t, full, "/events", vals("category", c), walkOpts{limits: []int{limit}})
			sameIDs(t, fmt.Sprintf("walk of /events?category=%s with limit=%d", c, limit), ids(t, w.items), want)
			for _, raw := range w.items {
				if rec := decodeRecord(t, raw); rec.Category != c {
					t.Errorf("/events?category=%s serves %q of category %q", c, rec.ID, rec.Category)
				}
			}
		}
	}
	for _, v := range []string{"NoSuchCategory", "access", "Access,Policy"} {
		badParam(t, e, full, "/events", vals("category", v), "category")
	}
}
