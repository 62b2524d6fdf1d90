package conformance_test

import (
	"bytes"
	"compress/gzip"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aiusage/kit/spec"
)

// This file is a small reference provider of the AI usage data interface,
// written from the kit's decisions (docs/conformance.md) without the kit's
// provider package, so that the suite is tested black-box. A defect switch
// breaks exactly one behaviour; broken_test.go runs the suite against each.

// Credentials of the reference provider. They are long and distinctive so
// that a leak into a report is easy to find.
const (
	refToken      = "ref-token-main-7c1f9a2e4b6d8f00"
	refUsageless  = "ref-token-nousage-3e5a7c9b1d2f4a60"
	refOtherToken = "ref-token-other-tenant-9b8a7c6d5e4f3a21"
)

const (
	tenantMain  = "acme"
	tenantOther = "globex"
)

// defect names one deliberate fault of the reference provider.
type defect string

// The defects. Each breaks one behaviour; the comment says which.
const (
	noDefect defect = ""

	dOffsetTimestamps     defect = "offset-timestamps"       // record timestamps written with +02:00
	dMixedPrecision       defect = "mixed-precision"         // .000 dropped from whole-second timestamps
	dDuplicateAcrossPages defect = "duplicate-across-pages"  // stale revisions of two conversations listed too
	dTieSkip              defect = "skip-at-tie"             // conversation cursor compares updatedAt only
	dNonRetrySafe         defect = "non-retry-safe-cursor"   // a cursor works once, then 400
	dFilterUnbound        defect = "cursor-not-bound-filter" // the cursor ignores the filters
	dEndpointUnbound      defect = "cursor-not-bound-ep"     // the cursor ignores the endpoint
	dCursorAuthority      defect = "cursor-confers-tenant"   // the tenant comes from the cursor, not the token
	dMalformedFirstPage   defect = "malformed-cursor-200"    // an undecodable cursor is ignored: first page
	dPlainCursor          defect = "plain-json-cursor"       // cursor is base64url of readable JSON
	dCursorLoop           defect = "cursor-loop"             // no look-ahead; after the end: empty page, hasMore true, same cursor
	dCursorLoopAlways     defect = "cursor-loop-always"      // the last page has more; the page after it repeats the cursor
	dHasMoreNullCursor    defect = "hasmore-null-cursor"     // hasMore = full page; nextCursor null at the end
	dHasMoreNullAlways    defect = "hasmore-null-always"     // the last page says hasMore true, nextCursor null
	dEnvelopeNoHasMore    defect = "envelope-omits-hasmore"  // hasMore omitted when false
	dLimitIgnored         defect = "limit-ignored"           // page size is always 100
	dLimitZero500         defect = "limit-zero-500"          // limit=0 crashes
	dWrongOrder           defect = "wrong-order"             // conversations newest first
	dUpdatedSinceExcl     defect = "updatedsince-exclusive"  // updatedSince is >
	dOccurredAfterIncl    defect = "occurredafter-inclusive" // occurredAfter is >=
	dFarFuture            defect = "far-future-bound"        // bounds as int32 seconds: after 2038 they wrap
	dCategoryIgnored      defect = "category-ignored"        // category is validated but not applied
	dTimeFilterLenient    defect = "time-filter-lenient"     // an unparseable time filter is ignored
	dOffsetFilterIgnored  defect = "offset-filter-ignored"   // a filter's offset is read as UTC
	dUsageMisaligned      defect = "usage-misaligned"        // day buckets start at 05:00Z
	dGroupByIgnored       defect = "groupby-ignored"         // dimensions never present
	dUsageSumsDiffer      defect = "usage-sums-differ"       // grouped requests count conversations
	dBadGranularity200    defect = "bad-granularity-200"     // unknown granularity read as day
	dUsageRangeUnbounded  defect = "usage-range-unbounded"   // no limit on the usage range
	dUnknownID200         defect = "unknown-id-200"          // unknown id: 200 with a placeholder
	dHostileID500         defect = "hostile-id-500"          // quotes, %2F or long ids crash
	dTombstoneMessages    defect = "tombstone-keeps-content" // tombstones keep their messages
	dTombstoneGone        defect = "tombstone-404-by-id"     // GET of a tombstone is 404
	dSingleDiffers        defect = "single-record-stale"     // GET /conversations/{id} serves an older revision
	dMissingID            defect = "events-missing-id"       // every fourth event has no id
	dUnknownEnum          defect = "unknown-enum"            // some events have action Archived
	dListNoAuth           defect = "list-without-auth"       // GET /assistants needs no credential
	dNoChallenge          defect = "no-www-authenticate"     // 401 without WWW-Authenticate
	dWrongToken403        defect = "unknown-token-403"       // an unknown token is 403, not 401
	dScopeNotEnforced     defect = "scope-not-enforced"      // read:usage not required
	dQueryToken           defect = "query-string-token"      // ?access_token= accepted
	dAPIKeyIgnored        defect = "x-api-key-ignored"       // X-API-Key not read
	dAPIKeyLoses          defect = "x-api-key-loses"         // with both headers, Authorization wins
	dOtherTenantByID      defect = "other-tenant-by-id"      // GET by id ignores the tenant
	dTextPlainErrors      defect = "text-plain-errors"       // errors written by http.Error
	dProblemNoTitle       defect = "problem-without-title"   // problem bodies lack title
	dPost200              defect = "post-answered-200"       // POST served like GET
	dRate429NoRetryAfter  defect = "429-without-retry-after" // a few 429s without Retry-After

	// Defects a lenient reader of pages lets through.
	dDataNullEmpty defect = "data-null-when-empty"  // an empty list is "data": null
	dDuplicateData defect = "duplicate-data-member" // the last page repeats "data": [] after its records
	dHasMoreString defect = "hasmore-string"        // hasMore is the string "true" or "false"
	dCursorNumber  defect = "nextcursor-number"     // nextCursor null written as 0 on the last page
	// Defects that show only after the first page.
	dFilterFirstPageOnly   defect = "filters-first-page-only"   // startedAfter, updatedSince, occurredAfter dropped on cursor pages
	dCategoryFirstPageOnly defect = "category-first-page-only"  // category dropped on cursor pages
	dLimitFirstPageOnly    defect = "limit-first-page-only"     // cursor pages hold 100 records whatever the limit
	dTenantLaterPages      defect = "tenant-dropped-later"      // cursor pages read every tenant's records
	dAPIKeyFirstPageOnly   defect = "x-api-key-first-page-only" // X-API-Key is not read on cursor pages
	dUsageGroupByFirstPage defect = "usage-groupby-first-page"  // usage cursor pages drop groupBy
	dOffsetLaterPages      defect = "offset-timestamps-later"   // cursor pages write timestamps with +02:00
	dFilteredCursor400     defect = "filtered-cursor-400"       // a cursor sent back with its filters is refused
)

