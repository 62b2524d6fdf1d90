package orgapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
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
		for _, c := range []struct{ name, path string }{
			{"root", "/"},
			{"unknown", "/nope"},
			{"organisation in the singular", "/organisation"},
			{"unknown under an organisation", "/organisations/" + e.Org.ID + "/nope"},
			{"under an instruction", e.itemPath(in.ID) + "/extra"},
			{"an agent", e.agentsPath() + "/" + e.Agents[0].ID},
			{"an organisation", e.orgPath()},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := e.withT(t)
				requireProblem(t, e.do(get, c.path, nil, nil), http.StatusNotFound)
			})
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
			name, method, path string
			allow              []string
		}{
			{"PUT instruction", http.MethodPut, e.itemPath(in.ID), []string{"GET", "HEAD", "PATCH", "DELETE"}},
			{"POST instruction", post, e.itemPath(in.ID), []string{"GET", "HEAD", "PATCH", "DELETE"}},
			{"PUT instructions", http.MethodPut, e.listPath(), []string{"GET", "HEAD", "POST"}},
			{"DELETE instructions", del, e.listPath(), []string{"GET", "HEAD", "POST"}},
			{"PATCH instructions", patch, e.listPath(), []string{"GET", "HEAD", "POST"}},
			{"DELETE agents", del, e.agentsPath(), []string{"GET", "HEAD"}},
			{"POST agents", post, e.agentsPath(), []string{"GET", "HEAD"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := e.withT(t)
				var body any
				if c.method != del {
					body = regexBody("by a wrong method")
				}
				r := e.do(c.method, c.path, body, nil)
				requireProblem(t, r, http.StatusMethodNotAllowed)
				require.ElementsMatch(t, c.allow, allowOf(r), "%s %s: Allow %q", c.method, c.path, r.Header.Get("Allow"))
			})
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
			t.Run(m, func(t *testing.T) {
				e := e.withT(t)
				r := e.do(m, "/organisations", jsonObj{"name": "x"}, nil)
				requireProblem(t, r, http.StatusMethodNotAllowed)
				require.ElementsMatch(t, []string{"GET", "HEAD"}, allowOf(r), "%s /organisations: Allow %q", m, r.Header.Get("Allow"))
			})
		}
		r := e.do(http.MethodHead, "/organisations", nil, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.Empty(t, r.Body)
	})
}

func TestHeadServesGetWithoutBody(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(regexBody("x"))
		for _, c := range []struct{ name, path string }{
			{"instructions", e.listPath()},
			{"instructions with pageSize", e.listPath() + "?pageSize=5"},
			{"instruction", e.itemPath(in.ID)},
			{"agents", e.agentsPath()},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := e.withT(t)
				g := e.do(get, c.path, nil, nil)
				require.Equal(t, http.StatusOK, g.Status, "%s", g)
				r := e.do(http.MethodHead, c.path, nil, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r)
				require.Empty(t, r.Body)
				require.Equal(t, "application/json", mediaType(t, r))
				require.Equal(t, g.Header.Get("Content-Length"), r.Header.Get("Content-Length"))
			})
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
		for _, c := range []struct {
			name string
			body any
		}{
			{"nul in title", with(regexBody("nul \u0000 in title"), "usedBy", []string{e.Agents[0].ID})},
			{"nul in values", stringMatchBody("nul values", "a\u0000b")},
			{"nul text", semanticBody("nul text", "\u0000")},
			{"nul in assessmentId", with(regexBody("nul assessment"), "assessmentId", "a\u0000b")},
			{"long assessmentId", with(regexBody("long assessment"), "assessmentId", strings.Repeat("a", 201))},
			{"repeated member", `{"title":"a","title":"b"}`},
			{"deep nesting", `{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`},
			{"lone surrogate", `{"title":"\ud800"}`},
		} {
			t.Run("body "+c.name, func(t *testing.T) {
				e, body := e.withT(t), c.body
				r := e.do(post, e.listPath(), body, nil)
				require.Less(t, r.Status, 500, "body %v: %s", body, r)
				r = e.do(patch, e.itemPath(in.ID), body, nil)
				require.Less(t, r.Status, 500, "body %v: %s", body, r)
			})
		}
		for _, c := range []struct{ name, q string }{
			{"nul search", "search=%00"},
			{"nul inside search", "search=a%00b"},
			{"percent signs", "search=%25%25"},
			{"backslash", "search=%5C"},
			{"quote", "search='"},
			{"bad escape", "page=%zz"},
			{"nul agentId", "agentId=%00"},
			{"page far out", "pageSize=100&page=92233720368547758"},
			{"long search", "search=" + url.QueryEscape(strings.Repeat("é", 1000))},
			{"semicolon", "a;b=c"},
		} {
			t.Run("query "+c.name, func(t *testing.T) {
				e := e.withT(t)
				r := e.do(get, e.listPath()+"?"+c.q, nil, nil)
				require.Less(t, r.Status, 500, "%s", r)
			})
		}
		for _, c := range []struct{ name, path string }{
			{"nul id", e.itemPath("%00")},
			{"slash id", e.itemPath("%2F")},
			{"nul organisation", "/organisations/%00/instructions"},
			{"long id", e.itemPath(strings.Repeat("a", 5000))},
		} {
			t.Run("path "+c.name, func(t *testing.T) {
				e := e.withT(t)
				r := e.do(get, c.path, nil, nil)
				require.Less(t, r.Status, 500, "%s", r)
			})
		}
		for _, c := range []struct {
			name string
			h    hdr
		}{
			{"long X-API-Key", hdr{"X-API-Key": strings.Repeat("k", 10000)}},
			{"long Bearer", hdr{"X-API-Key": "", "Authorization": "Bearer " + strings.Repeat("k", 10000)}},
			{"non-ASCII X-API-Key", hdr{"X-API-Key": "aiu_\u00e9"}},
		} {
			t.Run("header "+c.name, func(t *testing.T) {
				e := e.withT(t)
				r := e.do(get, "/organisations", nil, c.h)
				require.Equal(t, http.StatusUnauthorized, r.Status, "%s", r)
			})
		}
	})
}
