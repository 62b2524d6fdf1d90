package sources_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// usageOnly serves the provider at base for /usage only: the other
// resources answer 501 (conversations, assistants) or 404 (events), as
// docs/provider.md tells a vendor to answer for what it does not hold.
func usageOnly(t *testing.T, base string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/conversations"), strings.HasPrefix(r.URL.Path, "/assistants"):
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotImplemented)
			_, _ = w.Write([]byte(`{"type":"about:blank","title":"Not Implemented","status":501,"detail":"not offered"}`))
		case strings.HasPrefix(r.URL.Path, "/events"):
			http.NotFound(w, r)
		default:
			req, err := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), nil)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			req.Header = r.Header.Clone()
			req.Header.Del("Accept-Encoding")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			for k, v := range resp.Header {
				w.Header()[k] = v
			}
			w.WriteHeader(resp.StatusCode)
			buf := make([]byte, 32<<10)
			for {
				n, err := resp.Body.Read(buf)
				_, _ = w.Write(buf[:n])
				if err != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestNotOffered(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		src, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Usage only", URL: usageOnly(t, newProvider(t, 5)), Token: providerToken})
		require.NoError(t, err)
		_, err = e.src.SyncNow(ctx, src.ID)
		require.NoError(t, err, "resources a provider does not offer do not fail its sync")

		listed, err := e.src.Statuses(ctx, e.org.ID)
		require.NoError(t, err)
		require.Len(t, listed, 1)
		for _, r := range []string{"conversations", "assistants", "events"} {
			rs := listed[0].Resources[r]
			require.True(t, rs.NotOffered, r)
			require.False(t, rs.Failed(), r)
			require.Empty(t, rs.LastError, r)
			require.NotNil(t, rs.NotOfferedAt, r)
			require.NotEmpty(t, rs.NotOfferedDetail, r)
		}
		usage := listed[0].Resources["usage"]
		require.False(t, usage.NotOffered)
		require.NotNil(t, usage.LastSuccess)

		// The API's status says so too.
		var out []map[string]any
		require.Equal(t, http.StatusOK, get(t, e.url+"/organisations/"+e.org.ID+"/sources", e.key, &out))
		res := out[0]["resources"].(map[string]any)
		require.Equal(t, true, res["events"].(map[string]any)["notOffered"])
		require.NotContains(t, res["events"].(map[string]any), "lastError")
		require.NotContains(t, res["usage"].(map[string]any), "notOffered")
	})
}

// newJobsEnv is newEnv with the service's job queue worked, as `aiusage
// service serve` runs it.
func newJobsEnv(t *testing.T, db *sqldb.DB) *env {
	t.Helper()
	e := newEnv(t, db)
	require.NoError(t, e.srv.Start(context.WithoutCancel(t.Context())))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, e.srv.Stop(ctx))
	})
	return e
}

// waitRun waits until the latest check of the source has ended and
// returns it.
func waitRun(t *testing.T, e *env, sourceID string) sources.ConformanceRun {
	t.Helper()
	var run sources.ConformanceRun
	require.Eventually(t, func() bool {
		runs, err := e.src.ConformanceRuns(t.Context(), e.org.ID, sourceID)
		require.NoError(t, err)
		require.NotEmpty(t, runs)
		run = runs[0]
		return run.State == sources.ConformanceDone || run.State == sources.ConformanceFailed
	}, 2*time.Minute, 50*time.Millisecond)
	return run
}

func TestCheckConformance(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newJobsEnv(t, db)
		ctx := t.Context()
		base := newProvider(t, 20)
		rest, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "REST", URL: base, Token: providerToken})
		require.NoError(t, err)
		run, err := e.src.CheckConformance(ctx, e.org.ID, rest.ID, "Ada")
		require.NoError(t, err)
		require.Equal(t, sources.ConformanceQueued, run.State)
		done := waitRun(t, e, rest.ID)
		require.Equal(t, sources.ConformanceDone, done.State, done.Error)
		require.Equal(t, "Ada", done.RequestedBy)
		require.Positive(t, done.Passed)
		require.Zero(t, done.Failed, "the kit's own provider conforms")
		require.NotNil(t, done.FinishedAt)
		got, html, err := e.src.ConformanceReport(ctx, e.org.ID, rest.ID, done.ID)
		require.NoError(t, err)
		require.Equal(t, done, got)
		require.Contains(t, string(html), "<!DOCTYPE html>")
		require.Contains(t, string(html), base)
		require.NotContains(t, string(html), providerToken, "the report never shows the source's token")

		// An MCP source is checked at the REST interface beside its endpoint.
		m, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "MCP", URL: base + "/mcp", Token: providerToken, Transport: sources.TransportMCP})
		require.NoError(t, err)
		_, err = e.src.CheckConformance(ctx, e.org.ID, m.ID, "Ada")
		require.NoError(t, err)
		require.Equal(t, sources.ConformanceDone, waitRun(t, e, m.ID).State)

		// Other transports, other organisations, unknown runs.
		push, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Push", Transport: sources.TransportPush})
		require.NoError(t, err)
		_, err = e.src.CheckConformance(ctx, e.org.ID, push.ID, "Ada")
		require.ErrorIs(t, err, spec.ErrInvalid)
		_, err = e.src.CheckConformance(ctx, e.other.ID, rest.ID, "Ada")
		require.ErrorIs(t, err, spec.ErrNotFound)
		_, _, err = e.src.ConformanceReport(ctx, e.other.ID, rest.ID, done.ID)
		require.ErrorIs(t, err, spec.ErrNotFound)
		_, _, err = e.src.ConformanceReport(ctx, e.org.ID, m.ID, done.ID)
		require.ErrorIs(t, err, spec.ErrNotFound, "a run of another source")
		_, _, err = e.src.ConformanceReport(ctx, e.org.ID, rest.ID, "not-a-uuid")
		require.ErrorIs(t, err, spec.ErrNotFound)

		latest, err := e.src.LatestConformance(ctx, e.org.ID)
		require.NoError(t, err)
		require.Len(t, latest, 2)
		require.Equal(t, done.ID, latest[rest.ID].ID)
	})
}

