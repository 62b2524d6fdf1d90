package conformance

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/spec"
)

// listSchemas maps a resource to the schema of its list page and of one
// record.
var listSchemas = map[string][2]string{
	Conversations: {"conversation-list", "conversation"},
	Assistants:    {"assistant-list", "assistant"},
	Events:        {"event-list", "event"},
	Usage:         {"usage-list", "usage-bucket"},
}

// singleRecordResources are the resources with a single-record endpoint
// GET /{resource}/{id}.
var singleRecordResources = []string{Conversations, Assistants}

// unknownID is an id no provider is expected to hold.
const unknownID = "aiusage-conformance-no-such-id"

// tally collects the failures of one check at one endpoint: how many, and
// the first one with its evidence.
type tally struct {
	n   int
	msg string
	ev  *Evidence
}

type tallies map[resultKey]*tally

// tallyNouns names what a tally of a check counts, for its message.
var tallyNouns = map[string]string{
	"ENV-01":  "schema findings",
	"ENV-02":  "schema findings",
	"ENV-03":  "pages",
	"ENV-04":  "answers",
	"ENV-05":  "error bodies",
	"ENV-06":  "unknown enum values",
	"TIME-01": "malformed timestamps",
	"TIME-02": "fields with several precisions",
	"TIME-03": "values",
}

// add counts a failure of id at ep, blaming ex (at pointer, for a schema
// finding). Only the first failure's evidence is built: a page of a
// thousand bad records must not copy its body a thousand times.
func (t tallies) add(id, ep, msg string, ex *exchange, pointer string) {
	k := resultKey{id, ep}
	a := t[k]
	if a == nil {
		a = &tally{msg: msg, ev: ex.evidence(pointer)}
		t[k] = a
	}
	a.n++
}

// flush records the outcome of id at ep: one failure summarising the
// tally, or a pass with passMsg.
func (t tallies) flush(s *session, id, ep, passMsg string) {
	a := t[resultKey{id, ep}]
	if a == nil || a.n == 0 {
		s.pass(id, ep, passMsg)
		return
	}
	msg := a.msg
	if a.n > 1 {
		noun := tallyNouns[id]
		if noun == "" {
			noun = "findings"
		}
		msg = fmt.Sprintf("%d %s, first: %s", a.n, noun, a.msg)
	}
	s.fail(id, ep, msg, a.ev)
}

// validatedWalk is the walk the envelope and timestamp checks validate: the
// full walk of a list, or /usage with its defaults, following cursors.
func (s *session) validatedWalk(ctx context.Context, resource string) *walk {
	if resource == Usage {
		return s.walkList(ctx, Usage, url.Values{}, 0)
	}
	return s.fullWalk(ctx, resource)
}

// checkEnvelopes makes the requests the envelope checks need beyond those
// of the other families: the full walk of every resource, a page that ends
// exactly at the last record, and a sample of single records. ENV-01,
// ENV-02, ENV-03 and ENV-06 are judged at the end of the run, over every
// answer of the run (checkBodies). It records ENV-05 (the bodies of
// provoked 400, 401 and 404 answers follow the problem schema) itself.
func checkEnvelopes(ctx context.Context, s *session) {
	if slices.ContainsFunc([]string{"ENV-01", "ENV-02", "ENV-03", "ENV-06"}, s.enabled) {
		for _, r := range s.resources() {
			w := s.validatedWalk(ctx, r)
			s.askFullLastPage(ctx, r, w)
			if slices.Contains(singleRecordResources, r) {
				for _, id := range sampleIDs(w.Records) {
					s.get(ctx, endpoint(r)+"/"+url.PathEscape(id), nil)
				}
			}
		}
	}
	if s.enabled("ENV-05") {
		s.checkProblems(ctx)
	}
}

