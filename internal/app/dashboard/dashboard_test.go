package dashboard_test

import (
	"encoding/json"
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
	"github.com/aiusage/kit/spec"
)

func TestSignInAndOut(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		b := e.browser()

		p := b.get(t, "/review")
		require.Equal(t, http.StatusSeeOther, p.Status)
		require.Equal(t, "/signin?next=%2Freview", p.location())

		p = b.get(t, "/signin?next=%2Freview")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, `<label for="email">Email</label>`)
		require.Contains(t, p.Body, `name="next" value="/review"`)

		// Unknown email and wrong password get one answer.
		wrong := b.post(t, "/signin", url.Values{"email": {"ada@acme.test"}, "password": {"not the password"}})
		unknown := b.post(t, "/signin", url.Values{"email": {"nobody@acme.test"}, "password": {password}})
		require.Equal(t, http.StatusUnauthorized, wrong.Status)
		require.Equal(t, http.StatusUnauthorized, unknown.Status)
		require.Contains(t, wrong.Body, "The email or the password is wrong.")
		require.Contains(t, unknown.Body, "The email or the password is wrong.")
		require.Empty(t, wrong.Header.Values("Set-Cookie"))

		p = b.post(t, "/signin", url.Values{"email": {"ADA@acme.test"}, "password": {password}, "next": {"/review"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/review", p.location())
		cookie := p.Header.Get("Set-Cookie")
		require.Contains(t, cookie, "aiusage_session=")
		require.Contains(t, cookie, "HttpOnly")
		require.Contains(t, cookie, "SameSite=Lax")
		require.NotContains(t, cookie, "Secure", "plain HTTP: no Secure flag")

		p = b.get(t, "/")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "<h1>Overview</h1>")
		require.Contains(t, p.Body, "Ada · Administrator · Acme")

		// Sign-out deletes the session server-side: the old cookie is dead.
		old := b.client.Jar.Cookies(mustURL(t, e.url))
		p = b.post(t, "/signout", url.Values{})
		require.Equal(t, http.StatusSeeOther, p.Status)
		require.Equal(t, "/signin", p.location())
		b2 := e.browser()
		b2.client.Jar.SetCookies(mustURL(t, e.url), old)
		p = b2.get(t, "/")
		require.Equal(t, http.StatusSeeOther, p.Status, "a signed-out session must not work")
	})
}

func TestSignInNextStaysOnSite(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		for _, next := range []string{"//evil.test/x", "https://evil.test/", "/\\evil.test", "javascript:alert(1)", ""} {
			t.Run(next, func(t *testing.T) {
				p := e.browser().post(t, "/signin", url.Values{"email": {"ada@acme.test"}, "password": {password}, "next": {next}})
				require.Equal(t, http.StatusSeeOther, p.Status)
				require.Equal(t, "/", p.location())
			})
		}
	})
}

func TestSignInThrottled(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		b := e.browser()
		var last page
		for range 6 {
			last = b.post(t, "/signin", url.Values{"email": {"rex@acme.test"}, "password": {"wrong wrong wrong"}})
		}
		require.Equal(t, http.StatusTooManyRequests, last.Status, last.Body)
		require.NotEmpty(t, last.Header.Get("Retry-After"))
		require.Contains(t, last.Body, "Too many failed sign-ins")
		// Even the right password is refused while throttled.
		p := b.post(t, "/signin", url.Values{"email": {"rex@acme.test"}, "password": {password}})
		require.Equal(t, http.StatusTooManyRequests, p.Status)
	})
}

