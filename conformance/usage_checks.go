package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/spec"
)

// usagePageCap bounds the pages of one /usage walk.
const usagePageCap = 100

// usageDays is the length of the range the usage checks ask for.
const usageDays = 7

// usageBucket is one /usage bucket, decoded enough to check it.
type usageBucket struct {
	Obj map[string]any // decoded with json.Number
	// Start and End are startAt and endAt parsed (zero when missing or
	// unparseable: the TIME checks report those).
	Start, End time.Time
	Gran       string
	Ex         *exchange // the page the bucket came from
	Page       int       // that page's number in the walk, from 1
	Index      int       // its index in the page's data
}

// usageWalk is the outcome of following the cursors of one /usage query.
type usageWalk struct {
	query   url.Values
	limit   int // the page size asked for; 0: the provider's default
	Buckets []usageBucket
	Pages   []*exchange
	// Problem, when not empty, says why the walk stopped early; Ex is the
	// exchange to blame and First whether it was the first page.
	Problem string
	Ex      *exchange
	First   bool
}

func (w *usageWalk) complete() bool { return w.Problem == "" }

// usageChecks is what the usage checks of one run share: the session, the
// range they ask for and their walks, memoised by query.
type usageChecks struct {
	s          *session
	start, end time.Time // the range asked for, on day boundaries
	walks      map[string]*usageWalk
}

// formatTimestamp writes t as the suite sends timestamps.
func formatTimestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// granularityUnit is the length of a bucket of granularity g.
func granularityUnit(g string) time.Duration {
	if g == spec.GranularityHour {
		return time.Hour
	}
	return 24 * time.Hour
}

// decodeExact decodes a JSON object keeping numbers exact.
func decodeExact(raw []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// usageRange picks the range of the usage checks from the data: the
// usageDays days ending at the first day boundary after the latest
// conversation updatedAt, or, without conversations, the default range (the
// days ending at the end of the current day).
func usageRange(ctx context.Context, s *session) (start, end time.Time, fromData bool) {
	var latest time.Time
	if s.offered[Conversations] && slices.Contains(s.cfg.Resources, Conversations) {
		for _, r := range s.fullWalk(ctx, Conversations).Records {
			if r.At.After(latest) {
				latest = r.At
			}
		}
	}
	fromData = !latest.IsZero()
	if !fromData {
		latest = time.Now()
	}
	end = latest.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	return end.AddDate(0, 0, -usageDays), end, fromData
}

// usageQuery is a valid /usage query over [start, end).
func usageQuery(start, end time.Time, gran string, groupBy []string) url.Values {
	q := url.Values{"startAt": {formatTimestamp(start)}, "endAt": {formatTimestamp(end)}, "granularity": {gran}}
	if len(groupBy) > 0 {
		q.Set("groupBy", strings.Join(groupBy, ","))
	}
	return q
}

// walk follows /usage from query q until hasMore is false, memoised per
// query. It asks for pages of 1000 buckets, and without a limit when the
// provider refuses that.
func (u *usageChecks) walk(ctx context.Context, q url.Values) *usageWalk {
	key := q.Encode()
	if w, ok := u.walks[key]; ok {
		return w
	}
	w := u.s.walkUsage(ctx, q, 1000)
	u.walks[key] = w
	return w
}

// smallWalk walks the query of w again with a page size that makes it
// cross at least three pages, so that what is checked of every bucket is
// checked on later pages too (a cursor that forgot the query shows there).
// It returns nil when w is too short to need it, or when the provider does
// not take a limit on /usage.
func (u *usageChecks) smallWalk(ctx context.Context, w *usageWalk) *usageWalk {
	if w == nil || w.limit == 0 || !w.complete() || len(w.Buckets) < 2 {
		return nil
	}
	limit := threePageLimit(len(w.Buckets))
	key := w.query.Encode() + "#" + strconv.Itoa(limit)
	if sw, ok := u.walks[key]; ok {
		return sw
	}
	sw := u.s.walkUsage(ctx, w.query, limit)
	u.walks[key] = sw
	return sw
}

// where names the page of b in a message about walk w.
func (w *usageWalk) where(b usageBucket) string {
	if w.limit == 0 || w.limit == 1000 {
		return ""
	}
	return fmt.Sprintf(" (page %d with limit=%d)", b.Page, w.limit)
}

// walkUsage follows /usage from query q with pages of limit buckets;
// when the provider refuses a limit on /usage (400 to the first page), it
// walks without one (limit 0).
func (s *session) walkUsage(ctx context.Context, q url.Values, limit int) *usageWalk {
	w := &usageWalk{query: q, limit: limit}
	withLimit := true
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page == usagePageCap {
			w.Problem = fmt.Sprintf("stopped after the page cap of %d pages", usagePageCap)
			break
		}
		build := func() url.Values {
			pq := url.Values{}
			for k, v := range q {
				pq[k] = v
			}
			if withLimit {
				pq.Set("limit", strconv.Itoa(limit))
			}
			if cursor != "" {
				pq.Set("cursor", cursor)
			}
			return pq
		}
		ex := s.get(ctx, "/usage", build())
		if page == 0 && ex.Status == http.StatusBadRequest {
			withLimit, w.limit = false, 0 // the provider may not take limit on /usage
			ex = s.get(ctx, "/usage", build())
		}
		w.Pages = append(w.Pages, ex)
		if ex.Status != http.StatusOK {
			w.Problem, w.Ex, w.First = fmt.Sprintf("GET /usage answered %s", ex.describe()), ex, page == 0
			break
		}
		env, err := ex.envelope()
		if err != nil {
			w.Problem, w.Ex, w.First = fmt.Sprintf("page %d is not a valid list envelope: %v", page+1, err), ex, page == 0
			break
		}
		for i, raw := range env.Data {
			b := usageBucket{Ex: ex, Page: page + 1, Index: i}
			b.Obj, _ = decodeExact(raw)
			if b.Obj != nil {
				if v, ok := b.Obj["startAt"].(string); ok {
					b.Start, _ = time.Parse(time.RFC3339Nano, v)
				}
				if v, ok := b.Obj["endAt"].(string); ok {
					b.End, _ = time.Parse(time.RFC3339Nano, v)
				}
				b.Gran, _ = b.Obj["granularity"].(string)
			}
			w.Buckets = append(w.Buckets, b)
		}
		if !env.HasMore {
			break
		}
		if env.cursor() == "" {
			w.Problem, w.Ex = "hasMore is true but nextCursor is missing", ex
			break
		}
		if seen[env.cursor()] {
			w.Problem, w.Ex = "a cursor came back a second time", ex
			break
		}
		seen[env.cursor()] = true
		cursor = env.cursor()
	}
	return w
}

