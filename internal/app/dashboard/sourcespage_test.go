package dashboard_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/dashboard"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/servicetest"
	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
)

const providerToken = "provider-secret-token"

// sourcesEnv is env with the sources service, as `aiusage service serve`
// composes it: the syncs' workers on the review-task API's job queue. The
// scheduler's periodic job is left out, so that only the tests sync.
type sourcesEnv struct {
	*env
	src *sources.Service
}

// newSourcesEnv starts it with private addresses allowed (the tests'
// providers are on loopback) and every directory readable, unless opts say
// otherwise.
func newSourcesEnv(t *testing.T, db *sqldb.DB, opts ...func(*sources.Config)) *sourcesEnv {
	t.Helper()
	ctx := t.Context()
	orgs, err := org.NewStore(ctx, db)
	require.NoError(t, err)
	ppl, err := people.New(ctx, people.Config{HashCost: people.HashTest, DB: db, Orgs: orgs})
	require.NoError(t, err)
	// The scheduler waits an hour: a test syncs when it means to. A
	// conformance check is not throttled to 20 requests a second: it would
	// wait some 20 s on the clock.
	cfg := sources.Config{AllowPrivate: true, ExportRoot: "/", ScheduleInterval: time.Hour, ConformanceRate: 10_000}
	for _, o := range opts {
		o(&cfg)
	}
	full, srv := servicetest.Serve(t, server.Config{DB: db, Orgs: orgs, Secrets: keyring.Ephemeral(), People: ppl,
		PollInterval: 100 * time.Millisecond, Sources: cfg,
		Review:    reviewapi.Config{AllowPrivateWebhooks: true, SweepInterval: time.Hour},
		Dashboard: dashboard.Config{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}})
	svc, src := full.Review(), full.Sources()
	// The scheduler's first run, at start, has looked for sources due while
	// there were none: the sources a test adds wait for its own syncs.
	require.Eventually(t, func() bool {
		var n int
		err := db.QueryRowContext(ctx, `SELECT count(*) FROM river_job WHERE kind = 'aiusage_source_schedule' AND state = 'completed'`).Scan(&n)
		return err == nil && n > 0
	}, 30*time.Second, 20*time.Millisecond)

	e := &env{t: t, url: srv.URL, orgs: orgs, people: ppl, review: svc}
	e.org, err = orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Acme"}, admin)
	require.NoError(t, err)
	e.admin = e.user("ada@acme.test", "Ada", people.RoleAdministrator)
	e.rev = e.user("rex@acme.test", "Rex", people.RoleReviewer)
	return &sourcesEnv{env: e, src: src}
}

