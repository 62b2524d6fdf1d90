package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

var (
	berlinTimeRe = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)? Europe/Berlin`)
	utcTimeRe    = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)? UTC`)
)

// TestPagesShowTheOrganisationsZone: with the organisation's zone set to
// Europe/Berlin, every page that shows a time shows it there, named, and
// none shows a time in UTC; the times of the sources' records are the
// instants they hold, moved to Berlin. Date filters still say they take a
// UTC day.
func TestPagesShowTheOrganisationsZone(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newUsageEnv(t, db)
		one, _ := convsFixture(t, e, "Long name")
		berlin, err := time.LoadLocation("Europe/Berlin")
		require.NoError(t, err)
		in := func(h int) string {
			return usageDay0.Add(time.Duration(h)*time.Hour).In(berlin).Format("2006-01-02 15:04") + " Europe/Berlin"
		}
		b := e.browser()
		b.signIn(t, "ada@acme.test", "/")
		require.Equal(t, http.StatusCreated, b.post(t, "/settings/api-keys",
			url.Values{"name": {"crm-sync"}, "type": {"API"}, "expiry": {"default"}}).Status)
		p := b.post(t, "/settings/organisation", url.Values{"timeZone": {"Europe/Berlin"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		p = b.get(t, p.location())
		require.Contains(t, p.Body, "Pages show times in <strong>Europe/Berlin</strong>")

		// The notice of an invitation names the one-time password's end in Berlin.
		p = b.post(t, "/settings/users", url.Values{"email": {"vera@acme.test"}, "name": {"Vera"}, "role": {"Reviewer"}})
		require.Equal(t, http.StatusCreated, p.Status)
		require.Regexp(t, `until \d{4}-\d\d-\d\d \d\d:\d\d Europe/Berlin, and must`, p.Body)

		events := b.get(t, "/events")
		require.Equal(t, http.StatusOK, events.Status)
		eventLinks := links(events.Body)
		require.NotEmpty(t, eventLinks)
		for _, c := range []struct {
			path string
			want []string // exact times the page shows, besides some time in Berlin
		}{
			{"/settings/api-keys", nil},
			{"/settings/users", nil},
			{"/sources", nil},
			{"/instructions", nil},
			{"/audit", nil},
			{"/conversations", []string{in(1), "times in Europe/Berlin", "Started from (UTC date)"}},
			{"/conversations/c1?source=" + one, []string{in(1), in(2), "times in Europe/Berlin"}},
			{"/assistants", []string{in(1), "times in Europe/Berlin", "Updated since (UTC date)"}},
			{"/assistants/asst-1?source=" + one, []string{in(0)}},
			{"/events", []string{in(0), "times in Europe/Berlin", "From (UTC date)"}},
			{eventLinks[0], nil},
			{"/settings/organisation", nil},
		} {
			p := b.get(t, c.path)
			require.Equal(t, http.StatusOK, p.Status, c.path)
			require.Regexp(t, berlinTimeRe, p.Body, c.path)
			require.NotRegexp(t, utcTimeRe, p.Body, c.path)
			for _, w := range c.want {
				require.Contains(t, p.Body, w, c.path)
			}
		}
		// The audit log keeps its seconds.
		require.Regexp(t, `\d\d:\d\d:\d\d Europe/Berlin`, b.get(t, "/audit").Body)
		require.Contains(t, b.get(t, "/audit").Body, "(day, UTC)")
	})
}
