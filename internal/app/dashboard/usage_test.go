package dashboard_test

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/dashboard"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// usageDay0 is the first day of the test usage: three days ago (UTC), so
// that every bucket is complete when the source syncs.
var usageDay0 = time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3)

// usageEnv is an env whose dashboard has the sources service, as `aiusage
// service serve` composes it.
type usageEnv struct {
	*env
	src *sources.Service
}

func newUsageEnv(t *testing.T, db *sqldb.DB) *usageEnv {
	t.Helper()
	e, src := newEnvWith(t, db, sources.Config{AllowPrivate: true})
	return &usageEnv{env: e, src: src}
}

// testSource is what a provider serves: usage records and conversations.
type testSource struct {
	name  string
	usage []provider.UsageRecord
	convs []spec.Conversation
}

// addSource serves ts from a memsource provider, adds it as a source of
// the organisation and syncs it.
func (e *usageEnv) addSource(t *testing.T, ts testSource) string {
	t.Helper()
	ctx := t.Context()
	mem := memsource.New()
	for _, c := range ts.convs {
		require.NoError(t, mem.UpsertConversation(ctx, "acme", c))
	}
	for _, u := range ts.usage {
		require.NoError(t, mem.RecordUsage(ctx, "acme", u))
	}
	h, err := provider.NewHandler(mem, provider.WithTokens(provider.Token{Secret: providerToken, Tenant: "acme"}))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: ts.name, URL: srv.URL, Token: providerToken})
	require.NoError(t, err)
	_, err = e.src.SyncNow(ctx, s.ID)
	require.NoError(t, err)
	return s.ID
}

func rec(id string, day, hour int, user, model string, in, out int64, cost float64) provider.UsageRecord {
	return provider.UsageRecord{ID: id, At: usageDay0.AddDate(0, 0, day).Add(time.Duration(hour) * time.Hour),
		UserID: user, Model: model, InputTokens: in, OutputTokens: out, Cost: cost}
}

// The usage of two sources; costs are exact in binary.
var (
	vendorOne = testSource{name: "Vendor One", usage: []provider.UsageRecord{
		rec("a1", 0, 9, "u1", "gpt-large", 100, 20, 0.5),
		rec("a2", 0, 10, "u2", "gpt-large", 200, 40, 1),
		rec("a3", 1, 11, "u1", "gpt-small", 50, 10, 0.25),
		rec("a4", 2, 15, "u2", "gpt-small", 1500, 300, 1.75),
	}}
	vendorTwo = testSource{name: "Vendor Two", usage: []provider.UsageRecord{
		rec("b1", 1, 12, "u3", "claude", 1000, 500, 2),
		rec("b2", 2, 1, "u1", "claude", 300, 100, 0.75),
	}}
)

// sumsOf adds up records as the page's tables show them.
type sumsOf struct {
	req, in, out int64
	cost         float64
}

func (s *sumsOf) add(u provider.UsageRecord) {
	s.req++
	s.in += u.InputTokens
	s.out += u.OutputTokens
	s.cost += u.Cost
}

func (s sumsOf) cells() []string {
	return []string{num(s.req), num(s.in), num(s.out), num(s.in + s.out), fmt.Sprintf("USD %.2f", s.cost)}
}

