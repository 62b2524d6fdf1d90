package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
)

// probeTarget is one endpoint the auth checks send requests to: a list (or
// /usage) with a small first page, or one single record.
type probeTarget struct {
	resource string
	path     string
	query    url.Values
}

func (t probeTarget) rawQuery() string { return t.query.Encode() }

// firstPageQuery is the query of a small first page of resource.
func firstPageQuery(resource string, limit int) url.Values {
	if resource == Usage {
		return url.Values{}
	}
	return url.Values{"limit": {fmt.Sprint(limit)}}
}

// targets lists every offered endpoint: each list, /usage, and one
// single record of each resource that has them (a listed id when there is
// one, else a random one: credentials are checked before the id).
func (ac *authChecks) targets(ctx context.Context) []probeTarget {
	s := ac.s
	var out []probeTarget
	for _, r := range s.resources() {
		out = append(out, probeTarget{resource: r, path: endpoint(r), query: firstPageQuery(r, 1)})
		if r != Conversations && r != Assistants {
			continue
		}
		id := randomUUID()
		for _, rec := range s.fullWalk(ctx, r).Records {
			if rec.ID != "" {
				id = rec.ID
				break
			}
		}
		out = append(out, probeTarget{resource: r, path: recordPath(r, id), query: url.Values{}})
	}
	return out
}

// wrongToken returns a token the provider cannot know.
func wrongToken() string { return "conformance-wrong-" + randomHex(12) }

// hasBearerChallenge reports whether a 401 carries a Bearer challenge.
func hasBearerChallenge(ex *exchange) bool {
	for _, v := range ex.RespHdr.Values("WWW-Authenticate") {
		if len(v) >= 6 && strings.EqualFold(v[:6], "Bearer") {
			return true
		}
	}
	return false
}

// comparedPage is a first page as the auth checks compare it.
type comparedPage struct {
	ids     []string                   // list ids, in order
	items   map[string]json.RawMessage // list items by id
	data    []json.RawMessage          // the data array (for /usage)
	cursor  string
	hasMore bool
}

// readComparedPage decodes a list page; ok is false when ex is not a 200
// envelope.
func readComparedPage(resource string, ex *exchange) (comparedPage, bool) {
	var p comparedPage
	env, err := ex.page()
	if err != nil {
		return p, false
	}
	p.data, p.hasMore, p.cursor = env.Data, env.HasMore, env.cursor()
	p.items = map[string]json.RawMessage{}
	if resource != Usage {
		for _, raw := range env.Data {
			r := decodeRecord(resource, raw)
			p.ids = append(p.ids, r.ID)
			p.items[r.ID] = raw
		}
	}
	return p, true
}