// newProvider serves a demo dataset of conversations for tenant acme over
// REST and MCP, with the token providerToken.
func newProvider(t *testing.T, conversations int) string {
	t.Helper()
	ms := memsource.New()
	require.NoError(t, demodata.Fill(t.Context(), demodata.Config{Conversations: conversations}, "acme", ms))
	m, err := mcp.NewServer(ms)
	require.NoError(t, err)
	h, err := provider.NewHandler(ms, provider.WithTokens(provider.Token{Secret: providerToken, Tenant: "acme"}),
		provider.WithMount("/mcp", m.HTTPHandler()))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// unreachableURL is an address nothing listens on: port 1 of the loopback
// address, which tests never bind (they listen on port 0). A port picked
// free and closed again could be taken by another test's server meanwhile,
// which made the sync of "Down" succeed once under the race detector.
func unreachableURL(t *testing.T) string {
	t.Helper()
	return "http://127.0.0.1:1"
}

// sourceSection returns the part of the sources page about source id.
func sourceSection(t *testing.T, body, id string) string {
	t.Helper()
	i := strings.Index(body, `id="source-`+id+`"`)
	require.GreaterOrEqual(t, i, 0, "source %s is not on the page:\n%s", id, body)
	rest := body[i:]
	if j := strings.Index(rest, "</section>"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

var recordsRe = regexp.MustCompile(`<th scope="row" data-label="Resource">conversations</th>\s*<td data-label="State"><span class="status (\w+)">[^<]*</span></td>\s*<td data-label="Records" class="num">(\d+)</td>`)

// conversations returns the state and the records of the conversations of
// a source's section.
func conversations(t *testing.T, section string) (string, string) {
	t.Helper()
	m := recordsRe.FindStringSubmatch(section)
	require.NotNil(t, m, section)
	return m[1], m[2]
}

func TestSourcesPageRoles(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newSourcesEnv(t, db)
		s, err := e.src.Add(t.Context(), e.org.ID, sources.SourceCreate{Name: "vendor", URL: unreachableURL(t), Token: providerToken})
		require.NoError(t, err)
		for _, path := range []string{"/sources", "/audit"} {
			p := e.browser().get(t, path)
			require.Equal(t, http.StatusSeeOther, p.Status, path)
			require.Equal(t, "/signin?next="+url.QueryEscape(path), p.location())
		}
		p := e.browser().post(t, "/sources/"+s.ID+"/sync", url.Values{})
		require.Equal(t, http.StatusSeeOther, p.Status)

		rev, adm := e.browser(), e.browser()
		rev.signIn(t, "rex@acme.test", "/")
		adm.signIn(t, "ada@acme.test", "/")
		for _, path := range []string{"/sources", "/audit"} {
			p := rev.get(t, path)
			require.Equal(t, http.StatusForbidden, p.Status, path)
			require.Contains(t, p.Body, "Only an Administrator may open this page.")
			requireSecurityHeaders(t, p)
			p = adm.get(t, path)
			require.Equal(t, http.StatusOK, p.Status, path)
			requireSecurityHeaders(t, p)
		}
		p = rev.post(t, "/sources/"+s.ID+"/sync", url.Values{})
		require.Equal(t, http.StatusForbidden, p.Status)
		got, err := e.src.Get(t.Context(), e.org.ID, s.ID)
		require.NoError(t, err)
		require.Nil(t, got.LastSyncStartedAt, "a Reviewer's sync ran")

		// The navigation offers the pages to Administrators only.
		home := adm.get(t, "/").Body
		require.Contains(t, home, `<a href="/sources" >Sources</a>`)
		require.Contains(t, home, `<a href="/audit" >Audit</a>`)
		require.Contains(t, adm.get(t, "/sources").Body, `<a href="/sources" aria-current="page">Sources</a>`)
		home = rev.get(t, "/").Body
		require.NotContains(t, home, `href="/sources"`)
		require.NotContains(t, home, `href="/audit"`)
	})
}

func TestSourcesPage(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newSourcesEnv(t, db)
		ctx := t.Context()
		b := e.browser()
		b.signIn(t, "ada@acme.test", "/sources")

		// Empty: how to add one.
		p := b.get(t, "/sources")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "No source yet.")
		require.Contains(t, p.Body, "aiusage admin source add --org "+e.org.ID)
		for _, flag := range []string{"--name", "--url", "--token", "--every", "--transport mcp"} {
			require.Contains(t, p.Body, flag)
		}

		provURL := newProvider(t, 25)
		synced, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Vendor AI", URL: provURL, Token: providerToken, Every: 90 * time.Second})
		require.NoError(t, err)
		_, err = e.src.SyncNow(ctx, synced.ID)
		require.NoError(t, err)
		down, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Down", URL: unreachableURL(t), Token: providerToken, Every: time.Hour})
		require.NoError(t, err)
		_, err = e.src.SyncNow(ctx, down.ID)
		require.Error(t, err)
		fresh, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Fresh", URL: provURL, Token: providerToken})
		require.NoError(t, err)
		listed, err := e.src.Statuses(ctx, e.org.ID)
		require.NoError(t, err)
		var want int64
		for _, l := range listed {
			if l.ID == synced.ID {
				want = l.Resources["conversations"].Records
			}
		}
		require.Positive(t, want)

		p = b.get(t, "/sources")
		require.Equal(t, http.StatusOK, p.Status)
		require.NotContains(t, p.Body, "No source yet.")
		sec := sourceSection(t, p.Body, synced.ID)
		require.Contains(t, sec, ">Vendor AI</h2>")
		require.Contains(t, sec, `<span class="status synced">Synced</span>`)
		require.Contains(t, sec, "<dd>REST</dd>")
		require.Contains(t, sec, "<dd>every 1 min 30 s</dd>")
		require.Contains(t, sec, `<dd class="mono">`+provURL+`</dd>`)
		require.Contains(t, sec, `action="/sources/`+synced.ID+`/sync"`)
		state, n := conversations(t, sec)
		require.Equal(t, "ok", state)
		require.Equal(t, strconv.FormatInt(want, 10), n)
		require.NotContains(t, sec, "Last sync failed")

		sec = sourceSection(t, p.Body, down.ID)
		require.Contains(t, p.Body, `<section class="card source failed" id="source-`+down.ID+`"`)
		require.Contains(t, sec, `<span class="status failed">Last sync failed</span>`, "marked in words, not by colour alone")
		require.Contains(t, sec, "<dd>every 1 h</dd>")
		require.Contains(t, sec, `<div class="errtext">`)
		require.Contains(t, sec, "the source cannot be reached at its address", "the cause of the failure is shown, classified")
		state, n = conversations(t, sec)
		require.Equal(t, "failed", state)
		require.Equal(t, "0", n)

		sec = sourceSection(t, p.Body, fresh.ID)
		require.Contains(t, sec, `<span class="status never">Never synced</span>`)
		require.Contains(t, sec, "<dd>REST</dd>")
		state, n = conversations(t, sec)
		require.Equal(t, "never", state)
		require.Equal(t, "0", n)

		// Sync now: the counts change, and the audit trail records it.
		p = b.post(t, "/sources/"+fresh.ID+"/sync", url.Values{})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/sources?done=synced&source="+fresh.ID, p.location())
		p = b.get(t, p.location())
		require.Contains(t, p.Body, "Source Fresh is synced")
		state, n = conversations(t, sourceSection(t, p.Body, fresh.ID))
		require.Equal(t, "ok", state)
		require.Equal(t, strconv.FormatInt(want, 10), n)

		// A sync that fails is shown, not a server error.
		p = b.post(t, "/sources/"+down.ID+"/sync", url.Values{})
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, `role="alert"`)
		require.Contains(t, p.Body, "The sync of Down failed")
		require.Contains(t, p.Body, "Why the sync failed")

		recs, err := e.orgs.Audit(ctx, e.org.ID, 0, 100)
		require.NoError(t, err)
		var syncs []string
		for _, r := range recs {
			if r.Action == dashboard.AuditSourceSynced {
				require.Equal(t, org.Actor{Type: org.ActorUser, ID: e.admin.ID, Name: "Ada"}, r.Actor)
				syncs = append(syncs, r.ResourceID)
			}
		}
		require.Equal(t, []string{fresh.ID, down.ID}, syncs)

		// Another organisation's source, an unknown or malformed id: 404,
		// and nothing runs.
		other, err := e.orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Other"}, admin)
		require.NoError(t, err)
		// A source of the export transport says so.
		files, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Files", URL: t.TempDir(), Transport: sources.TransportExport})
		require.NoError(t, err)
		p = b.get(t, "/sources")
		require.Contains(t, sourceSection(t, p.Body, files.ID), "<dd>Scheduled export</dd>")

		theirs, err := e.src.Add(ctx, other.ID, sources.SourceCreate{Name: "Theirs", URL: provURL, Token: providerToken})
		require.NoError(t, err)
		for _, id := range []string{theirs.ID, "00000000-0000-4000-8000-000000000000", "nope"} {
			p = b.post(t, "/sources/"+id+"/sync", url.Values{})
			require.Equal(t, http.StatusNotFound, p.Status, id)
			require.Contains(t, p.Body, "There is no such source in Acme.")
		}
		got, err := e.src.Get(ctx, other.ID, theirs.ID)
		require.NoError(t, err)
		require.Nil(t, got.LastSyncStartedAt, "another organisation's source was synced")
		require.NotContains(t, b.get(t, "/sources").Body, "Theirs")

		// A cross-origin form is refused, and syncs nothing.
		again, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Again", URL: provURL, Token: providerToken})
		require.NoError(t, err)
		p = b.do(t, http.MethodPost, "/sources/"+again.ID+"/sync", url.Values{}, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.test")
		require.Equal(t, http.StatusForbidden, p.Status)
		require.Contains(t, p.Body, "came from another site")
		got, err = e.src.Get(ctx, e.org.ID, again.ID)
		require.NoError(t, err)
		require.Nil(t, got.LastSyncStartedAt, "a cross-origin form started a sync")
	})
}

// TestSourcesPageTelemetry: a telemetry source is shown as such, with no
// URL, schedule nor sync button.
func TestSourcesPageTelemetry(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newSourcesEnv(t, db)
		id := uuid.NewString()
		require.NoError(t, e.src.EnsureTelemetry(t.Context(), e.org.ID, id, "laptops"))
		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/")
		p := adm.get(t, "/sources")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "Receives telemetry")
		require.Contains(t, p.Body, "what the AI tools send with an Ingestion key")
		require.NotContains(t, p.Body, "/sources/"+id+"/sync")
		require.NotContains(t, p.Body, "receives pushes only")
		require.Contains(t, p.Body, "Nothing received yet")

		at := time.Date(2026, 11, 28, 6, 30, 0, 0, time.UTC)
		require.NoError(t, e.src.TelemetryReceived(t.Context(), id, at))
		p = adm.get(t, "/sources")
		require.Equal(t, http.StatusOK, p.Status)
		require.NotContains(t, p.Body, "Nothing received yet")
		require.Contains(t, p.Body, "<dt>Last received</dt><dd>2026-11-28 06:30 UTC</dd>")
		require.Contains(t, p.Body, `<th scope="col" class="num">Records</th>`, "the counts per resource")
	})
}
