package dashboard_test

import (
	"net/http"
	"net/url"
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
		require.Contains(t, p.Body, `href="/settings/telemetry" aria-current="page"`)
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