// refItem is one record of a list resource.
type refItem struct {
	id       string
	at       time.Time // the sort timestamp: updatedAt or occurredAt
	started  time.Time // conversations: startedAt
	category string    // events
	idx      int       // position in the tenant's generated data
	tomb     bool
	stale    bool // a stale revision, listed only with dDuplicateAcrossPages
	v        any  // the record as served
	full     any  // a tombstone with its content kept (dTombstoneMessages)
}

// refUsageRow is one AI request, aggregated by /usage.
type refUsageRow struct {
	at                                 time.Time
	model, assistant, user, department string
	conversation                       string
	in, out                            int64
	cost                               float64
}

type refTenant struct {
	conversations, assistants, events []*refItem
	usage                             []refUsageRow
}

type refPrincipal struct {
	tenant string
	scopes []string // nil: every scope
}

// refProvider is the reference provider: an http.Handler over in-memory
// data.
type refProvider struct {
	defect  defect
	key     []byte
	tenants map[string]*refTenant
	tokens  map[string]refPrincipal

	requests atomic.Int64
	mu       sync.Mutex
	used     map[string]bool // cursors already used (dNonRetrySafe)
}

func newRefProvider(d defect) *refProvider {
	p := &refProvider{
		defect:  d,
		key:     []byte("reference provider cursor key, test only"),
		tenants: map[string]*refTenant{},
		tokens: map[string]refPrincipal{
			refToken:      {tenant: tenantMain},
			refUsageless:  {tenant: tenantMain, scopes: []string{"read:conversations", "read:assistants", "read:events"}},
			refOtherToken: {tenant: tenantOther},
		},
		used: map[string]bool{},
	}
	now := time.Now().UTC()
	p.tenants[tenantMain] = genTenant(tenantMain, 60, 20, 80, 400, now)
	p.tenants[tenantOther] = genTenant(tenantOther, 6, 3, 7, 20, now)
	return p
}

func refID(prefix, tenant string, i int) string {
	h := sha256.Sum256([]byte(tenant + prefix + strconv.Itoa(i)))
	return prefix + "_" + hex.EncodeToString(h[:6])
}

func ptr[T any](v T) *T { return &v }

