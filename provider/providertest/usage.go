package providertest

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

func step(granularity string) time.Duration {
	if granularity == spec.GranularityHour {
		return time.Hour
	}
	return 24 * time.Hour
}

// bucketOf returns the start of the UTC hour or day holding at.
func bucketOf(at time.Time, granularity string) time.Time {
	at = at.UTC()
	if granularity == spec.GranularityHour {
		return time.Date(at.Year(), at.Month(), at.Day(), at.Hour(), 0, 0, 0, time.UTC)
	}
	return time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
}

// groupings returns the 16 subsets of the dimensions, in canonical order.
func groupings() [][]string {
	var out [][]string
	for mask := range 1 << len(spec.Dimensions) {
		g := []string{}
		for i, d := range spec.Dimensions {
			if mask&(1<<i) != 0 {
				g = append(g, d)
			}
		}
		out = append(out, g)
	}
	return out
}

// expected holds the metrics of one bucket, computed from the records.
type expected struct {
	requests, in, out int64
	cost              float64
	conversations     map[string]bool
	users             map[string]bool
}

func dimValue(u *provider.UsageRecord, d string) string {
	switch d {
	case spec.DimensionModel:
		return u.Model
	case spec.DimensionAssistantID:
		return u.AssistantID
	case spec.DimensionUserID:
		return u.UserID
	case spec.DimensionDepartment:
		return u.Department
	}
	return ""
}

// bucketID names a bucket: its start and its grouped values.
func bucketID(start time.Time, groupBy []string, value func(d string) string) string {
	var b strings.Builder
	b.WriteString(start.UTC().Format(spec.TimeLayout))
	for _, d := range groupBy {
		fmt.Fprintf(&b, " %s=%q", d, value(d))
	}
	return b.String()
}

// expectUsage aggregates recs into the buckets of [start, end).
func expectUsage(recs []provider.UsageRecord, granularity string, start, end time.Time, groupBy []string) map[string]*expected {
	out := map[string]*expected{}
	for i := range recs {
		u := &recs[i]
		bs := bucketOf(u.At, granularity)
		if bs.Before(start) || !bs.Before(end) {
			continue
		}
		id := bucketID(bs, groupBy, func(d string) string { return dimValue(u, d) })
		x := out[id]
		if x == nil {
			x = &expected{conversations: map[string]bool{}, users: map[string]bool{}}
			out[id] = x
		}
		x.requests++
		x.in += u.InputTokens
		x.out += u.OutputTokens
		x.cost += u.Cost
		if u.ConversationID != "" {
			x.conversations[u.ConversationID] = true
		}
		if u.UserID != "" {
			x.users[u.UserID] = true
		}
	}
	return out
}

type servedMetrics struct {
	Requests      int64   `json:"requests"`
	Conversations int64   `json:"conversations"`
	ActiveUsers   int64   `json:"activeUsers"`
	InputTokens   int64   `json:"inputTokens"`
	OutputTokens  int64   `json:"outputTokens"`
	Cost          float64 `json:"cost"`
}

// usageCheck is one /usage walk and what it must give.
type usageCheck struct {
	cr          cred
	q           url.Values
	granularity string
	// start and end are the range the request resolves to.
	start, end time.Time
	groupBy    []string
	recs       []provider.UsageRecord
	opts       walkOpts
}

