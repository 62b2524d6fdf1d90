package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

func TestPricesPage(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		adm, rev := e.browser(), e.browser()
		adm.signIn(t, "ada@acme.test", "/settings/prices")
		rev.signIn(t, "rex@acme.test", "/review")

		p := adm.get(t, "/settings/prices")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "No prices yet: costs are the tools' own estimates only.")
		require.Contains(t, p.Body, `<a href="/settings" aria-current="true">Settings</a>`, "a page of the Settings area")
		require.NotContains(t, rev.get(t, "/review").Body, `href="/settings/prices"`, "a Reviewer is not offered the prices")
		require.Equal(t, http.StatusForbidden, rev.get(t, "/settings/prices").Status)
		require.Equal(t, http.StatusForbidden, rev.post(t, "/settings/prices", url.Values{"model": {"m"}, "input": {"1"}}).Status)

		for _, c := range []struct {
			name  string
			form  url.Values
			field string
			msg   string
		}{
			{"no model", url.Values{"model": {" "}, "input": {"3"}}, "model", "Model: must not be empty"},
			{"long model", url.Values{"model": {strings.Repeat("m", 201)}, "input": {"3"}}, "model", "at most 200"},
			{"not a number", url.Values{"model": {"m"}, "output": {"cheap"}}, "output", "Output price: must be a number"},
			{"negative", url.Values{"model": {"m"}, "cacheRead": {"-1"}}, "cacheRead", "Cache read price: must be a finite number"},
			{"infinite", url.Values{"model": {"m"}, "cacheWrite": {"Inf"}}, "cacheWrite", "Cache write price: must be a finite number"},
			{"no price", url.Values{"model": {"m"}}, "input", "give at least one price"},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := adm.post(t, "/settings/prices", c.form)
				require.Equal(t, http.StatusBadRequest, p.Status)
				require.Contains(t, p.Body, c.msg)
				require.Contains(t, p.Body, `id="`+c.field+`" name="`+c.field+`"`)
			})
		}
		ps, err := e.orgs.Prices(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Empty(t, ps, "nothing was stored")

		p = adm.post(t, "/settings/prices", url.Values{"model": {"claude-sonnet-4-5"}, "input": {"3"}, "cacheRead": {"0.3"},
			"cacheWrite": {"3.75"}, "output": {"15"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		p = adm.get(t, p.location())
		require.Contains(t, p.Body, "The price is saved.")
		require.Contains(t, p.Body, "<code>claude-sonnet-4-5</code>")
		require.Contains(t, p.Body, `<td class="num" data-label="Cache read">0.3</td>`)
		ps, err = e.orgs.Prices(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Len(t, ps, 1)
		require.Equal(t, 3.75, *ps[0].CacheWrite)
		audit, err := e.orgs.Audit(t.Context(), e.org.ID, 0, 100)
		require.NoError(t, err)
		last := audit[len(audit)-1]
		require.Equal(t, org.AuditPriceSet, last.Action)
		require.Equal(t, e.admin.ID, last.Actor.ID)

		p = adm.post(t, "/settings/prices/delete", url.Values{"model": {"claude-sonnet-4-5"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Contains(t, adm.get(t, p.location()).Body, "No prices yet")
		require.Equal(t, http.StatusNotFound, adm.post(t, "/settings/prices/delete", url.Values{"model": {"claude-sonnet-4-5"}}).Status)
	})
}