// genTenant makes deterministic data: nc conversations (three tombstones and
// a group of eight sharing one updatedAt when nc >= 48), na assistants, ne
// events in every category with two groups of ties, nu usage rows in the six
// days before now.
func genTenant(tenant string, nc, na, ne, nu int, now time.Time) *refTenant {
	t := &refTenant{}
	base := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	models := []string{"gpt-4o", "claude-sonnet-4", "mistral-large"}
	modelProviders := []string{"openai", "anthropic", "mistral"}
	departments := []string{"Finance", "Engineering", "Legal"}
	user := func(i int) *spec.User {
		u := i % 6
		return &spec.User{ID: fmt.Sprintf("user-%d", u), Email: fmt.Sprintf("user%d@%s.example", u, tenant),
			Department: departments[u%3], Groups: []string{"staff", departments[u%3]}}
	}
	assistantIDs := make([]string, na)
	for i := range na {
		assistantIDs[i] = refID("asst", tenant, i)
	}
	tieAt := base.Add(200*time.Hour + 250*time.Millisecond)

	// Conversations.
	for i := range nc {
		started := base.Add(time.Duration(i)*7*time.Hour + time.Duration(i%5*111)*time.Millisecond)
		updated := started.Add(90 * time.Minute)
		if nc >= 48 && i >= 20 && i < 28 {
			updated = tieAt
		}
		c := spec.Conversation{
			ID:             refID("conv", tenant, i),
			ConversationID: fmt.Sprintf("thread-%d", i/2),
			StartedAt:      spec.NewTime(started),
			UpdatedAt:      spec.NewTime(updated),
			User:           user(i),
			Model:          models[i%3],
			ModelProvider:  modelProviders[i%3],
			Parameters:     &spec.Parameters{Temperature: ptr(0.5), MaxTokens: ptr(int64(1024))},
			SystemPrompt:   "You are a helpful assistant.",
			Messages: []spec.Message{
				{ID: fmt.Sprintf("m%d-1", i), Role: spec.RoleUser, Content: "Summarise the quarterly report.", CreatedAt: spec.NewTime(started)},
				{ID: fmt.Sprintf("m%d-2", i), Role: spec.RoleAssistant, Content: "Revenue grew by 4%.", CreatedAt: spec.NewTime(started.Add(time.Minute))},
			},
			Tools:       []spec.Tool{{ID: "web", Name: "Web search", Type: "builtin"}},
			Attachments: []spec.Attachment{{ID: fmt.Sprintf("f%d", i), Kind: spec.AttachmentUploaded, Filename: "report.pdf", MimeType: "application/pdf", Hash: "sha256:00ff"}},
			Usage:       &spec.TokenUsage{InputTokens: int64(100 + i), OutputTokens: int64(50 + i), TotalTokens: int64(150 + 2*i), Cost: float64(i%8) * 0.125},
			Status:      "completed",
			Metadata:    json.RawMessage(`{"workspace":"main"}`),
		}
		if i%5 != 4 && na > 0 {
			a := i % na
			c.Assistant = &spec.AssistantRef{ID: assistantIDs[a], Name: fmt.Sprintf("Assistant %d", a)}
		}
		it := &refItem{id: c.ID, at: updated, started: started, idx: i, v: c}
		if nc >= 48 && (i == 5 || i == 33 || i == 47) {
			deleted := updated.Add(2 * time.Hour)
			full := c
			full.DeletedAt, full.UpdatedAt = spec.NewTime(deleted), spec.NewTime(deleted)
			tomb := full
			tomb.Messages, tomb.SystemPrompt, tomb.Attachments, tomb.Tools, tomb.Parameters, tomb.Metadata = nil, "", nil, nil, nil, nil
			it.at, it.tomb, it.v, it.full = deleted, true, tomb, full
		}
		t.conversations = append(t.conversations, it)
		if nc >= 48 && (i == 12 || i == 40) {
			old := c
			old.UpdatedAt, old.Status = spec.NewTime(started.Add(30*time.Minute)), "in_progress"
			t.conversations = append(t.conversations, &refItem{id: c.ID, at: old.UpdatedAt.Time, started: started, idx: i, stale: true, v: old})
		}
	}

	// Assistants; two pairs share an updatedAt.
	visibilities := []string{spec.VisibilityPrivate, spec.VisibilityTeam, spec.VisibilityOrganisation, spec.VisibilityPublic}
	skills := []string{spec.SkillBuiltin, spec.SkillMCP, spec.SkillPlugin, spec.SkillFunction}
	for i := range na {
		created := base.Add(-time.Duration(na-i)*24*time.Hour + time.Duration(i%4*250)*time.Millisecond)
		updated := base.Add(time.Duration(i)*11*time.Hour + time.Duration(i%3*7)*time.Millisecond)
		if i == 7 || i == 8 {
			updated = base.Add(77 * time.Hour)
		}
		status := "active"
		if i%6 == 5 {
			status = "archived"
		}
		a := spec.Assistant{
			ID: assistantIDs[i], Name: fmt.Sprintf("Assistant %d", i), Description: "Answers finance questions.",
			Status: status, CreatedAt: spec.NewTime(created), UpdatedAt: spec.NewTime(updated),
			Owner: user(i), Visibility: visibilities[i%4], Model: models[i%3],
			Parameters:   &spec.Parameters{TopP: ptr(0.9)},
			Instructions: "Be precise.",
			Skills:       []spec.Skill{{ID: fmt.Sprintf("sk%d", i), Name: "Lookup", Type: skills[i%4]}},
			Connectors:   []spec.Connector{{ID: "drive", Type: "google-drive", Scopes: []string{"read"}}},
			Knowledge:    []spec.KnowledgeItem{{ID: fmt.Sprintf("k%d", i), Name: "handbook.pdf", MimeType: "application/pdf"}},
			Usage:        &spec.AssistantUsage{ConversationCount: int64(i * 3), UserCount: int64(i % 6), LastUsedAt: spec.NewTime(updated)},
		}
		t.assistants = append(t.assistants, &refItem{id: a.ID, at: updated, idx: i, v: a})
	}

	// Events: every category, ties at two instants.
	actions := []string{"Created", "Updated", "Deleted", "Enabled", "Disabled", "Exported", "Shared", "SignedIn"}
	actors := []string{spec.ActorUser, spec.ActorAPIKey, spec.ActorServiceAccount, spec.ActorSystem}
	for i := range ne {
		at := base.Add(time.Duration(i)*3*time.Hour + time.Duration(i%7*13)*time.Millisecond)
		switch {
		case ne >= 64 && i >= 40 && i < 45:
			at = base.Add(120*time.Hour + 500*time.Millisecond)
		case ne >= 64 && i >= 60 && i < 63:
			at = base.Add(180 * time.Hour)
		}
		cat := spec.EventCategories[i%len(spec.EventCategories)]
		e := spec.Event{
			ID: refID("evt", tenant, i), OccurredAt: spec.NewTime(at), Type: fmt.Sprintf("native.%s.%s", strings.ToLower(cat), strings.ToLower(actions[i%len(actions)])),
			Actor:    &spec.Actor{Type: actors[i%4], ID: fmt.Sprintf("user-%d", i%6), Email: fmt.Sprintf("user%d@%s.example", i%6, tenant)},
			Category: cat, Action: actions[i%len(actions)],
			Target:  &spec.Target{Kind: "assistant", ID: assistantIDs[i%max(na, 1)], Name: "Assistant"},
			Payload: json.RawMessage(fmt.Sprintf(`{"seq":%d}`, i)),
		}
		t.events = append(t.events, &refItem{id: e.ID, at: at, category: cat, idx: i, v: e})
	}

	// Usage rows: one per request, in the six days before now.
	for i := range nu {
		c := t.conversations[(i*7)%len(t.conversations)].v.(spec.Conversation)
		asst := ""
		if c.Assistant != nil {
			asst = c.Assistant.ID
		}
		t.usage = append(t.usage, refUsageRow{
			at:    now.Add(-10*time.Minute - time.Duration(i)*19*time.Minute).Truncate(time.Millisecond),
			model: c.Model, assistant: asst, user: c.User.ID, department: c.User.Department, conversation: c.ID,
			in: int64(200 + i%50), out: int64(80 + i%30), cost: float64(i%5) * 0.125,
		})
	}

	for _, l := range [][]*refItem{t.conversations, t.assistants, t.events} {
		sort.SliceStable(l, func(a, b int) bool { return refLess(l[a], l[b]) })
	}
	return t
}

