package orgapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// ===================================================================== list

func TestListPaging(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		for i := range 25 {
			e.create(regexBody(fmt.Sprintf("n%02d", i)))
			e.clock.Advance(time.Millisecond)
		}
		l := e.list("")
		require.Equal(t, 1, l.Page)
		require.Equal(t, 20, l.PageSize)
		require.Equal(t, 25, l.TotalCount)
		require.Len(t, l.Items, 20)
		first := ids(l.Items)

		l = e.list("page=2")
		require.Equal(t, 2, l.Page)
		require.Equal(t, 20, l.PageSize)
		require.Equal(t, 25, l.TotalCount)
		require.Len(t, l.Items, 5)
		all := append(first, ids(l.Items)...)

		l = e.list("pageSize=100")
		require.Equal(t, 100, l.PageSize)
		require.Equal(t, all, ids(l.Items))

		l = e.list("pageSize=1&page=25")
		require.Equal(t, []string{all[24]}, ids(l.Items))

		// Past the end: 200, items [] (not null), the right totalCount.
		for _, q := range []string{"page=3", "page=26&pageSize=1", "page=1000&pageSize=100", "page=9223372036854775807"} {
			t.Run(q, func(t *testing.T) {
				e := e.withT(t)
				r := e.do(get, e.listPath()+"?"+q, nil, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r)
				m := decodeJSON[map[string]any](t, r)
				require.Equal(t, []any{}, m["items"], "%s: items must be []", q)
				require.EqualValues(t, 25, m["totalCount"], q)
				require.Equal(t, []string{"items", "page", "pageSize", "totalCount"}, keysOf(m))
			})
		}
		// An empty list is a page too.
		r := e.do(get, e.listPath()+"?search=nothing-matches", nil, nil)
		m := decodeJSON[map[string]any](t, r)
		require.Equal(t, []any{}, m["items"])
		require.EqualValues(t, 0, m["totalCount"])
	})
}

func TestListBadPagingParameters(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		e.create(regexBody("one"))
		for _, v := range []string{"0", "101", "-1", "abc", "1.5", "1e2", "99999999999999999999"} {
			t.Run("pageSize="+v, func(t *testing.T) {
				e := e.withT(t)
				r := e.do(get, e.listPath()+"?pageSize="+url.QueryEscape(v), nil, nil)
				requireProblem(t, r, http.StatusBadRequest, "pageSize")
			})
		}
		for _, v := range []string{"0", "-1", "abc", "1.5", "99999999999999999999"} {
			t.Run("page="+v, func(t *testing.T) {
				e := e.withT(t)
				r := e.do(get, e.listPath()+"?page="+url.QueryEscape(v), nil, nil)
				requireProblem(t, r, http.StatusBadRequest, "page")
			})
		}
	})
}

