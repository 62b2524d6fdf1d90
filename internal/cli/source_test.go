package cli

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// adminSource is a source as the admin source commands print it.
type adminSource struct {
	ID                string  `json:"id"`
	OrganisationID    string  `json:"organisationId"`
	Name              string  `json:"name"`
	URL               string  `json:"url"`
	Transport         string  `json:"transport"`
	Every             string  `json:"every"`
	Token             string  `json:"token"`
	CreatedAt         string  `json:"createdAt"`
	NextSyncAt        string  `json:"nextSyncAt"`
	LastSyncStartedAt *string `json:"lastSyncStartedAt"`
	PausedAt          *string `json:"pausedAt"`
	PausedReason      string  `json:"pausedReason"`
	LastReceivedAt    *string `json:"lastReceivedAt"`
	// Resources are the records and sync status per resource, printed
	// by "admin source list" only.
	Resources map[string]map[string]any `json:"resources"`
}

// open lets the sources' URLs name any address, as the tests' hosts do not
// resolve (vendor.example) or are on loopback.
var open = map[string]string{"AIUSAGE_ALLOW_PRIVATE_SOURCES": "true"}

func TestAdminSource(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			f := newFixture(t, dbURL)
			var s adminSource
			r := adminOK(t, dbURL, &s, "source", "add", "--org", f.org.ID, "--name", "Vendor",
				"--url", "https://vendor.example/ai", "--token", "tok-secret-123456", "--transport", "mcp", "--every", "1m", "--allow-private-sources")
			require.Equal(t, "Vendor", s.Name)
			require.Equal(t, f.org.ID, s.OrganisationID)
			require.Equal(t, "mcp", s.Transport)
			require.Equal(t, "1m0s", s.Every)
			require.Equal(t, "****3456", s.Token)
			require.NotContains(t, r.stdout, "tok-secret")

			var list struct {
				OrganisationID string        `json:"organisationId"`
				Sources        []adminSource `json:"sources"`
			}
			adminOK(t, dbURL, &list, "source", "list", "--org", f.org.ID)
			require.Len(t, list.Sources, 1)
			require.Equal(t, s.ID, list.Sources[0].ID)

			// Bad flags: 2.
			for _, args := range [][]string{
				{"source", "add", "--org", f.org.ID, "--url", "https://x.example", "--token", "t"},
				{"source", "add", "--org", f.org.ID, "--name", "x", "--url", "ftp://x.example", "--token", "t"},
				{"source", "add", "--org", f.org.ID, "--name", "x", "--url", "https://x.example"},
				{"source", "add", "--org", f.org.ID, "--name", "x", "--url", "https://x.example", "--token", "t", "--transport", "grpc"},
				{"source", "add", "--org", f.org.ID, "--name", "x", "--url", "https://x.example", "--token", "t", "--every", "1s"},
				{"source", "add", "--org", "nope", "--name", "x", "--url", "https://x.example", "--token", "t"},
				{"source", "remove", "--org", f.org.ID, "--source", "nope"},
				{"source", "list"},
			} {
				r := admin(t, dbURL, nil, args...)
				require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
				require.Empty(t, r.stdout)
			}
			// Unknown organisation or source: 1.
			unknown := "00000000-0000-4000-8000-000000000000"
			for _, args := range [][]string{
				{"source", "add", "--org", unknown, "--name", "x", "--url", "https://x.example", "--token", "t"},
				{"source", "list", "--org", unknown},
				{"source", "remove", "--org", f.org.ID, "--source", unknown},
				{"source", "add", "--org", f.org.ID, "--name", "Vendor", "--url", "https://x.example", "--token", "t"}, // duplicate name
			} {
				r := admin(t, dbURL, open, args...)
				require.Equal(t, ExitFailure, r.code, "%v: %s", args, r.stderr)
				require.Empty(t, r.stdout)
			}

			var removed adminSource
			adminOK(t, dbURL, &removed, "source", "remove", "--org", f.org.ID, "--source", strings.ToUpper(s.ID))
			require.Equal(t, s.ID, removed.ID)
			adminOK(t, dbURL, &list, "source", "list", "--org", f.org.ID)
			require.Empty(t, list.Sources)
		})
	}
}

