package providertest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

// endpoint is a request of every endpoint, answered 200 for tenant t1.
type endpoint struct {
	path string
	q    url.Values
}

func endpoints() []endpoint {
	return []endpoint{
		{"/conversations", vals("limit", "5")},
		{"/conversations/c-000", nil},
		{"/assistants", vals("limit", "5")},
		{"/assistants/asst-00", nil},
		{"/events", vals("limit", "5")},
		{"/usage", usageQuery("hour", base, base.Add(24*time.Hour), "model")},
	}
}

func isList(path string) bool { return strings.Count(path, "/") == 1 }

// unauthorized checks a 401 problem with a Bearer challenge.
func unauthorized(t *testing.T, r *reply) {
	t.Helper()
	r.problem(t, http.StatusUnauthorized)
	if r.status == http.StatusUnauthorized && !strings.HasPrefix(strings.ToLower(r.header.Get("WWW-Authenticate")), "bearer") {
		t.Errorf("%s: 401 with WWW-Authenticate %q, want a Bearer challenge", r.req, r.header.Get("WWW-Authenticate"))
	}
}

func testAuth(t *testing.T, e *env) {
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+tokenFull))
	for _, ep := range endpoints() {
		for name, cr := range map[string]cred{
			"no credentials":           anonymous,
			"unknown bearer token":     bearer(tokenWrong),
			"unknown X-API-Key":        apiKey(tokenWrong),
			"empty bearer token":       rawHeader("Authorization", "Bearer "),
			"empty X-API-Key":          rawHeader("X-API-Key", ""),
			"Basic credentials":        rawHeader("Authorization", basic),
			"token with a suffix":      bearer(tokenFull + "x"),
			"token prefix":             bearer(tokenFull[:len(tokenFull)-1]),
			"token in another case":    bearer(strings.ToUpper(tokenFull)),
			"X-API-Key with Bearer in": apiKey("Bearer " + tokenFull),
		} {
			r := e.c.get(t, cr, ep.path, ep.q)
			if r.status != http.StatusUnauthorized {
				t.Errorf("%s: %v: want 401", name, r)
				continue
			}
			unauthorized(t, r)
		}
		// Credentials in the query string are not credentials.
		for _, p := range []string{"access_token", "api_key"} {
			unauthorized(t, e.c.get(t, anonymous, ep.path, withParams(ep.q, p, tokenFull)))
		}
		// The scheme is case-insensitive (RFC 9110).
		if r := e.c.get(t, rawHeader("Authorization", "bearer "+tokenFull), ep.path, ep.q); r.status != http.StatusOK {
			t.Errorf("%v: want 200 for the scheme written \"bearer\"", r)
		}
	}
	// Authentication comes before looking anything up.
	unauthorized(t, e.c.get(t, anonymous, "/conversations/no-such-id", nil))
	unauthorized(t, e.c.get(t, anonymous, "/usage", vals("granularity", "week")))
	unauthorized(t, e.c.get(t, anonymous, "/conversations", vals("limit", "0")))
}

func testScopes(t *testing.T, e *env) {
	for _, ep := range endpoints() {
		for _, cr := range []cred{noUsage, apiKey(tokenNoUsage)} {
			r := e.c.get(t, cr, ep.path, ep.q)
			if ep.path == "/usage" {
				r.problem(t, http.StatusForbidden)
			} else if r.status != http.StatusOK {
				t.Errorf("%v: a token without read:usage gets 200 here", r)
			}
		}
		if r := e.c.get(t, full, ep.path, ep.q); r.status != http.StatusOK {
			t.Errorf("%v: the full token gets 200", r)
		}
	}
	// Without the scope, parameters do not matter.
	e.c.get(t, noUsage, "/usage", vals("granularity", "week")).problem(t, http.StatusForbidden)
	e.c.get(t, noUsage, "/usage", nil).problem(t, http.StatusForbidden)
}

// sameAnswer checks that a and b are the same answer: equal single records,
// or list pages with equal data and hasMore whose cursors (each sent with
// its own credential) lead to equal next pages.
func sameAnswer(t *testing.T, e *env, what string, ep endpoint, a, b cred) {
	t.Helper()
	ra, rb := e.c.get(t, a, ep.path, ep.q), e.c.get(t, b, ep.path, ep.q)
	if ra.status != rb.status {
		t.Errorf("%s: %v and %v", what, ra, rb)
		return
	}
	if ra.status != http.StatusOK {
		return
	}
	if !isList(ep.path) {
		if !reflect.DeepEqual(decodeAny(t, ra.body), decodeAny(t, rb.body)) {
			t.Errorf("%s: %s answers differ:\n%s\n%s", what, ra.req, ra.body, rb.body)
		}
		return
	}
	pa, oka := ra.envelope(t)
	pb, okb := rb.envelope(t)
	if !oka || !okb {
		return
	}
	if !reflect.DeepEqual(docs(t, pa.Data), docs(t, pb.Data)) || pa.HasMore != pb.HasMore {
		t.Errorf("%s: %s pages differ:\n%s\n%s", what, ra.req, ra.body, rb.body)
		return
	}
	if !pa.HasMore {
		return
	}
	na := e.c.list(t, a, ep.path, withParams(ep.q, "cursor", *pa.NextCursor))
	nb := e.c.list(t, b, ep.path, withParams(ep.q, "cursor", *pb.NextCursor))
	if !reflect.DeepEqual(docs(t, na.Data), docs(t, nb.Data)) || na.HasMore != nb.HasMore {
		t.Errorf("%s: %s second pages differ", what, ra.req)
	}
}

