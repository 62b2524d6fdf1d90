package conformance

import (
	"context"
	"crypto/sha256"
	"encoding/json"
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

// freeFormMembers are members whose content is preserved as received from the
// provider's own systems: their keys are not the interface's timestamps.
var freeFormMembers = map[string]bool{"parameters": true, "metadata": true, "payload": true}

// timeFilters is the timestamp filter TIME-03 and TIME-04 exercise at each
// list resource.
var timeFilters = map[string]string{
	Conversations: "updatedSince",
	Assistants:    "updatedSince",
	Events:        "occurredAfter",
}

// unparseableTimestamps are filter values that are not RFC 3339 timestamps.
var unparseableTimestamps = []string{"yesterday", "2026-13-01T00:00:00Z", "2026-01-01T00:00:00"}

// timestampValue is one timestamp string found in a record.
type timestampValue struct {
	ep      string
	field   string // path from the record, array indices as [], e.g. messages[].createdAt
	value   string
	pointer string // in the exchange's body
	ex      *exchange
}

// checkTimestamps records TIME-01 (every timestamp of every record served so
// far, list items and single records alike, is RFC 3339 UTC with Z), TIME-02
// (the values of one field share one number of fractional digits), TIME-03
// (an unparseable timestamp filter is 400) and TIME-04 (a filter written
// with +02:00 selects what the same instant written with Z selects).
//
// A timestamp is the string value of a member whose name ends in "At" (every
// timestamp of the specification does), outside members preserved as
// received (parameters, metadata, payload).
func checkTimestamps(ctx context.Context, s *session) {
	if s.enabled("TIME-01") || s.enabled("TIME-02") {
		// TIME-01 and TIME-02 are judged at the end of the run, over every
		// record received (checkTimestampValues); make sure every list was
		// read.
		for _, r := range s.resources() {
			s.validatedWalk(ctx, r) // memoised: normally walked by checkEnvelopes already
		}
	}
	if s.enabled("TIME-03") {
		for _, r := range s.listResources() {
			s.checkBadTimeFilters(ctx, r)
		}
	}
	if s.enabled("TIME-04") {
		for _, r := range s.listResources() {
			s.checkOffsetTimeFilter(ctx, r)
		}
	}
}

// collectTimestamps returns every timestamp of the records of the 200
// answers to GET requests made so far, each (record, field) once.
func (s *session) collectTimestamps() (vals []timestampValue, records map[string]int) {
	s.mu.Lock()
	exs := append([]*exchange(nil), s.exchanges...)
	s.mu.Unlock()
	seen := map[[32]byte]bool{}
	records = map[string]int{}
	for _, ex := range exs {
		if ex.Method != http.MethodGet || ex.Status != http.StatusOK {
			continue
		}
		r, single := s.route(ex.URL)
		if r == "" || !s.offered[r] {
			continue
		}
		ep := endpoint(r)
		var raws []json.RawMessage
		var bases []string
		if single {
			raws, bases = []json.RawMessage{ex.Body}, []string{""}
		} else {
			raws = ex.items()
			for i := range raws {
				bases = append(bases, "/data/"+strconv.Itoa(i))
			}
		}
		for i, raw := range raws {
			// The same record served alike on several pages is read once;
			// served otherwise (on a later page, say), it is read again.
			key := sha256.Sum256(raw)
			if seen[key] {
				continue
			}
			seen[key] = true
			var it any
			if json.Unmarshal(raw, &it) != nil {
				continue
			}
			records[ep]++
			findTimestamps(it, bases[i], "", func(field, ptr, v string) {
				vals = append(vals, timestampValue{ep: ep, field: field, value: v, pointer: ptr, ex: ex})
			})
		}
	}
	return vals, records
}

// recordKey identifies a record: its id, or its whole content when it
// has none (usage buckets).
func recordKey(it any) string {
	if m, ok := it.(map[string]any); ok {
		if id, ok := m["id"].(string); ok {
			return "id:" + id
		}
	}
	b, _ := json.Marshal(it)
	return "raw:" + string(b)
}

// findTimestamps calls fn for every string member whose name ends in
// "At" in v.
func findTimestamps(v any, ptr, field string, fn func(field, ptr, value string)) {
	switch c := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if freeFormMembers[k] {
				continue
			}
			p := ptr + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			f := k
			if field != "" {
				f = field + "." + k
			}
			if str, ok := c[k].(string); ok && strings.HasSuffix(k, "At") {
				fn(f, p, str)
				continue
			}
			findTimestamps(c[k], p, f, fn)
		}
	case []any:
		for i, e := range c {
			findTimestamps(e, ptr+"/"+strconv.Itoa(i), field+"[]", fn)
		}
	}
}