func TestRolesAndSecurityHeaders(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		adm, rev := e.browser(), e.browser()
		adm.signIn(t, "ada@acme.test", "/")
		rev.signIn(t, "rex@acme.test", "/")
		for _, c := range []struct {
			path       string
			admin, rev int
		}{
			{"/", 200, 200},
			{"/review", 200, 200},
			{"/settings/api-keys", 200, 403},
			{"/settings/users", 200, 403},
		} {
			t.Run(c.path, func(t *testing.T) {
				p := adm.get(t, c.path)
				require.Equal(t, c.admin, p.Status)
				requireSecurityHeaders(t, p)
				p = rev.get(t, c.path)
				require.Equal(t, c.rev, p.Status)
				requireSecurityHeaders(t, p)
				if c.rev == 403 {
					require.Contains(t, p.Body, "Only an Administrator may open this page.")
				}
			})
		}
		// A reviewer's form to an Administrator page changes nothing.
		p := rev.post(t, "/settings/api-keys", url.Values{"name": {"sneaky"}, "type": {"API"}})
		require.Equal(t, http.StatusForbidden, p.Status)
		keys, err := e.orgs.Keys(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Empty(t, keys)
		// The navigation shows a reviewer no settings.
		require.NotContains(t, rev.get(t, "/").Body, "/settings/api-keys")
	})
}

func requireSecurityHeaders(t *testing.T, p page) {
	t.Helper()
	csp := p.Header.Get("Content-Security-Policy")
	require.Contains(t, csp, "script-src 'self'")
	require.NotContains(t, csp, "unsafe-inline")
	require.Contains(t, csp, "frame-ancestors 'none'")
	require.Equal(t, "DENY", p.Header.Get("X-Frame-Options"))
	require.Equal(t, "nosniff", p.Header.Get("X-Content-Type-Options"))
	require.NotEmpty(t, p.Header.Get("Referrer-Policy"))
}

func TestCrossOriginRefused(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		b := e.browser()
		b.signIn(t, "ada@acme.test", "/")
		form := url.Values{"name": {"evil"}, "type": {"API"}}
		for _, c := range []struct {
			name    string
			headers []string
		}{
			{"cross-site fetch metadata", []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.test"}},
			{"foreign origin", []string{"Sec-Fetch-Site", "", "Origin", "https://evil.test"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := b.do(t, http.MethodPost, "/settings/api-keys", form, c.headers...)
				require.Equal(t, http.StatusForbidden, p.Status)
				require.Contains(t, p.Body, "came from another site")
			})
		}
		p := b.do(t, http.MethodPost, "/signout", url.Values{}, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.test")
		require.Equal(t, http.StatusForbidden, p.Status)
		keys, err := e.orgs.Keys(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Empty(t, keys, "a cross-origin POST changed something")
		require.Equal(t, http.StatusOK, b.get(t, "/").Status, "a cross-origin sign-out ended the session")
	})
}

var secretRe = regexp.MustCompile(`id="secret" class="mono" readonly value="(aiu_[A-Za-z0-9]+)"`)

func TestAPIKeyLifecycle(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		b := e.browser()
		b.signIn(t, "ada@acme.test", "/settings/api-keys")
		require.Contains(t, b.get(t, "/settings/api-keys").Body, "No key yet.")

		p := b.post(t, "/settings/api-keys", url.Values{"name": {"crm-sync"}, "type": {"API"}, "expiry": {"default"}})
		require.Equal(t, http.StatusCreated, p.Status, p.Body)
		m := secretRe.FindStringSubmatch(p.Body)
		require.NotNil(t, m, "the secret is shown once: %s", p.Body)
		secret := m[1]
		fresh := b.get(t, "/settings/api-keys").Body
		require.NotContains(t, fresh, secret, "the secret is shown only once")
		require.Contains(t, fresh, "never used")

		status, body := e.api(t, http.MethodGet, "/organisations", secret, "")
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, e.org.ID)

		keys, err := e.orgs.Keys(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Len(t, keys, 1)
		list := b.get(t, "/settings/api-keys").Body
		require.Contains(t, list, "crm-sync")
		require.Contains(t, list, "…"+keys[0].Last4)
		require.Contains(t, list, "<td>Ada</td>", "created by the signed-in user")
		require.NotContains(t, list, "never used", "the key was used")
		require.Contains(t, list, `<span class="muted">organisation API</span>`, "last used through the organisation API")

		p = b.post(t, "/settings/api-keys/"+keys[0].ID+"/revoke", url.Values{})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		status, _ = e.api(t, http.MethodGet, "/organisations", secret, "")
		require.Equal(t, http.StatusUnauthorized, status, "the very next request after revocation")
		require.Contains(t, b.get(t, "/settings/api-keys?done=revoked").Body, "revoked")

		// The audit trail names the user.
		audit, err := e.orgs.Audit(t.Context(), e.org.ID, 0, 100)
		require.NoError(t, err)
		var byUser []string
		for _, a := range audit {
			if a.Actor.Type == org.ActorUser && a.Actor.ID == e.admin.ID {
				byUser = append(byUser, a.Action)
			}
		}
		require.Contains(t, byUser, "key.created")
		require.Contains(t, byUser, "key.revoked")
	})
}

