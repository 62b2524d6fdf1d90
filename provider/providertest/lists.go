package providertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

var listResources = []string{"conversations", "assistants", "events"}

func itemIDs(items []item) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.id)
	}
	return out
}

// sameIDs reports (as an error of t) how got differs from want: missing,
// repeated and unexpected ids, or the first place the order differs.
func sameIDs(t *testing.T, what string, got, want []string) bool {
	t.Helper()
	if reflect.DeepEqual(got, want) || (len(got) == 0 && len(want) == 0) {
		return true
	}
	count := map[string]int{}
	for _, id := range got {
		count[id]++
	}
	wanted := map[string]bool{}
	var missing, repeated, extra []string
	for _, id := range want {
		wanted[id] = true
		if count[id] == 0 {
			missing = append(missing, id)
		}
	}
	for _, id := range got {
		switch {
		case !wanted[id]:
			extra = append(extra, id)
		case count[id] > 1:
			repeated = append(repeated, id)
			count[id] = 1
		}
	}
	msg := fmt.Sprintf("%s: got %d ids, want %d", what, len(got), len(want))
	if len(missing) > 0 {
		msg += fmt.Sprintf("; missing %q", missing)
	}
	if len(repeated) > 0 {
		msg += fmt.Sprintf("; repeated %q", repeated)
	}
	if len(extra) > 0 {
		msg += fmt.Sprintf("; unexpected %q", extra)
	}
	if len(missing)+len(repeated)+len(extra) == 0 {
		for i := range got {
			if got[i] != want[i] {
				msg += fmt.Sprintf("; order differs at %d: got %q, want %q", i, got[i:min(len(got), i+4)], want[i:min(len(want), i+4)])
				break
			}
		}
	}
	t.Error(msg)
	return false
}

// servedKey returns the list position of a served record, from its own
// fields.
func servedKey(t *testing.T, resource string, raw json.RawMessage) provider.Key {
	t.Helper()
	r := decodeRecord(t, raw)
	ts := r.UpdatedAt
	switch resource {
	case "conversations":
		if ts == "" {
			ts = r.StartedAt
		}
	case "assistants":
		if ts == "" {
			ts = r.CreatedAt
		}
	case "events":
		ts = r.OccurredAt
	}
	v, err := spec.ParseTime(ts)
	if err != nil {
		t.Fatalf("%s %q: sort timestamp: %v", resource, r.ID, err)
	}
	return provider.Key{Time: v, ID: r.ID}
}

// checkOrder checks that the served records are in strictly ascending
// keyset order.
func checkOrder(t *testing.T, resource string, raws []json.RawMessage) {
	t.Helper()
	for i := 1; i < len(raws); i++ {
		a, b := servedKey(t, resource, raws[i-1]), servedKey(t, resource, raws[i])
		if !a.Less(b) {
			t.Errorf("/%s: %q (%s) is served before %q (%s): not in keyset order", resource, a.ID, a.Time.Format(spec.TimeLayout), b.ID, b.Time.Format(spec.TimeLayout))
			return
		}
	}
}

func testWalks(t *testing.T, e *env) {
	for _, res := range listResources {
		t.Run(res, func(t *testing.T) {
			t.Parallel()
			path := "/" + res
			want := itemIDs(e.fx.items(res, tenant1))
			for limit := 1; limit <= len(want)+1; limit++ {
				w := e.c.walk(t, full, path, nil, walkOpts{limits: []int{limit}})
				if !sameIDs(t, fmt.Sprintf("walk of %s with limit=%d", path, limit), ids(t, w.items), want) {
					continue
				}
				checkOrder(t, res, w.items)
				for i, p := range w.pages[:len(w.pages)-1] {
					if len(p) == 0 {
						t.Errorf("walk of %s with limit=%d: page %d is empty but hasMore is true", path, limit, i+1)
					}
				}
			}
			// limit may change from page to page.
			w := e.c.walk(t, full, path, nil, walkOpts{limits: []int{1, 4, 2, 7, 3}})
			sameIDs(t, "walk of "+path+" with limits 1, 4, 2, 7, 3, ...", ids(t, w.items), want)
			// The default limit (100) holds every record on one page.
			w = e.c.walk(t, full, path, nil, walkOpts{})
			sameIDs(t, "walk of "+path+" without limit", ids(t, w.items), want)
			if len(w.pages) != 1 {
				t.Errorf("GET %s without limit: %d pages for %d records, want 1 (default limit 100)", path, len(w.pages), len(want))
			}
			w = e.c.walk(t, full, path, nil, walkOpts{limits: []int{1000}})
			sameIDs(t, "walk of "+path+" with limit=1000", ids(t, w.items), want)
		})
	}
}

