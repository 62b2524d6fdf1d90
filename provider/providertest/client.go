package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiusage/kit/spec"
)

// client sends the suite's requests and remembers every 5xx answer.
type client struct {
	base string
	hc   *http.Client

	mu       sync.Mutex
	requests int
	failures []string // requests answered with a 5xx
}

func newClient(base string) *client {
	return &client{base: base, hc: &http.Client{Timeout: time.Minute}}
}

// reply is one answer.
type reply struct {
	req    string // method and target, for messages
	status int
	header http.Header
	body   []byte
}

func (r *reply) String() string {
	body := string(r.body)
	if len(body) > 600 {
		body = body[:600] + "..."
	}
	return fmt.Sprintf("%s: %d %s", r.req, r.status, body)
}

// cred is a way of presenting a credential.
type cred func(http.Header)

func bearer(token string) cred {
	return func(h http.Header) { h.Set("Authorization", "Bearer "+token) }
}

func apiKey(token string) cred {
	return func(h http.Header) { h.Set("X-API-Key", token) }
}

func both(a, b cred) cred {
	return func(h http.Header) { a(h); b(h) }
}

func rawHeader(name, value string) cred {
	return func(h http.Header) { h.Set(name, value) }
}

// anonymous sends no credential.
func anonymous(http.Header) {}

// target returns path with the query q.
func target(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// do sends one request. Every answer must carry a JSON content type; a 5xx
// is an error (and is remembered for the final check).
func (c *client) do(t *testing.T, method, tgt string, cr cred) *reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, c.base+tgt, nil)
	if err != nil {
		t.Fatalf("providertest: request %s %s: %v", method, tgt, err)
	}
	if cr != nil {
		cr(req.Header)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("providertest: %s %s: %v", method, tgt, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		t.Fatalf("providertest: %s %s: reading the body: %v", method, tgt, err)
	}
	r := &reply{req: method + " " + shorten(tgt), status: resp.StatusCode, header: resp.Header, body: body}
	c.mu.Lock()
	c.requests++
	if r.status >= 500 {
		c.failures = append(c.failures, r.String())
	}
	c.mu.Unlock()
	if r.status >= 500 {
		t.Errorf("%v: a request must never get a 5xx", r)
	}
	if mt := r.mediaType(); mt != "application/json" && mt != spec.ProblemContentType {
		t.Errorf("%s: %d with Content-Type %q, want application/json or %s", r.req, r.status, r.header.Get("Content-Type"), spec.ProblemContentType)
	}
	return r
}

func shorten(s string) string {
	if len(s) > 300 {
		return s[:300] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}

func (r *reply) mediaType() string {
	mt, _, err := mime.ParseMediaType(r.header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

func (c *client) get(t *testing.T, cr cred, path string, q url.Values) *reply {
	t.Helper()
	return c.do(t, http.MethodGet, target(path, q), cr)
}

// problem checks that r is a problem body of status naming one of fields
// (any field when none is given).
func (r *reply) problem(t *testing.T, status int, fields ...string) {
	t.Helper()
	if r.status != status {
		t.Errorf("%v: want status %d", r, status)
		return
	}
	if mt := r.mediaType(); mt != spec.ProblemContentType {
		t.Errorf("%s: %d with Content-Type %q, want %s", r.req, r.status, r.header.Get("Content-Type"), spec.ProblemContentType)
	}
	var p spec.Problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Errorf("%v: not a problem body: %v", r, err)
		return
	}
	if p.Status != status || p.Title == "" || p.Type == "" {
		t.Errorf("%v: the problem body needs type, title and status %d", r, status)
	}
	if len(fields) == 0 {
		return
	}
	for _, e := range p.Errors {
		if slices.Contains(fields, e.Field) {
			return
		}
	}
	t.Errorf("%v: errors[].field should name %s", r, strings.Join(fields, " or "))
}

// page is one page of a list.
type page struct {
	Data       []json.RawMessage
	HasMore    bool
	NextCursor *string
}

// envelope decodes r as a list page, checking the envelope: data an array,
// hasMore a boolean, nextCursor present, null exactly when hasMore is false.
func (r *reply) envelope(t *testing.T) (page, bool) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Errorf("%v: want 200", r)
		return page{}, false
	}
	if mt := r.mediaType(); mt != "application/json" {
		t.Errorf("%s: Content-Type %q, want application/json", r.req, r.header.Get("Content-Type"))
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &members); err != nil {
		t.Errorf("%v: not a JSON object: %v", r, err)
		return page{}, false
	}
	var p page
	data, ok := members["data"]
	if !ok || !bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) {
		t.Errorf("%v: data must be an array", r)
		return page{}, false
	}
	if err := json.Unmarshal(data, &p.Data); err != nil {
		t.Errorf("%v: data: %v", r, err)
		return page{}, false
	}
	hasMore, ok := members["hasMore"]
	if !ok || json.Unmarshal(hasMore, &p.HasMore) != nil || (string(hasMore) != "true" && string(hasMore) != "false") {
		t.Errorf("%v: hasMore must be a boolean", r)
		return page{}, false
	}
	next, ok := members["nextCursor"]
	if !ok {
		t.Errorf("%v: nextCursor must be present (null on the last page)", r)
		return page{}, false
	}
	if err := json.Unmarshal(next, &p.NextCursor); err != nil {
		t.Errorf("%v: nextCursor must be a string or null", r)
		return page{}, false
	}
	switch {
	case p.HasMore && (p.NextCursor == nil || *p.NextCursor == ""):
		t.Errorf("%v: hasMore is true but nextCursor is %s", r, next)
		return page{}, false
	case !p.HasMore && p.NextCursor != nil:
		t.Errorf("%v: hasMore is false but nextCursor is %s, want null", r, next)
		return page{}, false
	}
	return p, true
}

