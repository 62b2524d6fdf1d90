package conformance

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// record is one list item, decoded enough to order and compare it.
type record struct {
	ID  string
	Raw json.RawMessage
	Obj map[string]any
	// Time is the sort timestamp (updatedAt, or occurredAt for events) as
	// sent, and At its parsed value (zero when missing or unparseable).
	Time string
	At   time.Time
}

// walk is the outcome of following nextCursor from a first request until
// hasMore is false.
type walk struct {
	resource string
	query    url.Values
	limit    int
	Records  []record
	// Pages are the exchanges of the walk, in order; Sizes the number of
	// records each page that could be read brought.
	Pages   []*exchange
	Sizes   []int
	Cursors []string // the nextCursor of each page but the last
	// Problem, when not empty, says why the walk stopped early: a non-200
	// answer, an envelope that cannot be decoded, a repeated cursor, the
	// page cap. Ex is the exchange to blame.
	Problem string
	Ex      *exchange
	// EmptyMore counts pages that were empty yet said hasMore.
	EmptyMore int
}

// pageOf returns the page (numbered from 1) that brought record i of the
// walk, and the record's index in that page's data.
func (w *walk) pageOf(i int) (page, index int) {
	for p, n := range w.Sizes {
		if i < n {
			return p + 1, i
		}
		i -= n
	}
	return len(w.Sizes), -1
}

// pageStart is the index in the walk of the first record of page (from 1).
func (w *walk) pageStart(page int) int {
	n := 0
	for _, size := range w.Sizes[:page-1] {
		n += size
	}
	return n
}

// evidence is the evidence of record i of the walk, with a pointer to its
// field (field may be empty).
func (w *walk) evidence(i int, field string) *Evidence {
	p, j := w.pageOf(i)
	if p == 0 {
		return (&exchange{}).evidence("")
	}
	ptr := ""
	if j >= 0 {
		ptr = "/data/" + strconv.Itoa(j)
		if field != "" {
			ptr += "/" + field
		}
	}
	return w.Pages[p-1].evidence(ptr)
}

// threePageLimit is the page size that makes a walk over n records cross
// at least three pages when n allows it: n/3, at least 1, at most 1000.
func threePageLimit(n int) int { return min(max(n/3, 1), 1000) }

// Complete reports whether the walk reached hasMore false.
func (w *walk) Complete() bool { return w.Problem == "" }

// IDs returns the ids of the records, in order.
func (w *walk) IDs() []string {
	out := make([]string, len(w.Records))
	for i, r := range w.Records {
		out[i] = r.ID
	}
	return out
}

// sortField is the timestamp a resource's list is ordered by.
func sortField(resource string) string {
	if resource == Events {
		return "occurredAt"
	}
	return "updatedAt"
}