// firstPageProblem records the outcome of a walk that could not start:
// a 400 to a valid request fails id, anything else could not be checked.
func (u *usageChecks) firstPageProblem(id string, w *usageWalk, what string) {
	switch {
	case w.Ex != nil && w.Ex.Status == http.StatusBadRequest:
		u.s.fail(id, "/usage", fmt.Sprintf("a valid request (%s) answered 400", what), w.Ex.evidence(""))
	case w.Ex != nil && (w.Ex.Status == http.StatusUnauthorized || w.Ex.Status == http.StatusForbidden):
		u.s.skip(id, "/usage", fmt.Sprintf("the token may not read /usage (%s answered %d)", what, w.Ex.Status))
	default:
		u.s.skip(id, "/usage", fmt.Sprintf("%s could not be walked: %s", what, w.Problem))
	}
}

// checkUsage checks /usage: USE-01 (buckets aligned, one granularity long,
// inside the range asked), USE-02 (dimensions are exactly the grouped
// keys), USE-03 (grouped sums equal the ungrouped totals) and USE-04 (bad
// parameters give 400).
func checkUsage(ctx context.Context, s *session) {
	ids := []string{"USE-01", "USE-02", "USE-03", "USE-04"}
	if !slices.ContainsFunc(ids, s.enabled) {
		return
	}
	if !s.offered[Usage] || !slices.Contains(s.cfg.Resources, Usage) {
		for _, id := range ids {
			s.skip(id, "/usage", "the provider does not offer /usage")
		}
		return
	}
	u := &usageChecks{s: s, walks: map[string]*usageWalk{}}
	start, end, fromData := usageRange(ctx, s)
	if fromData {
		// The data may be older than the usage the provider keeps: fall
		// back to the current days when the range holds nothing.
		w := u.walk(ctx, usageQuery(start, end, spec.GranularityDay, nil))
		if w.complete() && len(w.Buckets) == 0 {
			end = time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
			start = end.AddDate(0, 0, -usageDays)
		}
	}
	u.start, u.end = start, end
	if s.enabled("USE-01") {
		u.aligned(ctx)
	}
	if s.enabled("USE-02") || s.enabled("USE-03") {
		u.groups(ctx)
	}
	if s.enabled("USE-04") {
		u.badParams(ctx)
	}
}

