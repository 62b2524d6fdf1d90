package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"
)

// recordSampleSize is how many records of a walk the record checks fetch
// by id.
const recordSampleSize = 20

// recordChecks is what the record checks of one run share: the session.
type recordChecks struct {
	s *session
}

// offered returns the offered resources with a single-record endpoint.
func (rc *recordChecks) offered() []string {
	var out []string
	for _, r := range rc.s.listResources() {
		if slices.Contains(singleRecordResources, r) {
			out = append(out, r)
		}
	}
	return out
}

// sampleRecords returns up to n records of recs with distinct non-empty ids,
// spread evenly over the list.
func sampleRecords(recs []record, n int) []record {
	var usable []record
	seen := map[string]bool{}
	for _, r := range recs {
		if r.ID == "" || r.Obj == nil || seen[r.ID] {
			continue
		}
		seen[r.ID] = true
		usable = append(usable, r)
	}
	if len(usable) <= n {
		return usable
	}
	out := make([]record, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, usable[i*len(usable)/n])
	}
	return out
}

// recordPath is the path of the record id of resource.
func recordPath(resource, id string) string { return endpoint(resource) + "/" + url.PathEscape(id) }

// randomHex returns n random bytes as hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// randomUUID returns a random version 4 UUID.
func randomUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// fetch gets one record by id for check id and records what keeps it
// from being compared: no answer (ERROR), a 5xx (SKIP: HTTP-01 reports it),
// another status than 200 or a body that is not an object (FAIL). obj is
// nil in those cases. what names the record in messages; want adds to
// "want 200".
func (rc *recordChecks) fetch(ctx context.Context, id, resource, recID, what, want string) (*exchange, map[string]any) {
	s := rc.s
	ep := endpoint(resource)
	ex, obj := rc.getObject(ctx, resource, recID)
	switch {
	case ex.Status == 0:
		s.errored(id, ep, ex, fmt.Sprintf("GET %s: no answer (%v)", recordPath(resource, recID), ex.Err))
	case ex.Status >= 500:
		s.skip(id, ep, fmt.Sprintf("GET %s answered %d (HTTP-01 reports it)", recordPath(resource, recID), ex.Status))
	case ex.Status != http.StatusOK:
		s.fail(id, ep, fmt.Sprintf("%s %q answered %d by id, want 200%s", what, truncateID(recID), ex.Status, want), ex.evidence(""))
	case obj == nil:
		s.fail(id, ep, fmt.Sprintf("%s %q by id is not a JSON object", what, truncateID(recID)), ex.evidence(""))
	default:
		return ex, obj
	}
	return ex, nil
}

// firstDifference names the first top-level member where a and b differ,
// or "".
func firstDifference(a, b map[string]any) string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		av, aok := a[k]
		bv, bok := b[k]
		if aok != bok || !reflect.DeepEqual(av, bv) {
			return k
		}
	}
	return ""
}