// list gets one page, failing the test when it is not a valid 200 page.
func (c *client) list(t *testing.T, cr cred, path string, q url.Values) page {
	t.Helper()
	r := c.get(t, cr, path, q)
	p, ok := r.envelope(t)
	if !ok {
		t.FailNow()
	}
	return p
}

// walkOpts tunes a walk.
type walkOpts struct {
	// limits gives the limit of each page in turn (cycling); none sends no
	// limit.
	limits []int
	// omit lists parameters left out of the requests that carry a cursor.
	omit []string
}

// walked is the result of a walk.
type walked struct {
	items []json.RawMessage
	// pages holds each page's items; cursors[i] is the cursor that
	// fetched pages[i+1].
	pages   [][]json.RawMessage
	cursors []string
	limits  []int
}

// walk follows nextCursor from the first page until hasMore is false. It
// fails the test on a repeated cursor, a page over its limit or too many
// pages.
func (c *client) walk(t *testing.T, cr cred, path string, q url.Values, o walkOpts) walked {
	t.Helper()
	var w walked
	seen := map[string]bool{}
	cursor := ""
	for n := 0; ; n++ {
		if n > 5000 {
			t.Fatalf("GET %s: the walk does not end after %d pages", target(path, q), n)
		}
		pq := url.Values{}
		for k, v := range q {
			if cursor != "" && slices.Contains(o.omit, k) {
				continue
			}
			pq[k] = slices.Clone(v)
		}
		limit := 0
		if len(o.limits) > 0 {
			limit = o.limits[n%len(o.limits)]
			pq.Set("limit", fmt.Sprint(limit))
		}
		if cursor != "" {
			pq.Set("cursor", cursor)
		}
		p := c.list(t, cr, path, pq)
		if limit > 0 && len(p.Data) > limit {
			t.Fatalf("GET %s: %d items, more than the limit", target(path, pq), len(p.Data))
		}
		if limit == 0 && len(p.Data) > 100 {
			t.Fatalf("GET %s: %d items, more than the default limit 100", target(path, pq), len(p.Data))
		}
		w.items = append(w.items, p.Data...)
		w.pages = append(w.pages, p.Data)
		w.limits = append(w.limits, limit)
		if !p.HasMore {
			return w
		}
		cursor = *p.NextCursor
		if seen[cursor] {
			t.Fatalf("GET %s: nextCursor repeats an earlier cursor", target(path, pq))
		}
		seen[cursor] = true
		w.cursors = append(w.cursors, cursor)
	}
}

// record holds the fields of a served record the suite reads.
type record struct {
	ID         string  `json:"id"`
	StartedAt  string  `json:"startedAt"`
	CreatedAt  string  `json:"createdAt"`
	UpdatedAt  string  `json:"updatedAt"`
	OccurredAt string  `json:"occurredAt"`
	DeletedAt  *string `json:"deletedAt"`
	Category   string  `json:"category"`
}

func decodeRecord(t *testing.T, raw json.RawMessage) record {
	t.Helper()
	var r record
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("providertest: a record is not a JSON object: %v: %s", err, raw)
	}
	return r
}

func ids(t *testing.T, raws []json.RawMessage) []string {
	t.Helper()
	out := make([]string, 0, len(raws))
	for _, raw := range raws {
		out = append(out, decodeRecord(t, raw).ID)
	}
	return out
}

func decodeAny(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("providertest: not JSON: %v: %s", err, raw)
	}
	return v
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// timeParam formats t for a query parameter: RFC 3339 with milliseconds in
// the zone of t ("Z" for UTC).
func timeParam(t time.Time) string {
	return t.Format("2006-01-02T15:04:05.000Z07:00")
}

// withOffset returns t as written at UTC+02:00: the same instant.
func withOffset(t time.Time) string {
	return timeParam(t.In(time.FixedZone("", 2*3600)))
}

func vals(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return q
}