// num writes n with thousands separators, as the page does.
func num(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

var (
	tableRe = regexp.MustCompile(`(?s)<tr>(.*?)</tr>`)
	cellRe  = regexp.MustCompile(`(?s)<t[hd][ >].*?</t[hd]>`)
	tagRe   = regexp.MustCompile(`<[^>]*>`)
)

// tableRows returns the text of the cells of the table with id, row by
// row: the head, the body, the foot.
func tableRows(t *testing.T, body, id string) [][]string {
	t.Helper()
	i := strings.Index(body, `<table id="`+id+`"`)
	require.GreaterOrEqual(t, i, 0, "no table %s", id)
	tbl := body[i : i+strings.Index(body[i:], "</table>")]
	var out [][]string
	for _, m := range tableRe.FindAllStringSubmatch(tbl, -1) {
		var row []string
		for _, c := range cellRe.FindAllString(m[1], -1) {
			row = append(row, strings.Join(strings.Fields(html.UnescapeString(tagRe.ReplaceAllString(c, " "))), " "))
		}
		out = append(out, row)
	}
	return out
}

// groupTable is the expected body and foot of a per-group table: groups
// by key, largest by tokens first, with their share.
func groupTable(recs []provider.UsageRecord, key func(provider.UsageRecord) string, folded int) [][]string {
	by := map[string]*sumsOf{}
	var total sumsOf
	for _, r := range recs {
		k := key(r)
		if by[k] == nil {
			by[k] = &sumsOf{}
		}
		by[k].add(r)
		total.add(r)
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(by[b].in+by[b].out, by[a].in+by[a].out), cmp.Compare(by[b].req, by[a].req), cmp.Compare(a, b))
	})
	var out [][]string
	for i, k := range keys {
		name := k
		if i >= len(keys)-folded {
			name += " (in Other)"
		}
		share := fmt.Sprintf("%.1f%%", 100*float64(by[k].in+by[k].out)/float64(total.in+total.out))
		out = append(out, append(append([]string{name}, by[k].cells()...), share))
	}
	return append(out, append(append([]string{"Total"}, total.cells()...), "100%"))
}

