package sources_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/export"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// newExport writes a full export set of a demo dataset into a directory
// and serves the same data over REST, for comparison.
func newExport(t *testing.T, conversations int) (dir, restURL string) {
	t.Helper()
	ctx := t.Context()
	src := memsource.New()
	require.NoError(t, demodata.Fill(ctx, demodata.Config{Conversations: conversations, Seed: 4}, "acme", src))
	dir = t.TempDir()
	x, err := export.New(src, export.Config{Dir: dir, Tenant: "acme"})
	require.NoError(t, err)
	_, err = x.Write(ctx, export.Full)
	require.NoError(t, err)
	h, err := provider.NewHandler(src, provider.WithTokens(provider.Token{Secret: providerToken, Tenant: "acme"}))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return dir, srv.URL
}

func TestExportSource(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		dir, restURL := newExport(t, 80)

		// From the directory, without a token.
		s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "vendor export", URL: dir, Transport: sources.TransportExport})
		require.NoError(t, err)
		require.Equal(t, sources.TransportExport, s.Transport)
		res, err := e.src.SyncNow(ctx, s.ID)
		require.NoError(t, err)
		require.Positive(t, res.Records())
		view := e.url + "/organisations/" + e.org.ID + "/sources/" + s.ID
		for _, r := range []string{"conversations", "assistants", "events"} {
			require.Equal(t, count(t, restURL, r, providerToken), count(t, view, r, e.key), r)
		}

		// Over HTTP, with the token as a bearer token.
		files := http.FileServer(http.Dir(dir))
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer export-token" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			files.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		s2, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "vendor export over http", URL: srv.URL + "/", Token: "export-token", Transport: sources.TransportExport})
		require.NoError(t, err)
		_, err = e.src.SyncNow(ctx, s2.ID)
		require.NoError(t, err)
		view2 := e.url + "/organisations/" + e.org.ID + "/sources/" + s2.ID
		require.Equal(t, count(t, restURL, "conversations", providerToken), count(t, view2, "conversations", e.key))

		// A wrong token fails every resource, recorded as its last error.
		s3, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "wrong token", URL: srv.URL, Token: "nope", Transport: sources.TransportExport})
		require.NoError(t, err)
		_, err = e.src.SyncNow(ctx, s3.ID)
		require.ErrorIs(t, err, provider.ErrUnauthorized)

		// Moving the export: SetURL checks the export's rules.
		require.ErrorIs(t, e.src.SetURL(ctx, e.org.ID, s.ID, "http://vendor.example/export"), spec.ErrInvalid)
		require.NoError(t, e.src.SetURL(ctx, e.org.ID, s.ID, "file://"+dir))
		_, err = e.src.SyncNow(ctx, s.ID)
		require.NoError(t, err)
	})
}

func TestExportSourceValidation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		for name, tc := range map[string]struct {
			n    sources.SourceCreate
			want string
		}{
			"relative dir":     {sources.SourceCreate{URL: "exports/acme"}, "relative"},
			"http not local":   {sources.SourceCreate{URL: "http://vendor.example/x"}, "use https"},
			"remote file":      {sources.SourceCreate{URL: "file://nas/x"}, "only local files"},
			"token on a dir":   {sources.SourceCreate{URL: "/srv/export", Token: "t"}, "takes no token"},
			"scheme":           {sources.SourceCreate{URL: "s3://bucket/x"}, `scheme "s3"`},
			"every too short":  {sources.SourceCreate{URL: "/srv/export", Every: time.Second}, "every must be at least"},
			"query in the URL": {sources.SourceCreate{URL: "https://vendor.example/x?sig=1"}, "query"},
		} {
			tc.n.Name, tc.n.Transport = name, sources.TransportExport
			_, err := e.src.Add(t.Context(), e.org.ID, tc.n)
			require.ErrorIs(t, err, spec.ErrInvalid, name)
			require.ErrorContains(t, err, tc.want, name)
		}
		// https without a token is fine: the token is optional.
		_, err := e.src.Add(t.Context(), e.org.ID, sources.SourceCreate{Name: "open", URL: "https://vendor.example/export/", Transport: sources.TransportExport})
		require.NoError(t, err)
	})
}

// flaky serves h behind the first fails requests of every path, answered
// 503 with Retry-After: 0 so that the retries cost no waiting. paths returns
// how many paths it was asked for.
func flaky(t *testing.T, fails int, h http.Handler) (u string, paths func() int) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		n := seen[r.URL.Path]
		mu.Unlock()
		if n <= fails {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
}

// syncRetries reads the service's count of retried sync requests.
func syncRetries(t *testing.T, e *env) int {
	t.Helper()
	rec := httptest.NewRecorder()
	e.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil))
	for line := range strings.Lines(rec.Body.String()) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "aiusage_sync_retries_total "); ok {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, line)
			return n
		}
	}
	return 0
}

// TestSyncRetryBudget: every request of the service's REST and export
// sources retries a transient failure the same way, within the same budget
// (SyncRetries), and every retry is counted in aiusage_sync_retries_total
// (issue 35, item 3: an export's retries were not counted). A provider that
// fails each request SyncRetries times is synced over either transport, with
// that many retries a request counted; one that fails once more is not.
func TestSyncRetryBudget(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		dir, restURL := newExport(t, 20)
		rest, err := url.Parse(restURL)
		require.NoError(t, err)
		for _, fails := range []int{sources.SyncRetries, sources.SyncRetries + 1} {
			for _, tc := range []struct {
				transport string
				h         http.Handler
				slash     string
			}{
				{sources.TransportREST, httputil.NewSingleHostReverseProxy(rest), ""},
				{sources.TransportExport, http.FileServer(http.Dir(dir)), "/"},
			} {
				name := fmt.Sprintf("%s failing %d times", tc.transport, fails)
				u, paths := flaky(t, fails, tc.h)
				s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: name, URL: u + tc.slash,
					Token: providerToken, Transport: tc.transport})
				require.NoError(t, err)
				before := syncRetries(t, e)
				res, err := e.src.SyncNow(ctx, s.ID)
				retried := syncRetries(t, e) - before
				if fails > sources.SyncRetries {
					require.Error(t, err, name)
					require.Equal(t, sources.SyncRetries*paths(), retried, "%s: every retry is counted", name)
					continue
				}
				require.NoError(t, err, name)
				require.Positive(t, res.Records(), name)
				require.Equal(t, fails*paths(), retried, "%s: every retry is counted", name)
				view := e.url + "/organisations/" + e.org.ID + "/sources/" + s.ID
				require.Equal(t, count(t, restURL, "conversations", providerToken), count(t, view, "conversations", e.key), name)
			}
		}
	})
}