func TestAPIKeyFormErrors(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		b := e.browser()
		b.signIn(t, "ada@acme.test", "/")
		for _, c := range []struct {
			name string
			form url.Values
			want string
		}{
			{"no name", url.Values{"name": {"  "}}, "name"},
			{"bad type", url.Values{"name": {"k"}, "type": {"Admin"}}, "Type must be API or Ingestion."},
			{"bad date", url.Values{"name": {"k"}, "expiry": {"date"}, "expires": {"tomorrow"}}, "Expires must be a date"},
			{"past date", url.Values{"name": {"k"}, "expiry": {"date"}, "expires": {"2001-01-01"}}, "future"},
			{"bad expiry", url.Values{"name": {"k"}, "expiry": {"soon"}}, "Expiry must be default, date or never."},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := b.post(t, "/settings/api-keys", c.form)
				require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
				require.Contains(t, p.Body, c.want)
				require.Contains(t, p.Body, `role="alert"`)
			})
		}
		keys, err := e.orgs.Keys(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Empty(t, keys)
	})
}

func TestReviewDecision(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		key, err := e.orgs.CreateKey(t.Context(), org.KeyCreate{OrganisationID: e.org.ID, Name: "bot", Type: org.KeyTypeAPI}, admin)
		require.NoError(t, err)
		status, body := e.api(t, http.MethodPost, "/review-tasks", key.Secret,
			`{"agentId":"`+e.agent.ID+`","request":{"messages":[{"role":"user","content":"Draft the <b>Project Falcon</b> release"}]}}`)
		require.Equal(t, http.StatusCreated, status, body)
		var task spec.ReviewTask
		require.NoError(t, json.Unmarshal([]byte(body), &task))
		require.Eventually(t, func() bool {
			got, err := e.review.Task(t.Context(), e.org.ID, task.ID)
			return err == nil && got.Status == spec.StatusRequiresIntervention
		}, 30*time.Second, 20*time.Millisecond)

		rev, other := e.browser(), e.browser()
		rev.signIn(t, "rex@acme.test", "/review")
		other.signIn(t, "ada@acme.test", "/review")
		q := rev.get(t, "/review")
		require.Equal(t, http.StatusOK, q.Status)
		require.Contains(t, q.Body, "Draft the &lt;b&gt;<mark>Project Falcon</mark>&lt;/b&gt; release", "the match is marked and the text escaped")
		require.Contains(t, q.Body, "<strong>Mergers</strong>")

		p := rev.post(t, "/review/"+task.ID+"/decision", url.Values{"decision": {"reject"}, "comment": {"Not yet."}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/review?done=reject", p.location())
		got, err := e.review.Task(t.Context(), e.org.ID, task.ID)
		require.NoError(t, err)
		require.Equal(t, spec.StatusRejected, got.Status)
		require.Equal(t, "rex@acme.test", got.Decision.Reviewer)
		require.Equal(t, e.rev.ID, got.Decision.ReviewerID)
		require.Equal(t, "reject", got.Decision.Choice)
		require.Equal(t, "Not yet.", got.Decision.Comment)

		// The second reviewer loses, clearly, and changes nothing.
		p = other.post(t, "/review/"+task.ID+"/decision", url.Values{"decision": {"approve"}})
		require.Equal(t, http.StatusConflict, p.Status)
		require.Contains(t, p.Body, "already decided")
		got, err = e.review.Task(t.Context(), e.org.ID, task.ID)
		require.NoError(t, err)
		require.Equal(t, spec.StatusRejected, got.Status)

		// The audit trail holds the decision once, by the winner, with the
		// user's id and name.
		audit, err := e.orgs.Audit(t.Context(), e.org.ID, 0, 100)
		require.NoError(t, err)
		var decided []org.AuditRecord
		for _, a := range audit {
			if a.Action == "review_task.decided" {
				decided = append(decided, a)
			}
		}
		require.Len(t, decided, 1)
		require.Equal(t, org.Actor{Type: org.ActorUser, ID: e.rev.ID, Name: "Rex"}, decided[0].Actor)
		require.Equal(t, task.ID, decided[0].ResourceID)

		require.Contains(t, rev.get(t, "/review").Body, "No task waits for a person.")
		for _, c := range []struct {
			name, path string
			form       url.Values
			status     int
		}{
			{"bad decision", "/review/" + task.ID + "/decision", url.Values{"decision": {"maybe"}}, 400},
			{"long comment", "/review/" + task.ID + "/decision", url.Values{"decision": {"approve"}, "comment": {strings.Repeat("x", 2001)}}, 400},
			{"not a uuid", "/review/x/decision", url.Values{"decision": {"approve"}}, 404},
			{"unknown task", "/review/00000000-0000-4000-8000-000000000000/decision", url.Values{"decision": {"approve"}}, 404},
		} {
			t.Run(c.name, func(t *testing.T) {
				require.Equal(t, c.status, rev.post(t, c.path, c.form).Status)
			})
		}
	})
}