func TestUsagePage(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newUsageEnv(t, db)
		adm, rev := e.browser(), e.browser()
		adm.signIn(t, "ada@acme.test", "/")
		rev.signIn(t, "rex@acme.test", "/")

		// Without a session: to the sign-in page, and back.
		p := e.browser().get(t, "/usage")
		require.Equal(t, http.StatusSeeOther, p.Status)
		require.Equal(t, "/signin?next=%2Fusage", p.location())

		// No source yet: the empty state.
		p = adm.get(t, "/usage")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "No usage yet: connect a source")
		require.NotContains(t, p.Body, "<svg")

		ids := map[string]string{}
		ids[e.addSource(t, vendorOne)] = vendorOne.name
		ids[e.addSource(t, vendorTwo)] = vendorTwo.name
		all := append(slices.Clone(vendorOne.usage), vendorTwo.usage...)

		from := usageDay0.Format("2006-01-02")
		to := usageDay0.AddDate(0, 0, 2).Format("2006-01-02")
		for _, b := range []*browser{adm, rev} {
			p = b.get(t, "/usage?from="+from+"&to="+to)
			require.Equal(t, http.StatusOK, p.Status, p.Body)
			requireSecurityHeaders(t, p)
			require.Contains(t, p.Body, `<a href="/usage" aria-current="page">Usage</a>`)
			require.Contains(t, p.Body, `<a href="/conversations" >Conversations</a>`)
		}
		require.Equal(t, 4, strings.Count(p.Body, `<svg class="chart" viewBox="0 0 640 220" role="img" aria-label="`), "four charts")
		require.Contains(t, p.Body, `<title>Tokens (input + output) per day, per source: Vendor One, Vendor Two</title>`)
		require.Contains(t, p.Body, `<rect class="bar"`)
		require.NotContains(t, p.Body, `style=`, "the CSP allows no inline style")
		require.NotContains(t, p.Body, `<script>`)

		// The total per day: one row per day with usage, and the sum.
		perDay := map[string]*sumsOf{}
		var total sumsOf
		for _, r := range all {
			d := r.At.Format("2006-01-02")
			if perDay[d] == nil {
				perDay[d] = &sumsOf{}
			}
			perDay[d].add(r)
			total.add(r)
		}
		// The overview sums the last 30 days, which hold all of it.
		ov := rev.get(t, "/")
		// Counts with thousands separators, money with its currency, as
		// on the usage page.
		require.Contains(t, ov.Body, fmt.Sprintf(`<span class="n">%s</span> AI requests in the last 30 days: %s tokens, cost USD %.2f`,
			num(total.req), num(total.in+total.out), total.cost), ov.Body)
		want := [][]string{{"Day", "Requests", "Input tokens", "Output tokens", "Tokens", "Cost"}}
		for i := range 3 {
			d := usageDay0.AddDate(0, 0, i).Format("2006-01-02")
			want = append(want, append([]string{d}, perDay[d].cells()...))
		}
		want = append(want, append([]string{"Total"}, total.cells()...))
		require.Equal(t, want, tableRows(t, p.Body, "t-total"))
		require.Contains(t, p.Body, `<span class="n">`+num(total.in+total.out)+`</span> tokens`)

		// Per source, model and user.
		head := func(dim string) []string {
			return []string{dim, "Requests", "Input tokens", "Output tokens", "Tokens", "Cost", "Share"}
		}
		for _, c := range []struct {
			table, dim string
			key        func(provider.UsageRecord) string
		}{
			{"t-c-source", "Source", func(r provider.UsageRecord) string {
				if slices.ContainsFunc(vendorOne.usage, func(o provider.UsageRecord) bool { return o.ID == r.ID }) {
					return vendorOne.name
				}
				return vendorTwo.name
			}},
			{"t-c-model", "Model", func(r provider.UsageRecord) string { return r.Model }},
			{"t-c-user", "User", func(r provider.UsageRecord) string { return r.UserID }},
		} {
			require.Equal(t, append([][]string{head(c.dim)}, groupTable(all, c.key, 0)...), tableRows(t, p.Body, c.table), c.table)
		}
		// The matrix of the chart per model: tokens per day and model.
		m := tableRows(t, p.Body, "m-c-model")
		require.Equal(t, []string{"Day", "claude", "gpt-small", "gpt-large", "Total"}, m[0])
		require.Equal(t, []string{from, "0", "0", "360", "360"}, m[1])
		require.Equal(t, []string{to, "400", "1,800", "0", "2,200"}, m[3])

		// Requests instead of tokens; by hour.
		p = adm.get(t, "/usage?metric=requests&from="+from+"&to="+to)
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, `<h2 id="h-c-user">Requests per user</h2>`)
		require.Equal(t, []string{from, "1", "1", "0"}, tableRows(t, p.Body, "m-c-user")[1][:4])
		p = adm.get(t, "/usage?granularity=hour&from="+from+"&to="+from)
		require.Equal(t, http.StatusOK, p.Status)
		rows := tableRows(t, p.Body, "t-total")
		require.Equal(t, [][]string{
			{"Hour", "Requests", "Input tokens", "Output tokens", "Tokens", "Cost"},
			{from + " 09:00", "1", "100", "20", "120", "USD 0.50"},
			{from + " 10:00", "1", "200", "40", "240", "USD 1.00"},
			{"Total", "2", "300", "60", "360", "USD 1.50"},
		}, rows)

		// A range without usage.
		p = adm.get(t, "/usage?from=2020-01-01&to=2020-01-31")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "No usage from 1 January 2020 – 31 January 2020")

		// Bad parameters: 400 naming the parameter, with the form.
		for q, name := range map[string]string{
			"from=2024-13-01":                  "from",
			"to=yesterday":                     "to",
			"from=2024-05-02&to=2024-05-01":    "to",
			"granularity=week":                 "granularity",
			"metric=joy":                       "metric",
			"from=2020-01-01&to=2024-01-01":    "from and to",
			"granularity=hour&from=2024-01-01": "from and to",
		} {
			p = adm.get(t, "/usage?"+q)
			require.Equal(t, http.StatusBadRequest, p.Status, q)
			require.Contains(t, p.Body, "The parameter"+map[bool]string{true: "s"}[name == "from and to"]+" "+name, q)
			require.Contains(t, p.Body, `<form method="get" action="/usage"`)
		}
	})
}