// walkList follows a list (not /usage) with the given filters and page size
// (0: the provider's default), memoised per arguments. opts choose the
// credential.
func (s *session) walkList(ctx context.Context, resource string, q url.Values, limit int, opts ...reqOpt) *walk {
	key := resource + "?" + q.Encode() + "#" + strconv.Itoa(limit)
	if len(opts) == 0 {
		if w, ok := s.walks[key]; ok {
			return w
		}
	}
	w := &walk{resource: resource, query: q, limit: limit}
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page == s.cfg.PageCap {
			w.Problem = fmt.Sprintf("stopped after the page cap of %d pages", s.cfg.PageCap)
			if len(w.Pages) > 0 {
				w.Ex = w.Pages[len(w.Pages)-1]
			}
			break
		}
		pq := url.Values{}
		for k, v := range q {
			pq[k] = v
		}
		if limit > 0 {
			pq.Set("limit", strconv.Itoa(limit))
		}
		if cursor != "" {
			pq.Set("cursor", cursor)
		}
		ex := s.get(ctx, "/"+resource, pq, opts...)
		w.Pages = append(w.Pages, ex)
		if ex.Status != 200 {
			w.Problem, w.Ex = fmt.Sprintf("GET /%s answered %s", resource, ex.describe()), ex
			break
		}
		env, err := ex.envelope()
		if err != nil {
			w.Problem, w.Ex = fmt.Sprintf("page %d is not a valid list envelope: %v", page+1, err), ex
			break
		}
		for _, raw := range env.Data {
			w.Records = append(w.Records, s.decodeRecord(resource, raw))
		}
		w.Sizes = append(w.Sizes, len(env.Data))
		if !env.HasMore {
			break
		}
		if len(env.Data) == 0 {
			w.EmptyMore++
		}
		if env.cursor() == "" {
			w.Problem, w.Ex = "hasMore is true but nextCursor is missing", ex
			break
		}
		if seen[env.cursor()] {
			w.Problem, w.Ex = "a cursor came back a second time: the walk would never end", ex
			break
		}
		seen[env.cursor()] = true
		cursor = env.cursor()
		w.Cursors = append(w.Cursors, cursor)
		if page > 0 && page%50 == 0 {
			s.progress("  /%s: %d records in %d pages", resource, len(w.Records), page+1)
		}
	}
	if len(opts) == 0 {
		s.walks[key] = w
	}
	return w
}

// decodeRecord is decodeRecord, once per distinct record of the run: every
// walk brings the same records back.
func (s *session) decodeRecord(resource string, raw json.RawMessage) record {
	k := sha256.Sum256(raw)
	if r, ok := s.decoded[k]; ok && r.resource == resource {
		return r.record
	}
	r := decodeRecord(resource, raw)
	s.decoded[k] = decodedRecord{resource, r}
	return r
}

// decodedRecord is a record decoded for a resource.
type decodedRecord struct {
	resource string
	record   record
}

func decodeRecord(resource string, raw json.RawMessage) record {
	r := record{Raw: raw}
	if err := json.Unmarshal(raw, &r.Obj); err != nil {
		return r
	}
	r.ID, _ = r.Obj["id"].(string)
	r.Time, _ = r.Obj[sortField(resource)].(string)
	if r.Time == "" && resource == Conversations {
		r.Time, _ = r.Obj["startedAt"].(string)
	}
	if r.Time == "" && resource == Assistants {
		r.Time, _ = r.Obj["createdAt"].(string)
	}
	if t, err := time.Parse(time.RFC3339Nano, r.Time); err == nil {
		r.At = t
	}
	return r
}

// keyLess reports whether a sorts strictly before b in keyset order:
// (time, id), ids byte by byte.
func keyLess(a, b record) bool {
	if !a.At.Equal(b.At) {
		return a.At.Before(b.At)
	}
	return a.ID < b.ID
}

// fullWalk is the walk every family shares: no filters, the largest page.
func (s *session) fullWalk(ctx context.Context, resource string) *walk {
	if w, ok := s.walks[resource+"?#1000"]; ok {
		return w
	}
	s.progress("walking /%s", resource)
	w := s.walkList(ctx, resource, url.Values{}, 1000)
	s.progress("  /%s: %d records in %d pages", resource, len(w.Records), len(w.Pages))
	return w
}

// endpoint is the path of a resource's list.
func endpoint(resource string) string { return "/" + resource }

// truncateID shortens an id for a message.
func truncateID(id string) string { return truncateText(id, 60) }

// truncateText shortens s to at most n bytes for a message, without cutting
// a character in two; invalid UTF-8 shows as "?".
func truncateText(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// stoppedEarly reports whether a walk that read at least one page stopped
// at a later page answered with a 4xx: the provider refused a cursor it
// issued, sent back with the same query. The page to blame is returned.
func (w *walk) stoppedEarly() (*exchange, bool) {
	if len(w.Sizes) == 0 || len(w.Pages) <= len(w.Sizes) {
		return nil, false
	}
	ex := w.Pages[len(w.Pages)-1]
	return ex, ex.Status >= 400 && ex.Status < 500
}