// checkUsage walks /usage and compares every bucket with the records.
func checkUsage(t *testing.T, e *env, uc usageCheck) {
	t.Helper()
	what := fmt.Sprintf("walk of /usage?%s (limits %v, omitting %v on later pages)", uc.q.Encode(), uc.opts.limits, uc.opts.omit)
	w := e.c.walk(t, uc.cr, "/usage", uc.q, uc.opts)
	want := expectUsage(uc.recs, uc.granularity, uc.start, uc.end, uc.groupBy)
	wantDims := slices.Clone(uc.groupBy)
	sort.Strings(wantDims)
	got := map[string]bool{}
	var prev *provider.UsageKey
	errs := 0
	fail := func(format string, a ...any) {
		t.Helper()
		errs++
		if errs <= 10 {
			t.Errorf("%s: %s", what, fmt.Sprintf(format, a...))
		}
	}
	for _, raw := range w.items {
		var b struct {
			StartAt     string                     `json:"startAt"`
			EndAt       string                     `json:"endAt"`
			Granularity string                     `json:"granularity"`
			Dimensions  map[string]json.RawMessage `json:"dimensions"`
			Metrics     map[string]json.RawMessage `json:"metrics"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			fail("bucket %s: %v", raw, err)
			continue
		}
		start, err1 := spec.ParseTime(b.StartAt)
		end, err2 := spec.ParseTime(b.EndAt)
		if err1 != nil || err2 != nil || spec.CheckTimestampMillis(b.StartAt) != nil || spec.CheckTimestampMillis(b.EndAt) != nil {
			fail("bucket %s: startAt and endAt must be UTC RFC 3339 timestamps with milliseconds", raw)
			continue
		}
		if !bucketOf(start, uc.granularity).Equal(start) || !end.Equal(start.Add(step(uc.granularity))) {
			fail("bucket %s: not aligned on one %s", raw, uc.granularity)
		}
		if start.Before(uc.start) || !start.Before(uc.end) {
			fail("bucket %s: outside [%s, %s)", raw, uc.start.Format(spec.TimeLayout), uc.end.Format(spec.TimeLayout))
		}
		if b.Granularity != uc.granularity {
			fail("bucket %s: granularity %q, want %q", raw, b.Granularity, uc.granularity)
		}
		dims := map[string]string{}
		for k, v := range b.Dimensions {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				fail("bucket %s: dimension %q is not a string", raw, k)
			}
			dims[k] = s
		}
		var keys []string
		for k := range dims {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if !slices.Equal(keys, wantDims) {
			fail("bucket %s: dimensions %q, want exactly %q", raw, keys, wantDims)
		}
		key := provider.UsageKey{Start: start, Model: dims[spec.DimensionModel], AssistantID: dims[spec.DimensionAssistantID], UserID: dims[spec.DimensionUserID], Department: dims[spec.DimensionDepartment]}
		if prev != nil && !prev.Less(key) {
			fail("bucket %s is served after %+v: not in (startAt, dimensions) order", raw, *prev)
		}
		prev = &key
		id := bucketID(start, uc.groupBy, func(d string) string { return dims[d] })
		if got[id] {
			fail("bucket %s served twice", id)
			continue
		}
		got[id] = true
		for _, m := range []string{"requests", "conversations", "activeUsers", "inputTokens", "outputTokens", "cost"} {
			if _, ok := b.Metrics[m]; !ok {
				fail("bucket %s: metrics.%s missing", raw, m)
			}
		}
		mraw, _ := json.Marshal(b.Metrics)
		var m servedMetrics
		if err := json.Unmarshal(mraw, &m); err != nil {
			fail("bucket %s: metrics: %v", raw, err)
			continue
		}
		x, ok := want[id]
		if !ok {
			fail("bucket %s: no usage record falls in it", id)
			continue
		}
		gotInts := []int64{m.Requests, m.Conversations, m.ActiveUsers, m.InputTokens, m.OutputTokens}
		wantInts := []int64{x.requests, int64(len(x.conversations)), int64(len(x.users)), x.in, x.out}
		if !slices.Equal(gotInts, wantInts) {
			fail("bucket %s: requests, conversations, activeUsers, inputTokens, outputTokens = %v, want %v", id, gotInts, wantInts)
		}
		if tol := max(1e-9*math.Abs(x.cost), 1e-12); math.Abs(m.Cost-x.cost) > tol {
			fail("bucket %s: cost %v, want %v", id, m.Cost, x.cost)
		}
	}
	for id := range want {
		if !got[id] {
			fail("bucket %s is missing", id)
		}
	}
	if errs > 10 {
		t.Errorf("%s: %d errors in all", what, errs)
	}
}

func testUsageSums(t *testing.T, e *env) {
	ranges := []struct {
		granularity string
		start, end  time.Time
	}{
		{spec.GranularityHour, base, base.Add(72 * time.Hour)},
		{spec.GranularityDay, base.AddDate(0, 0, -6), base.AddDate(0, 0, 7)},
		{spec.GranularityDay, base, base.AddDate(0, 0, 3)},
	}
	for _, rg := range ranges {
		for _, g := range groupings() {
			name := fmt.Sprintf("%s-%s-%s/%s", rg.granularity, rg.start.Format("0102"), rg.end.Format("0102"), strings.Join(g, ","))
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				q := usageQuery(rg.granularity, rg.start, rg.end, g...)
				uc := usageCheck{cr: full, q: q, granularity: rg.granularity, start: rg.start, end: rg.end, groupBy: g, recs: e.fx.usage[tenant1], opts: walkOpts{limits: []int{50}}}
				checkUsage(t, e, uc)
				// Later pages may leave the range out: the cursor carries it.
				uc.opts = walkOpts{limits: []int{29}, omit: []string{"startAt", "endAt"}}
				checkUsage(t, e, uc)
			})
		}
	}
	t.Run("limit=1", func(t *testing.T) {
		t.Parallel()
		g := []string{spec.DimensionModel, spec.DimensionDepartment}
		start, end := base.AddDate(0, 0, -6), base.AddDate(0, 0, 7)
		checkUsage(t, e, usageCheck{cr: full, q: usageQuery("day", start, end, g...), granularity: "day", start: start, end: end, groupBy: g, recs: e.fx.usage[tenant1], opts: walkOpts{limits: []int{1}}})
	})
}

func testUsageRanges(t *testing.T, e *env) {
	recs := e.fx.usage[tenant1]
	day := 24 * time.Hour
	cases := []struct {
		name        string
		q           url.Values
		granularity string
		start, end  time.Time
	}{
		// Defaults: the 7 days ending at the end of the clock's hour or day.
		{"default day", vals("granularity", "day"), "day", time.Date(2026, 2, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)},
		{"default granularity", vals("groupBy", "userId"), "day", time.Date(2026, 2, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)},
		{"default hour", vals("granularity", "hour", "groupBy", "model"), "hour", time.Date(2026, 2, 24, 11, 0, 0, 0, time.UTC), time.Date(2026, 3, 3, 11, 0, 0, 0, time.UTC)},
		// startAt rounds down and endAt up to the granularity.
		{"unaligned day", vals("granularity", "day", "startAt", timeParam(base.Add(-3*day+13*time.Hour+45*time.Minute)), "endAt", timeParam(base.Add(day+time.Hour))), "day", base.Add(-3 * day), base.Add(2 * day)},
		{"unaligned hour", vals("granularity", "hour", "startAt", timeParam(base.Add(30*time.Minute)), "endAt", timeParam(base.Add(5*time.Hour+time.Second))), "hour", base, base.Add(6 * time.Hour)},
		{"offsets", vals("granularity", "hour", "startAt", withOffset(base), "endAt", withOffset(base.Add(2*day)), "groupBy", "department"), "hour", base, base.Add(2 * day)},
		{"31 days hourly", vals("granularity", "hour", "startAt", timeParam(base.AddDate(0, 0, -31)), "endAt", timeParam(base)), "hour", base.AddDate(0, 0, -31), base},
		{"366 days daily", vals("granularity", "day", "startAt", timeParam(base.AddDate(0, 0, -360)), "endAt", timeParam(base.AddDate(0, 0, 6))), "day", base.AddDate(0, 0, -360), base.AddDate(0, 0, 6)},
		{"groupBy order", vals("granularity", "day", "startAt", timeParam(base), "endAt", timeParam(base.Add(3*day)), "groupBy", "department,model"), "day", base, base.Add(3 * day)},
		{"far future", vals("startAt", "2999-01-01T00:00:00Z", "endAt", "2999-01-03T00:00:00Z"), "day", time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2999, 1, 3, 0, 0, 0, 0, time.UTC)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var g []string
			if v := tc.q.Get("groupBy"); v != "" {
				g = strings.Split(v, ",")
			}
			checkUsage(t, e, usageCheck{cr: full, q: tc.q, granularity: tc.granularity, start: tc.start, end: tc.end, groupBy: g, recs: recs, opts: walkOpts{limits: []int{40}}})
			checkUsage(t, e, usageCheck{cr: full, q: tc.q, granularity: tc.granularity, start: tc.start, end: tc.end, groupBy: g, recs: recs, opts: walkOpts{}})
		})
	}
	// An empty range is an empty list.
	r := e.c.get(t, full, "/usage", vals("startAt", "2999-01-01T00:00:00Z", "endAt", "2999-01-03T00:00:00Z"))
	if p, ok := r.envelope(t); ok && (len(p.Data) != 0 || p.HasMore) {
		t.Errorf("%v: want an empty list", r)
	}
}

func testUsageBadParameters(t *testing.T, e *env) {
	q := usageQuery("day", base, base.AddDate(0, 0, 2))
	for _, v := range []string{"week", "Hour", "minute", "hour,day"} {
		badParam(t, e, full, "/usage", withParams(q, "granularity", v), "granularity")
	}
	for _, v := range []string{"color", "model,color", "Model", "model;userId", "user_id"} {
		badParam(t, e, full, "/usage", withParams(q, "groupBy", v), "groupBy")
	}
	badParam(t, e, full, "/usage", usageQuery("day", base, base.AddDate(0, 0, -1)), "endAt", "startAt")
	badParam(t, e, full, "/usage", usageQuery("hour", base.Add(5*time.Hour), base.Add(2*time.Hour)), "endAt", "startAt")
	// Over the longest range: 31 days hourly, 366 days daily.
	badParam(t, e, full, "/usage", usageQuery("hour", base.AddDate(0, 0, -31), base.Add(time.Hour)), "endAt", "startAt")
	badParam(t, e, full, "/usage", usageQuery("hour", base.AddDate(0, 0, -40), base), "endAt", "startAt")
	badParam(t, e, full, "/usage", usageQuery("day", base.AddDate(0, 0, -367), base), "endAt", "startAt")
	badParam(t, e, full, "/usage", usageQuery("day", base.AddDate(-2, 0, 0), base), "endAt", "startAt")
	badParam(t, e, full, "/usage", vals("granularity", "hour", "startAt", timeParam(base.AddDate(0, 0, -31)), "endAt", timeParam(base.Add(time.Minute))), "endAt", "startAt")
}
