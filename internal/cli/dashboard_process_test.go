package cli

import (
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestDashboardSessionAcrossProcesses signs in on one "service serve"
// process and uses the session on another sharing the database, and on a
// process started after the first one is gone; signing out on one ends it
// on all.
func TestDashboardSessionAcrossProcesses(t *testing.T) {
	eachServiceDB(t, func(t *testing.T, bin, dbURL, orgID string) {
		cmd := exec.Command(bin, "admin", "user", "create", "--org", orgID, "--email", "ada@acme.test",
			"--role", "Administrator", "--password-stdin", "--actor", "test", "--database-url", dbURL)
		cmd.Stdin = strings.NewReader("a passphrase of some length\n")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)

		a, b := startServiceProcess(t, bin, dbURL), startServiceProcess(t, bin, dbURL)
		a.url, b.url = strings.TrimSuffix(a.url, "/"), strings.TrimSuffix(b.url, "/")
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		form := url.Values{"email": {"ada@acme.test"}, "password": {"a passphrase of some length"}}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, a.url+"/signin", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", a.url)
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		var session *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == "aiusage_session" {
				session = c
			}
		}
		require.NotNil(t, session, "no session cookie")

		get := func(base string) (int, string) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/", nil)
			require.NoError(t, err)
			req.AddCookie(session)
			resp, err := noRedirect.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp.StatusCode, string(body)
		}
		status, body := get(b.url)
		require.Equal(t, http.StatusOK, status, "the session made on A works on B")
		require.Contains(t, body, "<h1>Overview</h1>")

		require.NoError(t, a.cmd.Process.Kill())
		<-a.done
		c := startServiceProcess(t, bin, dbURL)
		c.url = strings.TrimSuffix(c.url, "/")
		status, _ = get(c.url)
		require.Equal(t, http.StatusOK, status, "the session outlives the process that made it")

		req, err = http.NewRequestWithContext(t.Context(), http.MethodPost, b.url+"/signout", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", b.url)
		req.AddCookie(session)
		resp, err = noRedirect.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		status, _ = get(c.url)
		require.Equal(t, http.StatusSeeOther, status, "signed out on B, the session is gone on C too")
	})
}

// eachServiceDB builds the binary and runs fn, as a subtest of each
// database dialect, with a fresh database of the service ("service serve"
// processes share it) holding one organisation, Acme, whose id is orgID.
// It skips in -short mode: it builds and runs the binary.
func eachServiceDB(t *testing.T, fn func(t *testing.T, bin, dbURL, orgID string)) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			var dbURL string
			if d == sqldb.SQLite {
				dbURL = "sqlite:" + t.TempDir() + "/service.db"
			} else {
				dbURL = sqldbtest.URL(t, d)
			}
			var o struct {
				ID string `json:"id"`
			}
			binJSON(t, bin, &o, "admin", "org", "create", "--name", "Acme", "--actor", "test", "--database-url", dbURL)
			fn(t, bin, dbURL, o.ID)
		})
	}
}
