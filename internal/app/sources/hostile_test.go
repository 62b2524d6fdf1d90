package sources_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// What a tenant's Administrator can make the service do with a source: the
// tests of docs/hardening.md's points on sources (issue 28, points 1, 2 and
// 8).

// restart returns another sources service on e's database with cfg's
// settings, as the service restarted with other flags would be.
func restart(t *testing.T, e *env, cfg func(*sources.Config)) *sources.Service {
	t.Helper()
	c := sources.Config{DB: e.db, Orgs: e.orgs, Secrets: testRing}
	cfg(&c)
	s, err := sources.New(t.Context(), c)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestExportRootConfinesTenants: a directory export is refused without an
// export root and outside it, with a 400 naming the url and nothing of the
// host's files; with a root per organisation, one organisation cannot read
// another's export; a source stored before the root changed is refused at
// sync time and paused.
func TestExportRootConfinesTenants(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		root := t.TempDir()
		e := newEnv(t, db, func(c *sources.Config) { c.ExportRoot = filepath.Join(root, sources.OrganisationPlaceholder) })
		mine := filepath.Join(root, e.org.ID, "vendor")
		theirs := filepath.Join(root, e.other.ID, "vendor")
		for _, d := range []string{mine, theirs} {
			dir, _ := newExport(t, 10)
			require.NoError(t, os.MkdirAll(filepath.Dir(d), 0o755))
			require.NoError(t, os.Rename(dir, d))
		}

		s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "mine", URL: "file://" + mine, Transport: sources.TransportExport})
		require.NoError(t, err)
		res, err := e.src.SyncNow(ctx, s.ID)
		require.NoError(t, err)
		require.Positive(t, res.Records())

		for _, u := range []string{theirs, "file://" + theirs, mine + "/../../" + e.other.ID + "/vendor", "/etc", "file:///etc", root} {
			_, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "x", URL: u, Transport: sources.TransportExport})
			require.ErrorIs(t, err, spec.ErrInvalid, u)
			require.ErrorContains(t, err, "outside those this service may read", u)
			require.NotContains(t, err.Error(), "index.json", u)
		}

		// A link inside the organisation's directory to another's export
		// is not followed.
		link := filepath.Join(root, e.org.ID, "link")
		require.NoError(t, os.Symlink(theirs, link))
		l, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "link", URL: link, Transport: sources.TransportExport})
		require.NoError(t, err)
		res, err = e.src.SyncNow(ctx, l.ID)
		require.Error(t, err)
		require.Zero(t, res.Records())
		require.NotContains(t, err.Error(), theirs)

		// Without a root, no directory at all; the refusal probes nothing.
		none := restart(t, e, func(c *sources.Config) { c.AllowPrivate = true })
		for _, u := range []string{mine, "file:///etc", "/nonexistent"} {
			_, err := none.Add(ctx, e.org.ID, sources.SourceCreate{Name: "y", URL: u, Transport: sources.TransportExport})
			require.ErrorIs(t, err, spec.ErrInvalid, u)
			require.ErrorContains(t, err, "reads exports from no directory of its host", u)
			require.NotContains(t, err.Error(), "index.json", u)
		}
		// The source stored under the root is refused at sync time now,
		// and paused: not synced again at every schedule.
		_, err = none.SyncNow(ctx, s.ID)
		var se *sources.SyncError
		require.ErrorAs(t, err, &se)
		require.True(t, se.Paused)
		require.Contains(t, se.Error(), "reads no directory of its host")
		got, err := none.Get(ctx, e.org.ID, s.ID)
		require.NoError(t, err)
		require.NotNil(t, got.PausedAt)
		require.Contains(t, got.PausedReason, "reads no directory of its host")
		_, err = none.SyncNow(ctx, s.ID)
		require.ErrorIs(t, err, sources.ErrPaused)
	})
}

