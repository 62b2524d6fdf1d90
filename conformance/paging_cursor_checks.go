package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Paging checks about cursors (checkPaging runs them): PAGE-05, retry-safe;
// PAGE-06, malformed; PAGE-07, another endpoint's; PAGE-08, sent with other
// filters; PAGE-10, opaque.

// pageCursor is a cursor of a resource's first page with limit=1.
type pageCursor struct {
	Value string
	Query url.Values // the query of the request that returned it
	Ex    *exchange
}

// firstCursor asks a resource's first page with limit=1 and returns its
// nextCursor, or nil when there is none; it asks once per resource.
func (p *pagingChecks) firstCursor(ctx context.Context, resource string) *pageCursor {
	if c, ok := p.cursors[resource]; ok {
		return c
	}
	var c *pageCursor
	q := url.Values{"limit": {"1"}}
	ex := p.s.get(ctx, endpoint(resource), q)
	if ex.Status == http.StatusOK {
		env, err := ex.envelope()
		if err == nil && env.HasMore && env.cursor() != "" {
			c = &pageCursor{Value: env.cursor(), Query: q, Ex: ex}
		}
	}
	p.cursors[resource] = c
	return c
}

// --- PAGE-05

// retrySafe is PAGE-05; it reports whether it found cursors not
// retry-safe.
func (p *pagingChecks) retrySafe(ctx context.Context, r string, full *walk) (unsafe bool) {
	s := p.s
	const id = "PAGE-05"
	ep := endpoint(r)
	if !s.enabled(id) {
		return false
	}
	n := len(full.Records)
	if n < 2 {
		s.skip(id, ep, fmt.Sprintf("%d records: a second page is needed to replay a cursor", n))
		return false
	}
	limit := max(1, min(10, n/3))
	base := url.Values{"limit": {strconv.Itoa(limit)}}
	page := func(cursor string) (*exchange, []record, listPage, string) {
		q := cloneQuery(base)
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		ex := s.get(ctx, ep, q)
		recs, env, problem := decodeListPage(r, ex)
		return ex, recs, env, problem
	}
	_, first, env, problem := page("")
	if problem != "" {
		s.skip(id, ep, "the first page failed: "+problem)
		return false
	}
	if !env.HasMore || env.cursor() == "" {
		s.skip(id, ep, fmt.Sprintf("the first page with limit=%d had no nextCursor", limit))
		return false
	}
	c1 := env.cursor()
	_, a, envA, problem := page(c1)
	if problem != "" {
		s.skip(id, ep, "the first use of a cursor failed: "+problem)
		return false
	}
	changed := func() bool {
		_, again, _, problem := page("")
		return problem != "" || !slices.Equal(recordIDs(again), recordIDs(first))
	}
	compare := func(when string, ex *exchange, b []record, problem string) bool {
		if problem != "" {
			if changed() {
				s.skip(id, ep, "the data changed during the check")
				return false
			}
			s.fail(id, ep, fmt.Sprintf("a cursor that worked once failed %s: %s", when, problem), ex.evidence(""))
			unsafe = true
			return false
		}
		if !slices.Equal(recordIDs(a), recordIDs(b)) {
			if changed() {
				s.skip(id, ep, "the data changed during the check")
				return false
			}
			s.fail(id, ep, fmt.Sprintf("the same cursor gave ids %v the first time and %v %s", shortIDs(a), shortIDs(b), when), ex.evidence("/data"))
			unsafe = true
			return false
		}
		return true
	}
	exB, b, _, problem := page(c1)
	if !compare("when replayed at once", exB, b, problem) {
		return unsafe
	}
	if envA.HasMore && envA.cursor() != "" {
		if _, _, _, problem := page(envA.cursor()); problem != "" {
			s.skip(id, ep, "the page after the replayed one failed: "+problem)
			return false
		}
		exC, c, _, problem := page(c1)
		if !compare("when replayed after a later page", exC, c, problem) {
			return unsafe
		}
		s.pass(id, ep, fmt.Sprintf("a cursor replayed at once and after a later page gave the same %d ids in the same order", len(a)))
		return false
	}
	s.pass(id, ep, fmt.Sprintf("a cursor replayed gave the same %d ids in the same order", len(a)))
	return false
}

func shortIDs(recs []record) []string {
	ids := recordIDs(recs)
	if len(ids) > 5 {
		ids = append(ids[:5:5], "...")
	}
	for i, v := range ids {
		ids[i] = truncateID(v)
	}
	return ids
}

// --- PAGE-06

// malformedVariants returns the malformed variants of a cursor (of any cursor
// when c is empty), by name.
func malformedVariants(c string) [][2]string {
	out := [][2]string{{"garbage", "this-is-not-a-cursor"}}
	if len(c) >= 4 {
		out = append(out, [2]string{"truncated", c[:len(c)/2]})
		b := []byte(c)
		i := len(b) / 2
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		out = append(out, [2]string{"one character changed", string(b)})
	}
	long := strings.Repeat("A", 8192)
	if c != "" {
		long = strings.Repeat(c, 8192/len(c)+1)[:8192]
	}
	out = append(out,
		[2]string{"empty", ""},
		[2]string{"8 KiB long", long},
		[2]string{"with a NUL byte", c + "\x00"},
		[2]string{"with quotes", `'"` + c + `"'`},
	)
	return out
}

