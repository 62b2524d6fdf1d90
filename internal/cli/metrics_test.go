package cli

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

const testMetricsToken = "ops-token-0123456789abcdef"

var metricsLine = regexp.MustCompile(`msg="metrics serving" url=(http://\S+)`)

// scrape GETs u with the bearer token (none when "") and returns the
// status, the WWW-Authenticate header and the body.
func scrape(t *testing.T, u, token string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

// requireMetricsGuarded checks /metrics of the main address base: refused
// without the token or with another, served with it.
func requireMetricsGuarded(t *testing.T, base string) {
	t.Helper()
	code, auth, _ := scrape(t, base+"metrics", "")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Contains(t, auth, "Bearer")
	code, _, _ = scrape(t, base+"metrics", testMetricsToken+"x")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _, body := scrape(t, base+"metrics", testMetricsToken)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "aiusage_http_requests_total")
}

// requireMetricsSeparate checks the --metrics-addr listener logged in logs:
// /metrics without a token, nothing else.
func requireMetricsSeparate(t *testing.T, logs string) {
	t.Helper()
	m := metricsLine.FindStringSubmatch(logs)
	require.NotNil(t, m, logs)
	code, _, body := scrape(t, m[1], "")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "aiusage_http_requests_total")
	code, _, _ = scrape(t, m[1][:len(m[1])-len("/metrics")]+"/healthz", "")
	require.Equal(t, http.StatusNotFound, code, "the separate address serves /metrics only")
}

// TestProviderServeMetricsAccess: /metrics of provider serve is refused on
// the main address unless the operations token is set and sent, and served
// on --metrics-addr.
func TestProviderServeMetricsAccess(t *testing.T) {
	t.Parallel()
	url, _, stop := startServe(t, "--token", "s3cret", "--database-url", "sqlite:"+t.TempDir()+"/p.db")
	code, _, body := scrape(t, url+"metrics", "")
	require.Equal(t, http.StatusNotFound, code, body)
	require.Contains(t, body, envMetricsToken)
	code, _, _ = scrape(t, url+"metrics", "s3cret")
	require.Equal(t, http.StatusNotFound, code, "the provider's own token does not open it")
	stop()

	url, logs, stop := startServeEnv(t, map[string]string{envMetricsToken: testMetricsToken},
		"--token", "s3cret", "--database-url", "sqlite:"+t.TempDir()+"/p.db", "--metrics-addr", "127.0.0.1:0")
	defer stop()
	requireMetricsGuarded(t, url)
	requireMetricsSeparate(t, logs.String())
}

// TestServiceServeMetricsAccess: the same for service serve.
func TestServiceServeMetricsAccess(t *testing.T) {
	t.Parallel()
	base, _, stop := startService(t, serviceURLText, "--database-url", "sqlite:"+t.TempDir()+"/s.db")
	code, _, body := scrape(t, base+"metrics", "")
	require.Equal(t, http.StatusNotFound, code, body)
	code, _, _ = scrape(t, base+"healthz", "")
	require.Equal(t, http.StatusOK, code, "the other operations endpoints stay open")
	stop()

	base, logs, stop := startServiceEnv(t, map[string]string{envMetricsToken: testMetricsToken}, serviceURLText,
		"--database-url", "sqlite:"+t.TempDir()+"/s.db", "--metrics-addr", "127.0.0.1:0")
	defer stop()
	requireMetricsGuarded(t, base)
	requireMetricsSeparate(t, logs.String())
}

// TestMetricsUsageErrors: a short token and an address that cannot be
// listened on are usage errors naming them.
func TestMetricsUsageErrors(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	dir := t.TempDir()
	for _, c := range []struct {
		environ map[string]string
		args    []string
		want    string
	}{
		{map[string]string{envMetricsToken: "short"}, []string{"provider", "serve", "--token", "x", "--database-url", "sqlite:" + dir + "/p.db"}, envMetricsToken},
		{map[string]string{envMetricsToken: "short"}, []string{"service", "serve", "--database-url", "sqlite:" + dir + "/s.db"}, envMetricsToken},
		{nil, []string{"provider", "serve", "--token", "x", "--database-url", "sqlite:" + dir + "/p.db", "--metrics-addr", ln.Addr().String()}, "--metrics-addr"},
		{nil, []string{"service", "serve", "--database-url", "sqlite:" + dir + "/s.db", "--metrics-addr", ln.Addr().String()}, "--metrics-addr"},
	} {
		r := runCLI(t, "", c.environ, append(c.args, "--addr", "127.0.0.1:0")...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want)
	}
}