func refLess(a, b *refItem) bool {
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.id < b.id
}

// --- serving

type refError struct {
	status int
	field  string
	detail string
}

func (e *refError) Error() string { return e.detail }

func invalid(field, format string, a ...any) error {
	return &refError{status: http.StatusBadRequest, field: field, detail: field + " " + fmt.Sprintf(format, a...)}
}

var errCrash = errors.New("simulated crash")

func (p *refProvider) has(d defect) bool { return p.defect == d }

func (p *refProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := p.requests.Add(1)
	if p.has(dRate429NoRetryAfter) && (n == 30 || n == 60 || n == 90) {
		p.problem(w, r, &refError{status: http.StatusTooManyRequests, detail: "Slow down."})
		return
	}
	resource, id, single, ok := refRoute(r.URL.EscapedPath())
	if !ok {
		p.problem(w, r, &refError{status: http.StatusNotFound, detail: "No such endpoint."})
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !(p.has(dPost200) && r.Method == http.MethodPost) {
		w.Header().Set("Allow", "GET, HEAD")
		p.problem(w, r, &refError{status: http.StatusMethodNotAllowed, detail: "The interface is read-only: use GET."})
		return
	}
	pr, status := p.authenticate(r, resource, single)
	if status != 0 {
		p.problem(w, r, &refError{status: status, detail: "A valid credential is required: Authorization: Bearer <token> or X-API-Key: <token>."})
		return
	}
	if pr.scopes != nil && !slices.Contains(pr.scopes, "read:"+resource) && !(p.has(dScopeNotEnforced) && resource == "usage") {
		p.problem(w, r, &refError{status: http.StatusForbidden, detail: "The credential lacks the scope read:" + resource + "."})
		return
	}
	var body []byte
	var err error
	switch {
	case single:
		body, err = p.serveSingle(pr, resource, id)
	case resource == "usage":
		body, err = p.serveUsage(pr, r.URL.Query())
	default:
		body, err = p.serveList(pr, resource, r.URL.Query())
	}
	if err != nil {
		p.problem(w, r, err)
		return
	}
	p.send(w, r, http.StatusOK, "application/json", body)
}

// refRoute splits an escaped path into the resource and, for a single
// record, the unescaped id.
func refRoute(path string) (resource, id string, single, ok bool) {
	for _, res := range []string{"conversations", "assistants", "events", "usage"} {
		if path == "/"+res {
			return res, "", false, true
		}
		if rest, found := strings.CutPrefix(path, "/"+res+"/"); found && (res == "conversations" || res == "assistants") {
			if rest == "" || strings.Contains(rest, "/") {
				return "", "", false, false
			}
			id, err := url.PathUnescape(rest)
			if err != nil {
				return "", "", false, false
			}
			return res, id, true, true
		}
	}
	return "", "", false, false
}

// authenticate returns the principal of a request, or the status to answer.
func (p *refProvider) authenticate(r *http.Request, resource string, single bool) (refPrincipal, int) {
	token := ""
	scheme, bearer, isBearer := strings.Cut(r.Header.Get("Authorization"), " ")
	isBearer = isBearer && strings.EqualFold(scheme, "Bearer")
	laterPage := r.URL.Query().Has("cursor")
	if k := r.Header.Get("X-API-Key"); k != "" && !p.has(dAPIKeyIgnored) && !(p.has(dAPIKeyLoses) && isBearer) && !(p.has(dAPIKeyFirstPageOnly) && laterPage) {
		token = k
	} else if isBearer {
		token = strings.TrimSpace(bearer)
	} else if p.has(dQueryToken) {
		token = r.URL.Query().Get("access_token")
		if token == "" {
			token = r.URL.Query().Get("api_key")
		}
	}
	if token == "" && p.has(dListNoAuth) && resource == "assistants" && !single {
		return refPrincipal{tenant: tenantMain}, 0
	}
	var found refPrincipal
	ok := false
	for t, pr := range p.tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			found, ok = pr, true
		}
	}
	switch {
	case ok:
		return found, 0
	case token != "" && p.has(dWrongToken403):
		return found, http.StatusForbidden
	default:
		return found, http.StatusUnauthorized
	}
}

