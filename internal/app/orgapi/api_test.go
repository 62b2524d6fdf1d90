package orgapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

const (
	get   = http.MethodGet
	post  = http.MethodPost
	patch = http.MethodPatch
	del   = http.MethodDelete
)

// ========================================================= methods, paths

func TestUnknownPathsAre404(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(regexBody("x"))
		for _, p := range []string{
			"/", "/nope", "/organisation", "/organisations/" + e.Org.ID + "/nope",
			e.itemPath(in.ID) + "/extra", e.agentsPath() + "/" + e.Agents[0].ID,
			e.orgPath(),
		} {
			requireProblem(t, e.do(get, p, nil, nil), http.StatusNotFound)
		}
	})
}

// allowOf returns the methods of an Allow header.
func allowOf(r response) []string {
	var allow []string
	for _, m := range strings.Split(r.Header.Get("Allow"), ",") {
		if m = strings.TrimSpace(m); m != "" {
			allow = append(allow, m)
		}
	}
	return allow
}

func TestMethodNotAllowedOnInstructions(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(regexBody("x"))
		before := e.state()
		for _, c := range []struct {
			method, path string
			allow        []string
		}{
			{http.MethodPut, e.itemPath(in.ID), []string{"GET", "HEAD", "PATCH", "DELETE"}},
			{post, e.itemPath(in.ID), []string{"GET", "HEAD", "PATCH", "DELETE"}},
			{http.MethodPut, e.listPath(), []string{"GET", "HEAD", "POST"}},
			{del, e.listPath(), []string{"GET", "HEAD", "POST"}},
			{patch, e.listPath(), []string{"GET", "HEAD", "POST"}},
			{del, e.agentsPath(), []string{"GET", "HEAD"}},
			{post, e.agentsPath(), []string{"GET", "HEAD"}},
		} {
			var body any
			if c.method != del {
				body = regexBody("by a wrong method")
			}
			r := e.do(c.method, c.path, body, nil)
			requireProblem(t, r, http.StatusMethodNotAllowed)
			assert.ElementsMatch(t, c.allow, allowOf(r), "%s %s: Allow %q", c.method, c.path, r.Header.Get("Allow"))
		}
		e.requireUnchanged(before)
	})
}

// GET /organisations is the only method on /organisations: any other is 405
// with Allow: GET, HEAD, and HEAD is served like GET.
func TestMethodsOnOrganisations(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		for _, m := range []string{post, http.MethodPut, patch, del} {
			r := e.do(m, "/organisations", jsonObj{"name": "x"}, nil)
			requireProblem(t, r, http.StatusMethodNotAllowed)
			assert.ElementsMatch(t, []string{"GET", "HEAD"}, allowOf(r), "%s /organisations: Allow %q", m, r.Header.Get("Allow"))
		}
		r := e.do(http.MethodHead, "/organisations", nil, nil)
		assert.Equal(t, http.StatusOK, r.Status, "%s", r)
		assert.Empty(t, r.Body)
	})
}

func TestHeadServesGetWithoutBody(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(regexBody("x"))
		for _, p := range []string{e.listPath(), e.listPath() + "?pageSize=5", e.itemPath(in.ID), e.agentsPath()} {
			g := e.do(get, p, nil, nil)
			require.Equal(t, http.StatusOK, g.Status, "%s", g)
			r := e.do(http.MethodHead, p, nil, nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r)
			require.Empty(t, r.Body)
			require.Equal(t, "application/json", mediaType(t, r))
			require.Equal(t, g.Header.Get("Content-Length"), r.Header.Get("Content-Length"))
		}
		r := e.doKey("", http.MethodHead, e.listPath(), nil, nil)
		require.Equal(t, http.StatusUnauthorized, r.Status, "%s", r)
		require.Empty(t, r.Body)
		r = e.do(http.MethodHead, e.itemPath(uuid.NewString()), nil, nil)
		require.Equal(t, http.StatusNotFound, r.Status, "%s", r)
	})
}

// Odd but well-formed requests never get a 5xx (do fails the test on one).
func TestOddRequestsGetNo5xx(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(regexBody("x"))
		for _, body := range []any{
			with(regexBody("nul \u0000 in title"), "usedBy", []string{e.Agents[0].ID}),
			stringMatchBody("nul values", "a\u0000b"),
			semanticBody("nul text", "\u0000"),
			with(regexBody("nul assessment"), "assessmentId", "a\u0000b"),
			with(regexBody("long assessment"), "assessmentId", strings.Repeat("a", 201)),
			`{"title":"a","title":"b"}`,
			`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
			`{"title":"\ud800"}`,
		} {
			r := e.do(post, e.listPath(), body, nil)
			assert.Less(t, r.Status, 500, "body %v: %s", body, r)
			r = e.do(patch, e.itemPath(in.ID), body, nil)
			assert.Less(t, r.Status, 500, "body %v: %s", body, r)
		}
		for _, q := range []string{"search=%00", "search=a%00b", "search=%25%25", "search=%5C", "search='", "page=%zz",
			"agentId=%00", "pageSize=100&page=92233720368547758", "search=" + url.QueryEscape(strings.Repeat("é", 1000)), "a;b=c"} {
			r := e.do(get, e.listPath()+"?"+q, nil, nil)
			assert.Less(t, r.Status, 500, "%s", r)
		}
		for _, p := range []string{e.itemPath("%00"), e.itemPath("%2F"), "/organisations/%00/instructions", e.itemPath(strings.Repeat("a", 5000))} {
			r := e.do(get, p, nil, nil)
			assert.Less(t, r.Status, 500, "%s", r)
		}
		for _, h := range []hdr{
			{"X-API-Key": strings.Repeat("k", 10000)},
			{"X-API-Key": "", "Authorization": "Bearer " + strings.Repeat("k", 10000)},
			{"X-API-Key": "aiu_\u00e9"},
		} {
			r := e.do(get, "/organisations", nil, h)
			require.Equal(t, http.StatusUnauthorized, r.Status, "%s", r)
		}
	})
}