func TestAdminSourceExport(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	f := newFixture(t, dbURL)
	root := t.TempDir()
	dir := filepath.Join(root, "acme")
	var s adminSource
	adminOK(t, dbURL, &s, "source", "add", "--org", f.org.ID, "--name", "Vendor export", "--url", dir, "--transport", "export",
		"--export-root", root)
	require.Equal(t, "export", s.Transport)
	require.Equal(t, dir, s.URL)
	adminOK(t, dbURL, &s, "source", "add", "--org", f.org.ID, "--name", "Vendor export over https",
		"--url", "https://vendor.example/exports/acme/", "--token", "tok-secret-123456", "--transport", "export", "--allow-private-sources")
	require.Equal(t, "****3456", s.Token)

	// The rules of the service: no directory without an export root, none
	// outside it (the same root from the environment), no private address
	// without --allow-private-sources; the refusal names the url and
	// nothing of the host's files.
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--url", dir}, nil, "url " + dir + ": this service reads exports from no directory of its host"},
		{[]string{"--url", "file:///etc"}, map[string]string{"AIUSAGE_EXPORT_ROOT": root}, "url /etc: the export's directory is outside those this service may read"},
		{[]string{"--url", root + "/../other"}, map[string]string{"AIUSAGE_EXPORT_ROOT": root}, "is outside those this service may read"},
		{[]string{"--url", "https://127.0.0.1:8443/x"}, nil, "does not connect to private, loopback or link-local addresses"},
		{[]string{"--url", "https://169.254.169.254/"}, nil, "does not connect to private"},
		{[]string{"--url", dir, "--export-root", "relative/dir"}, nil, "--export-root must be an absolute directory"},
	} {
		args := append([]string{"source", "add", "--org", f.org.ID, "--name", "refused", "--transport", "export"}, tc.args...)
		r := admin(t, dbURL, tc.env, args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, tc.want, "%v", args)
		require.NotContains(t, r.stderr, "index.json", "%v", args)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--url", "exports/acme"}, "relative"},
		{[]string{"--url", "http://vendor.example/exports"}, "use https"},
		{[]string{"--url", dir, "--token", "t"}, "takes no token"},
		{[]string{"--url", "s3://bucket/acme"}, `scheme "s3"`},
	} {
		args := append([]string{"source", "add", "--org", f.org.ID, "--name", "x", "--transport", "export"}, tc.args...)
		r := admin(t, dbURL, nil, args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, tc.want, "%v", args)
	}
	// A source stored under a root that the service no longer has: its
	// sync pauses it, 'admin source list' shows it, 'admin source resume'
	// resumes it (audited).
	ctx := context.Background()
	db, err := sqldb.Open(ctx, dbURL)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `UPDATE sources SET paused_at_ms = 1, paused_reason = 'the export is larger than this service reads' WHERE id = $1`, s.ID)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	var list struct {
		OrganisationID string        `json:"organisationId"`
		Sources        []adminSource `json:"sources"`
	}
	adminOK(t, dbURL, &list, "source", "list", "--org", f.org.ID)
	var paused int
	for _, l := range list.Sources {
		if l.ID == s.ID {
			require.NotNil(t, l.PausedAt)
			require.Equal(t, "the export is larger than this service reads", l.PausedReason)
			paused++
		}
	}
	require.Equal(t, 1, paused)
	var resumed adminSource
	adminOK(t, dbURL, &resumed, "source", "resume", "--org", f.org.ID, "--source", s.ID)
	require.Nil(t, resumed.PausedAt)
	r := admin(t, dbURL, nil, "audit", "--org", f.org.ID)
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "source.resumed")

	r = admin(t, dbURL, nil, "source", "add", "--org", f.org.ID, "--name", "x", "--url", "https://x.example", "--transport", "ftp")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "--transport must be rest, mcp, export, push, openai or anthropic")
}