// aligned is USE-01.
func (u *usageChecks) aligned(ctx context.Context) {
	s := u.s
	const id = "USE-01"
	checked, paged := 0, 0
	for _, gran := range []string{spec.GranularityDay, spec.GranularityHour} {
		what := fmt.Sprintf("granularity=%s from %s to %s", gran, formatTimestamp(u.start), formatTimestamp(u.end))
		w := u.walk(ctx, usageQuery(u.start, u.end, gran, nil))
		if w.First {
			u.firstPageProblem(id, w, what)
			continue
		}
		unit := granularityUnit(gran)
		failed := false
		walks := []*usageWalk{w}
		if sw := u.smallWalk(ctx, w); sw != nil && !sw.First {
			walks = append(walks, sw)
			paged = max(paged, sw.limit)
		}
		for _, w := range walks {
			base := what
			for _, b := range w.Buckets {
				what := base + w.where(b)
				if b.Start.IsZero() {
					continue // no parseable startAt: ENV-02 and TIME-01 report it
				}
				ptr := fmt.Sprintf("/data/%d", b.Index)
				bucketEnd := b.Start.Add(unit)
				switch {
				case !b.Start.Equal(b.Start.Truncate(unit)):
					s.fail(id, "/usage", fmt.Sprintf("%s: startAt %s is not on a UTC %s boundary", what, b.Start.UTC().Format(time.RFC3339Nano), gran), b.Ex.evidence(ptr+"/startAt"))
					failed = true
					continue
				case !b.End.IsZero() && b.End.Sub(b.Start) != unit:
					s.fail(id, "/usage", fmt.Sprintf("%s: the bucket from %s to %s is %v long, want one %s", what, formatTimestamp(b.Start), b.End.UTC().Format(time.RFC3339Nano), b.End.Sub(b.Start), gran), b.Ex.evidence(ptr+"/endAt"))
					failed = true
					continue
				case b.Gran != "" && b.Gran != gran:
					s.fail(id, "/usage", fmt.Sprintf("%s: a bucket says granularity %q", what, b.Gran), b.Ex.evidence(ptr+"/granularity"))
					failed = true
					continue
				}
				if !b.End.IsZero() {
					bucketEnd = b.End
				}
				if b.Start.Before(u.start) || bucketEnd.After(u.end) {
					s.fail(id, "/usage", fmt.Sprintf("%s: the bucket [%s, %s) is outside the range asked", what, formatTimestamp(b.Start), formatTimestamp(bucketEnd)), b.Ex.evidence(ptr+"/startAt"))
					failed = true
					continue
				}
				checked++
			}
		}
		if !failed && !w.complete() && len(w.Buckets) == 0 {
			s.skip(id, "/usage", fmt.Sprintf("%s could not be walked: %s", what, w.Problem))
		}
	}
	if checked > 0 {
		msg := fmt.Sprintf("%d buckets (day and hour) are aligned, one granularity long and inside [%s, %s)", checked, formatTimestamp(u.start), formatTimestamp(u.end))
		if paged > 0 {
			msg += ", on every page of walks with small limits too"
		}
		s.pass(id, "/usage", msg)
	} else {
		s.skip(id, "/usage", fmt.Sprintf("no usage buckets from %s to %s", formatTimestamp(u.start), formatTimestamp(u.end)))
	}
}

// groupBySets are the groupBy sets of USE-02 and USE-03; the first is the
// ungrouped one.
var groupBySets = [][]string{
	nil,
	{spec.DimensionModel},
	{spec.DimensionDepartment},
	{spec.DimensionModel, spec.DimensionDepartment},
	spec.Dimensions,
}