// tieGroup returns the position and size of the records of items whose key
// time is at.
func tieGroup(items []item, at time.Time) (pos, n int) {
	pos = -1
	for i, it := range items {
		if it.key.Time.Equal(at) {
			if pos < 0 {
				pos = i
			}
			n++
		}
	}
	return pos, n
}

func testTies(t *testing.T, e *env) {
	cases := []struct {
		res   string
		at    time.Time
		param string // a filter that starts the list at the group
		value time.Time
	}{
		{"conversations", convTie, "updatedSince", convTie},
		{"assistants", assistantTie, "updatedSince", assistantTie},
		{"events", eventTie, "occurredAfter", eventTie.Add(-time.Millisecond)},
	}
	for _, tc := range cases {
		t.Run(tc.res, func(t *testing.T) {
			t.Parallel()
			path := "/" + tc.res
			items := e.fx.items(tc.res, tenant1)
			pos, n := tieGroup(items, tc.at)
			if n < 5 {
				t.Fatalf("providertest: the tie group of %s has %d records", tc.res, n)
			}
			all := itemIDs(items)
			// Page boundaries inside the group, from the start of the list.
			for cut := 1; cut < n; cut++ {
				for _, limits := range [][]int{{pos + cut}, {pos + cut, 1}, {pos + cut, 2}} {
					w := e.c.walk(t, full, path, nil, walkOpts{limits: limits})
					sameIDs(t, fmt.Sprintf("walk of %s with limits %v (a page ends inside the group sharing %s)", path, limits, tc.at.Format(spec.TimeLayout)), ids(t, w.items), all)
				}
			}
			// The group first: every limit up to its size.
			q := vals(tc.param, timeParam(tc.value))
			want := itemIDs(items[pos:])
			for limit := 1; limit <= n+1; limit++ {
				w := e.c.walk(t, full, path, q, walkOpts{limits: []int{limit}})
				sameIDs(t, fmt.Sprintf("walk of %s?%s with limit=%d", path, q.Encode(), limit), ids(t, w.items), want)
			}
		})
	}
}

func filterItems(items []item, keep func(item) bool) []item {
	var out []item
	for _, it := range items {
		if keep(it) {
			out = append(out, it)
		}
	}
	return out
}

// checkDocs compares served records with the records written, by id.
func checkDocs(t *testing.T, e *env, res, tenant string, raws []json.RawMessage) {
	t.Helper()
	for _, raw := range raws {
		id := decodeRecord(t, raw).ID
		want, ok := e.fx.find(res, tenant, id)
		if !ok {
			t.Errorf("/%s serves %q, which tenant %s never wrote", res, id, tenant)
			continue
		}
		if got := decodeAny(t, raw); !reflect.DeepEqual(got, want.doc) {
			t.Errorf("/%s item %q differs from the record written:\n got: %s\nwant: %s", res, id, compact(got), compact(want.doc))
		}
	}
}

func testContent(t *testing.T, e *env) {
	for _, tenant := range []string{tenant1, tenant2} {
		cr := full
		if tenant == tenant2 {
			cr = other
		}
		for _, res := range listResources {
			w := e.c.walk(t, cr, "/"+res, nil, walkOpts{limits: []int{1000}})
			sameIDs(t, fmt.Sprintf("walk of /%s as tenant %s", res, tenant), ids(t, w.items), itemIDs(e.fx.items(res, tenant)))
			checkDocs(t, e, res, tenant, w.items)
		}
	}
}