func TestUsageFoldsIntoOther(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newUsageEnv(t, db)
		b := e.browser()
		b.signIn(t, "rex@acme.test", "/")
		var recs []provider.UsageRecord
		for i := range 9 {
			recs = append(recs, rec(fmt.Sprint("r", i), 1, i, fmt.Sprint("user", i), "m", int64(100*(i+1)), 0, 0.25))
		}
		e.addSource(t, testSource{name: "Many", usage: recs})
		p := b.get(t, "/usage")
		require.Equal(t, http.StatusOK, p.Status)
		rows := tableRows(t, p.Body, "t-c-user")
		require.Equal(t, append([][]string{{"User", "Requests", "Input tokens", "Output tokens", "Tokens", "Cost", "Share"}},
			groupTable(recs, func(r provider.UsageRecord) string { return r.UserID }, 4)...), rows)
		require.Equal(t, "user8", rows[1][0])
		require.Contains(t, p.Body, `<span>Other (4)</span>`)
		m := tableRows(t, p.Body, "m-c-user")
		require.Equal(t, []string{"Day", "user8", "user7", "user6", "user5", "user4", "Other (4)", "Total"}, m[0])
		require.Equal(t, []string{usageDay0.AddDate(0, 0, 1).Format("2006-01-02"), "900", "800", "700", "600", "500", "1,000", "4,500"}, m[1])
	})
}

func TestUsageWithoutSourcesService(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		// The dashboard alone, built without the sources' service (the
		// service always has one).
		e := newEnv(t, db)
		d, err := dashboard.New(dashboard.Config{People: e.people, Orgs: e.orgs, Review: e.review})
		require.NoError(t, err)
		r := chi.NewRouter()
		d.Routes(r)
		srv := httptest.NewServer(r)
		t.Cleanup(srv.Close)
		e.url = srv.URL
		b := e.browser()
		b.signIn(t, "rex@acme.test", "/")
		for _, path := range []string{"/usage", "/conversations"} {
			p := b.get(t, path)
			require.Equal(t, http.StatusOK, p.Status, path)
			require.Contains(t, p.Body, "this service has no sources configured", path)
		}
	})
}

func conversation(id string, hoursAgo int, user, assistant string, messages ...string) spec.Conversation {
	start := usageDay0.Add(-time.Duration(hoursAgo) * time.Hour)
	c := spec.Conversation{ID: id, StartedAt: spec.NewTime(start), UpdatedAt: spec.NewTime(start.Add(time.Minute)),
		User: &spec.User{ID: user, Email: user + "@acme.example"}, Assistant: &spec.AssistantRef{ID: assistant, Name: "Helper " + assistant}}
	for i, m := range messages {
		c.Messages = append(c.Messages, spec.Message{ID: fmt.Sprint("m", i), Role: "user", Content: m})
	}
	return c
}

var nextRe = regexp.MustCompile(`<a href="(/conversations\?[^"]*)" rel="next">`)

