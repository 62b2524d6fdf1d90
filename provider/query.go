package provider

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/spec"
)

// Page size limits of every list.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Limits of the /usage range.
const (
	DefaultUsageRange = 7 * 24 * time.Hour
	MaxHourlyRange    = 31 * 24 * time.Hour
	MaxDailyRange     = 366 * 24 * time.Hour
)

// queryStyle is how every endpoint reads its query parameters: unknown
// ones are ignored; a known one given twice, or empty, is an error naming
// it; a client's value is quoted cut short ([truncate]), and a choice of
// two is worded "must be hour or day". A value that is not UTF-8 reaches
// the checks, which quote it.
var queryStyle = httpx.QueryStyle{
	Invalid:          func(param, message string) error { return Invalid(param, "%s", message) },
	RejectEmpty:      true,
	AllowInvalidUTF8: true,
	Quote:            func(v string) string { return strconv.Quote(truncate(v)) },
	BadEnum: func(allowed []string, v string) string {
		if len(allowed) == 2 {
			return fmt.Sprintf("must be %s or %s, got %q", allowed[0], allowed[1], truncate(v))
		}
		return fmt.Sprintf("must be one of %s, got %q", strings.Join(allowed, ", "), truncate(v))
	},
}

// readQuery returns the reader of a request's parameters v.
func readQuery(v url.Values) *httpx.QueryReader { return httpx.NewQueryReader(v, queryStyle) }

// conversationParams are the parameters of GET /conversations.
type conversationParams struct {
	updatedSince, startedAfter time.Time
	limit                      int
	cursor                     string
}

func parseConversationParams(v url.Values) (conversationParams, error) {
	q := conversationParams{limit: DefaultLimit}
	r := readQuery(v)
	r.Time("updatedSince", &q.updatedSince)
	q.updatedSince = ceil(q.updatedSince, time.Millisecond)
	r.Time("startedAfter", &q.startedAfter)
	q.startedAfter = floor(q.startedAfter, time.Millisecond)
	r.Int("limit", &q.limit, 1, MaxLimit)
	q.cursor, _ = r.String("cursor")
	return q, r.Err()
}

func (q conversationParams) digest() [12]byte {
	return filterDigest("updatedSince", millis(q.updatedSince), "startedAfter", millis(q.startedAfter))
}

// assistantParams are the parameters of GET /assistants.
type assistantParams struct {
	updatedSince time.Time
	limit        int
	cursor       string
}

func parseAssistantParams(v url.Values) (assistantParams, error) {
	q := assistantParams{limit: DefaultLimit}
	r := readQuery(v)
	r.Time("updatedSince", &q.updatedSince)
	q.updatedSince = ceil(q.updatedSince, time.Millisecond)
	r.Int("limit", &q.limit, 1, MaxLimit)
	q.cursor, _ = r.String("cursor")
	return q, r.Err()
}

func (q assistantParams) digest() [12]byte {
	return filterDigest("updatedSince", millis(q.updatedSince))
}

// eventParams are the parameters of GET /events.
type eventParams struct {
	occurredAfter time.Time
	category      string
	limit         int
	cursor        string
}

func parseEventParams(v url.Values) (eventParams, error) {
	q := eventParams{limit: DefaultLimit}
	r := readQuery(v)
	r.Time("occurredAfter", &q.occurredAfter)
	q.occurredAfter = floor(q.occurredAfter, time.Millisecond)
	r.Enum("category", &q.category, spec.EventCategories...)
	r.Int("limit", &q.limit, 1, MaxLimit)
	q.cursor, _ = r.String("cursor")
	return q, r.Err()
}

func (q eventParams) digest() [12]byte {
	return filterDigest("occurredAfter", millis(q.occurredAfter), "category", q.category)
}

// usageParams are the parameters of GET /usage. start and end are resolved
// (defaults applied, rounded to the granularity) unless a cursor supplies
// them: startSet and endSet say whether the client gave them.
type usageParams struct {
	start, end       time.Time
	startSet, endSet bool
	granularity      string
	groupBy          []string
	limit            int
	cursor           string
}

func parseUsageParams(v url.Values, now time.Time) (usageParams, error) {
	q := usageParams{granularity: spec.GranularityDay, limit: DefaultLimit}
	r := readQuery(v)
	r.Enum("granularity", &q.granularity, spec.GranularityHour, spec.GranularityDay)
	if g, ok := r.String("groupBy"); ok {
		q.groupBy = parseGroupBy(r, g)
	}
	r.Time("startAt", &q.start)
	r.Time("endAt", &q.end)
	if err := r.Err(); err != nil {
		return q, err
	}
	q.startSet, q.endSet = !q.start.IsZero(), !q.end.IsZero()
	unit := granularityUnit(q.granularity)
	if !q.endSet {
		q.end = ceil(now.UTC(), unit)
		if q.startSet && !q.end.After(q.start) {
			q.end = ceil(q.start.Add(unit), unit)
		}
	}
	if !q.startSet {
		q.start = q.end.Add(-DefaultUsageRange)
	}
	q.start, q.end = floor(q.start, unit), ceil(q.end, unit)
	if !q.end.After(q.start) {
		return q, Invalid("endAt", "must be after startAt")
	}
	max := MaxDailyRange
	if q.granularity == spec.GranularityHour {
		max = MaxHourlyRange
	}
	if q.end.Sub(q.start) > max {
		return q, Invalid("endAt", "the range from startAt to endAt is %.4g days; at most %d days for granularity %s",
			q.end.Sub(q.start).Hours()/24, int(max.Hours()/24), q.granularity)
	}
	r.Int("limit", &q.limit, 1, MaxLimit)
	q.cursor, _ = r.String("cursor")
	return q, r.Err()
}

// parseGroupBy reads g, the value of groupBy: dimensions separated by
// commas, each at most once. It returns them in the canonical order of
// [spec.Dimensions], or records the error in r.
func parseGroupBy(r *httpx.QueryReader, g string) []string {
	seen := map[string]bool{}
	for _, d := range strings.Split(g, ",") {
		d = strings.TrimSpace(d)
		if !slices.Contains(spec.Dimensions, d) {
			r.Fail("groupBy", "must be a comma-separated subset of %s, got %q", strings.Join(spec.Dimensions, ","), truncate(d))
			return nil
		}
		if seen[d] {
			r.Fail("groupBy", "names %s twice", d)
			return nil
		}
		seen[d] = true
	}
	var out []string
	for _, d := range spec.Dimensions { // canonical order
		if seen[d] {
			out = append(out, d)
		}
	}
	return out
}

func (q usageParams) digest() [12]byte {
	return filterDigest("granularity", q.granularity, "groupBy", strings.Join(q.groupBy, ","))
}

func granularityUnit(g string) time.Duration {
	if g == spec.GranularityHour {
		return time.Hour
	}
	return 24 * time.Hour
}

// floor and ceil round t to a multiple of unit counted from Go's zero time
// (January 1, year 1, UTC), which for hours and days are UTC boundaries. Filters are rounded to milliseconds, the
// precision of stored timestamps: an inclusive bound up, an exclusive one
// down, so the rounded bound keeps exactly the same records. The zero time
// stays zero.
func floor(t time.Time, unit time.Duration) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(unit)
}

func ceil(t time.Time, unit time.Duration) time.Time {
	if t.IsZero() {
		return t
	}
	f := floor(t, unit)
	if f.Equal(t) {
		return f
	}
	return f.Add(unit)
}

func millis(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// truncate shortens a client's value for an error message.
func truncate(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(s[:max], ""), len(s))
}