// bombExport writes into dir an export whose conversations file is a
// gzip of size bytes of spaces, with a manifest and index that match it.
func bombExport(t *testing.T, dir string, size int64) {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	for n := size; n > 0; n -= int64(len(chunk)) {
		_, err := zw.Write(chunk[:min(int64(len(chunk)), n)])
		require.NoError(t, err)
	}
	_, err = zw.Write([]byte("\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	id := "000000000001-20260101T000000000Z"
	require.NoError(t, os.MkdirAll(filepath.Join(dir, id), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, id, "conversations.ndjson.gz"), buf.Bytes(), 0o644))
	sum := sha256.Sum256(buf.Bytes())
	created := spec.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := spec.ExportManifest{Format: spec.ExportFormat, ID: id, Sequence: 1, Kind: spec.ExportFull, CreatedAt: created, To: created,
		Tenant: "acme", Files: []spec.ExportFile{{Resource: "conversations", Path: "conversations.ndjson.gz", Records: 1,
			Bytes: int64(buf.Len()), SHA256: hex.EncodeToString(sum[:])}}}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, id, spec.ExportManifestName), b, 0o644))
	idx := spec.ExportIndex{Format: spec.ExportFormat, UpdatedAt: created,
		Sets: []spec.ExportIndexSet{{ID: id, Sequence: 1, Kind: spec.ExportFull, Manifest: id + "/" + spec.ExportManifestName}}}
	b, err = json.Marshal(idx)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, spec.ExportIndexName), b, 0o644))
}

// TestCompressionBombPausesSource: an export whose file is a compression
// bomb fails its sync within the reader's bounds, and the source is
// paused, with its reason on the list of sources: the scheduler skips it,
// after a restart too, until an Administrator resumes it.
func TestCompressionBombPausesSource(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		dir := t.TempDir()
		bombExport(t, dir, 64<<20)
		s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "bomb", URL: dir, Transport: sources.TransportExport})
		require.NoError(t, err)
		_, err = e.src.SyncNow(ctx, s.ID)
		var se *sources.SyncError
		require.ErrorAs(t, err, &se)
		require.True(t, se.Paused)
		require.Contains(t, se.Error(), "larger than this service reads")

		var listed []struct {
			ID           string     `json:"id"`
			PausedAt     *time.Time `json:"pausedAt"`
			PausedReason string     `json:"pausedReason"`
			Resources    map[string]struct {
				LastError string `json:"lastError"`
			} `json:"resources"`
		}
		require.Equal(t, http.StatusOK, get(t, e.url+"/organisations/"+e.org.ID+"/sources", e.key, &listed))
		require.Len(t, listed, 1)
		require.NotNil(t, listed[0].PausedAt)
		require.Contains(t, listed[0].PausedReason, "larger than this service reads")
		require.Contains(t, listed[0].Resources["conversations"].LastError, "larger than this service reads")

		// Due, but paused: not queued, after a restart neither.
		_, err = db.ExecContext(ctx, `UPDATE sources SET next_due_ms = 0 WHERE id = $1`, s.ID)
		require.NoError(t, err)
		n, err := e.src.Schedule(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		again := restart(t, e, func(c *sources.Config) { c.AllowPrivate, c.ExportRoot = true, "/" })
		got, err := again.Get(ctx, e.org.ID, s.ID)
		require.NoError(t, err)
		require.NotNil(t, got.PausedAt)

		// Resumed: due at once, and paused again by the same bomb.
		_, err = e.src.Resume(ctx, e.other.ID, s.ID)
		require.ErrorIs(t, err, spec.ErrNotFound, "another organisation's source")
		r, err := e.src.Resume(ctx, e.org.ID, s.ID)
		require.NoError(t, err)
		require.Nil(t, r.PausedAt)
		n, err = e.src.Schedule(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		_, err = e.src.SyncNow(ctx, s.ID)
		require.ErrorAs(t, err, &se)
		require.True(t, se.Paused)

		// Editing its URL resumes it too.
		fixed, _ := newExport(t, 5)
		require.NoError(t, e.src.SetURL(ctx, e.org.ID, s.ID, fixed))
		res, err := e.src.SyncNow(ctx, s.ID)
		require.NoError(t, err)
		require.Positive(t, res.Records())
	})
}