func TestUsersInviteAndDisable(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/settings/users")
		p := adm.post(t, "/settings/users", url.Values{"email": {"Vera@Acme.test"}, "name": {"Vera"}, "role": {"Reviewer"}})
		require.Equal(t, http.StatusCreated, p.Status, p.Body)
		m := regexp.MustCompile(`id="otp" class="mono" readonly value="([A-Za-z0-9]+)"`).FindStringSubmatch(p.Body)
		require.NotNil(t, m, p.Body)

		vera := e.browser()
		s := vera.post(t, "/signin", url.Values{"email": {"vera@acme.test"}, "password": {m[1]}})
		require.Equal(t, http.StatusSeeOther, s.Status, s.Body)
		require.Equal(t, "/account/password", s.location(), "a one-time password is changed first")
		s = vera.post(t, "/account/password", url.Values{"current": {m[1]}, "new": {"vera's own passphrase"}, "confirm": {"vera's own passphrase"}})
		require.Equal(t, http.StatusSeeOther, s.Status, s.Body)
		require.Equal(t, http.StatusOK, vera.get(t, "/review").Status)

		dup := adm.post(t, "/settings/users", url.Values{"email": {"vera@acme.test"}, "role": {"Reviewer"}})
		require.Equal(t, http.StatusConflict, dup.Status, dup.Body)

		users, err := e.people.Users(t.Context(), e.org.ID)
		require.NoError(t, err)
		var veraID string
		for _, u := range users {
			if u.Email == "vera@acme.test" {
				veraID = u.ID
			}
		}
		require.NotEmpty(t, veraID)
		p = adm.post(t, "/settings/users/"+veraID+"/role", url.Values{"role": {"Administrator"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, http.StatusOK, vera.get(t, "/settings/api-keys").Status, "the new role holds on the next request")

		p = adm.post(t, "/settings/users/"+veraID+"/disable", url.Values{})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, http.StatusSeeOther, vera.get(t, "/review").Status, "a disabled user's session ends at once")

		self := adm.post(t, "/settings/users/"+e.admin.ID+"/disable", url.Values{})
		require.Equal(t, http.StatusConflict, self.Status)
	})
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}
