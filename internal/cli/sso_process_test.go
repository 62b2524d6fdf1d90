package cli

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/sso"
)

// TestSSOSessionAcrossProcesses signs in through a real OpenID provider
// with two "service serve" processes behind one public URL: the sign-in
// starts on A, the provider's callback reaches B, and the session works on
// both. The used callback is refused on A, and signing out on A ends the
// session on B.
func TestSSOSessionAcrossProcesses(t *testing.T) {
	eachServiceDB(t, func(t *testing.T, bin, dbURL, orgID string) {
		e := newSSOEnv(t, dbURL, nil, nil)
		e.configure(t, orgID, "acme.test")

		const public = "http://oversight.test" // the load balancer's address, in front of A and B
		a := startServiceProcess(t, bin, dbURL, "--allow-private-idp", "--public-url", public)
		b := startServiceProcess(t, bin, dbURL, "--allow-private-idp", "--public-url", public)
		a.url, b.url = strings.TrimSuffix(a.url, "/"), strings.TrimSuffix(b.url, "/")
		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		do := func(method, target string, form url.Values) (*http.Response, string) {
			t.Helper()
			var body io.Reader
			if form != nil {
				body = strings.NewReader(form.Encode())
			}
			req, err := http.NewRequestWithContext(t.Context(), method, target, body)
			require.NoError(t, err)
			if form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				u, _ := url.Parse(target)
				req.Header.Set("Origin", u.Scheme+"://"+u.Host)
			}
			resp, err := browser.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp, string(b)
		}

		e.idp.QueueUser(&mockoidc.MockUser{Subject: "sub-rev", Email: "rev@acme.test", EmailVerified: true,
			PreferredUsername: "rev", Groups: []string{"aiusage-reviewers"}})
		resp, body := do(http.MethodPost, a.url+"/signin", url.Values{"email": {"rev@acme.test"}, "next": {"/usage"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
		toIdP := resp.Header.Get("Location")
		require.True(t, strings.HasPrefix(toIdP, e.idp.AuthorizationEndpoint()), "a covered domain goes to its provider: %s", toIdP)
		require.Contains(t, toIdP, url.QueryEscape(public+sso.CallbackPath), "the redirect URI is the public URL's")

		resp, _ = do(http.MethodGet, toIdP, nil)
		require.Equal(t, http.StatusFound, resp.StatusCode)
		back, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		require.Equal(t, public+sso.CallbackPath, back.Scheme+"://"+back.Host+back.Path)

		// The load balancer sends the callback to B.
		resp, body = do(http.MethodGet, b.url+back.RequestURI(), nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
		require.Equal(t, "/usage", resp.Header.Get("Location"))
		var session *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == "aiusage_session" && c.Value != "" {
				session = c
			}
		}
		require.NotNil(t, session, "the callback on B gives a session")

		get := func(base, path string) (int, string) {
			t.Helper()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
			require.NoError(t, err)
			req.AddCookie(session)
			resp, err := (&http.Client{CheckRedirect: browser.CheckRedirect}).Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp.StatusCode, string(b)
		}
		status, page := get(a.url, "/")
		require.Equal(t, http.StatusOK, status, "the session B made works on A")
		require.Contains(t, page, "<h1>Overview</h1>")
		status, _ = get(b.url, "/settings/users")
		require.Equal(t, http.StatusForbidden, status, "the provider's group makes a Reviewer")

		resp, _ = do(http.MethodGet, a.url+back.RequestURI(), nil)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "the callback, used on B, is refused on A")

		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, a.url+"/signout", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", a.url)
		req.AddCookie(session)
		out, err := (&http.Client{CheckRedirect: browser.CheckRedirect}).Do(req)
		require.NoError(t, err)
		_ = out.Body.Close()
		require.Equal(t, http.StatusSeeOther, out.StatusCode)
		status, _ = get(b.url, "/")
		require.Equal(t, http.StatusSeeOther, status, "signed out on A, the session is gone on B")
	})
}

// TestPublicURLFlag: --public-url must be an absolute http(s) URL without
// query or fragment, on service serve and demo; anything else is a usage
// error naming it, before anything starts.
func TestPublicURLFlag(t *testing.T) {
	t.Parallel()
	dbURL := "sqlite:" + t.TempDir() + "/service.db"
	for _, bad := range []string{"oversight.example.com", "ftp://oversight.example.com", "https://", "https://x.example/?a=1",
		"https://x.example/#top", "https://user@x.example", "/relative"} {
		for _, args := range [][]string{
			{"service", "serve", "--addr", "127.0.0.1:0", "--database-url", dbURL, "--public-url", bad},
			{"demo", "--addr", "127.0.0.1:0", "--public-url", bad},
		} {
			r := runCLI(t, "", nil, args...)
			require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
			require.Contains(t, r.stderr, "--public-url must be an absolute http or https URL", args)
			require.Contains(t, r.stderr, strconv.Quote(bad), args)
		}
	}
	// The environment variable is checked the same way.
	r := runCLI(t, "", map[string]string{"AIUSAGE_PUBLIC_URL": "not a url"}, "service", "serve", "--addr", "127.0.0.1:0", "--database-url", dbURL)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "--public-url")
}