// brokenProvider answers every list with a body that breaks the envelope
// (no hasMore, no nextCursor) and checks no token.
func brokenProvider(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"data":[{"id":1}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestCheckConformanceFailures(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newJobsEnv(t, db)
		ctx := t.Context()
		src, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Broken", URL: brokenProvider(t), Token: providerToken})
		require.NoError(t, err)
		var ids []string
		for range sources.ConformanceKeep + 1 {
			run, err := e.src.CheckConformance(ctx, e.org.ID, src.ID, "Ada")
			require.NoError(t, err)
			done := waitRun(t, e, src.ID)
			require.Equal(t, run.ID, done.ID)
			require.Equal(t, sources.ConformanceDone, done.State, done.Error)
			require.Positive(t, done.Failed, "a provider that breaks the envelope fails checks")
			_, html, err := e.src.ConformanceReport(ctx, e.org.ID, src.ID, done.ID)
			require.NoError(t, err)
			require.Contains(t, string(html), "FAIL")
			ids = append(ids, run.ID)
		}
		runs, err := e.src.ConformanceRuns(ctx, e.org.ID, src.ID)
		require.NoError(t, err)
		require.Len(t, runs, sources.ConformanceKeep, "only the latest runs are kept")
		require.Equal(t, ids[len(ids)-1], runs[0].ID)
		_, _, err = e.src.ConformanceReport(ctx, e.org.ID, src.ID, ids[0])
		require.ErrorIs(t, err, spec.ErrNotFound, "the oldest run is deleted")

		// Removing the source removes its reports.
		_, err = e.src.Remove(ctx, e.org.ID, src.ID)
		require.NoError(t, err)
		var n int
		require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM source_conformance_runs WHERE source_id = $1`, src.ID).Scan(&n))
		require.Zero(t, n)
	})
}

func TestCheckConformanceUnreachableAndBusy(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newJobsEnv(t, db)
		ctx := t.Context()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		gone := "http://" + l.Addr().String()
		require.NoError(t, l.Close())
		src, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Gone", URL: gone, Token: providerToken})
		require.NoError(t, err)
		_, err = e.src.CheckConformance(ctx, e.org.ID, src.ID, "Ada")
		require.NoError(t, err)
		run := waitRun(t, e, src.ID)
		require.Equal(t, sources.ConformanceFailed, run.State)
		require.Contains(t, run.Error, "unreachable")
		require.NotContains(t, run.Error, providerToken)

		// A provider that holds the check: a second request is refused
		// while the first runs.
		release := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			http.Error(w, "nope", http.StatusUnauthorized)
		}))
		t.Cleanup(slow.Close)
		held, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Slow", URL: slow.URL, Token: providerToken})
		require.NoError(t, err)
		_, err = e.src.CheckConformance(ctx, e.org.ID, held.ID, "Ada")
		require.NoError(t, err)
		_, err = e.src.CheckConformance(ctx, e.org.ID, held.ID, "Bob")
		require.ErrorIs(t, err, spec.ErrConflict)
		close(release)
		run = waitRun(t, e, held.ID)
		require.Equal(t, sources.ConformanceFailed, run.State)
		require.Contains(t, run.Error, "401")
		ctx2, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_, err = e.src.CheckConformance(ctx2, e.org.ID, held.ID, "Bob")
		require.NoError(t, err, "a new check once the last has ended")
		waitRun(t, e, held.ID)
	})
}

// A negative rate of conformance checks is a configuration error, not
// "unthrottled".
func TestConformanceRateNotNegative(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.SQLite)
	orgs, err := org.NewStore(t.Context(), db)
	require.NoError(t, err)
	_, err = sources.New(t.Context(), sources.Config{DB: db, Orgs: orgs, Secrets: testRing, ConformanceRate: -1})
	require.ErrorContains(t, err, "ConformanceRate")
}
