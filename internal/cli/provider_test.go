package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var urlLine = regexp.MustCompile(`msg="provider serving" url=(http://\S+)`)

// startServe runs "aiusage provider serve args..." in-process until the
// test ends, and returns its base URL once it is ready.
func startServe(t *testing.T, args ...string) (string, *syncBuffer, func() int) {
	t.Helper()
	return startServeEnv(t, nil, args...)
}

// startServeEnv is startServe with the environment variables environ.
func startServeEnv(t *testing.T, environ map[string]string, args ...string) (string, *syncBuffer, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan int, 1)
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: logs, getenv: testGetenv(environ)}
	go func() { done <- run(ctx, e, append([]string{"provider", "serve", "--addr", "127.0.0.1:0"}, args...)) }()
	var once sync.Once
	code := -1
	stop := func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Error("provider serve did not stop")
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := urlLine.FindStringSubmatch(logs.String()); m != nil {
			return m[1], logs, stop
		}
		select {
		case c := <-done:
			t.Fatalf("provider serve exited with %d: %s", c, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("provider serve not ready: %s", logs.String())
	return "", nil, nil
}

func getJSON(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

func TestProviderServeDemo(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			base, logs, stop := startServe(t, "--database-url", dbURL, "--token", "full", "--token", "usage=read:usage", "--demo", "300", "--seed", "7",
				"--tenant-token", "other:other-secret")
			require.Contains(t, logs.String(), "demo data loaded")

			for _, ep := range []struct{ path, schema string }{
				{"conversations?limit=50", "conversation-list"},
				{"assistants", "assistant-list"},
				{"events?category=Access", "event-list"},
				{"usage?groupBy=model,department", "usage-list"},
			} {
				status, body := getJSON(t, base+ep.path, "full")
				require.Equal(t, http.StatusOK, status, "%s: %s", ep.path, body)
				f, err := spec.Validate(ep.schema, body)
				require.NoError(t, err)
				require.True(t, spec.Valid(f), "%s: %v", ep.path, f)
				var page spec.List[json.RawMessage]
				require.NoError(t, json.Unmarshal(body, &page))
				require.NotEmpty(t, page.Data, ep.path)
			}
			status, _ := getJSON(t, base+"conversations", "usage")
			require.Equal(t, http.StatusForbidden, status)
			status, _ = getJSON(t, base+"usage", "usage")
			require.Equal(t, http.StatusOK, status)
			status, _ = getJSON(t, base+"conversations", "")
			require.Equal(t, http.StatusUnauthorized, status)
			// Another tenant's token sees none of the demo data.
			status, body := getJSON(t, base+"conversations", "other-secret")
			require.Equal(t, http.StatusOK, status)
			require.JSONEq(t, `{"data":[],"hasMore":false,"nextCursor":null}`, string(body))
			require.Equal(t, ExitOK, stop())
			require.Contains(t, logs.String(), "stopped")

			// A second start on the same database keeps the data (no second
			// fill) and accepts the cursors of the first process.
			base2, logs2, _ := startServe(t, "--database-url", dbURL, "--token", "full", "--demo", "300")
			require.Contains(t, logs2.String(), "already holds conversations")
			_, body = getJSON(t, base2+"conversations?limit=1", "full")
			var page spec.List[json.RawMessage]
			require.NoError(t, json.Unmarshal(body, &page))
			require.NotNil(t, page.NextCursor)
			db, err := sqldb.Open(context.Background(), dbURL)
			require.NoError(t, err)
			defer db.Close()
			var n int
			require.NoError(t, db.QueryRowContext(context.Background(), "SELECT count(*) FROM conversations").Scan(&n))
			require.Equal(t, 300, n)
		})
	}
}

func TestProviderServeUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"provider", "serve"}, "at least one --token"},
		{[]string{"provider", "serve", "--token", "x=read:everything"}, "read:everything"},
		{[]string{"provider", "serve", "--token", "x", "--database-url", "mysql://x"}, "--database-url"},
		{[]string{"provider", "serve", "--token", "x", "--demo", "-1"}, "--demo"},
		{[]string{"provider", "serve", "--token", "x", "--log-format", "xml"}, "--log-format"},
		{[]string{"provider", "serve", "--token", "x", "extra"}, "takes no arguments"},
		{[]string{"provider", "serve", "--token", "x", "--tenant-token", "nocolon"}, "TENANT:TOKEN"},
		{[]string{"provider", "serve", "--token", "x", "--tenant-token", "t:y=read:all"}, "read:all"},
	}
	for _, tc := range cases {
		r := runCLI(t, "", nil, tc.args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.want)
	}
	// Several tokens in the environment, separated by spaces.
	dir := t.TempDir()
	r := runCLI(t, "", map[string]string{"AIUSAGE_PROVIDER_TOKENS": "a b=read:nope", "AIUSAGE_DATABASE_URL": "sqlite:" + dir + "/x.db"}, "provider", "serve")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "read:nope")
}

func TestProviderServeOperations(t *testing.T) {
	t.Parallel()
	url, _, stop := startServeEnv(t, map[string]string{envMetricsToken: testMetricsToken}, "--token", "s3cret", "--database-url", "sqlite:"+t.TempDir()+"/p.db")
	defer stop()
	for _, c := range [][2]string{{"healthz", `"ok"`}, {"readyz", `"ready"`}, {"metrics", `aiusage_http_requests_total{method="GET",route="/healthz",status="200"} 1`}} {
		path, want := c[0], c[1]
		req, err := http.NewRequest(http.MethodGet, url+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+testMetricsToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, body)
		require.Contains(t, string(body), want, path)
	}
	// The interface itself is still there, behind its credentials.
	resp, err := http.Get(url + "conversations")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}
