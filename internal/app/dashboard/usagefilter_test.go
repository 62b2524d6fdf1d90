package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
)

// The usage of the people of Acme: Ada by her email (as telemetry reports
// it), Rex by a provider's own id, and usage of no one.
var personUsage = testSource{name: "Vendor P", usage: []provider.UsageRecord{
	rec("p1", 0, 9, "ada@acme.test", "gpt-large", 100, 20, 0.5),
	rec("p2", 1, 10, "ada@acme.test", "claude", 200, 40, 1),
	rec("p3", 1, 11, "P-77", "gpt-small", 50, 10, 0.25),
	rec("p4", 2, 12, "", "gpt-small", 1000, 500, 2),
}}

// TestUsagePersonFilter keeps the usage page to one person, found by
// email, name or userId whatever the case: every tile, chart and table
// holds their usage alone; each user's row links to their page.
func TestUsagePersonFilter(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newUsageEnv(t, db)
		_, err := e.people.CreateUser(t.Context(), people.UserCreate{OrganisationID: e.org.ID, Email: "ada2@acme.test", Name: "Twin",
			Role: people.RoleReviewer, Password: "a long enough password"}, admin)
		require.NoError(t, err)
		_, err = e.people.CreateUser(t.Context(), people.UserCreate{OrganisationID: e.org.ID, Email: "ada3@acme.test", Name: "twin",
			Role: people.RoleReviewer, Password: "a long enough password"}, admin)
		require.NoError(t, err)
		b := e.browser()
		b.signIn(t, "rex@acme.test", "/")
		e.addSource(t, personUsage)
		from, to := usageDay0.Format("2006-01-02"), usageDay0.AddDate(0, 0, 2).Format("2006-01-02")
		base := "/usage?from=" + from + "&to=" + to

		// Everyone: each user's row links to the page kept to them.
		p := b.get(t, base)
		require.Equal(t, http.StatusOK, p.Status, p.Body)
		require.Contains(t, p.Body, `<a href="/usage?from=`+from+`&amp;to=`+to+`&amp;user=ada%40acme.test">ada@acme.test</a>`)
		require.Contains(t, p.Body, `<a href="/usage?from=`+from+`&amp;to=`+to+`&amp;user=P-77">P-77</a>`)
		require.Contains(t, p.Body, `<span>(no user)</span>`)
		// The suggestions: the people, then the other userIds.
		require.Contains(t, p.Body, `<option value="ada@acme.test">Ada</option>`)
		require.Contains(t, p.Body, `<option value="P-77"></option>`)
		require.Equal(t, 1, strings.Count(p.Body, `<option value="ada@acme.test">`))
		require.Contains(t, p.Body, `<label for="user">Person`)

		ada := personUsage.usage[:2]
		for _, who := range []string{"ada@acme.test", " ADA@Acme.Test ", "ada", "ADA"} {
			p = b.get(t, base+"&user="+url.QueryEscape(who))
			require.Equal(t, http.StatusOK, p.Status, who)
			require.Contains(t, p.Body, `Usage of <strong>ada@acme.test (Ada)</strong>`, who)
			var s sumsOf
			for _, r := range ada {
				s.add(r)
			}
			require.Equal(t, append([]string{"Total"}, s.cells()...), tableRows(t, p.Body, "t-total")[3], who)
			require.Contains(t, p.Body, `<span class="n">`+num(s.in+s.out)+`</span> tokens`)
			require.Equal(t, append([][]string{{"Model", "Requests", "Input tokens", "Output tokens", "Tokens", "Cost", "Share"}},
				groupTable(ada, func(r provider.UsageRecord) string { return r.Model }, 0)...), tableRows(t, p.Body, "t-c-model"), who)
			users := tableRows(t, p.Body, "t-c-user")
			require.Len(t, users, 3, who) // head, Ada, total
			require.Equal(t, "ada@acme.test", users[1][0])
			// Still suggested: the others, to switch to.
			require.Contains(t, p.Body, `<option value="P-77"></option>`, who)
			require.Contains(t, p.Body, `<a href="`+strings.ReplaceAll(base, "&", "&amp;")+`">Show everyone</a>`, who)
		}
		// A provider's own id, whatever the case; the form keeps it.
		p = b.get(t, base+"&metric=requests&user=p-77")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, `id="user" name="user" value="p-77"`)
		rows := tableRows(t, p.Body, "t-c-source")
		require.Equal(t, []string{"Vendor P", "1", "50", "10", "60", "USD 0.25", "100.0%"}, rows[1])
		// No one of that id: no usage, said so.
		p = b.get(t, base+"&user=nobody@acme.test")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "No usage of nobody@acme.test from")
		require.NotContains(t, p.Body, "<svg class=\"chart\"")

		// A name two people bear, a Person too long: 400 naming it.
		for q, want := range map[string]string{
			"user=TWIN":                           "The parameter user (TWIN) is the name of 2 people: ada2@acme.test, ada3@acme.test",
			"user=" + strings.Repeat("x", 321):    "The parameter user must be",
			"user=%ff":                            "The parameter user must be",
			"user=ada&from=2024-02-01&to=2024-01": "The parameter to",
		} {
			p = b.get(t, "/usage?"+q)
			require.Equal(t, http.StatusBadRequest, p.Status, q)
			require.Contains(t, p.Body, want, q)
			require.Contains(t, p.Body, `<form method="get" action="/usage"`, q)
		}
		require.True(t, slices.ContainsFunc(personUsage.usage, func(r provider.UsageRecord) bool { return r.UserID == "" }))
	})
}

// TestConversationLinksToUsage: a conversation's person links to their
// usage over the 30 days up to the conversation.
func TestConversationLinksToUsage(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newUsageEnv(t, db)
		one, _ := convsFixture(t, e, "Long name")
		b := e.browser()
		b.signIn(t, "rex@acme.test", "/")
		p := b.get(t, "/conversations/c1?source="+url.QueryEscape(one))
		require.Equal(t, http.StatusOK, p.Status)
		want := "/usage?from=" + usageDay0.AddDate(0, 0, -29).Format("2006-01-02") + "&to=" + usageDay0.Format("2006-01-02") +
			"&user=Ann.Lee%40acme.example"
		require.Contains(t, html.UnescapeString(p.Body), `<a href="`+want+`">their usage</a>`)
		p = b.get(t, want)
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "Usage of <strong>Ann.Lee@acme.example</strong>")
	})
}