func (p *pagingChecks) malformedCursors(ctx context.Context, r string) {
	s := p.s
	const id = "PAGE-06"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	base := url.Values{"limit": {"1"}}
	c := ""
	if fc := p.firstCursor(ctx, r); fc != nil {
		c, base = fc.Value, fc.Query
	}
	bad := 0
	variants := malformedVariants(c)
	for _, v := range variants {
		q := cloneQuery(base)
		q.Set("cursor", v[1])
		ex := s.get(ctx, ep, q)
		switch {
		case ex.Status == http.StatusBadRequest:
		case ex.Status == 0:
			s.errored(id, ep, ex, fmt.Sprintf("no answer to a cursor %s: %v", v[0], ex.Err))
			bad++
		case v[0] == "8 KiB long" && (ex.Status == http.StatusRequestURITooLong || ex.Status == http.StatusRequestHeaderFieldsTooLarge):
		case ex.Status == http.StatusOK:
			s.fail(id, ep, fmt.Sprintf("a cursor %s answered 200 with a page; want 400", v[0]), ex.evidence(""))
			bad++
		default:
			s.fail(id, ep, fmt.Sprintf("a cursor %s answered %d; want 400", v[0], ex.Status), ex.evidence(""))
			bad++
		}
	}
	if bad == 0 {
		kind := "cursors"
		if c == "" {
			kind = "cursors (no real cursor to alter: the list has one page)"
		}
		s.pass(id, ep, fmt.Sprintf("%d malformed %s answered 400", len(variants), kind))
	}
}

// --- PAGE-07

func (p *pagingChecks) foreignCursor(ctx context.Context, r string) {
	s := p.s
	const id = "PAGE-07"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	prefer := map[string][]string{
		Conversations: {Events, Assistants, Usage},
		Assistants:    {Conversations, Events, Usage},
		Events:        {Conversations, Assistants, Usage},
		Usage:         {Conversations, Events, Assistants},
	}
	for _, other := range prefer[r] {
		if !s.offered[other] || !slices.Contains(s.cfg.Resources, other) {
			continue
		}
		fc := p.firstCursor(ctx, other)
		if fc == nil {
			continue
		}
		q := url.Values{"limit": {"1"}, "cursor": {fc.Value}}
		ex := s.get(ctx, ep, q)
		switch ex.Status {
		case http.StatusBadRequest:
			s.pass(id, ep, fmt.Sprintf("a cursor of %s answered 400", endpoint(other)))
		case 0:
			s.errored(id, ep, ex, fmt.Sprintf("no answer to a cursor of %s: %v", endpoint(other), ex.Err))
		default:
			s.fail(id, ep, fmt.Sprintf("a cursor issued by %s answered %d here; want 400", endpoint(other), ex.Status), ex.evidence(""))
		}
		return
	}
	s.skip(id, ep, "no other endpoint offered a nextCursor on its first page with limit=1")
}

// --- PAGE-08

func (p *pagingChecks) cursorFilters(ctx context.Context, r string) {
	s := p.s
	const id = "PAGE-08"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	fc := p.firstCursor(ctx, r)
	if fc == nil {
		s.skip(id, ep, "the first page with limit=1 offered no nextCursor: no cursor to reuse")
		return
	}
	param := "updatedSince"
	if r == Events {
		param = "occurredAfter"
	}
	q := cloneQuery(fc.Query)
	q.Set("cursor", fc.Value)
	q.Set(param, "1970-01-01T00:00:00Z")
	ex := s.get(ctx, ep, q)
	switch ex.Status {
	case http.StatusBadRequest:
		s.pass(id, ep, fmt.Sprintf("a cursor sent with an added %s answered 400", param))
	case 0:
		s.errored(id, ep, ex, fmt.Sprintf("no answer: %v", ex.Err))
	default:
		s.fail(id, ep, fmt.Sprintf("a cursor issued without filters, sent with %s=1970-01-01T00:00:00Z, answered %d; want 400", param, ex.Status), ex.evidence(""))
	}
}

// --- PAGE-10

// readableCursor reports what a cursor reveals when it is plain JSON or a
// bare integer, as is or base64-decoded with either alphabet.
func readableCursor(c string) (string, bool) {
	candidates := []string{c}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(c); err == nil {
			candidates = append(candidates, string(b))
		}
	}
	for _, t := range candidates {
		t = strings.TrimSpace(t)
		if t == "" || !utf8.ValidString(t) {
			continue
		}
		if _, err := strconv.ParseInt(t, 10, 64); err == nil {
			return t, true
		}
		if (t[0] == '{' || t[0] == '[' || t[0] == '"') && json.Valid([]byte(t)) {
			if len(t) > 120 {
				t = t[:120] + "..."
			}
			return t, true
		}
	}
	return "", false
}

func (p *pagingChecks) opaqueCursors(ctx context.Context, r string, full *walk) {
	s := p.s
	const id = "PAGE-10"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	type seen struct {
		c  string
		ex *exchange
	}
	var cs []seen
	for i, c := range full.Cursors {
		if i >= 5 {
			break
		}
		cs = append(cs, seen{c, full.Pages[i]})
	}
	if fc := p.firstCursor(ctx, r); fc != nil {
		cs = append(cs, seen{fc.Value, fc.Ex})
	}
	if len(cs) == 0 {
		s.skip(id, ep, "no page offered a nextCursor: no cursor to look at")
		return
	}
	for _, c := range cs {
		if text, ok := readableCursor(c.c); ok {
			s.fail(id, ep, fmt.Sprintf("a cursor decodes to %q: clients will build or edit cursors; make them opaque", text), c.ex.evidence("/nextCursor"))
			return
		}
	}
	s.pass(id, ep, fmt.Sprintf("%d cursors decode to neither JSON nor a bare integer", len(cs)))
}