// pointerToken escapes a member name for a JSON pointer.
func pointerToken(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// getObject fetches a single record and decodes it; obj is nil when the
// answer is not a 200 JSON object.
func (rc *recordChecks) getObject(ctx context.Context, resource, id string, opts ...reqOpt) (*exchange, map[string]any) {
	ex := rc.s.do(ctx, recordPath(resource, id), "", opts...)
	if ex.Status != http.StatusOK {
		return ex, nil
	}
	var obj map[string]any
	if err := ex.jsonBody(&obj); err != nil {
		return ex, nil
	}
	return ex, obj
}

// findListItem looks for id in the first few pages of the list filtered
// by updatedSince=since (the record as it is now).
func (rc *recordChecks) findListItem(ctx context.Context, resource, id, since string) (map[string]any, bool) {
	q := url.Values{"updatedSince": {since}, "limit": {"1000"}}
	for page := 0; page < 3; page++ {
		ex := rc.s.get(ctx, endpoint(resource), q)
		if ex.Status != http.StatusOK {
			return nil, false
		}
		env, err := ex.page()
		if err != nil {
			return nil, false
		}
		for _, raw := range env.Data {
			r := decodeRecord(resource, raw)
			if r.ID == id {
				return r.Obj, true
			}
		}
		if !env.HasMore || env.cursor() == "" {
			return nil, false
		}
		q.Set("cursor", env.cursor())
	}
	return nil, false
}

// locateRecord finds the page of a walk and the index in it of the record
// id, for evidence.
func locateRecord(w *walk, resource, id string) (*exchange, int) {
	for _, ex := range w.Pages {
		env, err := ex.page()
		if err != nil {
			continue
		}
		for i, raw := range env.Data {
			if decodeRecord(resource, raw).ID == id {
				return ex, i
			}
		}
	}
	return nil, -1
}

// checkRecords checks the single-record endpoints: REC-01 (a record by id
// equals its list item), REC-02 (unknown ids are 404), REC-03 (hostile ids
// give 400 or 404) and REC-04 (deleted conversations are tombstones).
func checkRecords(ctx context.Context, s *session) {
	rc := &recordChecks{s: s}
	offered := rc.offered()
	if len(offered) == 0 {
		for _, id := range []string{"REC-01", "REC-02", "REC-03", "REC-04"} {
			s.skip(id, "*", "the provider offers neither /conversations nor /assistants")
		}
		return
	}
	for _, r := range offered {
		if s.enabled("REC-01") {
			rc.sameAsListed(ctx, r)
		}
		if s.enabled("REC-02") {
			rc.unknownIDs(ctx, r)
		}
		if s.enabled("REC-03") {
			rc.hostileIDs(ctx, r)
		}
	}
	if s.enabled("REC-04") {
		if s.offered[Conversations] && slices.Contains(s.listResources(), Conversations) {
			rc.tombstones(ctx)
		} else {
			s.skip("REC-04", endpoint(Conversations), "the provider does not offer /conversations")
		}
	}
}

// sameAsListed is REC-01 for one resource.
func (rc *recordChecks) sameAsListed(ctx context.Context, resource string) {
	s := rc.s
	const id = "REC-01"
	ep := endpoint(resource)
	w := s.fullWalk(ctx, resource)
	sample := sampleRecords(w.Records, recordSampleSize)
	if len(sample) == 0 {
		if !w.Complete() {
			s.skip(id, ep, "the list could not be walked: "+w.Problem)
		} else {
			s.skip(id, ep, "the list holds no records")
		}
		return
	}
	equal, changed := 0, 0
	for _, rec := range sample {
		ex, obj := rc.fetch(ctx, id, resource, rec.ID, "the listed record", "")
		if obj == nil {
			continue
		}
		if reflect.DeepEqual(obj, rec.Obj) {
			equal++
			continue
		}
		// The record may have changed since the walk: fetch it once more,
		// and compare it with its list item as the list shows it now.
		updated, _ := obj["updatedAt"].(string)
		if updated != rec.Time && updated != "" {
			ex2, obj2 := rc.getObject(ctx, resource, rec.ID)
			if obj2 != nil {
				ex, obj = ex2, obj2
				updated, _ = obj["updatedAt"].(string)
			}
			item, found := rc.findListItem(ctx, resource, rec.ID, updated)
			if !found {
				changed++
				continue
			}
			if reflect.DeepEqual(obj, item) {
				equal++
				continue
			}
			k := firstDifference(obj, item)
			s.fail(id, ep, fmt.Sprintf("the record %q by id differs from its list item in %q", truncateID(rec.ID), k), ex.evidence("/"+pointerToken(k)))
			continue
		}
		k := firstDifference(obj, rec.Obj)
		s.fail(id, ep, fmt.Sprintf("the record %q by id differs from its list item in %q (same updatedAt %q)", truncateID(rec.ID), k, rec.Time), ex.evidence("/"+pointerToken(k)))
	}
	if equal > 0 {
		msg := fmt.Sprintf("%d sampled records equal their list items", equal)
		if changed > 0 {
			msg += fmt.Sprintf(" (%d changed during the run and were not compared)", changed)
		}
		s.pass(id, ep, msg)
	} else if changed > 0 {
		s.skip(id, ep, fmt.Sprintf("all %d sampled records changed during the run", changed))
	}
}

// unknownIDs is REC-02 for one resource.
func (rc *recordChecks) unknownIDs(ctx context.Context, resource string) {
	s := rc.s
	const id = "REC-02"
	ep := endpoint(resource)
	ok := 0
	for _, unknown := range []string{randomUUID(), "conformance-unknown-" + randomHex(8)} {
		ex := s.do(ctx, recordPath(resource, unknown), "")
		switch ex.Status {
		case 0:
			s.errored(id, ep, ex, fmt.Sprintf("GET %s: no answer (%v)", recordPath(resource, unknown), ex.Err))
		case http.StatusNotFound:
			ok++
		default:
			s.fail(id, ep, fmt.Sprintf("the unknown id %q answered %d, want 404", unknown, ex.Status), ex.evidence(""))
		}
	}
	if ok > 0 {
		s.pass(id, ep, "a random uuid and a random string answered 404")
	}
}

// hostileIDCases are ids no provider should crash on; each is sent path
// escaped, so every URL is well formed.
//
// Ids that are dot segments ("." and "..") are not among them: URL path
// normalisation (RFC 3986, section 5.2.4) removes dot segments, so no
// record can be addressed by them, and most HTTP servers (Go's ServeMux
// among them) answer them with a redirect to the cleaned path before the
// provider sees the request. Dots inside an id are probed instead.
var hostileIDCases = []struct{ what, id string }{
	{"a slash (%2F)", "/"},
	{"an embedded slash", "a/b"},
	{"an escaped slash sent escaped again", "%2F"},
	{"dots inside", "a..b"},
	{"4 KiB", strings.Repeat("x", 4096)},
	{"unicode", "é😀"},
	{"quotes", `"'`},
	{"SQL-like quotes", `' OR '1'='1`},
	{"a NUL byte", "\x00"},
	{"a percent sign", "%"},
}

// hostileIDs is REC-03 for one resource.
func (rc *recordChecks) hostileIDs(ctx context.Context, resource string) {
	s := rc.s
	const id = "REC-03"
	ep := endpoint(resource)
	ok := 0
	for _, h := range hostileIDCases {
		path := recordPath(resource, h.id)
		ex := s.do(ctx, path, "")
		switch {
		case ex.Status == 0:
			s.fail(id, ep, fmt.Sprintf("an id with %s got no answer (the connection failed: %v)", h.what, ex.Err), ex.evidence(""))
		case ex.Status == http.StatusBadRequest || ex.Status == http.StatusNotFound:
			ok++
		case ex.Status == http.StatusRequestURITooLong && len(h.id) > 1000:
			ok++
		case ex.Status == http.StatusOK:
			var obj map[string]any
			_ = ex.jsonBody(&obj)
			if got, _ := obj["id"].(string); got == h.id && got != "" {
				ok++ // the provider really has such a record
				continue
			}
			s.fail(id, ep, fmt.Sprintf("an id with %s answered 200 with another record or no record, want 400 or 404", h.what), ex.evidence("/id"))
		default:
			s.fail(id, ep, fmt.Sprintf("an id with %s answered %d, want 400 or 404", h.what, ex.Status), ex.evidence(""))
		}
	}
	if ok > 0 {
		s.pass(id, ep, fmt.Sprintf("%d hostile ids answered 400 or 404", ok))
	}
}

// contentFields are the members a tombstone must not carry.
var contentFields = []string{"messages", "systemPrompt", "attachments"}

// hasContent reports whether obj carries a non-empty content field, and
// which.
func hasContent(obj map[string]any) (string, bool) {
	for _, f := range contentFields {
		v, ok := obj[f]
		if !ok || v == nil {
			continue
		}
		switch x := v.(type) {
		case string:
			if x == "" {
				continue
			}
		case []any:
			if len(x) == 0 {
				continue
			}
		}
		return f, true
	}
	return "", false
}

// tombstones is REC-04.
func (rc *recordChecks) tombstones(ctx context.Context) {
	s := rc.s
	const id = "REC-04"
	ep := endpoint(Conversations)
	w := s.fullWalk(ctx, Conversations)
	var tombs []record
	for _, r := range w.Records {
		if r.Obj == nil {
			continue
		}
		if v, ok := r.Obj["deletedAt"]; ok && v != nil {
			tombs = append(tombs, r)
		}
	}
	if len(tombs) == 0 {
		reason := "no conversation in the walk has deletedAt"
		if !w.Complete() {
			reason += " (the walk stopped early: " + w.Problem + ")"
		}
		s.skip(id, ep, reason)
		return
	}
	bad := 0
	for _, t := range tombs {
		if f, has := hasContent(t.Obj); has {
			bad++
			ex, i := locateRecord(w, Conversations, t.ID)
			var ev *Evidence
			if ex != nil {
				ev = ex.evidence(fmt.Sprintf("/data/%d/%s", i, f))
			}
			s.fail(id, ep, fmt.Sprintf("the deleted conversation %q still carries %s in the list", truncateID(t.ID), f), ev)
			continue
		}
		del, _ := t.Obj["deletedAt"].(string)
		dt, err1 := time.Parse(time.RFC3339Nano, del)
		if err1 == nil && !t.At.IsZero() && t.At.Before(dt) {
			bad++
			ex, i := locateRecord(w, Conversations, t.ID)
			var ev *Evidence
			if ex != nil {
				ev = ex.evidence(fmt.Sprintf("/data/%d/updatedAt", i))
			}
			s.fail(id, ep, fmt.Sprintf("the deleted conversation %q has updatedAt %s before its deletedAt %s: deleting must bump updatedAt", truncateID(t.ID), t.Time, del), ev)
		}
	}
	fetched := 0
	for _, t := range sampleRecords(tombs, recordSampleSize) {
		ex, obj := rc.fetch(ctx, id, Conversations, t.ID, "the deleted conversation", " with deletedAt")
		if obj == nil {
			continue
		}
		if v, ok := obj["deletedAt"]; !ok || v == nil {
			s.fail(id, ep, fmt.Sprintf("the deleted conversation %q by id has no deletedAt", truncateID(t.ID)), ex.evidence("/deletedAt"))
			continue
		}
		if f, has := hasContent(obj); has {
			s.fail(id, ep, fmt.Sprintf("the deleted conversation %q by id still carries %s", truncateID(t.ID), f), ex.evidence("/"+f))
			continue
		}
		fetched++
	}
	if bad == 0 && fetched > 0 {
		s.pass(id, ep, fmt.Sprintf("%d tombstones carry no content; %d fetched by id answered 200 with deletedAt", len(tombs), fetched))
	}
}

// jsonEqual reports whether two raw JSON values decode equal.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