func testHeaderForms(t *testing.T, e *env) {
	for _, ep := range endpoints() {
		sameAnswer(t, e, "Authorization: Bearer and X-API-Key", ep, bearer(tokenFull), apiKey(tokenFull))
		sameAnswer(t, e, "X-API-Key wins over Authorization (another tenant)", ep, both(bearer(tokenFull), apiKey(tokenT2)), other)
		sameAnswer(t, e, "X-API-Key wins over a wrong Authorization", ep, both(bearer(tokenWrong), apiKey(tokenFull)), full)
		unauthorized(t, e.c.get(t, both(bearer(tokenFull), apiKey(tokenWrong)), ep.path, ep.q))
	}
	// X-API-Key wins for scopes too.
	u := endpoints()[5]
	e.c.get(t, both(bearer(tokenFull), apiKey(tokenNoUsage)), u.path, u.q).problem(t, http.StatusForbidden)
	if r := e.c.get(t, both(bearer(tokenNoUsage), apiKey(tokenFull)), u.path, u.q); r.status != http.StatusOK {
		t.Errorf("%v: X-API-Key holds read:usage: want 200", r)
	}
	// A cursor does not depend on the header form of the request that got it.
	p := e.c.list(t, bearer(tokenFull), "/conversations", vals("limit", "3"))
	if p.HasMore {
		e.c.list(t, apiKey(tokenFull), "/conversations", vals("limit", "3", "cursor", *p.NextCursor))
	}
}

func testTenants(t *testing.T, e *env) {
	t1IDs := map[string]bool{}
	for _, res := range listResources {
		for _, it := range e.fx.items(res, tenant1) {
			t1IDs[it.id] = true
		}
		w := e.c.walk(t, other, "/"+res, nil, walkOpts{limits: []int{2}})
		got := ids(t, w.items)
		for _, id := range got {
			if t1IDs[id] {
				t.Errorf("tenant t2 sees %q of tenant t1 in /%s", id, res)
			}
		}
		sameIDs(t, "walk of /"+res+" as tenant t2", got, itemIDs(e.fx.items(res, tenant2)))
	}
	for _, res := range []string{"conversations", "assistants"} {
		for _, it := range e.fx.items(res, tenant1) {
			e.c.get(t, other, "/"+res+"/"+url.PathEscape(it.id), nil).problem(t, http.StatusNotFound)
		}
		for _, it := range e.fx.items(res, tenant2) {
			e.c.get(t, full, "/"+res+"/"+url.PathEscape(it.id), nil).problem(t, http.StatusNotFound)
			if r := e.c.get(t, other, "/"+res+"/"+url.PathEscape(it.id), nil); r.status != http.StatusOK {
				t.Errorf("%v: tenant t2 reads its own record", r)
			}
		}
	}
	start, end := base.AddDate(0, 0, -6), base.AddDate(0, 0, 7)
	for _, g := range [][]string{nil, {"userId"}, {"model", "assistantId", "userId", "department"}} {
		checkUsage(t, e, usageCheck{cr: other, q: usageQuery("day", start, end, g...), granularity: "day", start: start, end: end, groupBy: g, recs: e.fx.usage[tenant2], opts: walkOpts{limits: []int{10}}})
	}
}

func testMethods(t *testing.T, e *env) {
	for _, ep := range endpoints() {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			r := e.c.do(t, m, target(ep.path, ep.q), full)
			if r.status != http.StatusMethodNotAllowed {
				t.Errorf("%v: want 405", r)
				continue
			}
			allow := false
			for _, a := range strings.Split(r.header.Get("Allow"), ",") {
				allow = allow || strings.TrimSpace(a) == http.MethodGet
			}
			if !allow {
				t.Errorf("%s: 405 with Allow %q, want GET in it", r.req, r.header.Get("Allow"))
			}
			r.problem(t, http.StatusMethodNotAllowed)
			// Without credentials: 401 or 405, never 2xx.
			if r := e.c.do(t, m, target(ep.path, ep.q), anonymous); r.status != http.StatusUnauthorized && r.status != http.StatusMethodNotAllowed {
				t.Errorf("%v: want 401 or 405", r)
			}
		}
	}
}

func testGzip(t *testing.T, e *env) {
	for _, ep := range endpoints() {
		r := e.c.get(t, func(h http.Header) { full(h); h.Set("Accept-Encoding", "gzip") }, ep.path, withParams(ep.q, "limit", "100"))
		if r.status != http.StatusOK {
			t.Errorf("%v: want 200", r)
			continue
		}
		if r.header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s with Accept-Encoding: gzip: Content-Encoding %q, want gzip", r.req, r.header.Get("Content-Encoding"))
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(r.body))
		if err != nil {
			t.Errorf("%s: not gzip: %v", r.req, err)
			continue
		}
		body, err := io.ReadAll(zr)
		if err != nil || !json.Valid(body) {
			t.Errorf("%s: the decompressed body is not JSON (%v)", r.req, err)
		}
	}
}