// sameRecords reports whether two first pages hold the same records.
func sameRecords(resource string, a, b comparedPage) bool {
	if resource == Usage {
		if len(a.data) != len(b.data) {
			return false
		}
		for i := range a.data {
			if !jsonEqual(a.data[i], b.data[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.ids, b.ids)
}

// firstTenantRecords maps the first tenant's records of resource (its full
// walk) by id.
func (ac *authChecks) firstTenantRecords(ctx context.Context, resource string) map[string]record {
	out := map[string]record{}
	for _, r := range ac.s.fullWalk(ctx, resource).Records {
		if r.ID != "" {
			out[r.ID] = r
		}
	}
	return out
}

// leakedIDs returns the ids of page items that are first-tenant records:
// the same id with the same content. An equal id with other content is
// another tenant's own record (ids may be unique per tenant only).
func leakedIDs(resource string, p comparedPage, known map[string]record) []string {
	var out []string
	for _, id := range p.ids {
		r, ok := known[id]
		if !ok || id == "" {
			continue
		}
		if jsonEqual(p.items[id], r.Raw) {
			out = append(out, id)
		}
	}
	return out
}

// authChecks is what the auth checks of one run share: the session, and
// which lists answer without credentials (isOpen).
type authChecks struct {
	s    *session
	open map[string]bool // isOpen's answers, by resource
}

// isOpen reports whether the list of resource answers a request without
// any credentials with something else than 401: that is AUTH-01's finding,
// and the checks that take credentials away in other ways (AUTH-04, AUTH-05)
// prove nothing more there. Memoised per run of checkAuth.
func (ac *authChecks) isOpen(ctx context.Context, resource string) bool {
	if v, ok := ac.open[resource]; ok {
		return v
	}
	ex := ac.s.get(ctx, endpoint(resource), firstPageQuery(resource, 1), noAuth())
	v := ex.Status != 0 && ex.Status != http.StatusUnauthorized
	ac.open[resource] = v
	return v
}

// checkAuth checks credentials: AUTH-01 (every endpoint needs one), AUTH-02
// (a 401 carries a Bearer challenge; a wrong token is 401), AUTH-03 (scopes),
// AUTH-04 (cursors confer no authority), AUTH-05 (no credentials in the
// query string), AUTH-06 (both header forms; X-API-Key wins) and AUTH-07
// (another tenant's records are invisible).
func checkAuth(ctx context.Context, s *session) {
	ac := &authChecks{s: s, open: map[string]bool{}}
	if s.enabled("AUTH-01") || s.enabled("AUTH-02") {
		ac.required(ctx)
	}
	if s.enabled("AUTH-03") {
		ac.scopes(ctx)
	}
	if s.enabled("AUTH-04") {
		ac.cursors(ctx)
	}
	if s.enabled("AUTH-05") {
		ac.queryString(ctx)
	}
	if s.enabled("AUTH-06") {
		ac.headers(ctx)
	}
	if s.enabled("AUTH-07") {
		ac.tenants(ctx)
	}
}

// required is AUTH-01 and AUTH-02.
func (ac *authChecks) required(ctx context.Context) {
	s := ac.s
	wrong := wrongToken()
	for _, t := range ac.targets(ctx) {
		ep := endpoint(t.resource)
		ex := s.do(ctx, t.path, t.rawQuery(), noAuth())
		if t.path == endpoint(t.resource) {
			ac.open[t.resource] = ex.Status != 0 && ex.Status != http.StatusUnauthorized
		}
		switch ex.Status {
		case 0:
			s.errored("AUTH-01", ep, ex, fmt.Sprintf("GET %s without credentials: no answer (%v)", t.path, ex.Err))
		case http.StatusUnauthorized:
			s.pass("AUTH-01", ep, "every request without credentials answered 401")
			ac.challenge(ep, t.path, "without credentials", ex)
		default:
			s.fail("AUTH-01", ep, fmt.Sprintf("GET %s without credentials answered %d, want 401", t.path, ex.Status), ex.evidence(""))
		}
		if t.path != endpoint(t.resource) {
			continue // the wrong token is tried on the lists
		}
		ex = s.do(ctx, t.path, t.rawQuery(), bearer(wrong))
		switch ex.Status {
		case 0:
			s.errored("AUTH-02", ep, ex, fmt.Sprintf("GET %s with a wrong token: no answer (%v)", t.path, ex.Err))
		case http.StatusUnauthorized:
			ac.challenge(ep, t.path, "with a wrong token", ex)
		default:
			s.fail("AUTH-02", ep, fmt.Sprintf("GET %s with a wrong bearer token answered %d, want 401", t.path, ex.Status), ex.evidence(""))
		}
	}
}

// challenge records AUTH-02 for a 401 to GET path: it must carry a Bearer
// challenge.
func (ac *authChecks) challenge(ep, path, how string, ex *exchange) {
	s := ac.s
	if hasBearerChallenge(ex) {
		s.pass("AUTH-02", ep, "every 401 carries WWW-Authenticate: Bearer, and a wrong token is 401")
		return
	}
	got := ex.RespHdr.Get("WWW-Authenticate")
	if got == "" {
		got = "none"
	} else {
		got = fmt.Sprintf("%q", got)
	}
	s.fail("AUTH-02", ep, fmt.Sprintf("the 401 to GET %s %s carries WWW-Authenticate %s, want a Bearer challenge", path, how, got), ex.evidence(""))
}

// scopes is AUTH-03.
func (ac *authChecks) scopes(ctx context.Context) {
	s := ac.s
	const id = "AUTH-03"
	tok := s.cfg.UsagelessToken
	if tok == "" {
		s.skip(id, "*", "no token without read:usage was configured")
		return
	}
	var answers []scopeAnswer
	accepted := false
	for _, r := range s.resources() {
		ex := s.get(ctx, endpoint(r), firstPageQuery(r, 1), bearer(tok))
		answers = append(answers, scopeAnswer{r, ex})
		if ex.Status != 0 && ex.Status != http.StatusUnauthorized {
			accepted = true
		}
	}
	if !accepted {
		s.skip(id, "*", "the token without read:usage is not accepted (401 everywhere)")
		return
	}
	hint := ""
	if usageOnly(answers) {
		hint = "; the token reads /usage and is refused every other resource, so it is a usage-only token " +
			"(read:usage alone): --token-without-usage wants a token with every scope but read:usage"
	}
	for _, a := range answers {
		ep := endpoint(a.resource)
		ex := a.ex
		switch {
		case ex.Status == 0:
			s.errored(id, ep, ex, fmt.Sprintf("GET %s: no answer (%v)", ep, ex.Err))
		case a.resource == Usage && ex.Status == http.StatusForbidden:
			s.pass(id, ep, "a token without read:usage gets 403")
		case a.resource == Usage:
			s.fail(id, ep, fmt.Sprintf("a token without read:usage answered %d, want 403%s", ex.Status, hint), ex.evidence(""))
		case ex.Status == http.StatusOK:
			s.pass(id, ep, "a token without read:usage (but with this resource's scope) gets 200")
		default:
			s.fail(id, ep, fmt.Sprintf("a token without read:usage answered %d, want 200 (only read:usage is missing)%s", ex.Status, hint), ex.evidence(""))
		}
	}
}

// scopeAnswer is AUTH-03's answer for one resource.
type scopeAnswer struct {
	resource string
	ex       *exchange
}

// usageOnly reports whether AUTH-03's answers are those of a usage-only
// token, the opposite of the one the check wants: /usage 200 and every
// other resource checked 403.
func usageOnly(answers []scopeAnswer) bool {
	usage, others := false, 0
	for _, a := range answers {
		r, ex := a.resource, a.ex
		switch {
		case r == Usage && ex.Status == http.StatusOK:
			usage = true
		case r == Usage:
			return false
		case ex.Status != http.StatusForbidden:
			return false
		default:
			others++
		}
	}
	return usage && others > 0
}

// cursors is AUTH-04.
func (ac *authChecks) cursors(ctx context.Context) {
	s := ac.s
	const id = "AUTH-04"
	other := s.cfg.OtherTenantToken
	var usageQ url.Values
	for _, r := range s.resources() {
		ep := endpoint(r)
		if ac.isOpen(ctx, r) {
			s.skip(id, ep, "the endpoint answers without any credentials (AUTH-01): a cursor cannot add to that")
			continue
		}
		q := firstPageQuery(r, 2)
		if r == Usage {
			if usageQ == nil {
				start, end, _ := usageRange(ctx, s)
				usageQ = usageQuery(start, end, "hour", nil)
				usageQ.Set("limit", "2")
			}
			q = url.Values{}
			for k, v := range usageQ {
				q[k] = v
			}
		}
		first := s.get(ctx, ep, q)
		p1, ok := readComparedPage(r, first)
		if !ok {
			s.skip(id, ep, fmt.Sprintf("the first page answered %s: no cursor to replay", first.describe()))
			continue
		}
		if !p1.hasMore || p1.cursor == "" {
			s.skip(id, ep, "the first page is the only one: no cursor to replay")
			continue
		}
		cq := url.Values{}
		for k, v := range q {
			cq[k] = v
		}
		cq.Set("cursor", p1.cursor)
		ex := s.get(ctx, ep, cq, noAuth())
		switch ex.Status {
		case 0:
			s.errored(id, ep, ex, fmt.Sprintf("the cursor replayed without credentials: no answer (%v)", ex.Err))
			continue
		case http.StatusUnauthorized:
		default:
			s.fail(id, ep, fmt.Sprintf("a cursor replayed without credentials answered %d, want 401", ex.Status), ex.evidence(""))
			continue
		}
		if other == "" {
			s.pass(id, ep, "a cursor replayed without credentials is 401 (no other tenant's token to replay it with)")
			continue
		}
		mine := s.get(ctx, ep, cq) // what the cursor shows its own tenant
		p2, _ := readComparedPage(r, mine)
		theirs := s.get(ctx, ep, cq, bearer(other))
		pt, ok := readComparedPage(r, theirs)
		if !ok {
			s.pass(id, ep, fmt.Sprintf("a cursor is 401 without credentials and %d with another tenant's token", theirs.Status))
			continue
		}
		if r == Usage {
			if len(pt.data) > 0 && sameRecords(r, pt, p2) {
				s.fail(id, ep, "another tenant's token replaying a cursor got the first tenant's next page", theirs.evidence("/data"))
				continue
			}
			s.pass(id, ep, "a cursor is 401 without credentials and shows another tenant none of the first tenant's usage")
			continue
		}
		known := ac.firstTenantRecords(ctx, r)
		for _, rid := range p2.ids {
			if _, ok := known[rid]; !ok && rid != "" {
				known[rid] = decodeRecord(r, p2.items[rid])
			}
		}
		if leaks := leakedIDs(r, pt, known); len(leaks) > 0 {
			s.fail(id, ep, fmt.Sprintf("another tenant's token replaying a cursor got %d of the first tenant's records (first %q)", len(leaks), truncateID(leaks[0])), theirs.evidence("/data"))
			continue
		}
		s.pass(id, ep, "a cursor is 401 without credentials and shows another tenant none of the first tenant's records")
	}
}

// queryString is AUTH-05.
func (ac *authChecks) queryString(ctx context.Context) {
	s := ac.s
	const id = "AUTH-05"
	tok := s.cfg.Token
	for _, r := range s.resources() {
		ep := endpoint(r)
		if ac.isOpen(ctx, r) {
			s.skip(id, ep, "the endpoint answers without any credentials (AUTH-01)")
			continue
		}
		for _, param := range []string{"access_token", "api_key"} {
			q := firstPageQuery(r, 1)
			q.Set(param, tok)
			ex := s.get(ctx, ep, q, noAuth())
			switch ex.Status {
			case 0:
				s.errored(id, ep, ex, fmt.Sprintf("?%s=: no answer (%v)", param, ex.Err))
			case http.StatusUnauthorized:
				s.pass(id, ep, "a token in ?access_token= or ?api_key= alone is 401")
			default:
				s.fail(id, ep, fmt.Sprintf("the token in ?%s= without a header answered %d, want 401", param, ex.Status), ex.evidence(""))
			}
		}
	}
}

// headers is AUTH-06: the first three pages of each list (the
// first page of /usage), walked with the token as a bearer token and as
// X-API-Key, hold the same records; with both headers, X-API-Key wins.
func (ac *authChecks) headers(ctx context.Context) {
	s := ac.s
	const id = "AUTH-06"
	tok := s.cfg.Token
	wrong := wrongToken()
	for _, r := range s.resources() {
		ep := endpoint(r)
		q := firstPageQuery(r, 5)
		if r != Usage {
			q = firstPageQuery(r, threePageLimit(len(s.fullWalk(ctx, r).Records)))
		}
		var a, b *credentialWalk
		same := false
		for try := 0; try < 2 && !same; try++ { // once more for live writes
			a = ac.walkWith(ctx, r, q, bearer(tok))
			b = ac.walkWith(ctx, r, q, apiKey(tok))
			if a.problem != "" || b.problem != "" {
				break
			}
			same = sameRecords(r, a.page, b.page)
		}
		switch {
		case a.first.Status != http.StatusOK:
			s.skip(id, ep, fmt.Sprintf("the token as a bearer token answered %s", a.first.describe()))
			continue
		case b.first.Status != http.StatusOK:
			s.fail(id, ep, fmt.Sprintf("the token as X-API-Key answered %s, while as a bearer token 200", b.first.describe()), b.first.evidence(""))
			continue
		case a.problem != "":
			s.skip(id, ep, "the walk with a bearer token stopped early: "+a.problem)
			continue
		case b.problem != "" && b.ex.Status != http.StatusOK:
			s.fail(id, ep, fmt.Sprintf("with X-API-Key, page %d answered %s, while with a bearer token the same page was read", b.pages+1, b.ex.describe()), b.ex.evidence(""))
			continue
		case b.problem != "":
			s.skip(id, ep, "the walk with X-API-Key stopped early: "+b.problem)
			continue
		case !same:
			s.fail(id, ep, fmt.Sprintf("the token as X-API-Key and as a bearer token give different records over the first %s", plural(b.pages, "page")), b.ex.evidence("/data"))
			continue
		}
		both := s.get(ctx, ep, q, bearer(wrong), header("X-API-Key", tok))
		if both.Status != http.StatusOK {
			s.fail(id, ep, fmt.Sprintf("a right X-API-Key with a wrong Authorization answered %s, want 200: X-API-Key wins", both.describe()), both.evidence(""))
			continue
		}
		reverse := s.get(ctx, ep, q, bearer(tok), header("X-API-Key", wrong))
		// Any refusal shows that X-API-Key won; whether it is the 401 an
		// unknown credential deserves is AUTH-02's business.
		if reverse.Status < 400 || reverse.Status >= 500 {
			s.fail(id, ep, fmt.Sprintf("a wrong X-API-Key with a right Authorization answered %s, want a refusal (401): X-API-Key wins", reverse.describe()), reverse.evidence(""))
			continue
		}
		s.pass(id, ep, fmt.Sprintf("Authorization: Bearer and X-API-Key give the same records over %s; with both, X-API-Key wins", plural(a.pages, "page")))
	}
}

// credentialWalk is up to three pages of a list read with one credential,
// merged into one page.
type credentialWalk struct {
	page    comparedPage
	first   *exchange // the first page
	ex      *exchange // the last page read
	pages   int       // pages read
	problem string
}

// walkWith reads up to three pages of resource (one of /usage) with
// the credential of opt.
func (ac *authChecks) walkWith(ctx context.Context, resource string, q url.Values, opt reqOpt) *credentialWalk {
	w := &credentialWalk{page: comparedPage{items: map[string]json.RawMessage{}}}
	pq := url.Values{}
	for k, v := range q {
		pq[k] = v
	}
	for page := 0; page < 3; page++ {
		ex := ac.s.get(ctx, endpoint(resource), pq, opt)
		if w.first == nil {
			w.first = ex
		}
		w.ex = ex
		p, ok := readComparedPage(resource, ex)
		if !ok {
			w.problem = fmt.Sprintf("page %d answered %s", page+1, ex.describe())
			if ex.Status == http.StatusOK {
				w.problem = fmt.Sprintf("page %d is not a valid list envelope (ENV-01)", page+1)
			}
			return w
		}
		w.pages++
		w.page.ids = append(w.page.ids, p.ids...)
		w.page.data = append(w.page.data, p.data...)
		for k, v := range p.items {
			w.page.items[k] = v
		}
		if resource == Usage || !p.hasMore || p.cursor == "" {
			return w
		}
		pq.Set("cursor", p.cursor)
	}
	return w
}

// tenants is AUTH-07.
func (ac *authChecks) tenants(ctx context.Context) {
	s := ac.s
	const id = "AUTH-07"
	other := s.cfg.OtherTenantToken
	if other == "" {
		s.skip(id, "*", "no other tenant's token was configured")
		return
	}
	for _, r := range s.listResources() {
		ep := endpoint(r)
		known := ac.firstTenantRecords(ctx, r)
		ow := s.walkList(ctx, r, url.Values{}, 1000, bearer(other))
		ex := ow.Pages[0]
		if n := len(ow.Records); ow.Complete() && n >= 2 {
			// Walk it again across pages: a query that loses its tenant
			// after the first page shows on later pages.
			ow = s.walkList(ctx, r, url.Values{}, threePageLimit(n), bearer(other))
		}
		switch ex.Status {
		case 0:
			s.errored(id, ep, ex, fmt.Sprintf("GET %s with the other tenant's token: no answer (%v)", ep, ex.Err))
			continue
		case http.StatusUnauthorized:
			s.skip(id, ep, "the other tenant's token is not accepted (401)")
			continue
		case http.StatusForbidden:
			s.skip(id, ep, "the other tenant's token may not read this resource (403)")
			continue
		}
		if len(ow.Sizes) == 0 {
			s.skip(id, ep, fmt.Sprintf("the other tenant's first page could not be read: %s", ow.Problem))
			continue
		}
		if len(known) == 0 {
			s.skip(id, ep, "the first tenant has no records to look for")
			continue
		}
		leaked := -1
		n := 0
		for i, rec := range ow.Records {
			if k, ok := known[rec.ID]; ok && rec.ID != "" && jsonEqual(rec.Raw, k.Raw) {
				if leaked < 0 {
					leaked = i
				}
				n++
			}
		}
		if leaked >= 0 {
			page, _ := ow.pageOf(leaked)
			s.fail(id, ep, fmt.Sprintf("the other tenant's list holds %d of the first tenant's records, first %q on page %d", n, truncateID(ow.Records[leaked].ID), page), ow.evidence(leaked, "id"))
			continue
		}
		walked := fmt.Sprintf("the other tenant's list (%d records in %s) holds none of the first tenant's records", len(ow.Records), plural(len(ow.Sizes), "page"))
		if !ow.Complete() {
			walked += " as far as it could be walked (" + ow.Problem + ")"
		}
		if r != Conversations && r != Assistants {
			s.pass(id, ep, walked)
			continue
		}
		sample := sampleRecords(s.fullWalk(ctx, r).Records, 10)
		found, passed := 0, 0
		for _, rec := range sample {
			one := s.do(ctx, recordPath(r, rec.ID), "", bearer(other))
			switch {
			case one.Status == 0:
				s.errored(id, ep, one, fmt.Sprintf("GET %s with the other tenant's token: no answer (%v)", recordPath(r, rec.ID), one.Err))
			case one.Status >= 500:
				s.skip(id, ep, fmt.Sprintf("GET %s with the other tenant's token answered %d (HTTP-01 reports it)", recordPath(r, rec.ID), one.Status))
			case one.Status == http.StatusNotFound:
				passed++
			case one.Status == http.StatusOK:
				if jsonEqual(one.Body, rec.Raw) {
					found++
					s.fail(id, ep, fmt.Sprintf("the other tenant's token reads the first tenant's record %q", truncateID(rec.ID)), one.evidence(""))
				} else {
					passed++ // the other tenant's own record with the same id
				}
			default:
				s.fail(id, ep, fmt.Sprintf("the first tenant's record %q answered %d to the other tenant's token, want 404", truncateID(rec.ID), one.Status), one.evidence(""))
			}
		}
		if found == 0 && passed > 0 {
			s.pass(id, ep, fmt.Sprintf("%s, and %d of its ids are 404", walked, passed))
		}
	}
}
