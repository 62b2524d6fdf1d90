package dashboard_test

import (
	"bytes"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/dashboard"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// An Administrator adds a source in the dashboard with the checks of the
// command line; the token is never shown again.
func TestSourcesAdd(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newSourcesEnv(t, db)
		adm, rev := e.browser(), e.browser()
		adm.signIn(t, "ada@acme.test", "/sources")
		rev.signIn(t, "rex@acme.test", "/")
		p := adm.get(t, "/sources")
		require.Contains(t, p.Body, "Add a source")
		require.Contains(t, p.Body, `<option value="mcp"`)

		good := url.Values{"name": {"Vendor AI"}, "transport": {"rest"}, "url": {newProvider(t, 3)}, "token": {providerToken}, "every": {"2m"}}
		require.Equal(t, http.StatusForbidden, rev.post(t, "/sources", good).Status)

		for _, c := range []struct {
			name   string
			change url.Values
			status int
			msg    string
		}{
			{"no name", url.Values{"name": {" "}}, 400, "name is required"},
			{"bad url", url.Values{"url": {"ftp://x"}}, 400, "url must be an absolute http or https URL"},
			{"no token", url.Values{"token": {""}}, 400, "token is required"},
			{"bad transport", url.Values{"transport": {"carrier-pigeon"}}, 400, "transport must be"},
			{"bad every", url.Values{"every": {"often"}}, 400, "Sync every must be a duration"},
			{"every too short", url.Values{"every": {"1s"}}, 400, "every must be at least 10s"},
		} {
			t.Run(c.name, func(t *testing.T) {
				form := url.Values{}
				for k, v := range good {
					form[k] = v
				}
				for k, v := range c.change {
					form[k] = v
				}
				p := adm.post(t, "/sources", form)
				require.Equal(t, c.status, p.Status, p.Body)
				require.Contains(t, p.Body, c.msg)
				require.NotContains(t, p.Body, providerToken, "the token is not put back in the form")
			})
		}
		listed, err := e.src.List(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Empty(t, listed, "nothing added by a refused form")

		p = adm.post(t, "/sources", good)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/sources?done=added", p.location())
		page := adm.get(t, p.location()).Body
		require.Contains(t, page, "The source is added")
		require.Contains(t, page, "Vendor AI")
		require.NotContains(t, page, providerToken)
		listed, err = e.src.List(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Len(t, listed, 1)
		require.Equal(t, 2*time.Minute, listed[0].Every)
		require.Equal(t, providerToken, listed[0].Token)

		p = adm.post(t, "/sources", good)
		require.Equal(t, http.StatusConflict, p.Status)
		require.Contains(t, p.Body, "already has a source named")

		audit, err := e.orgs.Audit(t.Context(), e.org.ID, 0, 100)
		require.NoError(t, err)
		var added int
		for _, a := range audit {
			if a.Action == dashboard.AuditSourceAdded {
				added++
				require.Equal(t, e.admin.ID, a.Actor.ID)
				require.NotContains(t, string(a.After), providerToken)
			}
		}
		require.Equal(t, 1, added)
	})
}

// A push source added in the dashboard shows its receiver address and
// signing secret once; a push-only source offers no "Sync now".
func TestSourcesAddPush(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newSourcesEnv(t, db)
		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/sources")
		p := adm.post(t, "/sources", url.Values{"name": {"Pushed"}, "transport": {"push"}})
		require.Equal(t, http.StatusCreated, p.Status, p.Body)
		listed, err := e.src.List(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Len(t, listed, 1)
		s := listed[0]
		m := regexp.MustCompile(`id="pushsecret" class="mono" readonly value="(whsec_[^"]+)"`).FindStringSubmatch(p.Body)
		require.Len(t, m, 2, "the secret is shown on the answer")
		require.Contains(t, p.Body, "/push/"+s.ID)
		page := adm.get(t, "/sources").Body
		require.NotContains(t, page, m[1], "and never again")
		require.NotContains(t, page, `action="/sources/`+s.ID+`/sync"`)
		require.Contains(t, page, "none: it receives pushes only")

		// An export source from a directory of the host, without a token.
		p = adm.post(t, "/sources", url.Values{"name": {"Files"}, "transport": {"export"}, "url": {t.TempDir()}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Contains(t, adm.get(t, "/sources").Body, "Scheduled export")
		p = adm.post(t, "/sources", url.Values{"name": {"Relative"}, "transport": {"export"}, "url": {"exports/acme"}})
		require.Equal(t, http.StatusBadRequest, p.Status)
	})
}

// TestSourcesHostile: on the Sources page, a directory export is refused
// without an export root (400 naming the url, nothing of the host's files),
// a private address without --allow-private-sources; a source whose sync
// goes past the export reader's bounds is shown paused with its reason and
// a Resume button, and resuming it is audited.
func TestSourcesHostile(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		strict := newSourcesEnv(t, db, func(c *sources.Config) { c.AllowPrivate, c.ExportRoot = false, "" })
		adm := strict.browser()
		adm.signIn(t, "ada@acme.test", "/sources")
		for _, c := range []struct{ transport, url, msg string }{
			{"export", "file:///etc", "url /etc: this service reads exports from no directory of its host"},
			{"export", "/var/lib", "url /var/lib: this service reads exports from no directory of its host"},
			{"rest", "https://127.0.0.1:9/", "does not connect to private, loopback or link-local addresses"},
			{"mcp", "https://169.254.169.254/mcp", "does not connect to private, loopback or link-local addresses"},
		} {
			form := url.Values{"name": {"Probe"}, "transport": {c.transport}, "url": {c.url}}
			if c.transport != "export" {
				form.Set("token", "t")
			}
			p := adm.post(t, "/sources", form)
			require.Equal(t, http.StatusBadRequest, p.Status, c.url)
			require.Contains(t, p.Body, c.msg, c.url)
			require.NotContains(t, p.Body, "index.json", c.url)
		}

		e := newSourcesEnv(t, sqldbtest.Open(t, db.Dialect))
		adm = e.browser()
		adm.signIn(t, "ada@acme.test", "/sources")
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "index.json"), bytes.Repeat([]byte(" "), 17<<20), 0o644))
		s, err := e.src.Add(t.Context(), e.org.ID, sources.SourceCreate{Name: "Huge", URL: dir, Transport: sources.TransportExport})
		require.NoError(t, err)
		p := adm.post(t, "/sources/"+s.ID+"/sync", nil)
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "larger than this service reads")
		require.Contains(t, p.Body, "paused until an Administrator resumes it")
		page := adm.get(t, "/sources").Body
		require.Contains(t, page, "Paused since")
		require.Contains(t, page, `action="/sources/`+s.ID+`/resume"`)
		require.NotContains(t, page, `action="/sources/`+s.ID+`/sync"`)

		p = adm.post(t, "/sources/"+s.ID+"/resume", nil)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		got, err := e.src.Get(t.Context(), e.org.ID, s.ID)
		require.NoError(t, err)
		require.Nil(t, got.PausedAt)
		require.Contains(t, adm.get(t, p.location()).Body, "The source is resumed")
		audit, err := e.orgs.Audit(t.Context(), e.org.ID, 0, 100)
		require.NoError(t, err)
		resumed := 0
		for _, a := range audit {
			if a.Action == dashboard.AuditSourceResumed {
				resumed++
				require.Equal(t, e.admin.ID, a.Actor.ID)
			}
		}
		require.Equal(t, 1, resumed)
	})
}