func TestListOrder(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		oldest := e.create(regexBody("oldest"))
		e.clock.Advance(time.Second)
		var same []string
		for i := range 6 {
			same = append(same, e.create(regexBody(fmt.Sprintf("same time %d", i))).ID)
		}
		slices.Sort(same)
		e.clock.Advance(time.Millisecond)
		newest := e.create(regexBody("newest"))
		// Updating does not move an instruction: the order is by createdAt.
		e.clock.Advance(time.Second)
		r := e.do(patch, e.itemPath(oldest.ID), jsonObj{"title": "oldest, updated last"}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)

		want := append(append([]string{newest.ID}, same...), oldest.ID)
		require.Equal(t, want, ids(e.list("pageSize=100").Items))
		var paged []string
		for p := 1; p <= 4; p++ {
			paged = append(paged, ids(e.list(fmt.Sprintf("pageSize=2&page=%d", p)).Items)...)
		}
		require.Equal(t, want, paged)
	})
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		a0, a1, a2 := e.Agents[0].ID, e.Agents[1].ID, e.Agents[2].ID
		s1 := e.create(with(semanticBody("s1", "text"), "usedBy", []string{a0}))
		r1 := e.create(with(regexBody("r1"), "usedBy", []string{a0, a1}))
		r2 := e.create(with(regexBody("r2"), "action", "Allow"))
		m1 := e.create(with(stringMatchBody("m1", "x"), "usedBy", []string{a1}))                          // Allow
		m2 := e.create(with(with(stringMatchBody("m2", "y"), "action", "Block"), "usedBy", []string{a0})) // Block
		all := []string{s1.ID, r1.ID, r2.ID, m1.ID, m2.ID}
		for _, c := range []struct {
			name, q string
			want    []string
		}{
			{"no filter", "", all},
			{"triggerType=Semantic", "triggerType=Semantic", []string{s1.ID}},
			{"triggerType=Regex", "triggerType=Regex", []string{r1.ID, r2.ID}},
			{"triggerType=StringMatch", "triggerType=StringMatch", []string{m1.ID, m2.ID}},
			{"action=Allow", "action=Allow", []string{r2.ID, m1.ID}},
			{"action=Block", "action=Block", []string{s1.ID, r1.ID, m2.ID}},
			{"agentType=DataProtection", "agentType=DataProtection", all},
			{"agentId of agent 0", "agentId=" + a0, []string{s1.ID, r1.ID, m2.ID}},
			{"agentId of agent 0 in uppercase", "agentId=" + strings.ToUpper(a0), []string{s1.ID, r1.ID, m2.ID}},
			{"agentId of agent 1", "agentId=" + a1, []string{r1.ID, m1.ID}},
			{"agentId of agent 2", "agentId=" + a2, []string{}},
			{"agentId unknown", "agentId=" + uuid.NewString(), []string{}},
			{"triggerType, action and agentId", "triggerType=StringMatch&action=Block&agentId=" + a0, []string{m2.ID}},
			{"triggerType and agentId", "triggerType=Regex&agentId=" + a1, []string{r1.ID}},
			{"action and agentId", "action=Allow&agentId=" + a0, []string{}},
			{"action and triggerType", "action=Block&triggerType=Regex", []string{r1.ID}},
			{"agentType, action and triggerType", "agentType=DataProtection&action=Allow&triggerType=Regex", []string{r2.ID}},
			{"empty values", "triggerType=&action=", all}, // empty means no filter
		} {
			t.Run(c.name, func(t *testing.T) {
				e := e.withT(t)
				l := e.list(c.q)
				require.ElementsMatch(t, c.want, ids(l.Items), "query %q", c.q)
				require.Equal(t, len(c.want), l.TotalCount, "query %q", c.q)
			})
		}
		for _, c := range []struct{ name, q, field string }{
			{"triggerType=regex", "triggerType=regex", "triggerType"},
			{"triggerType=Fuzzy", "triggerType=Fuzzy", "triggerType"},
			{"action=block", "action=block", "action"},
			{"action=Deny", "action=Deny", "action"},
			{"agentType=Other", "agentType=Other", "agentType"},
			{"agentType=dataprotection", "agentType=dataprotection", "agentType"},
			{"agentId=not-a-uuid", "agentId=not-a-uuid", "agentId"},
			{"agentId=123", "agentId=123", "agentId"},
			{"agentId without hyphens", "agentId=" + strings.ReplaceAll(a0, "-", ""), "agentId"},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := e.withT(t)
				r := e.do(get, e.listPath()+"?"+c.q, nil, nil)
				requireProblem(t, r, http.StatusBadRequest, c.field)
			})
		}
	})
}

func TestListSearch(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		ibanTitle := e.create(regexBody("block iban numbers"))
		ibanValue := e.create(stringMatchBody("bank words", "Iban", "Swift code"))
		merger := e.create(semanticBody("corporate events", "Unannounced MERGER talks"))
		pattern := e.create(withTrigger(regexBody("customer ids"), jsonObj{"type": "Regex", "pattern": `CUST-[0-9]{6}`}))
		percent := e.create(stringMatchBody("100% sure", "alpha"))
		noPercent := e.create(stringMatchBody("100 sure", "alpha"))
		underscore := e.create(stringMatchBody("under_score", "beta"))
		noUnderscore := e.create(stringMatchBody("gamma", "underXscore"))
		accent := e.create(stringMatchBody("ÉCOLE", "delta"))
		all := []string{ibanTitle.ID, ibanValue.ID, merger.ID, pattern.ID, percent.ID, noPercent.ID, underscore.ID, noUnderscore.ID, accent.ID}
		_ = noPercent
		_ = noUnderscore
		for s, want := range map[string][]string{
			"IBAN":        {ibanTitle.ID, ibanValue.ID},
			"iban":        {ibanTitle.ID, ibanValue.ID},
			"lock ib":     {ibanTitle.ID},
			"SWIFT":       {ibanValue.ID},
			"merger":      {merger.ID},
			"announced m": {merger.ID},
			"cust-":       {pattern.ID},
			"[0-9]{6}":    {pattern.ID},
			"%":           {percent.ID},
			"100%":        {percent.ID},
			"_":           {underscore.ID},
			"under_score": {underscore.ID},
			"r_s":         {underscore.ID},
			"école":       {accent.ID},
			"zzz":         {},
			"":            all,
		} {
			name := s
			if name == "" {
				name = "empty"
			}
			t.Run(name, func(t *testing.T) {
				e := e.withT(t)
				q := url.Values{"search": {s}}.Encode()
				l := e.list(q + "&pageSize=100")
				require.ElementsMatch(t, want, ids(l.Items), "search %q", s)
				require.Equal(t, len(want), l.TotalCount, "search %q", s)
			})
		}
		// Search combines with the other filters.
		l := e.list("search=iban&triggerType=Regex")
		require.Equal(t, []string{ibanTitle.ID}, ids(l.Items))
		// A search that is too long, or not UTF-8, is 400 naming search.
		r := e.do(get, e.listPath()+"?search="+strings.Repeat("a", 1001), nil, nil)
		requireProblem(t, r, http.StatusBadRequest, "search")
		r = e.do(get, e.listPath()+"?search=%FF", nil, nil)
		requireProblem(t, r, http.StatusBadRequest, "search")
	})
}