func (p *refProvider) send(w http.ResponseWriter, r *http.Request, status int, ctype string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Vary", "Accept-Encoding")
	if len(body) > 512 && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		zw.Write(body)
		zw.Close()
		body = buf.Bytes()
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// problem writes err as RFC 9457 problem details; an error that is not a
// refError is a 500 that shows nothing of it.
func (p *refProvider) problem(w http.ResponseWriter, r *http.Request, err error) {
	var e *refError
	if !errors.As(err, &e) {
		e = &refError{status: http.StatusInternalServerError, detail: "Something went wrong on our side."}
	}
	if e.status == http.StatusUnauthorized && !p.has(dNoChallenge) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="aiusage"`)
	}
	if p.has(dTextPlainErrors) {
		p.send(w, r, e.status, "text/plain; charset=utf-8", []byte(http.StatusText(e.status)+": "+e.detail+"\n"))
		return
	}
	prob := map[string]any{"type": "about:blank", "title": http.StatusText(e.status), "status": e.status, "detail": e.detail}
	if e.field != "" {
		prob["errors"] = []map[string]string{{"field": e.field, "message": e.detail}}
	}
	if p.has(dProblemNoTitle) {
		delete(prob, "title")
	}
	b, _ := json.Marshal(prob)
	p.send(w, r, e.status, spec.ProblemContentType, b)
}

// --- query parameters

type refParams struct {
	v url.Values
	p *refProvider
}

func (q refParams) get(name string) (string, bool, error) {
	vs, ok := q.v[name]
	if !ok {
		return "", false, nil
	}
	if len(vs) > 1 {
		return "", false, invalid(name, "is given %d times; give it once", len(vs))
	}
	if vs[0] == "" {
		return "", false, invalid(name, "is empty")
	}
	return vs[0], true, nil
}

func (q refParams) limit() (int, error) {
	s, ok, err := q.get("limit")
	if err != nil || !ok {
		return 100, err
	}
	if s == "0" && q.p.has(dLimitZero500) {
		return 0, errCrash
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1000 {
		return 0, invalid("limit", "must be an integer from 1 to 1000, got %q", refTrunc(s))
	}
	if q.p.has(dLimitIgnored) {
		return 100, nil
	}
	return n, nil
}

// time parses a time filter; the zero time means absent.
func (q refParams) time(name string) (time.Time, error) {
	s, ok, err := q.get(name)
	if err != nil || !ok {
		return time.Time{}, err
	}
	if q.p.has(dOffsetFilterIgnored) && len(s) > 6 && (s[len(s)-6] == '+' || s[len(s)-6] == '-') {
		s = s[:len(s)-6] + "Z"
	}
	t, err := spec.ParseTime(s)
	if err != nil {
		if q.p.has(dTimeFilterLenient) {
			return time.Time{}, nil
		}
		return time.Time{}, invalid(name, "must be an RFC 3339 timestamp such as 2026-01-02T03:04:05Z, got %q", refTrunc(s))
	}
	if q.p.has(dFarFuture) && t.Unix() > math.MaxInt32 {
		return time.Time{}, nil // does not fit the 32-bit column: the filter is dropped
	}
	return t, nil
}

func refTrunc(s string) string {
	if len(s) > 40 {
		return strings.ToValidUTF8(s[:40], "") + "..."
	}
	return s
}

// filterDigest names the given filters, so that a cursor is bound to them.
func filterDigest(kv ...string) string {
	var parts []string
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] != "" {
			parts = append(parts, kv[i]+"="+kv[i+1])
		}
	}
	return strings.Join(parts, "&")
}

func ms(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// --- cursors

type refCursor struct {
	Endpoint string `json:"e"`
	Tenant   string `json:"t"`
	Filters  string `json:"f"`
	Ms       int64  `json:"ms"`
	Key      string `json:"k"`
	Start    int64  `json:"s,omitempty"`
	End      int64  `json:"x,omitempty"`
	Nonce    string `json:"n,omitempty"`
	Sig      string `json:"sig,omitempty"` // dPlainCursor only
}

func (p *refProvider) mac(b []byte) []byte {
	m := hmac.New(sha256.New, p.key)
	m.Write(b)
	return m.Sum(nil)[:16]
}

// keystream XORs b with a stream derived from the key and iv.
func (p *refProvider) keystream(iv, b []byte) {
	var block [32]byte
	for i := range b {
		if i%32 == 0 {
			var ctr [8]byte
			binary.BigEndian.PutUint64(ctr[:], uint64(i/32))
			block = sha256.Sum256(slices.Concat(p.key, iv, ctr[:]))
		}
		b[i] ^= block[i%32]
	}
}

func (p *refProvider) seal(c refCursor) string {
	if p.has(dNonRetrySafe) {
		var n [8]byte
		rand.Read(n[:])
		c.Nonce = hex.EncodeToString(n[:])
	}
	plain, _ := json.Marshal(c)
	if p.has(dPlainCursor) {
		c.Sig = base64.RawURLEncoding.EncodeToString(p.mac(plain))
		b, _ := json.Marshal(c)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	tag := p.mac(plain)
	p.keystream(tag, plain)
	return base64.RawURLEncoding.EncodeToString(append(tag, plain...))
}

var errMalformed = errors.New("malformed")

func (p *refProvider) open(s string) (refCursor, error) {
	var c refCursor
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, errMalformed
	}
	if p.has(dPlainCursor) {
		if json.Unmarshal(raw, &c) != nil {
			return c, errMalformed
		}
		sig := c.Sig
		c.Sig = ""
		plain, _ := json.Marshal(c)
		if !hmac.Equal([]byte(sig), []byte(base64.RawURLEncoding.EncodeToString(p.mac(plain)))) {
			return c, errMalformed
		}
		return c, nil
	}
	if len(raw) < 17 {
		return c, errMalformed
	}
	tag, plain := raw[:16], slices.Clone(raw[16:])
	p.keystream(tag, plain)
	if !hmac.Equal(tag, p.mac(plain)) || json.Unmarshal(plain, &c) != nil {
		return c, errMalformed
	}
	return c, nil
}

// readCursor opens the cursor of a request and checks its binding. A nil
// cursor means the first page.
func (p *refProvider) readCursor(q refParams, endpoint, tenant, filters string) (*refCursor, error) {
	s, ok, err := q.get("cursor")
	if err != nil || !ok {
		return nil, err
	}
	c, err := p.open(s)
	if err != nil {
		if p.has(dMalformedFirstPage) {
			return nil, nil
		}
		return nil, invalid("cursor", "is malformed; send nextCursor exactly as received")
	}
	if c.Endpoint != endpoint && !p.has(dEndpointUnbound) {
		return nil, invalid("cursor", "was issued by another endpoint")
	}
	if c.Tenant != tenant && !p.has(dCursorAuthority) {
		return nil, invalid("cursor", "was issued to another credential")
	}
	if c.Filters != filters && !p.has(dFilterUnbound) {
		return nil, invalid("cursor", "was issued for other filters; send the same filters with the cursor")
	}
	if c.Nonce != "" {
		p.mu.Lock()
		used := p.used[c.Nonce]
		p.used[c.Nonce] = true
		p.mu.Unlock()
		if used {
			return nil, invalid("cursor", "has expired")
		}
	}
	return &c, nil
}

// --- lists

var (
	refTimeRe = regexp.MustCompile(`"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3})Z"`)
	plusTwo   = time.FixedZone("", 2*3600)
)

// encode writes a record as served, with the defects of the wire format.
func (p *refProvider) encode(it *refItem) []byte {
	v := it.v
	if it.full != nil && p.has(dTombstoneMessages) {
		v = it.full
	}
	b, _ := json.Marshal(v)
	if _, isEvent := v.(spec.Event); isEvent && (p.has(dMissingID) && it.idx%4 == 1 || p.has(dUnknownEnum) && it.idx%10 == 3) {
		var m map[string]any
		json.Unmarshal(b, &m)
		if p.has(dMissingID) {
			delete(m, "id")
		} else {
			m["action"] = "Archived"
		}
		b, _ = json.Marshal(m)
	}
	switch {
	case p.has(dOffsetTimestamps):
		b = refTimeRe.ReplaceAllFunc(b, func(m []byte) []byte {
			t, _ := time.Parse(time.RFC3339Nano, string(m[1:len(m)-1]))
			return []byte(`"` + t.In(plusTwo).Format("2006-01-02T15:04:05.000-07:00") + `"`)
		})
	case p.has(dMixedPrecision):
		b = bytes.ReplaceAll(b, []byte(`.000Z"`), []byte(`Z"`))
	}
	return b
}

func (p *refProvider) serveList(pr refPrincipal, resource string, v url.Values) ([]byte, error) {
	q := refParams{v, p}
	var (
		updatedSince, startedAfter, occurredAfter time.Time
		category, digest                          string
		err                                       error
	)
	if resource != "events" {
		if updatedSince, err = q.time("updatedSince"); err != nil {
			return nil, err
		}
		if resource == "conversations" {
			if startedAfter, err = q.time("startedAfter"); err != nil {
				return nil, err
			}
		}
		digest = filterDigest("updatedSince", ms(updatedSince), "startedAfter", ms(startedAfter))
	} else {
		if occurredAfter, err = q.time("occurredAfter"); err != nil {
			return nil, err
		}
		c, ok, err := q.get("category")
		if err != nil {
			return nil, err
		}
		if ok && !slices.Contains(spec.EventCategories, c) {
			return nil, invalid("category", "must be one of %s, got %q", strings.Join(spec.EventCategories, ", "), refTrunc(c))
		}
		category = c
		digest = filterDigest("occurredAfter", ms(occurredAfter), "category", category)
	}
	limit, err := q.limit()
	if err != nil {
		return nil, err
	}
	cur, err := p.readCursor(q, resource, pr.tenant, digest)
	if err != nil {
		return nil, err
	}
	if cur != nil && digest != "" && p.has(dFilteredCursor400) {
		return nil, invalid("cursor", "is malformed")
	}
	tenant := pr.tenant
	if cur != nil && p.has(dCursorAuthority) && p.tenants[cur.Tenant] != nil {
		tenant = cur.Tenant
	}
	if cur != nil && p.has(dFilterFirstPageOnly) {
		updatedSince, startedAfter, occurredAfter = time.Time{}, time.Time{}, time.Time{}
	}
	if cur != nil && p.has(dCategoryFirstPageOnly) {
		category = ""
	}
	if cur != nil && p.has(dLimitFirstPageOnly) {
		limit = 100
	}
	td := p.tenants[tenant]
	all := map[string][]*refItem{"conversations": td.conversations, "assistants": td.assistants, "events": td.events}[resource]
	if cur != nil && p.has(dTenantLaterPages) {
		// The query of the next page lost its tenant condition.
		var merged []*refItem
		for _, tn := range []string{tenantMain, tenantOther} {
			o := p.tenants[tn]
			merged = append(merged, map[string][]*refItem{"conversations": o.conversations, "assistants": o.assistants, "events": o.events}[resource]...)
		}
		sort.SliceStable(merged, func(a, b int) bool { return refLess(merged[a], merged[b]) })
		all = merged
	}

	desc := p.has(dWrongOrder) && resource == "conversations"
	var matched []*refItem
	for _, it := range all {
		if it.stale && !(p.has(dDuplicateAcrossPages) && resource == "conversations") {
			continue
		}
		if !updatedSince.IsZero() {
			if it.at.Before(updatedSince) || p.has(dUpdatedSinceExcl) && it.at.Equal(updatedSince) {
				continue
			}
		}
		if !startedAfter.IsZero() && !it.started.After(startedAfter) {
			continue
		}
		if !occurredAfter.IsZero() {
			if it.at.Before(occurredAfter) || !p.has(dOccurredAfterIncl) && it.at.Equal(occurredAfter) {
				continue
			}
		}
		if category != "" && it.category != category && !p.has(dCategoryIgnored) {
			continue
		}
		matched = append(matched, it)
	}
	if desc {
		slices.Reverse(matched)
	}
	if cur != nil {
		cat := time.UnixMilli(cur.Ms).UTC()
		after := func(it *refItem) bool {
			switch {
			case p.has(dTieSkip) && resource == "conversations":
				return it.at.After(cat)
			case desc:
				return it.at.Before(cat) || it.at.Equal(cat) && it.id < cur.Key
			default:
				return it.at.After(cat) || it.at.Equal(cat) && it.id > cur.Key
			}
		}
		i := slices.IndexFunc(matched, after)
		if i < 0 {
			i = len(matched)
		}
		matched = matched[i:]
	}
	page, more := matched, false
	if len(page) > limit {
		page, more = page[:limit], true
	}
	var next *string
	seal := func() *string {
		last := page[len(page)-1]
		s := p.seal(refCursor{Endpoint: resource, Tenant: tenant, Filters: digest, Ms: last.at.UnixMilli(), Key: last.id})
		return &s
	}
	switch {
	case p.has(dHasMoreNullCursor):
		// hasMore says the page is full; the cursor is made only when a
		// record follows.
		if more {
			next = seal()
		}
		more = len(page) == limit
	case p.has(dCursorLoop):
		// No look-ahead: a full page has more, and the page after the end
		// sends the cursor back.
		more = len(page) == limit
		if more {
			next = seal()
		}
		if len(page) == 0 && cur != nil {
			s, _, _ := q.get("cursor")
			next, more = &s, true
		}
	case p.has(dHasMoreNullAlways):
		if more {
			next = seal()
		}
		more = true
	case p.has(dCursorLoopAlways):
		switch {
		case len(page) > 0:
			next, more = seal(), true
		case cur != nil:
			s, _, _ := q.get("cursor")
			next, more = &s, true
		}
	case more:
		next = seal()
	}
	recs := make([][]byte, len(page))
	for i, it := range page {
		recs[i] = p.encode(it)
		if cur != nil && p.has(dOffsetLaterPages) {
			recs[i] = refTimeRe.ReplaceAllFunc(recs[i], func(m []byte) []byte {
				t, _ := time.Parse(time.RFC3339Nano, string(m[1:len(m)-1]))
				return []byte(`"` + t.In(plusTwo).Format("2006-01-02T15:04:05.000-07:00") + `"`)
			})
		}
	}
	return p.envelope(recs, more, next), nil
}

func (p *refProvider) envelope(recs [][]byte, more bool, next *string) []byte {
	var b bytes.Buffer
	if len(recs) == 0 && p.has(dDataNullEmpty) {
		b.WriteString(`{"data":null`)
	} else {
		b.WriteString(`{"data":[`)
		b.Write(bytes.Join(recs, []byte(",")))
		b.WriteString("]")
	}
	switch {
	case p.has(dHasMoreString):
		fmt.Fprintf(&b, `,"hasMore":"%t"`, more)
	case more || !p.has(dEnvelopeNoHasMore):
		fmt.Fprintf(&b, `,"hasMore":%t`, more)
	}
	switch {
	case next != nil:
		c, _ := json.Marshal(*next)
		fmt.Fprintf(&b, `,"nextCursor":%s`, c)
	case p.has(dCursorNumber):
		b.WriteString(`,"nextCursor":0`)
	default:
		b.WriteString(`,"nextCursor":null`)
	}
	if !more && len(recs) > 0 && p.has(dDuplicateData) {
		b.WriteString(`,"data":[]`)
	}
	b.WriteString("}")
	return b.Bytes()
}

// --- single records

func (p *refProvider) serveSingle(pr refPrincipal, resource, id string) ([]byte, error) {
	if p.has(dHostileID500) && (len(id) > 1000 || strings.ContainsAny(id, `'"/`)) {
		return nil, errCrash
	}
	switch {
	case len(id) > 1000:
		return nil, invalid("id", "is longer than 1000 bytes")
	case !utf8.ValidString(id):
		return nil, invalid("id", "is not valid UTF-8")
	case strings.ContainsFunc(id, unicode.IsControl):
		return nil, invalid("id", "contains control characters")
	}
	tenants := []string{pr.tenant}
	if p.has(dOtherTenantByID) {
		tenants = []string{tenantMain, tenantOther}
	}
	for _, tn := range tenants {
		td := p.tenants[tn]
		l := td.conversations
		if resource == "assistants" {
			l = td.assistants
		}
		for _, it := range l {
			if it.id != id || it.stale {
				continue
			}
			if it.tomb && p.has(dTombstoneGone) {
				break
			}
			if c, ok := it.v.(spec.Conversation); ok && p.has(dSingleDiffers) && !it.tomb {
				c.UpdatedAt, c.Status = spec.NewTime(it.at.Add(-time.Hour)), "in_progress"
				return p.encode(&refItem{idx: it.idx, v: c}), nil
			}
			return p.encode(it), nil
		}
	}
	if p.has(dUnknownID200) {
		if resource == "assistants" {
			return json.Marshal(spec.Assistant{ID: id, CreatedAt: spec.NewTime(time.Unix(0, 0))})
		}
		return json.Marshal(spec.Conversation{ID: id, StartedAt: spec.NewTime(time.Unix(0, 0))})
	}
	return nil, &refError{status: http.StatusNotFound, detail: fmt.Sprintf("No %s with id %q.", strings.TrimSuffix(resource, "s"), refTrunc(id))}
}

// --- usage

var refDims = []string{"model", "assistantId", "userId", "department"}

func (p *refProvider) serveUsage(pr refPrincipal, v url.Values) ([]byte, error) {
	q := refParams{v, p}
	gran := "day"
	if g, ok, err := q.get("granularity"); err != nil {
		return nil, err
	} else if ok {
		switch {
		case g == "hour" || g == "day":
			gran = g
		case !p.has(dBadGranularity200):
			return nil, invalid("granularity", "must be hour or day, got %q", refTrunc(g))
		}
	}
	var groupBy []string
	if g, ok, err := q.get("groupBy"); err != nil {
		return nil, err
	} else if ok {
		seen := map[string]bool{}
		for _, d := range strings.Split(g, ",") {
			d = strings.TrimSpace(d)
			if !slices.Contains(refDims, d) {
				return nil, invalid("groupBy", "must be a comma-separated subset of %s, got %q", strings.Join(refDims, ","), refTrunc(d))
			}
			if seen[d] {
				return nil, invalid("groupBy", "names %s twice", d)
			}
			seen[d] = true
		}
		for _, d := range refDims {
			if seen[d] {
				groupBy = append(groupBy, d)
			}
		}
	}
	unit := 24 * time.Hour
	if gran == "hour" {
		unit = time.Hour
	}
	start, err := q.time("startAt")
	if err != nil {
		return nil, err
	}
	end, err := q.time("endAt")
	if err != nil {
		return nil, err
	}
	startSet, endSet := !start.IsZero(), !end.IsZero()
	ceil := func(t time.Time) time.Time {
		if f := t.Truncate(unit); !f.Equal(t) {
			return f.Add(unit)
		}
		return t
	}
	if !endSet {
		end = ceil(time.Now().UTC())
		if startSet && !end.After(start) {
			end = ceil(start.Add(unit))
		}
	}
	if !startSet {
		start = end.Add(-7 * 24 * time.Hour)
	}
	start, end = start.Truncate(unit), ceil(end)
	if !end.After(start) {
		return nil, invalid("endAt", "must be after startAt")
	}
	maxRange := 366 * 24 * time.Hour
	if gran == "hour" {
		maxRange = 31 * 24 * time.Hour
	}
	if end.Sub(start) > maxRange && !p.has(dUsageRangeUnbounded) {
		return nil, invalid("endAt", "the range is over %d days for granularity %s", int(maxRange.Hours()/24), gran)
	}
	limit, err := q.limit()
	if err != nil {
		return nil, err
	}
	digest := filterDigest("granularity", gran, "groupBy", strings.Join(groupBy, ","))
	cur, err := p.readCursor(q, "usage", pr.tenant, digest)
	if err != nil {
		return nil, err
	}
	tenant := pr.tenant
	if cur != nil {
		cs, ce := time.UnixMilli(cur.Start).UTC(), time.UnixMilli(cur.End).UTC()
		if startSet && !start.Equal(cs) || endSet && !end.Equal(ce) {
			return nil, invalid("cursor", "was issued for another startAt/endAt range")
		}
		start, end = cs, ce
		if p.has(dCursorAuthority) && p.tenants[cur.Tenant] != nil {
			tenant = cur.Tenant
		}
	}
	if p.has(dGroupByIgnored) || cur != nil && p.has(dUsageGroupByFirstPage) {
		groupBy = nil
	}

	type bucket struct {
		start time.Time
		key   string
		dims  map[string]string
		m     spec.UsageMetrics
		convs map[string]bool
		users map[string]bool
	}
	buckets := map[string]*bucket{}
	for _, row := range p.tenants[tenant].usage {
		if row.at.Before(start) || !row.at.Before(end) {
			continue
		}
		bs := row.at.Truncate(unit)
		if p.has(dUsageMisaligned) && gran == "day" {
			bs = row.at.Add(-5 * time.Hour).Truncate(unit).Add(5 * time.Hour)
		}
		dims := map[string]string{}
		vals := map[string]string{"model": row.model, "assistantId": row.assistant, "userId": row.user, "department": row.department}
		var parts []string
		for _, d := range groupBy {
			dims[d] = vals[d]
			parts = append(parts, vals[d])
		}
		key := strings.Join(parts, "\x00")
		id := ms(bs) + "|" + key
		b := buckets[id]
		if b == nil {
			b = &bucket{start: bs, key: key, dims: dims, convs: map[string]bool{}, users: map[string]bool{}}
			buckets[id] = b
		}
		b.m.Requests++
		b.m.InputTokens += row.in
		b.m.OutputTokens += row.out
		b.m.Cost += row.cost
		b.convs[row.conversation] = true
		b.users[row.user] = true
	}
	list := make([]*bucket, 0, len(buckets))
	for _, b := range buckets {
		b.m.Conversations, b.m.ActiveUsers = int64(len(b.convs)), int64(len(b.users))
		if p.has(dUsageSumsDiffer) && len(groupBy) > 0 {
			b.m.Requests = b.m.Conversations
		}
		list = append(list, b)
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].start.Equal(list[j].start) {
			return list[i].start.Before(list[j].start)
		}
		return list[i].key < list[j].key
	})
	if cur != nil {
		cat := time.UnixMilli(cur.Ms).UTC()
		i := slices.IndexFunc(list, func(b *bucket) bool {
			return b.start.After(cat) || b.start.Equal(cat) && b.key > cur.Key
		})
		if i < 0 {
			i = len(list)
		}
		list = list[i:]
	}
	page, more := list, false
	if len(page) > limit {
		page, more = page[:limit], true
	}
	recs := make([][]byte, len(page))
	for i, b := range page {
		d := spec.UsageDimensions{}
		for k, v := range b.dims {
			switch k {
			case "model":
				d.Model = ptr(v)
			case "assistantId":
				d.AssistantID = ptr(v)
			case "userId":
				d.UserID = ptr(v)
			case "department":
				d.Department = ptr(v)
			}
		}
		recs[i], _ = json.Marshal(spec.UsageBucket{StartAt: spec.NewTime(b.start), EndAt: spec.NewTime(b.start.Add(unit)),
			Granularity: gran, Dimensions: d, Metrics: b.m})
	}
	var next *string
	if more {
		last := page[len(page)-1]
		s := p.seal(refCursor{Endpoint: "usage", Tenant: tenant, Filters: digest, Ms: last.start.UnixMilli(), Key: last.key,
			Start: start.UnixMilli(), End: end.UnixMilli()})
		next = &s
	}
	return p.envelope(recs, more, next), nil
}
