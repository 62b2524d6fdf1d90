package dashboard_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestTelemetrySettingsPage: an Administrator turns the storing of prompt
// text on and off; each change is audited with the user; a Reviewer, a
// cross-site form and a bad value change nothing.
func TestTelemetrySettingsPage(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		adm, rev := e.browser(), e.browser()
		adm.signIn(t, "ada@acme.test", "/settings/telemetry")
		rev.signIn(t, "rex@acme.test", "/review")
		stored := func() bool {
			st, err := e.orgs.TelemetrySettings(ctx, e.org.ID)
			require.NoError(t, err)
			return st.StorePrompts
		}

		p := adm.get(t, "/settings/telemetry")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, `<a href="/settings" aria-current="true">Settings</a>`, "a page of the Settings area")
		require.Contains(t, p.Body, "prompt text is <strong>not stored</strong> (the default)")
		require.Contains(t, p.Body, `value="off" checked`)
		require.Contains(t, p.Body, "Administrators and Reviewers")

		require.NotContains(t, rev.get(t, "/review").Body, `href="/settings/telemetry"`, "a Reviewer is not offered the setting")
		require.Equal(t, http.StatusForbidden, rev.get(t, "/settings/telemetry").Status)
		require.Equal(t, http.StatusForbidden, rev.post(t, "/settings/telemetry", url.Values{"storePrompts": {"on"}}).Status)
		p = adm.do(t, http.MethodPost, "/settings/telemetry", url.Values{"storePrompts": {"on"}},
			"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.test")
		require.Equal(t, http.StatusForbidden, p.Status)
		for _, v := range []url.Values{{}, {"storePrompts": {"yes"}}} {
			p = adm.post(t, "/settings/telemetry", v)
			require.Equal(t, http.StatusBadRequest, p.Status)
			require.Contains(t, p.Body, "Choose whether prompt text is stored: on or off.")
		}
		require.False(t, stored(), "nothing was changed")

		p = adm.post(t, "/settings/telemetry", url.Values{"storePrompts": {"on"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		p = adm.get(t, p.location())
		require.Contains(t, p.Body, "Prompt text is stored from the next telemetry request on.")
		require.Contains(t, p.Body, "prompt text is <strong>stored</strong> (turned on ")
		require.Contains(t, p.Body, `value="on" checked`)
		require.True(t, stored())
		audit, err := e.orgs.Audit(ctx, e.org.ID, 0, 100)
		require.NoError(t, err)
		last := audit[len(audit)-1]
		require.Equal(t, org.AuditTelemetrySettingsSet, last.Action)
		require.Equal(t, e.admin.ID, last.Actor.ID)
		require.Contains(t, string(last.After), `"storePrompts":true`)

		p = adm.post(t, "/settings/telemetry", url.Values{"storePrompts": {"off"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Contains(t, adm.get(t, p.location()).Body, "The conversations already stored stay.")
		require.False(t, stored())
		audit, err = e.orgs.Audit(ctx, e.org.ID, 0, 100)
		require.NoError(t, err)
		require.Equal(t, org.AuditTelemetrySettingsSet, audit[len(audit)-1].Action)
		require.Contains(t, adm.get(t, "/audit").Body, org.AuditTelemetrySettingsSet)
	})
}

// TestTelemetryPromptsListed: with the setting on, the prompts an AI tool
// sends are a conversation a Reviewer finds on the Conversations page; a
// prompt sent while it was off is not.
func TestTelemetryPromptsListed(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		key, err := e.orgs.CreateKey(t.Context(), org.KeyCreate{OrganisationID: e.org.ID, Name: "laptops", Type: org.KeyTypeIngestion}, admin)
		require.NoError(t, err)
		send := func(seq int, at, text string) {
			t.Helper()
			body := `{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"claude-code"}}]},
				"scopeLogs":[{"logRecords":[{"timeUnixNano":"1795770000000000000","attributes":[
				{"key":"event.name","value":{"stringValue":"user_prompt"}},
				{"key":"event.timestamp","value":{"stringValue":"` + at + `"}},
				{"key":"event.sequence","value":{"intValue":` + strconv.Itoa(seq) + `}},
				{"key":"session.id","value":{"stringValue":"s-9"}},
				{"key":"user.email","value":{"stringValue":"ann@acme.test"}},
				{"key":"prompt","value":{"stringValue":"` + text + `"}}]}]}]}]}`
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/v1/logs", strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key.Secret)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
		}
		adm, rev := e.browser(), e.browser()
		adm.signIn(t, "ada@acme.test", "/")
		rev.signIn(t, "rex@acme.test", "/conversations")
		send(1, "2026-11-27T09:00:00.000Z", "Sent while off")
		require.NotContains(t, rev.get(t, "/conversations").Body, "Sent while off")
		require.Equal(t, http.StatusSeeOther, adm.post(t, "/settings/telemetry", url.Values{"storePrompts": {"on"}}).Status)
		send(2, "2026-11-27T09:01:00.000Z", "Summarise the incident report")
		send(3, "2026-11-27T09:02:00.000Z", "Now shorter")
		p := rev.get(t, "/conversations")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "Summarise the incident report")
		require.Contains(t, p.Body, "ann@acme.test")
		require.Contains(t, p.Body, `<td class="num" data-label="Messages">2</td>`)
		require.NotContains(t, p.Body, "Sent while off")
	})
}