// checkTimestampValues is TIME-01 and TIME-02 over every record served
// so far.
func (s *session) checkTimestampValues() {
	vals, records := s.collectTimestamps()
	t := tallies{}
	counts := map[string]int{}
	// TIME-02: endpoint -> field -> fractional digits -> values
	digits := map[string]map[string]map[int][]timestampValue{}
	for _, v := range vals {
		counts[v.ep]++
		if err := spec.CheckTimestamp(v.value); err != nil {
			t.add("TIME-01", v.ep, fmt.Sprintf("%s %s: %v", s.reqRef(v.ex), v.pointer, err), v.ex, v.pointer)
		}
		if _, err := spec.ParseTime(v.value); err != nil {
			continue
		}
		n := 0
		if len(v.value) > 19 && v.value[19] == '.' {
			for n = 0; 20+n < len(v.value) && v.value[20+n] >= '0' && v.value[20+n] <= '9'; n++ {
			}
		}
		if digits[v.ep] == nil {
			digits[v.ep] = map[string]map[int][]timestampValue{}
		}
		if digits[v.ep][v.field] == nil {
			digits[v.ep][v.field] = map[int][]timestampValue{}
		}
		digits[v.ep][v.field][n] = append(digits[v.ep][v.field][n], v)
	}
	for _, r := range s.resources() {
		ep := endpoint(r)
		if counts[ep] == 0 {
			s.skip("TIME-01", ep, "no timestamps served")
			s.skip("TIME-02", ep, "no timestamps served")
			continue
		}
		t.flush(s, "TIME-01", ep, fmt.Sprintf("%d timestamps of %d records are RFC 3339 UTC with Z", counts[ep], records[ep]))
		fields := make([]string, 0, len(digits[ep]))
		for f := range digits[ep] {
			fields = append(fields, f)
		}
		sort.Strings(fields)
		for _, f := range fields {
			byN := digits[ep][f]
			if len(byN) < 2 {
				continue
			}
			ns := make([]int, 0, len(byN))
			for n := range byN {
				ns = append(ns, n)
			}
			// most frequent first; the first value of another precision is the evidence
			sort.Slice(ns, func(i, j int) bool {
				if len(byN[ns[i]]) != len(byN[ns[j]]) {
					return len(byN[ns[i]]) > len(byN[ns[j]])
				}
				return ns[i] > ns[j]
			})
			var parts []string
			for _, n := range ns {
				parts = append(parts, fmt.Sprintf("%d fractional digits in %d values (e.g. %q)", n, len(byN[n]), byN[n][0].value))
			}
			odd := byN[ns[1]][0]
			t.add("TIME-02", ep, fmt.Sprintf("%s has %s", f, strings.Join(parts, ", ")), odd.ex, odd.pointer)
		}
		t.flush(s, "TIME-02", ep, fmt.Sprintf("each of %d timestamp fields has one precision", len(fields)))
	}
}

// checkBadTimeFilters is TIME-03 at one list resource: each value that is
// not an RFC 3339 timestamp gives 400.
func (s *session) checkBadTimeFilters(ctx context.Context, r string) {
	ep := endpoint(r)
	param := timeFilters[r]
	if param == "" {
		return
	}
	for _, bad := range unparseableTimestamps {
		ex := s.get(ctx, ep, url.Values{param: {bad}, "limit": {"1"}})
		switch {
		case ex.Status == 0:
			s.errored("TIME-03", ep, ex, fmt.Sprintf("%s=%s got no answer: %v", param, bad, ex.Err))
		case ex.Status != http.StatusBadRequest:
			s.fail("TIME-03", ep, fmt.Sprintf("%s=%s answered %d; an unparseable timestamp filter must be 400", param, bad, ex.Status), ex.evidence(""))
		}
	}
	s.pass("TIME-03", ep, fmt.Sprintf("%s=%s each answered 400", param, strings.Join(unparseableTimestamps, ", ")))
}