func TestAdminSourcePush(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	f := newFixture(t, dbURL)
	var s struct {
		adminSource
		Secret       string `json:"secret"`
		ReceiverPath string `json:"receiverPath"`
	}
	r := adminOK(t, dbURL, &s, "source", "add", "--org", f.org.ID, "--name", "Pushed", "--transport", "push")
	require.Equal(t, "push", s.Transport)
	require.True(t, strings.HasPrefix(s.Secret, "whsec_"), s.Secret)
	require.Equal(t, "/push/"+s.ID, s.ReceiverPath)
	require.Equal(t, "1h0m0s", s.Every)
	require.Contains(t, r.stderr, "shown this once")

	// With the REST address of the reconciliation walk, and its interval.
	adminOK(t, dbURL, &s, "source", "add", "--org", f.org.ID, "--name", "Reconciled", "--transport", "push",
		"--url", "https://vendor.example/ai", "--token", "tok-secret-123456", "--every", "30m", "--allow-private-sources")
	require.Equal(t, "30m0s", s.Every)
	require.Equal(t, "https://vendor.example/ai", s.URL)

	// The secret is never listed.
	r = adminOK(t, dbURL, nil, "source", "list", "--org", f.org.ID)
	require.NotContains(t, r.stdout, "whsec_")

	for _, args := range [][]string{
		{"--url", "https://x.example"},
		{"--token", "t"},
		{"--url", "ftp://x.example", "--token", "t"},
		{"--every", "1s"},
	} {
		r := admin(t, dbURL, nil, append([]string{"source", "add", "--org", f.org.ID, "--name", "x", "--transport", "push"}, args...)...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.Empty(t, r.stdout)
	}
}

// TestAdminSourceListTelemetry: after a tool's first telemetry request with
// an Ingestion key, "admin source list" lists the key's telemetry source
// with when it last received a request and its records per resource.
func TestAdminSourceListTelemetry(t *testing.T) {
	t.Parallel()
	fixture, err := os.ReadFile(filepath.Join("..", "app", "telemetry", "tools", "testdata", "claude_logs.json"))
	require.NoError(t, err)
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			f := newFixture(t, dbURL)
			var ingestion org.CreatedKey
			adminOK(t, dbURL, &ingestion, "key", "create", "--org", f.org.ID, "--name", "laptops")
			var list struct {
				OrganisationID string        `json:"organisationId"`
				Sources        []adminSource `json:"sources"`
			}
			adminOK(t, dbURL, &list, "source", "list", "--org", f.org.ID)
			require.Empty(t, list.Sources, "no source before the key's first request")

			base, _, _ := startService(t, serviceURLText, "--database-url", dbURL)
			before := time.Now().UTC().Truncate(time.Millisecond)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"v1/logs", bytes.NewReader(fixture))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+ingestion.Secret)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusOK, resp.StatusCode)

			require.Eventually(t, func() bool { // the usage is rolled up by a job
				adminOK(t, dbURL, &list, "source", "list", "--org", f.org.ID)
				return len(list.Sources) == 1 && list.Sources[0].Resources["usage"]["records"].(float64) > 0
			}, 30*time.Second, 100*time.Millisecond)
			s := list.Sources[0]
			require.Equal(t, "telemetry", s.Transport)
			require.Equal(t, "laptops", s.Name)
			require.NotNil(t, s.LastReceivedAt)
			at, err := time.Parse(time.RFC3339Nano, *s.LastReceivedAt)
			require.NoError(t, err)
			require.False(t, at.Before(before), "%s before %s", at, before)
		})
	}
}