// A search term matches within one field: a term that spans the end of the
// title and the start of a value is in no field.
func TestListSearchDoesNotMatchAcrossFields(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		e.create(stringMatchBody("foo", "bar", "baz"))
		for _, s := range []string{"foo\nbar", "o\nb", "bar\nbaz"} {
			t.Run(s, func(t *testing.T) {
				e := e.withT(t)
				l := e.list(url.Values{"search": {s}}.Encode())
				require.Zero(t, l.TotalCount, "search %q matched across fields", s)
				require.Empty(t, l.Items, "search %q matched across fields", s)
			})
		}
	})
}

func TestListRepeatedParameterIs400(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		e.create(regexBody("one"))
		for _, c := range []struct{ name, q, field string }{
			{"page twice", "page=1&page=2", "page"},
			{"page twice, equal", "page=1&page=1", "page"},
			{"pageSize twice", "pageSize=10&pageSize=20", "pageSize"},
			{"triggerType twice", "triggerType=Regex&triggerType=Semantic", "triggerType"},
			{"action twice", "action=Block&action=Allow", "action"},
			{"agentType twice, equal", "agentType=DataProtection&agentType=DataProtection", "agentType"},
			{"agentId twice", "agentId=" + e.Agents[0].ID + "&agentId=" + e.Agents[1].ID, "agentId"},
			{"search twice", "search=a&search=b", "search"},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := e.withT(t)
				r := e.do(get, e.listPath()+"?"+c.q, nil, nil)
				requireProblem(t, r, http.StatusBadRequest, c.field)
			})
		}
	})
}

func TestListIgnoresUnknownParameters(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		e.create(regexBody("one"))
		e.create(semanticBody("two", "text"))
		plain := e.do(get, e.listPath(), nil, nil)
		require.Equal(t, http.StatusOK, plain.Status, "%s", plain)
		for _, q := range []string{"foo=bar", "sort=title&order=asc", "limit=1&offset=1", "foo=1&foo=2", "Page=5&PAGESIZE=1"} {
			t.Run(q, func(t *testing.T) {
				e := e.withT(t)
				r := e.do(get, e.listPath()+"?"+q, nil, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r)
				require.JSONEq(t, string(plain.Body), string(r.Body), q)
			})
		}
	})
}

// ================================================================= get one

func TestGetInstruction(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		r := e.do(post, e.listPath(), with(with(stringMatchBody("get me", "a", "b"), "usedBy", []string{e.Agents[1].ID}), "categoryId", uuid.NewString()), nil)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r)
		id := decodeJSON[spec.Instruction](t, r).ID
		g := e.do(get, e.itemPath(id), nil, nil)
		require.Equal(t, http.StatusOK, g.Status, "%s", g)
		require.Equal(t, "application/json", mediaType(t, g))
		require.JSONEq(t, string(r.Body), string(g.Body))

		for _, c := range []struct{ name, id string }{
			{"unknown uuid", uuid.NewString()},
			{"abc", "abc"},
			{"123", "123"},
			{"without hyphens", strings.ReplaceAll(id, "-", "")},
			{"one character more", id + "x"},
			{"one character less", id[:35]},
			{"leading space", "%20" + id},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := e.withT(t)
				requireProblem(t, e.do(get, e.itemPath(c.id), nil, nil), http.StatusNotFound)
			})
		}
	})
}