// checkBodies records ENV-01 (every list page of the run matches its list
// schema), ENV-02 (every record of those pages, and every single record
// fetched by id, match the record schema), ENV-03 (hasMore and nextCursor
// agree on every page) and ENV-06 (values outside an extensible enum,
// reported as a warning, never a failure), over every 200 answer to a GET
// of an offered resource the run received: the walks, the empty and
// filtered pages, the other tenant's pages alike. It also fails PAGE-09 at
// any page holding more records than the limit it was asked with.
//
// Schema findings are split so that one defect fails one check: findings
// inside data items are ENV-02's, findings about nextCursor's agreement with
// hasMore are ENV-03's, the rest of the envelope is ENV-01's, and a
// timestamp that is not RFC 3339 UTC with Z is TIME-01's
// (checkTimestampValues) and left out of ENV-02. A body received twice is
// judged once, and a finding about one record once, however many pages
// carried it.
func (s *session) checkBodies() {
	if !slices.ContainsFunc([]string{"ENV-01", "ENV-02", "ENV-03", "ENV-06", "PAGE-09"}, s.enabled) {
		return
	}
	s.mu.Lock()
	exs := append([]*exchange(nil), s.exchanges...)
	s.mu.Unlock()
	t := tallies{}
	// Bodies and records are judged once per endpoint: an empty page is
	// the same bytes everywhere, and each endpoint gets its own verdict.
	type key struct {
		ep string
		h  [32]byte
	}
	seen := map[key]bool{}
	items := map[string]map[[32]byte]bool{}
	findings := map[string]bool{}
	pages, records, singles := map[string]int{}, map[string]int{}, map[string]int{}
	for _, ex := range exs {
		if ex.Method != http.MethodGet || ex.Status != http.StatusOK {
			continue
		}
		r, single := s.route(ex.URL)
		if r == "" || !s.offered[r] {
			continue
		}
		ep := endpoint(r)
		if !single {
			s.checkPageLimit(ep, ex)
		}
		k := key{ep, sha256.Sum256(ex.Body)}
		if seen[k] {
			if !single {
				pages[ep]++
			}
			continue
		}
		seen[k] = true
		if items[ep] == nil {
			items[ep] = map[[32]byte]bool{}
		}
		schemas := listSchemas[r]
		switch {
		case !single:
			pages[ep]++
			records[ep] += s.checkListPage(ep, schemas, ex, t, findings, items[ep])
		case slices.Contains(singleRecordResources, r):
			if s.checkSingleRecord(ep, schemas[1], ex, t, findings, items[ep]) {
				singles[ep]++
			}
		}
	}
	for _, r := range s.resources() {
		ep := endpoint(r)
		if pages[ep] == 0 {
			msg := "no list page could be read"
			var ex *exchange
			wk := r + "?#1000"
			if r == Usage {
				wk = Usage + "?#0"
			}
			if w := s.walks[wk]; w != nil && w.Problem != "" {
				msg += ": " + w.Problem
				ex = w.Ex
			}
			for _, id := range []string{"ENV-01", "ENV-03"} {
				s.errored(id, ep, ex, msg)
			}
			if singles[ep] == 0 {
				s.errored("ENV-02", ep, ex, msg)
				s.errored("ENV-06", ep, ex, msg)
				continue
			}
		} else {
			t.flush(s, "ENV-01", ep, fmt.Sprintf("all %s received match the %s schema", plural(pages[ep], "list page"), listSchemas[r][0]))
			t.flush(s, "ENV-03", ep, fmt.Sprintf("hasMore and nextCursor agree on all %s received", plural(pages[ep], "list page")))
		}
		if records[ep]+singles[ep] == 0 {
			s.skip("ENV-02", ep, "no records to validate")
			s.skip("ENV-06", ep, "no records to validate")
			continue
		}
		t.flush(s, "ENV-02", ep, fmt.Sprintf("%d distinct list items and %d single records match the %s schema", records[ep], singles[ep], listSchemas[r][1]))
		t.flush(s, "ENV-06", ep, fmt.Sprintf("every enum value of %d records is known to this version", records[ep]+singles[ep]))
	}
}