func testGetByID(t *testing.T, e *env) {
	for _, res := range []string{"conversations", "assistants"} {
		w := e.c.walk(t, full, "/"+res, nil, walkOpts{limits: []int{1000}})
		for _, raw := range w.items {
			id := decodeRecord(t, raw).ID
			r := e.c.get(t, full, "/"+res+"/"+url.PathEscape(id), nil)
			if r.status != http.StatusOK {
				t.Errorf("%v: want 200", r)
				continue
			}
			if mt := r.mediaType(); mt != "application/json" {
				t.Errorf("%s: Content-Type %q, want application/json", r.req, r.header.Get("Content-Type"))
			}
			if got, want := decodeAny(t, r.body), decodeAny(t, raw); !reflect.DeepEqual(got, want) {
				t.Errorf("%s differs from its list item:\n  got: %s\n list: %s", r.req, compact(got), compact(want))
			}
		}
	}
}

// contentFields are the members a tombstone must not carry.
var contentFields = []string{"messages", "systemPrompt", "attachments", "tools", "parameters", "metadata"}

func testTombstones(t *testing.T, e *env) {
	w := e.c.walk(t, full, "/conversations", nil, walkOpts{limits: []int{7}})
	deleted := 0
	for _, raw := range w.items {
		rec := decodeRecord(t, raw)
		want, ok := e.fx.find("conversations", tenant1, rec.ID)
		if !ok {
			continue // reported by other checks
		}
		if want.deletedAt.IsZero() {
			if rec.DeletedAt != nil {
				t.Errorf("conversation %q was never deleted but is served with deletedAt %q", rec.ID, *rec.DeletedAt)
			}
			continue
		}
		deleted++
		at := want.deletedAt.Format(spec.TimeLayout)
		if rec.DeletedAt == nil || *rec.DeletedAt != at || rec.UpdatedAt != at {
			t.Errorf("tombstone %q: deletedAt %v, updatedAt %q; want both %q", rec.ID, strPtr(rec.DeletedAt), rec.UpdatedAt, at)
		}
		var members map[string]json.RawMessage
		_ = json.Unmarshal(raw, &members)
		for _, f := range contentFields {
			if _, ok := members[f]; ok {
				t.Errorf("tombstone %q in the list still carries %q", rec.ID, f)
			}
		}
		r := e.c.get(t, full, "/conversations/"+url.PathEscape(rec.ID), nil)
		if r.status != http.StatusOK {
			t.Errorf("%v: a tombstone is 200 by id", r)
			continue
		}
		var one map[string]json.RawMessage
		if err := json.Unmarshal(r.body, &one); err != nil {
			t.Errorf("%v: %v", r, err)
			continue
		}
		if string(one["deletedAt"]) != `"`+at+`"` {
			t.Errorf("%s: deletedAt %s, want %q", r.req, one["deletedAt"], at)
		}
		for _, f := range contentFields {
			if _, ok := one[f]; ok {
				t.Errorf("%s: the tombstone still carries %q", r.req, f)
			}
		}
	}
	if deleted != 4 {
		t.Errorf("the walk of /conversations holds %d tombstones, want 4", deleted)
	}
}

func strPtr(p *string) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprintf("%q", *p)
}

func testUnknownIDs(t *testing.T, e *env) {
	for _, p := range []string{"/nope", "/conversations/c-000/messages", "/usage/x"} {
		e.c.get(t, full, p, nil).problem(t, http.StatusNotFound)
	}
	for _, res := range []string{"conversations", "assistants"} {
		for _, id := range []string{"no-such-id", "00000000-0000-4000-8000-000000000000", "C-000", "ASST-00", "tie-u"} {
			e.c.get(t, full, "/"+res+"/"+url.PathEscape(id), nil).problem(t, http.StatusNotFound)
		}
		// Hostile ids, as raw path segments: 400 or 404, never 5xx.
		for _, seg := range []string{"..", "a%2Fb", "%2e%2e", strings.Repeat("x", 4096), url.PathEscape("ünïcödé"), "%22quoted%27", "%00", "%20", "%FF%FE"} {
			r := e.c.do(t, http.MethodGet, "/"+res+"/"+seg, full)
			if r.status != http.StatusBadRequest && r.status != http.StatusNotFound {
				t.Errorf("%v: want 400 or 404", r)
				continue
			}
			r.problem(t, r.status)
		}
	}
}