func TestConversationsPage(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newUsageEnv(t, db)
		b := e.browser()
		b.signIn(t, "rex@acme.test", "/")

		p := e.browser().get(t, "/conversations")
		require.Equal(t, http.StatusSeeOther, p.Status)
		require.Equal(t, "/signin?next=%2Fconversations", p.location())
		p = b.get(t, "/conversations")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "No conversations yet: connect a source")

		// 30 conversations an hour apart in one source, 3 in another.
		one := testSource{name: "Vendor One"}
		for i := range 30 {
			one.convs = append(one.convs, conversation(fmt.Sprintf("c%02d", i), i, fmt.Sprint("u", i%3), fmt.Sprint("a", i%2),
				fmt.Sprintf("Question %d <b>about</b> things", i), "and more"))
		}
		two := testSource{name: "Vendor Two", convs: []spec.Conversation{
			conversation("d0", 0, "u0", "a9", strings.Repeat("long ", 100)),
			conversation("d1", 5, "u9", "a0"),
			conversation("d2", 48, "u0", "a1", "Third"),
		}}
		e.addSource(t, one)
		e.addSource(t, two)

		// walk follows the next links from path and returns the rows.
		walk := func(path string) [][]string {
			t.Helper()
			var out [][]string
			for pages := 0; path != ""; pages++ {
				require.Less(t, pages, 10)
				p := b.get(t, path)
				require.Equal(t, http.StatusOK, p.Status, p.Body)
				if !strings.Contains(p.Body, `<table id="conversations"`) {
					return out
				}
				rows := tableRows(t, p.Body, "conversations")
				require.Equal(t, []string{"Started", "Conversation", "User", "Assistant", "Messages", "Source"}, rows[0])
				require.LessOrEqual(t, len(rows)-1, dashboard.ConversationsPerPage)
				out = append(out, rows[1:]...)
				path = ""
				if m := nextRe.FindStringSubmatch(p.Body); m != nil {
					path = html.UnescapeString(m[1])
				}
			}
			return out
		}
		rows := walk("/conversations")
		require.Len(t, rows, 33)
		require.True(t, slices.IsSortedFunc(rows, func(a, b []string) int { return strings.Compare(b[0], a[0]) }), "newest first")
		find := func(rows [][]string, id string) []string {
			for _, r := range rows {
				if strings.HasSuffix(r[1], " "+id) {
					return r
				}
			}
			t.Fatalf("no row %s", id)
			return nil
		}
		c05 := usageDay0.Add(-5 * time.Hour).Format("2006-01-02 15:04 UTC")
		require.Equal(t, []string{c05, "Question 5 <b>about</b> things c05", "u2@acme.example u2", "Helper a1 (a1)", "2", "Vendor One"}, find(rows, "c05"))
		require.Equal(t, []string{c05, "(no message) d1", "u9@acme.example u9", "Helper a0 (a0)", "0", "Vendor Two"}, find(rows, "d1"))
		long := find(rows, "d0")[1]
		require.True(t, strings.HasSuffix(long, "… d0"), long)
		require.Less(t, len([]rune(long)), 150)

		// Filters: user, assistant, time range (to included).
		for _, r := range walk("/conversations?user=u0") {
			require.Contains(t, r[2], " u0")
		}
		require.Len(t, walk("/conversations?user=u0"), 12)
		got := walk("/conversations?assistant=a1&from=" + usageDay0.AddDate(0, 0, -1).Format("2006-01-02") +
			"&to=" + usageDay0.AddDate(0, 0, -1).Format("2006-01-02"))
		require.Len(t, got, 12, "a1 has c01, c03 ... c23 the day before")
		for _, r := range got {
			require.Equal(t, "Helper a1 (a1)", r[3])
		}
		p = b.get(t, "/conversations?user=nobody")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "No conversation matches this search.")

		// The next link keeps the filters.
		p = b.get(t, "/conversations?user=u0&assistant=a0")
		require.Equal(t, http.StatusOK, p.Status)
		require.NotRegexp(t, nextRe, p.Body)
		p = b.get(t, "/conversations")
		m := nextRe.FindStringSubmatch(p.Body)
		require.NotNil(t, m)
		next, err := url.Parse(html.UnescapeString(m[1]))
		require.NoError(t, err)
		pos := next.Query().Get("next")
		raw, err := base64.RawURLEncoding.DecodeString(pos)
		require.NoError(t, err, "the position is base64url")
		require.Contains(t, string(raw), `"id":`)

		// Bad parameters and tampered positions: 400 naming the parameter.
		for q, name := range map[string]string{
			"from=31-01-2025":                  "from",
			"to=2025-02-30":                    "to",
			"from=2025-02-02&to=2025-02-01":    "to",
			"user=" + strings.Repeat("x", 300): "user",
			"next=!!":                          "next",
			"next=" + pos[:len(pos)-4]:         "next",
			"next=" + pos + "A":                "next",
			"next=" + base64.RawURLEncoding.EncodeToString([]byte(`{"startedAt":"2025-01-01T00:00:00Z","id":"x","source":"y","more":1}`)): "next",
			"next=" + base64.RawURLEncoding.EncodeToString([]byte(`{"startedAt":"2025-01-01T00:00:00Z","id":"","source":"y"}`)):           "next",
		} {
			p = b.get(t, "/conversations?"+q)
			require.Equal(t, http.StatusBadRequest, p.Status, q)
			require.Contains(t, p.Body, "The parameter "+name, q)
		}
	})
}