// checkPageLimit fails PAGE-09 when a page holds more records than the
// limit it was asked with (a single limit from 1 to 1000).
func (s *session) checkPageLimit(ep string, ex *exchange) {
	if !s.enabled("PAGE-09") {
		return
	}
	u, err := url.Parse(ex.URL)
	if err != nil {
		return
	}
	ls := u.Query()["limit"]
	if len(ls) != 1 {
		return
	}
	limit, err := strconv.Atoi(ls[0])
	if err != nil || limit < 1 || limit > 1000 {
		return
	}
	p, err := ex.envelope()
	if err != nil || len(p.Data) <= limit {
		return
	}
	s.fail("PAGE-09", ep, fmt.Sprintf("the page %s holds %d records, more than its limit of %d", s.reqRef(ex), len(p.Data), limit), ex.evidence("/data"))
}

// askFullLastPage asks for one page that ends exactly at the last record:
// the whole list with limit equal to its length or, for a longer list, the
// records from a timestamp filter near the end, with limit equal to their
// number. A provider that derives hasMore from a full page, rather than
// from a record that follows, answers hasMore true there (ENV-03, judged
// with every other page by checkBodies). It asks nothing when no such page
// can be asked for.
func (s *session) askFullLastPage(ctx context.Context, r string, w *walk) {
	n := len(w.Records)
	if r == Usage || !w.Complete() || n == 0 {
		return
	}
	if n <= 1000 {
		s.get(ctx, endpoint(r), url.Values{"limit": {strconv.Itoa(n)}})
		return
	}
	param := timeFilters[r]
	var times []time.Time
	for _, rec := range w.Records {
		if rec.At.IsZero() {
			return
		}
		times = append(times, rec.At)
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	at := times[n-500]
	m := 0
	for _, t := range times {
		if t.After(at) || t.Equal(at) && param == "updatedSince" {
			m++
		}
	}
	if param == "" || m == 0 || m > 1000 {
		return
	}
	s.get(ctx, endpoint(r), url.Values{param: {at.UTC().Format(time.RFC3339Nano)}, "limit": {strconv.Itoa(m)}})
}

// sampleIDs picks a few ids spread over the records, and a tombstone if
// there is one.
func sampleIDs(recs []record) []string {
	var out []string
	addID := func(id string) {
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if n := len(recs); n > 0 {
		for _, i := range []int{0, n / 4, n / 2, 3 * n / 4, n - 1} {
			addID(recs[i].ID)
		}
	}
	for _, r := range recs {
		if d, ok := r.Obj["deletedAt"]; ok && d != nil {
			addID(r.ID)
			break
		}
	}
	return out
}

// checkListPage validates one list page and returns the number of its items
// validated. The envelope is validated with its data emptied, and each item
// against the record schema, once per distinct item (items holds those
// seen): the schema of a list is the envelope's with each item a record, so
// this is the same validation, without validating again the records every
// walk of the run brings back. findings holds the findings about records
// already reported.
func (s *session) checkListPage(ep string, schemas [2]string, ex *exchange, t tallies, findings map[string]bool, items map[[32]byte]bool) int {
	ref := s.reqRef(ex)
	members, err := ex.object()
	if err != nil {
		t.add("ENV-01", ep, fmt.Sprintf("the page %s: %v", ref, err), ex, "")
		return 0
	}
	reduced := make(map[string]json.RawMessage, len(members))
	for k, v := range members {
		reduced[k] = v
	}
	var data []json.RawMessage
	if raw, ok := members["data"]; ok && jsonKind(raw) == "an array" {
		data = ex.items()
		reduced["data"] = json.RawMessage("[]")
	}
	envDoc, _ := json.Marshal(reduced)
	found, err := spec.Validate(schemas[0], envDoc)
	if err != nil {
		t.add("ENV-01", ep, fmt.Sprintf("the page %s is not JSON: %v", ref, err), ex, "")
		return 0
	}
	// head holds hasMore and nextCursor as present.
	head := map[string]any{}
	for _, k := range []string{"hasMore", "nextCursor"} {
		if raw, ok := members[k]; ok {
			var v any
			_ = json.Unmarshal(raw, &v)
			head[k] = v
		}
	}
	for _, f := range found {
		switch {
		case f.Pointer == "/nextCursor" && cursorIsENV03(head):
			// hasMore and nextCursor disagree: ENV-03 below.
		default:
			t.add("ENV-01", ep, fmt.Sprintf("the page %s: %s", ref, f), ex, f.Pointer)
		}
	}
	s.checkCursor(ep, head, ex, t)
	n := 0
	for i, raw := range data {
		h := sha256.Sum256(raw)
		if items[h] {
			continue
		}
		items[h] = true
		n++
		s.checkItem(ep, schemas[1], raw, "/data/"+strconv.Itoa(i), ex, t, findings)
	}
	return n
}

// checkItem validates one record, at pointer prefix of ex's body.
func (s *session) checkItem(ep, schema string, raw []byte, prefix string, ex *exchange, t tallies, findings map[string]bool) {
	found, err := spec.Validate(schema, raw)
	if err != nil {
		t.add("ENV-02", ep, fmt.Sprintf("%s %s is not JSON: %v", s.reqRef(ex), prefix, err), ex, prefix)
		return
	}
	if len(found) == 0 {
		return
	}
	var item any
	_ = json.Unmarshal(raw, &item)
	for _, f := range found {
		s.fileItemFinding(ep, f, item, prefix, ex, t, findings)
	}
}

// cursorIsENV03 reports whether nextCursor is absent, null or a string:
// a schema finding about it is then a disagreement with hasMore (ENV-03),
// not a malformed envelope (ENV-01).
func cursorIsENV03(doc any) bool {
	m, ok := doc.(map[string]any)
	if !ok {
		return false
	}
	switch m["nextCursor"].(type) {
	case nil, string:
		return true
	}
	return false
}

// checkCursor is ENV-03 on one page: hasMore true needs a non-empty
// string nextCursor; false needs it null or absent. A page whose hasMore is
// not a boolean is ENV-01's.
func (s *session) checkCursor(ep string, doc any, ex *exchange, t tallies) {
	m, ok := doc.(map[string]any)
	if !ok {
		return
	}
	more, ok := m["hasMore"].(bool)
	if !ok {
		return
	}
	cur, present := m["nextCursor"]
	switch {
	case more && !present:
		t.add("ENV-03", ep, fmt.Sprintf("the page %s: hasMore is true but nextCursor is absent", s.reqRef(ex)), ex, "/nextCursor")
	case more && cur == nil:
		t.add("ENV-03", ep, fmt.Sprintf("the page %s: hasMore is true but nextCursor is null", s.reqRef(ex)), ex, "/nextCursor")
	case more:
		if c, ok := cur.(string); !ok || c == "" {
			t.add("ENV-03", ep, fmt.Sprintf("the page %s: hasMore is true but nextCursor is %s, not a non-empty string", s.reqRef(ex), showJSON(cur)), ex, "/nextCursor")
		}
	case present && cur != nil && isString(cur):
		t.add("ENV-03", ep, fmt.Sprintf("the page %s: hasMore is false but nextCursor is %s, not null or absent", s.reqRef(ex), showJSON(cur)), ex, "/nextCursor")
	}
}

func isString(v any) bool { _, ok := v.(string); return ok }

// checkSingleRecord validates a single-record body (ENV-02, ENV-06), once per
// distinct body.
func (s *session) checkSingleRecord(ep, schema string, ex *exchange, t tallies, findings map[string]bool, items map[[32]byte]bool) bool {
	h := sha256.Sum256(ex.Body)
	if items[h] {
		return false
	}
	items[h] = true
	s.checkItem(ep, schema, ex.Body, "", ex, t, findings)
	return true
}

// fileItemFinding files a finding inside a record (its pointer relative to
// the record, found at prefix in ex's body): a warning is ENV-06, a
// malformed timestamp string is TIME-01's, anything else ENV-02. A finding
// about a record already reported (the same record on another page) is
// left out.
func (s *session) fileItemFinding(ep string, f spec.Finding, item any, prefix string, ex *exchange, t tallies, findings map[string]bool) {
	if isTimestampFinding(f, item) {
		return
	}
	key := ep + "|" + recordKey(item) + "|" + f.Pointer + "|" + f.Message
	if findings[key] {
		return
	}
	findings[key] = true
	where := s.reqRef(ex)
	if prefix != "" {
		where += " item " + strings.TrimPrefix(prefix, "/data/")
	}
	if id := itemID(item); id != "" {
		where += fmt.Sprintf(" (id %q)", truncateID(id))
	}
	f.Pointer = prefix + f.Pointer
	switch {
	case f.Level == spec.LevelWarning:
		t.add("ENV-06", ep, fmt.Sprintf("%s: %s: %s", where, f.Pointer, f.Message), ex, f.Pointer)
	default:
		t.add("ENV-02", ep, fmt.Sprintf("%s: %s", where, f), ex, f.Pointer)
	}
}

// itemID is the id of a decoded record, or "".
func itemID(item any) string {
	m, _ := item.(map[string]any)
	id, _ := m["id"].(string)
	return id
}

// isTimestampFinding reports whether f is about a timestamp string that
// TIME-01 rejects: a field ending in At whose value fails
// spec.CheckTimestamp.
func isTimestampFinding(f spec.Finding, doc any) bool {
	if f.Keyword != "format" && f.Keyword != "pattern" {
		return false
	}
	last := f.Pointer[strings.LastIndex(f.Pointer, "/")+1:]
	if !strings.HasSuffix(last, "At") {
		return false
	}
	v, ok := lookupPointer(doc, f.Pointer)
	str, isStr := v.(string)
	return ok && isStr && spec.CheckTimestamp(str) != nil
}

// lookupPointer resolves a JSON pointer in a decoded document.
func lookupPointer(doc any, ptr string) (any, bool) { return spec.ResolvePointer(doc, ptr) }

// plural is n and noun, the noun in the plural when n is not 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// showJSON renders a decoded JSON value for a message.
func showJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// provokedRequest is one request made to provoke an error.
type provokedRequest struct {
	what string // the request, as in "limit=0"
	ex   *exchange
}

// checkProblems is ENV-05: provoke a 400 (limit=0), a 401 (no
// credentials) and, where records can be read by id, a 404 (unknown id) at
// every offered resource, and validate each 4xx body against the problem
// schema. An answer that is not 4xx is judged by the checks meant for it
// (PAGE-09, AUTH-01, REC-02), not here.
func (s *session) checkProblems(ctx context.Context) {
	for _, r := range s.resources() {
		ep := endpoint(r)
		provoked := []provokedRequest{
			{"limit=0", s.get(ctx, ep, url.Values{"limit": {"0"}})},
			{"no credentials", s.get(ctx, ep, url.Values{"limit": {"1"}}, noAuth())},
		}
		if slices.Contains(singleRecordResources, r) {
			provoked = append(provoked, provokedRequest{"an unknown id", s.get(ctx, ep+"/"+url.PathEscape(unknownID), nil)})
		}
		t := tallies{}
		var checked []string
		for _, p := range provoked {
			if p.ex.Status < 400 || p.ex.Status > 499 {
				continue
			}
			checked = append(checked, strconv.Itoa(p.ex.Status))
			s.checkProblem(ep, p, t)
		}
		if len(checked) == 0 {
			s.skip("ENV-05", ep, "no request provoked a 4xx answer")
			continue
		}
		sort.Strings(checked)
		t.flush(s, "ENV-05", ep, fmt.Sprintf("the bodies of the %s answers are problem details", strings.Join(slices.Compact(checked), ", ")))
	}
}

// checkProblem validates one provoked error body; the findings of one
// body make one failure.
func (s *session) checkProblem(ep string, p provokedRequest, t tallies) {
	ex := p.ex
	what := fmt.Sprintf("the body of the %d answer to a request with %s", ex.Status, p.what)
	findings, err := spec.Validate("problem", ex.Body)
	if err != nil {
		t.add("ENV-05", ep, fmt.Sprintf("%s is not a problem details document: %v", what, err), ex, "")
		return
	}
	var msgs []string
	pointer := ""
	for _, f := range findings {
		if f.Level != spec.LevelError {
			continue
		}
		if len(msgs) == 0 {
			pointer = f.Pointer
		}
		msgs = append(msgs, f.String())
	}
	var doc map[string]any
	if json.Unmarshal(ex.Body, &doc) == nil {
		if st, ok := doc["status"].(float64); ok && int(st) != ex.Status {
			if len(msgs) == 0 {
				pointer = "/status"
			}
			msgs = append(msgs, fmt.Sprintf("/status: the status member is %v but the answer is %d", st, ex.Status))
		}
	}
	if len(msgs) > 0 {
		t.add("ENV-05", ep, fmt.Sprintf("%s is not a valid problem: %s", what, strings.Join(msgs, "; ")), ex, pointer)
	}
}

// route returns the resource an exchange's URL addresses and whether it
// is a single record (GET /{resource}/{id}); resource is "" for any other
// path.
func (s *session) route(rawURL string) (resource string, single bool) {
	rest, ok := strings.CutPrefix(rawURL, s.cfg.BaseURL)
	if !ok {
		return "", false
	}
	rest, _, _ = strings.Cut(rest, "?")
	rest = strings.TrimPrefix(rest, "/")
	seg, tail, _ := strings.Cut(rest, "/")
	if !slices.Contains(AllResources, seg) {
		return "", false
	}
	return seg, tail != ""
}

// checkContentTypes is ENV-04 over every exchange of the run that got an
// answer with content: the media type is application/json or
// application/problem+json (parameters such as charset allowed). Left out:
// answers without content (nothing to type), 5xx other than 501 (HTTP-01
// fails them already) and requests to resources the provider does not
// offer (their 404 or 501 says nothing about the interface).
func (s *session) checkContentTypes() {
	if !s.enabled("ENV-04") {
		return
	}
	s.mu.Lock()
	exs := append([]*exchange(nil), s.exchanges...)
	s.mu.Unlock()
	t := tallies{}
	counts := map[string]int{}
	for _, ex := range exs {
		if ex.Status == 0 || ex.Method == http.MethodHead || len(ex.Body) == 0 {
			continue
		}
		if ex.Status >= 500 && ex.Status != http.StatusNotImplemented {
			continue
		}
		r, _ := s.route(ex.URL)
		ep := "*"
		if r != "" {
			if !s.offered[r] {
				continue
			}
			ep = endpoint(r)
		}
		counts[ep]++
		ct := ex.RespHdr.Get("Content-Type")
		mt, _, err := mime.ParseMediaType(ct)
		if err == nil && (mt == "application/json" || mt == spec.ProblemContentType) {
			continue
		}
		what := fmt.Sprintf("Content-Type %q", ct)
		if ct == "" {
			what = "no Content-Type"
		}
		t.add("ENV-04", ep, fmt.Sprintf("%s %s answered %d with %s; want application/json or application/problem+json", ex.Method, ex.URL, ex.Status, what), ex, "")
	}
	eps := make([]string, 0, len(counts))
	for ep := range counts {
		eps = append(eps, ep)
	}
	sort.Strings(eps)
	for _, ep := range eps {
		t.flush(s, "ENV-04", ep, fmt.Sprintf("%d answers are JSON", counts[ep]))
	}
}
