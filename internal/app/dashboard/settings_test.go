package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestSettingsIndex: one Settings entry in the navigation leads to an index
// of the settings pages: every one for an Administrator, only the own
// password for a Reviewer, who is told who changes the rest. Every
// everyday page stays linked, and the old settings paths still answer.
func TestSettingsIndex(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		adm, rev := e.browser(), e.browser()
		adm.signIn(t, "ada@acme.test", "/settings")
		rev.signIn(t, "rex@acme.test", "/settings")

		p := adm.get(t, "/settings")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, `<a href="/settings" aria-current="page">Settings</a>`)
		for _, path := range []string{"/settings/api-keys", "/settings/users", "/settings/review", "/settings/prices",
			"/settings/telemetry", "/settings/organisation", "/account/password"} {
			require.Contains(t, p.Body, `<li><a href="`+path+`">`, path)
			require.Equal(t, http.StatusOK, adm.get(t, path).Status, path)
		}
		nav := navOf(t, p.Body)
		for _, path := range []string{"/", "/review", "/usage", "/conversations", "/assistants", "/events", "/agents",
			"/instructions", "/sources", "/audit", "/settings"} {
			require.Contains(t, nav, `<a href="`+path+`"`, path)
		}
		require.NotContains(t, nav, `/settings/`, "the settings pages are under Settings, not in the navigation")
		// A settings page marks Settings and links back to the index.
		p = adm.get(t, "/settings/api-keys")
		require.Contains(t, navOf(t, p.Body), `<a href="/settings" aria-current="true">Settings</a>`)
		require.Contains(t, p.Body, `<p class="crumbs"><a href="/settings">Settings</a>`)

		p = rev.get(t, "/settings")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, `<li><a href="/account/password">`)
		require.NotContains(t, p.Body, `href="/settings/`, "a Reviewer is offered no organisation settings")
		require.Contains(t, p.Body, "changed by its Administrators")
		nav = navOf(t, rev.get(t, "/").Body)
		require.NotContains(t, nav, `href="/sources"`)
		require.NotContains(t, nav, `href="/audit"`)
		require.Contains(t, nav, `href="/settings"`)
		require.Equal(t, http.StatusForbidden, rev.get(t, "/settings/organisation").Status)
	})
}

// navOf returns the main navigation of a page.
func navOf(t *testing.T, body string) string {
	t.Helper()
	i := strings.Index(body, `<nav aria-label="Main"`)
	require.GreaterOrEqual(t, i, 0, "the page has a navigation")
	j := strings.Index(body[i:], "</nav>")
	require.Positive(t, j)
	return body[i : i+j]
}

// TestOrgSettingsPage: the organisation's page shows its name, plan and
// the hour's requests as the rate limit counts them; the time zone it sets
// is audited with the user and used for the times pages show; a bad zone,
// an empty one, a Reviewer and a cross-site form change nothing.
func TestOrgSettingsPage(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		adm, rev := e.browser(), e.browser()
		adm.signIn(t, "ada@acme.test", "/settings/organisation")
		rev.signIn(t, "rex@acme.test", "/review")

		key, err := e.orgs.CreateKey(ctx, org.KeyCreate{OrganisationID: e.org.ID, Name: "bot", Type: org.KeyTypeAPI}, admin)
		require.NoError(t, err)
		for range 3 {
			status, body := e.api(t, http.MethodGet, "/review-tasks", key.Secret, "")
			require.Equal(t, http.StatusOK, status, body)
		}
		p := adm.get(t, "/settings/organisation")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, `<dd class="long">Acme</dd>`)
		require.Contains(t, p.Body, `<dt>Plan</dt><dd>Standard</dd>`)
		require.Contains(t, p.Body, "<strong>3 of 1,000 requests this hour</strong>")
		require.Contains(t, p.Body, `<meter min="0" max="1000" value="3"`)
		require.Contains(t, p.Body, "Pages show times in <strong>UTC</strong> (the default)")
		require.Contains(t, p.Body, `<label for="timeZone">Time zone (IANA name)</label>`)

		zone := func() string {
			st, err := e.orgs.OrgSettings(ctx, e.org.ID)
			require.NoError(t, err)
			return st.TimeZone
		}
		for _, c := range []struct{ value, msg string }{
			{"", "Enter a time zone: an IANA name such as UTC or Europe/Berlin."},
			{"Mars/Olympus", `&#34;Mars/Olympus&#34; is not an IANA time zone name such as UTC or Europe/Berlin`},
			{"Local", "is not an IANA time zone name"},
		} {
			p = adm.post(t, "/settings/organisation", url.Values{"timeZone": {c.value}})
			require.Equal(t, http.StatusBadRequest, p.Status, c.value)
			require.Contains(t, p.Body, c.msg)
			if c.value != "" {
				require.Contains(t, p.Body, `value="`+c.value+`"`, "the form keeps what was typed")
			}
		}
		require.Equal(t, http.StatusForbidden, rev.post(t, "/settings/organisation", url.Values{"timeZone": {"Europe/Berlin"}}).Status)
		p = adm.do(t, http.MethodPost, "/settings/organisation", url.Values{"timeZone": {"Europe/Berlin"}},
			"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.test")
		require.Equal(t, http.StatusForbidden, p.Status)
		require.Equal(t, "UTC", zone(), "nothing was changed")

		p = adm.post(t, "/settings/organisation", url.Values{"timeZone": {" Europe/Berlin "}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		p = adm.get(t, p.location())
		require.Contains(t, p.Body, "Time zone saved")
		require.Contains(t, p.Body, "Pages show times in <strong>Europe/Berlin</strong>, since ")
		require.Equal(t, "Europe/Berlin", zone())
		created := e.org.CreatedAt.Time
		require.Contains(t, p.Body, created.In(berlin(t)).Format("2006-01-02 15:04")+" Europe/Berlin", "times in the zone, named")
		audit, err := e.orgs.Audit(ctx, e.org.ID, 0, 100)
		require.NoError(t, err)
		last := audit[len(audit)-1]
		require.Equal(t, org.AuditTimeZoneSet, last.Action)
		require.Equal(t, e.admin.ID, last.Actor.ID)
		require.Contains(t, string(last.After), `"timeZone":"Europe/Berlin"`)

		// Every signed-in page of the organisation uses the zone: a
		// Reviewer's review task shows its creation in Berlin time.
		status, body := e.api(t, http.MethodPost, "/review-tasks", key.Secret,
			`{"agentId":"`+e.agent.ID+`","request":{"messages":[{"role":"user","content":"Draft the note on Project Falcon."}]}}`)
		require.Equal(t, http.StatusCreated, status, body)
		require.Eventually(t, func() bool {
			return strings.Contains(rev.get(t, "/review").Body, " Europe/Berlin</a></h2>")
		}, 30*time.Second, 50*time.Millisecond, "the task's time in the organisation's zone")
		require.Regexp(t, `<td class="when">\d{4}-\d\d-\d\d \d\d:\d\d Europe/Berlin</td>`, rev.get(t, "/").Body, "the overview's times")
		p = adm.get(t, "/settings/organisation")
		require.Contains(t, p.Body, "<strong>4 of 1,000 requests this hour</strong>", "the task's creation counted; the page counts nothing")
	})
}

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	return loc
}
