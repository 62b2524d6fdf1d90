package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/dashboard"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// usageOnlyProvider serves the provider at base for /usage only; the other
// resources answer 501, as docs/provider.md tells a vendor to.
func usageOnlyProvider(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/usage") {
			http.Error(w, "not offered", http.StatusNotImplemented)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestSourcesNotOffered(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newSourcesEnv(t, db)
		ctx := t.Context()
		b := e.browser()
		b.signIn(t, "ada@acme.test", "/sources")
		prov := newProvider(t, 5)
		src, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Usage only", URL: usageOnlyProvider(t, prov), Token: providerToken})
		require.NoError(t, err)
		_, err = e.src.SyncNow(ctx, src.ID)
		require.NoError(t, err)

		sec := sourceSection(t, b.get(t, "/sources").Body, src.ID)
		for _, r := range []string{"conversations", "assistants", "events"} {
			require.Regexp(t, regexp.MustCompile(`(?s)<th scope="row" data-label="Resource">`+r+`</th>\s*<td data-label="State"><span class="status notoffered">not offered</span>`), sec)
		}
		require.Contains(t, sec, "the provider does not offer it")
		require.NotContains(t, sec, "not offered by the provider:", "the state, not an error text")
		require.Contains(t, sec, `<span class="status synced">Synced</span>`)
		require.NotContains(t, sec, "Last sync failed")
		ov := b.get(t, "/").Body
		require.Contains(t, ov, `<span class="n">1</span> source, 0 failing`)
		require.Contains(t, ov, "Every source synced at its last attempt.")
	})
}

func TestSourceConformanceCheck(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newSourcesEnv(t, db)
		ctx := t.Context()
		b := e.browser()
		b.signIn(t, "ada@acme.test", "/sources")
		src, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Vendor AI", URL: newProvider(t, 10), Token: providerToken})
		require.NoError(t, err)
		push, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Pushed", Transport: sources.TransportPush})
		require.NoError(t, err)

		p := b.get(t, "/sources")
		require.Contains(t, sourceSection(t, p.Body, src.ID), `action="/sources/`+src.ID+`/conformance"`)
		require.Contains(t, sourceSection(t, p.Body, src.ID), "Not checked against the specification yet")
		require.NotContains(t, sourceSection(t, p.Body, push.ID), "/conformance", "a push source cannot be checked")

		p = b.post(t, "/sources/"+src.ID+"/conformance", nil)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Contains(t, p.location(), "done=checking")
		var run sources.ConformanceRun
		require.Eventually(t, func() bool {
			runs, err := e.src.ConformanceRuns(ctx, e.org.ID, src.ID)
			require.NoError(t, err)
			run = runs[0]
			return run.State == sources.ConformanceDone || run.State == sources.ConformanceFailed
		}, 2*time.Minute, 50*time.Millisecond)
		require.Equal(t, sources.ConformanceDone, run.State, run.Error)
		require.Equal(t, "Ada", run.RequestedBy)

		sec := sourceSection(t, b.get(t, "/sources").Body, src.ID)
		link := "/sources/" + src.ID + "/conformance/" + run.ID
		require.Regexp(t, `<a href="`+link+`">Conformance report, [^<]+: \d+ passed, 0 failed</a>`, sec)
		require.Contains(t, sec, link+"?download=1")

		rep := b.get(t, link)
		require.Equal(t, http.StatusOK, rep.Status)
		require.Equal(t, "text/html; charset=utf-8", rep.Header.Get("Content-Type"))
		require.Contains(t, rep.Header.Get("Content-Security-Policy"), "default-src 'none'")
		require.Contains(t, rep.Header.Get("Content-Security-Policy"), "sandbox")
		require.Empty(t, rep.Header.Get("Content-Disposition"))
		require.Contains(t, rep.Body, "<!DOCTYPE html>")
		require.NotContains(t, rep.Body, providerToken)
		dl := b.get(t, link+"?download=1")
		require.Equal(t, http.StatusOK, dl.Status)
		require.Regexp(t, `^attachment; filename="conformance-Vendor-AI-\d{8}-\d{6}\.html"$`, dl.Header.Get("Content-Disposition"))
		require.Equal(t, rep.Body, dl.Body)

		// Audited, with the person.
		trail, err := e.orgs.Audit(ctx, e.org.ID, 0, 100)
		require.NoError(t, err)
		var audited bool
		for _, a := range trail {
			if a.Action == dashboard.AuditSourceChecked && a.ResourceID == src.ID && a.Actor.Name == "Ada" {
				audited = true
				require.NotContains(t, string(a.After), providerToken)
			}
		}
		require.True(t, audited)

		// Refusals: a push source, an unknown run, a Reviewer.
		p = b.post(t, "/sources/"+push.ID+"/conformance", nil)
		require.Equal(t, http.StatusBadRequest, p.Status)
		require.Contains(t, p.Body, "only REST and MCP sources can be checked")
		require.Equal(t, http.StatusNotFound, b.get(t, "/sources/"+src.ID+"/conformance/"+push.ID).Status)
		require.Equal(t, http.StatusNotFound, b.get(t, "/sources/"+push.ID+"/conformance/"+run.ID).Status)
		require.Equal(t, http.StatusNotFound, b.get(t, "/sources/nope/conformance/"+run.ID).Status)
		rb := e.browser()
		rb.signIn(t, "rex@acme.test", "/")
		require.Equal(t, http.StatusForbidden, rb.get(t, link).Status)
		require.Equal(t, http.StatusForbidden, rb.post(t, "/sources/"+src.ID+"/conformance", nil).Status)
	})
}