// checkOffsetTimeFilter is TIME-04 at one list resource: the walk filtered
// at an observed instant T written with Z, with a page size that makes it
// cross several pages, holds the same ids in the same order as the walk
// with T written as +02:00.
func (s *session) checkOffsetTimeFilter(ctx context.Context, r string) {
	ep := endpoint(r)
	param := timeFilters[r]
	if param == "" {
		return
	}
	w := s.fullWalk(ctx, r)
	var times []time.Time
	for _, rec := range w.Records {
		if !rec.At.IsZero() {
			times = append(times, rec.At.UTC())
		}
	}
	if len(times) == 0 {
		s.skip("TIME-04", ep, "no record with a timestamp to filter at")
		return
	}
	at := pickInstant(times)
	matching := 0
	for _, t := range times {
		if t.After(at) || t.Equal(at) && param == "updatedSince" {
			matching++
		}
	}
	limit := threePageLimit(matching)
	plus2 := time.FixedZone("+02:00", 2*3600)
	zv, ov := at.Format(time.RFC3339Nano), at.In(plus2).Format(time.RFC3339Nano)
	zw := s.walkList(ctx, r, url.Values{param: {zv}}, limit)
	if len(zw.Pages) == 0 || zw.Pages[0].Status != http.StatusOK || !zw.Complete() {
		s.skip("TIME-04", ep, fmt.Sprintf("the walk with %s=%s did not complete (%s): the filter with Z is judged by the FILT checks", param, zv, zw.Problem))
		return
	}
	for attempt := 0; ; attempt++ {
		var opts []reqOpt
		if attempt > 0 {
			// Records may have changed between the two walks: walk both
			// afresh, once, before blaming the offset.
			opts = []reqOpt{bearer(s.cfg.Token)}
			zw = s.walkList(ctx, r, url.Values{param: {zv}}, limit, opts...)
		}
		ow := s.walkList(ctx, r, url.Values{param: {ov}}, limit, opts...)
		if first := ow.Pages[0]; first.Status != http.StatusOK {
			s.fail("TIME-04", ep, fmt.Sprintf("%s=%s answered %s while the same instant written %s answered 200", param, ov, first.describe(), zv), first.evidence(""))
			return
		}
		zids, oids := zw.IDs(), ow.IDs()
		same := slices.Equal(zids, oids) && zw.Complete() && ow.Complete()
		if same {
			msg := fmt.Sprintf("%s=%s and %s=%s select the same %d records, walked in %s of limit=%d", param, zv, param, ov, len(zids), plural(len(zw.Sizes), "page"), limit)
			if attempt > 0 {
				msg += " (a first comparison differed; the data may have changed between the walks)"
			}
			s.pass("TIME-04", ep, msg)
			return
		}
		if attempt == 0 {
			continue
		}
		if !zw.Complete() {
			s.skip("TIME-04", ep, fmt.Sprintf("the second walk with %s=%s did not complete: %s", param, zv, zw.Problem))
			return
		}
		if !ow.Complete() && len(oids) <= len(zids) && slices.Equal(oids, zids[:len(oids)]) {
			ex := ow.Pages[len(ow.Pages)-1]
			s.fail("TIME-04", ep, fmt.Sprintf("with limit=%d, the walk with %s=%s stopped after %s (%s) while the same instant written %s walked to the end",
				limit, param, ov, plural(len(ow.Sizes), "page"), ow.Problem, zv), ex.evidence(""))
			return
		}
		i := 0
		for i < len(zids) && i < len(oids) && zids[i] == oids[i] {
			i++
		}
		ev := ow.Pages[len(ow.Pages)-1].evidence("")
		if i < len(oids) {
			ev = ow.evidence(i, "id")
		}
		s.fail("TIME-04", ep, fmt.Sprintf("with limit=%d, %s=%s gave %d records in %s (first differing at record %d) but the same instant written %s gave %d, twice",
			limit, param, ov, len(oids), plural(len(ow.Sizes), "page"), i+1, zv, len(zids)), ev)
		return
	}
}

// pickInstant picks an observed instant near the middle that has
// another record within two hours after it (or before it), so that a
// filter misreading +02:00 as Z, or with the sign reversed, selects other
// records; the middle instant when there is none.
func pickInstant(times []time.Time) time.Time {
	sorted := slices.Clone(times)
	slices.SortFunc(sorted, func(a, b time.Time) int { return a.Compare(b) })
	mid := len(sorted) / 2
	near := func(i int) bool {
		t := sorted[i]
		for _, j := range []int{i - 1, i + 1} {
			if j < 0 || j >= len(sorted) {
				continue
			}
			if d := sorted[j].Sub(t).Abs(); d > 0 && d < 2*time.Hour {
				return true
			}
		}
		return false
	}
	for off := 0; off <= len(sorted); off++ {
		for _, i := range []int{mid + off, mid - off} {
			if i >= 0 && i < len(sorted) && near(i) {
				return sorted[i]
			}
		}
	}
	return sorted[mid]
}
