package provider

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

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

// params reads the known query parameters of a request. Unknown parameters
// are ignored; a known one given twice, or empty, is an error naming it.
type params struct{ v url.Values }

func (p params) get(name string) (string, bool, error) {
	vs, ok := p.v[name]
	if !ok {
		return "", false, nil
	}
	if len(vs) > 1 {
		return "", false, Invalid(name, "is given %d times; give it once", len(vs))
	}
	if vs[0] == "" {
		return "", false, Invalid(name, "is empty; give a value or leave the parameter out")
	}
	return vs[0], true, nil
}

func (p params) limit() (int, error) {
	s, ok, err := p.get("limit")
	if err != nil || !ok {
		return DefaultLimit, err
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, Invalid("limit", "must be an integer from 1 to %d, got %q", MaxLimit, truncate(s))
	}
	return n, nil
}

func (p params) time(name string) (time.Time, error) {
	s, ok, err := p.get(name)
	if err != nil || !ok {
		return time.Time{}, err
	}
	t, err := spec.ParseTime(s)
	if err != nil {
		hint := ""
		if strings.Contains(s, " ") {
			hint = ` (a "+" in a query string means a space: send an offset's + as %2B)`
		}
		return time.Time{}, Invalid(name, "must be an RFC 3339 timestamp such as 2026-01-02T03:04:05Z, got %q%s", truncate(s), hint)
	}
	return t, nil
}

func (p params) cursor() (string, bool, error) { return p.get("cursor") }

// conversationParams are the parameters of GET /conversations.
type conversationParams struct {
	updatedSince, startedAfter time.Time
	limit                      int
	cursor                     string
}

func parseConversationParams(v url.Values) (q conversationParams, err error) {
	p := params{v}
	if q.updatedSince, err = p.time("updatedSince"); err != nil {
		return q, err
	}
	q.updatedSince = ceil(q.updatedSince, time.Millisecond)
	if q.startedAfter, err = p.time("startedAfter"); err != nil {
		return q, err
	}
	q.startedAfter = floor(q.startedAfter, time.Millisecond)
	if q.limit, err = p.limit(); err != nil {
		return q, err
	}
	q.cursor, _, err = p.cursor()
	return q, err
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

func parseAssistantParams(v url.Values) (q assistantParams, err error) {
	p := params{v}
	if q.updatedSince, err = p.time("updatedSince"); err != nil {
		return q, err
	}
	q.updatedSince = ceil(q.updatedSince, time.Millisecond)
	if q.limit, err = p.limit(); err != nil {
		return q, err
	}
	q.cursor, _, err = p.cursor()
	return q, err
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

func parseEventParams(v url.Values) (q eventParams, err error) {
	p := params{v}
	if q.occurredAfter, err = p.time("occurredAfter"); err != nil {
		return q, err
	}
	q.occurredAfter = floor(q.occurredAfter, time.Millisecond)
	c, ok, err := p.get("category")
	if err != nil {
		return q, err
	}
	if ok && !slices.Contains(spec.EventCategories, c) {
		return q, Invalid("category", "must be one of %s, got %q", strings.Join(spec.EventCategories, ", "), truncate(c))
	}
	q.category = c
	if q.limit, err = p.limit(); err != nil {
		return q, err
	}
	q.cursor, _, err = p.cursor()
	return q, err
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

func parseUsageParams(v url.Values, now time.Time) (q usageParams, err error) {
	p := params{v}
	q.granularity = spec.GranularityDay
	if g, ok, err := p.get("granularity"); err != nil {
		return q, err
	} else if ok {
		if g != spec.GranularityHour && g != spec.GranularityDay {
			return q, Invalid("granularity", "must be hour or day, got %q", truncate(g))
		}
		q.granularity = g
	}
	if g, ok, err := p.get("groupBy"); err != nil {
		return q, err
	} else if ok {
		seen := map[string]bool{}
		for _, d := range strings.Split(g, ",") {
			d = strings.TrimSpace(d)
			if !slices.Contains(spec.Dimensions, d) {
				return q, Invalid("groupBy", "must be a comma-separated subset of %s, got %q", strings.Join(spec.Dimensions, ","), truncate(d))
			}
			if seen[d] {
				return q, Invalid("groupBy", "names %s twice", d)
			}
			seen[d] = true
		}
		for _, d := range spec.Dimensions { // canonical order
			if seen[d] {
				q.groupBy = append(q.groupBy, d)
			}
		}
	}
	if q.start, err = p.time("startAt"); err != nil {
		return q, err
	}
	if q.end, err = p.time("endAt"); err != nil {
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
	if q.limit, err = p.limit(); err != nil {
		return q, err
	}
	q.cursor, _, err = p.cursor()
	return q, err
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
