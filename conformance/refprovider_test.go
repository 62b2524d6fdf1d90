package conformance_test

import (
	"bytes"
	"compress/gzip"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aiusage/kit/spec"
)

// This file and the other refprovider_*_test.go files are a small reference
// provider of the AI usage data interface, written from the kit's decisions
// (docs/conformance.md) without the kit's provider package, so that the suite
// is tested black-box. A defect switch breaks exactly one behaviour;
// broken_test.go runs the suite against each. This file holds the defects,
// the provider, its serving and its query parameters; the others its data,
// cursors, lists and single records, and usage.

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
	resource, id, single, ok := splitPath(r.URL.EscapedPath())
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

// splitPath splits an escaped path into the resource and, for a single
// record, the unescaped id.
func splitPath(path string) (resource, id string, single, ok bool) {
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
		return 0, invalid("limit", "must be an integer from 1 to 1000, got %q", truncate(s))
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
		return time.Time{}, invalid(name, "must be an RFC 3339 timestamp such as 2026-01-02T03:04:05Z, got %q", truncate(s))
	}
	if q.p.has(dFarFuture) && t.Unix() > math.MaxInt32 {
		return time.Time{}, nil // does not fit the 32-bit column: the filter is dropped
	}
	return t, nil
}

// truncate shortens a value quoted in an error message.
func truncate(s string) string {
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