// TestSourceAddressGuard: without --allow-private-sources, a REST, MCP or
// export URL naming a private, loopback or link-local address (or plain
// http) is refused when added, and a source stored before (the service
// restarted without the flag) is refused at connect time: the address never
// receives a request, and the organisation is told only that the source
// cannot be reached.
func TestSourceAddressGuard(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		strict := restart(t, e, func(*sources.Config) {})
		for _, tc := range []struct{ url, transport, want string }{
			{"https://127.0.0.1:8443/", sources.TransportREST, "does not connect to private"},
			{"https://[::1]/mcp", sources.TransportMCP, "does not connect to private"},
			{"https://169.254.169.254/latest", sources.TransportREST, "does not connect to private"},
			{"https://10.1.2.3/export/", sources.TransportExport, "does not connect to private"},
			{"https://[::ffff:192.168.0.1]/", sources.TransportREST, "does not connect to private"},
			{"http://93.184.216.34/", sources.TransportREST, "https"},
			{"https://localhost/", sources.TransportMCP, "public https URL that this service can reach"},
		} {
			_, err := strict.Add(ctx, e.org.ID, sources.SourceCreate{Name: "x", URL: tc.url, Token: "t", Transport: tc.transport})
			require.ErrorIs(t, err, spec.ErrInvalid, tc.url)
			require.ErrorContains(t, err, tc.want, tc.url)
		}

		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
		t.Cleanup(srv.Close)
		for _, tr := range []string{sources.TransportREST, sources.TransportMCP, sources.TransportExport} {
			s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "loopback " + tr, URL: srv.URL + "/", Token: "t", Transport: tr})
			require.NoError(t, err, "allowed where private addresses are")
			_, err = strict.SyncNow(ctx, s.ID)
			require.Error(t, err, tr)
			require.Contains(t, err.Error(), "cannot be reached", tr)
			require.NotContains(t, err.Error(), "127.0.0.1", tr)
		}
		require.Zero(t, hits.Load(), "the refused address received a request")
	})
}

// TestSyncErrorsAreClassified: what a provider answers (a status line, a
// body, a problem's detail) never reaches the organisation: the sync's error
// and the status show a classified text, and the whole detail is in the
// error the log gets.
func TestSyncErrorsAreClassified(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		for _, tc := range []struct {
			name   string
			status int
			body   string
			want   string
		}{
			{"refused", http.StatusUnauthorized, `{"title":"Unauthorized","detail":"SECRET-401 internal realm"}`, "the source refused the token"},
			{"html", http.StatusOK, "<html>SECRET-200 admin console</html>", "not an AI usage data provider"},
			{"missing", http.StatusNotFound, "SECRET-404 nginx", "not an AI usage data provider"},
			{"failing", http.StatusBadGateway, "SECRET-502 upstream db01", "the source failed"},
			{"bad request", http.StatusBadRequest, `{"detail":"SECRET-400"}`, "refused the sync's requests"},
		} {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: tc.name, URL: srv.URL, Token: "t"})
			require.NoError(t, err)
			_, err = e.src.SyncNow(ctx, s.ID)
			if tc.status == http.StatusNotFound {
				// Every resource not offered: skipped, the status says why.
				require.NoError(t, err)
				continue
			}
			require.Error(t, err, tc.name)
			require.Contains(t, err.Error(), tc.want, tc.name)
			require.NotContains(t, err.Error(), "SECRET", tc.name)
			require.NotContains(t, err.Error(), "HTTP", tc.name)
			var se *sources.SyncError
			require.ErrorAs(t, err, &se, tc.name)
			if tc.status != http.StatusOK {
				require.Contains(t, se.Err.Error(), "HTTP", tc.name)
			}
		}
		listed, err := e.src.Statuses(ctx, e.org.ID)
		require.NoError(t, err)
		for _, l := range listed {
			for r, st := range l.Resources {
				if r == string(consumer.Usage) && st.LastError == "" {
					continue
				}
				if st.NotOffered { // the 404: a state of the provider, not a failure
					require.Empty(t, st.LastError, "%s %s", l.Name, r)
					require.False(t, strings.Contains(st.NotOfferedDetail, "SECRET"), "%s %s: %s", l.Name, r, st.NotOfferedDetail)
					continue
				}
				require.NotEmpty(t, st.LastError, "%s %s", l.Name, r)
				require.False(t, strings.Contains(st.LastError, "SECRET") || strings.Contains(st.LastError, "HTTP"), "%s %s: %s", l.Name, r, st.LastError)
			}
		}
	})
}