// groups is USE-02 and USE-03, over daily buckets.
func (u *usageChecks) groups(ctx context.Context) {
	s := u.s
	walks := make([]*usageWalk, len(groupBySets))
	checked, paged := 0, 0
	for i, set := range groupBySets {
		what := "groupBy=" + strings.Join(set, ",")
		if len(set) == 0 {
			what = "no groupBy"
		}
		w := u.walk(ctx, usageQuery(u.start, u.end, spec.GranularityDay, set))
		walks[i] = w
		if w.First {
			if s.enabled("USE-02") {
				u.firstPageProblem("USE-02", w, what)
			}
			continue
		}
		if !s.enabled("USE-02") {
			continue
		}
		ws := []*usageWalk{w}
		if sw := u.smallWalk(ctx, w); sw != nil && !sw.First {
			ws = append(ws, sw)
			paged++
		}
		base := what
		for _, w := range ws {
			for _, b := range w.Buckets {
				what := base + w.where(b)
				if b.Obj == nil {
					continue // not an object: ENV-02 reports it
				}
				ptr := fmt.Sprintf("/data/%d/dimensions", b.Index)
				var keys []string
				switch d := b.Obj["dimensions"].(type) {
				case nil:
				case map[string]any:
					for k := range d {
						keys = append(keys, k)
					}
				default:
					s.fail("USE-02", "/usage", fmt.Sprintf("%s: dimensions is not an object", what), b.Ex.evidence(ptr))
					continue
				}
				sort.Strings(keys)
				want := slices.Clone(set)
				sort.Strings(want)
				if !slices.Equal(keys, want) {
					s.fail("USE-02", "/usage", fmt.Sprintf("%s: a bucket has the dimensions [%s], want exactly [%s]", what, strings.Join(keys, ","), strings.Join(want, ",")), b.Ex.evidence(ptr))
					continue
				}
				checked++
			}
		}
	}
	if s.enabled("USE-02") {
		if checked > 0 {
			msg := fmt.Sprintf("%d buckets over %d groupBy sets carry exactly the grouped dimensions", checked, len(groupBySets))
			if paged > 0 {
				msg += fmt.Sprintf(", on every page of %d walks with small limits too", paged)
			}
			s.pass("USE-02", "/usage", msg)
		} else {
			s.skip("USE-02", "/usage", fmt.Sprintf("no usage buckets from %s to %s", formatTimestamp(u.start), formatTimestamp(u.end)))
		}
	}
	if s.enabled("USE-03") {
		u.sums(walks)
	}
}

// additiveMetrics are the metrics USE-03 sums.
var additiveMetrics = []string{"requests", "inputTokens", "outputTokens", "cost"}

// bucketSums holds, per bucket start, the sum of each metric and where it
// came from.
type bucketSums struct {
	sum     map[string]float64
	present map[string]bool
	ex      *exchange
	index   int
}

// sumsByStart sums the metrics of the buckets of w by bucket start.
func (w *usageWalk) sumsByStart() map[int64]*bucketSums {
	out := map[int64]*bucketSums{}
	for _, b := range w.Buckets {
		if b.Start.IsZero() || b.Obj == nil {
			continue
		}
		k := b.Start.UnixMilli()
		u := out[k]
		if u == nil {
			u = &bucketSums{sum: map[string]float64{}, present: map[string]bool{}, ex: b.Ex, index: b.Index}
			out[k] = u
		}
		m, _ := b.Obj["metrics"].(map[string]any)
		for _, name := range additiveMetrics {
			n, ok := m[name].(json.Number)
			if !ok {
				continue
			}
			f, err := n.Float64()
			if err != nil {
				continue
			}
			u.sum[name] += f
			u.present[name] = true
		}
	}
	return out
}

// misaligned reports whether a walk of daily buckets holds one whose
// startAt is not on a day boundary: USE-01 reports it, and USE-03 cannot
// match such buckets.
func (w *usageWalk) misaligned() bool {
	for _, b := range w.Buckets {
		if !b.Start.IsZero() && !b.Start.Equal(b.Start.Truncate(24*time.Hour)) {
			return true
		}
	}
	return false
}

