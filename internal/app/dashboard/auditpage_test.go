package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

var (
	auditActionRe = regexp.MustCompile(`<td data-label="Action" data-action="([^"]+)">`)
	auditSeqRe    = regexp.MustCompile(`<span class="seq">#(\d+)</span>`)
	olderRe       = regexp.MustCompile(`<a href="([^"]+)" rel="next">Older`)
	newestRe      = regexp.MustCompile(`<a href="([^"]+)">← Newest</a>`)
)

func auditActions(body string) []string {
	out := []string{}
	for _, m := range auditActionRe.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func auditSeqs(body string) []string {
	out := []string{}
	for _, m := range auditSeqRe.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestAuditPage(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		b := e.browser()
		b.signIn(t, "ada@acme.test", "/audit")
		// The trail so far: organisation.created, agent.created,
		// instruction.created, user.created (Ada), user.created (Rex), all
		// by the admin "test".
		p := b.get(t, "/settings/api-keys")
		require.Equal(t, http.StatusOK, p.Status)
		p = b.post(t, "/settings/api-keys", url.Values{"name": {"crm-sync"}, "type": {"API"}, "expiry": {"default"}})
		require.Equal(t, http.StatusCreated, p.Status, p.Body)
		secret := secretRe.FindStringSubmatch(p.Body)[1]
		now := time.Now().UTC()
		today, tomorrow := now.Format("2006-01-02"), now.AddDate(0, 0, 1).Format("2006-01-02")

		p = b.get(t, "/audit")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "<h1>Audit trail</h1>")
		require.Contains(t, p.Body, `<a href="/audit" aria-current="page">Audit</a>`)
		require.Equal(t, []string{"key.created", "user.created", "user.created", "instruction.created", "agent.created", "organisation.created"},
			auditActions(p.Body), "newest first")
		require.Equal(t, []string{"6", "5", "4", "3", "2", "1"}, auditSeqs(p.Body))
		// The key's creation, by the signed-in user, with what was created
		// and never the secret.
		// In words: the action, the actor by name and email, the resource
		// by name with a link to its page.
		require.Contains(t, p.Body, `<td data-label="Action" data-action="key.created">created API key</td>`)
		require.Contains(t, p.Body, `<td data-label="Action" data-action="user.created">added user</td>`)
		require.Contains(t, p.Body, `<td data-label="Who">Ada <span class="actortype">ada@acme.test</span></td>`)
		require.Contains(t, p.Body, `<td data-label="Who">test <span class="actortype">command line</span></td>`)
		require.Contains(t, p.Body, `<td data-label="What"><a href="/settings/api-keys">API key crm-sync</a></td>`)
		require.Contains(t, p.Body, `<td data-label="What"><a href="/agents">agent Support</a></td>`)
		require.Contains(t, p.Body, `<td data-label="What"><a href="/settings/users">user Rex (rex@acme.test)</a></td>`)
		require.Contains(t, p.Body, `<td data-label="What"><a href="/settings/organisation">organisation Acme</a></td>`)
		require.Regexp(t, `<td data-label="What"><a href="/instructions/[0-9a-f-]{36}/edit">instruction Mergers</a></td>`, p.Body)
		// No id in the visible text: only in links, option values and the
		// collapsed before and after.
		visible := regexp.MustCompile(`(?s)<details.*?</details>|<[^>]*>`).ReplaceAllString(p.Body, " ")
		require.NotRegexp(t, `[0-9a-f]{8}-[0-9a-f]{4}-`, visible)
		require.Contains(t, p.Body, "<summary>Before and after</summary>")
		require.Contains(t, p.Body, "nothing (created)")
		require.Contains(t, html.UnescapeString(p.Body), `"name": "crm-sync"`)
		require.NotContains(t, p.Body, secret)
		require.NotContains(t, p.Body, "rel=\"next\"", "one page")
		// The action filter offers the known actions in words, the person
		// filter the people and keys by name.
		require.Contains(t, p.Body, `<option value="key.revoked" >revoked API key</option>`)
		require.Contains(t, p.Body, `<option value="`+e.admin.ID+`" >Ada (ada@acme.test)</option>`)
		require.Contains(t, p.Body, ` >crm-sync (API key …`)

		// Filters narrow the rows.
		for _, c := range []struct {
			query string
			want  []string
		}{
			{"actorType=user", []string{"key.created"}},
			{"actor=ADA", []string{"key.created"}},
			{"actorType=admin&action=user.", []string{"user.created", "user.created"}},
			{"action=user.created&actor=test", []string{"user.created", "user.created"}},
			{"action=agent", []string{"agent.created"}},
			{"actorType=apiKey", []string{}},
			{"actorId=" + e.admin.ID, []string{"key.created"}},
			{"actorId=" + strings.ToUpper(e.admin.ID), []string{"key.created"}},
			{"from=2000-01-01&to=2999-12-31&action=key.created", []string{"key.created"}},
			{"to=2000-01-01", []string{}},
			{"from=" + today, []string{"key.created", "user.created", "user.created", "instruction.created", "agent.created", "organisation.created"}},
			{"from=" + tomorrow, []string{}},
			{"action=nothing.like.this", []string{}},
		} {
			t.Run(c.query, func(t *testing.T) {
				p := b.get(t, "/audit?"+c.query)
				require.Equal(t, http.StatusOK, p.Status)
				require.Equal(t, c.want, auditActions(p.Body))
				require.Contains(t, p.Body, `>Clear filters</a>`)
				if len(c.want) == 0 {
					require.Contains(t, p.Body, "No record matches these filters.")
				}
			})
		}
		require.Contains(t, b.get(t, "/audit?actorType=apiKey").Body, `<option value="apiKey" selected>`, "the form keeps the filters")

		// Pages of 2, newest first, keeping the filters.
		p = b.get(t, "/audit?limit=2")
		require.Equal(t, []string{"6", "5"}, auditSeqs(p.Body))
		require.Empty(t, newestRe.FindStringSubmatch(p.Body), "the first page has no link to itself")
		var seen []string
		for range 5 {
			seen = append(seen, auditSeqs(p.Body)...)
			m := olderRe.FindStringSubmatch(p.Body)
			if m == nil {
				break
			}
			p = b.get(t, html.UnescapeString(m[1]))
			require.Equal(t, http.StatusOK, p.Status)
			require.NotNil(t, newestRe.FindStringSubmatch(p.Body))
		}
		require.Equal(t, []string{"6", "5", "4", "3", "2", "1"}, seen)
		p = b.get(t, "/audit?limit=1&actorType=admin")
		m := olderRe.FindStringSubmatch(p.Body)
		require.NotNil(t, m)
		require.Equal(t, "/audit?actorType=admin&before=5&limit=1", html.UnescapeString(m[1]))
		p = b.get(t, html.UnescapeString(m[1]))
		require.Equal(t, []string{"4"}, auditSeqs(p.Body))
		require.Equal(t, "/audit?actorType=admin&limit=1", html.UnescapeString(newestRe.FindStringSubmatch(p.Body)[1]))

		// Bad parameters: 400, naming the parameter.
		for _, c := range []struct{ query, param string }{
			{"before=abc", "before"},
			{"before=0", "before"},
			{"limit=0", "limit"},
			{"limit=1000", "limit"},
			{"actorType=robot", "actorType"},
			{"actorId=ada", "actorId"},
			{"from=yesterday", "from"},
			{"to=2026-13-01", "to"},
			{"from=2026-03-02&to=2026-03-01", "to"},
			{"action=" + url.QueryEscape(string(make([]byte, 101))), "action"},
		} {
			t.Run(c.query, func(t *testing.T) {
				p := b.get(t, "/audit?"+c.query)
				require.Equal(t, http.StatusBadRequest, p.Status)
				require.Contains(t, p.Body, `role="alert"`)
				require.Contains(t, p.Body, "The parameter "+c.param+" must")
				require.Empty(t, auditActions(p.Body))
			})
		}

		// Another organisation's trail is not shown.
		other, err := e.orgs.CreateOrganisation(t.Context(), org.OrganisationCreate{Name: "Other"}, admin)
		require.NoError(t, err)
		_, err = e.orgs.CreateKey(t.Context(), org.KeyCreate{OrganisationID: other.ID, Name: "theirs", Type: org.KeyTypeAPI}, admin)
		require.NoError(t, err)
		p = b.get(t, "/audit")
		require.NotContains(t, p.Body, "theirs")
		require.Len(t, auditActions(p.Body), 6)
	})
}