// sums is USE-03: per bucket start, the metrics summed over the
// groups of each grouped walk equal the ungrouped bucket.
func (u *usageChecks) sums(walks []*usageWalk) {
	s := u.s
	const id = "USE-03"
	base := walks[0]
	if base == nil || !base.complete() {
		s.skip(id, "/usage", "the ungrouped usage could not be walked to the end")
		return
	}
	if len(base.Buckets) == 0 {
		s.skip(id, "/usage", fmt.Sprintf("no usage buckets from %s to %s", formatTimestamp(u.start), formatTimestamp(u.end)))
		return
	}
	if base.misaligned() {
		s.skip(id, "/usage", "the ungrouped buckets are not on day boundaries (USE-01): their sums cannot be matched")
		return
	}
	totals := base.sumsByStart()
	compared := 0
	for i, w := range walks[1:] {
		set := groupBySets[i+1]
		if w == nil || !w.complete() || w.misaligned() {
			continue
		}
		groups := w.sumsByStart()
		starts := map[int64]bool{}
		for k := range totals {
			starts[k] = true
		}
		for k := range groups {
			starts[k] = true
		}
		keys := make([]int64, 0, len(starts))
		for k := range starts {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			t, g := totals[k], groups[k]
			for _, name := range additiveMetrics {
				var tv, gv float64
				var tp, gp bool
				if t != nil {
					tv, tp = t.sum[name], t.present[name]
				}
				if g != nil {
					gv, gp = g.sum[name], g.present[name]
				}
				if !tp && !gp {
					continue
				}
				// A metric the provider does not report on one side is
				// not compared; an empty bucket left out counts as zero.
				if (t != nil && !tp) || (g != nil && !gp) {
					continue
				}
				compared++
				if closeEnough(name, tv, gv) {
					continue
				}
				ex, ptr := base.Ex, ""
				if t != nil {
					ex, ptr = t.ex, fmt.Sprintf("/data/%d/metrics/%s", t.index, name)
				} else if g != nil {
					ex, ptr = g.ex, fmt.Sprintf("/data/%d/metrics/%s", g.index, name)
				}
				if ex == nil {
					ex = base.Pages[0]
				}
				s.fail(id, "/usage", fmt.Sprintf("bucket %s: %s is %v ungrouped but sums to %v over groupBy=%s",
					formatTimestamp(time.UnixMilli(k)), name, tv, gv, strings.Join(set, ",")), ex.evidence(ptr))
			}
		}
	}
	if compared > 0 {
		s.pass(id, "/usage", fmt.Sprintf("requests, tokens and cost summed over %d groupBy sets equal the ungrouped buckets (%d comparisons)", len(walks)-1, compared))
	} else {
		s.skip(id, "/usage", "no grouped usage could be compared with the ungrouped totals")
	}
}

// closeEnough compares a metric: integers exactly, cost within 1e-6
// relative.
func closeEnough(name string, a, b float64) bool {
	if name != "cost" {
		return a == b
	}
	return math.Abs(a-b) <= math.Max(1e-6*math.Max(math.Abs(a), math.Abs(b)), 1e-9)
}

// badParams is USE-04.
func (u *usageChecks) badParams(ctx context.Context) {
	s := u.s
	const id = "USE-04"
	end := u.end
	cases := []struct {
		what string
		q    url.Values
	}{
		{"granularity=week", usageQuery(u.start, end, "week", nil)},
		{"groupBy=team", usageQuery(u.start, end, spec.GranularityDay, []string{"team"})},
		{"endAt a day before startAt", usageQuery(end, end.AddDate(0, 0, -1), spec.GranularityDay, nil)},
		{"granularity=hour over 40 days", usageQuery(end.AddDate(0, 0, -40), end, spec.GranularityHour, nil)},
		{"granularity=day over 400 days", usageQuery(end.AddDate(0, 0, -400), end, spec.GranularityDay, nil)},
	}
	ok := 0
	for _, c := range cases {
		ex := s.get(ctx, "/usage", c.q)
		switch {
		case ex.Status == 0:
			s.errored(id, "/usage", ex, fmt.Sprintf("%s: no answer (%v)", c.what, ex.Err))
		case ex.Status == http.StatusBadRequest:
			ok++
		default:
			s.fail(id, "/usage", fmt.Sprintf("%s answered %d, want 400", c.what, ex.Status), ex.evidence(""))
		}
	}
	if ok > 0 {
		s.pass(id, "/usage", fmt.Sprintf("%d bad parameter sets answered 400", ok))
	}
}
