package cli

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/orgapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// hardenedService is a service with an organisation, a key, a REST source
// and a push source, for the tests that walk every API.
type hardenedService struct {
	base, key, org, source, push string
	dbURL                        string
}

func startHardenedService(t *testing.T, args ...string) hardenedService {
	t.Helper()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	f := newFixture(t, dbURL)
	var rest, push map[string]any
	adminOK(t, dbURL, &rest, "source", "add", "--org", f.org.ID, "--name", "rest", "--url", "http://127.0.0.1:9/", "--token", "x")
	adminOK(t, dbURL, &push, "source", "add", "--org", f.org.ID, "--name", "push", "--transport", "push")
	base, _, _ := startService(t, serviceURLText, append([]string{"--database-url", dbURL}, args...)...)
	return hardenedService{base: strings.TrimSuffix(base, "/"), key: f.key.Secret, org: f.org.ID,
		source: rest["id"].(string), push: push["id"].(string), dbURL: dbURL}
}

// send sends one request with the service's key (unless key is false) and
// returns the answer, its body read.
func (s hardenedService) send(t *testing.T, method, path string, key bool, hdr map[string]string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, body)
	require.NoError(t, err)
	if key {
		req.Header.Set("X-API-Key", s.key)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

var (
	jsonHeader = map[string]string{"Content-Type": "application/json"}
	mcpHeader  = map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
)

const mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

// TestServiceSecurityHeaders walks every API of the service (organisation
// API, review-task API, sources and their collected views with MCP, the
// organisation's view, the push receiver, the dashboard), answers and errors
// alike: each is marked nosniff and no-store.
func TestServiceSecurityHeaders(t *testing.T) {
	t.Parallel()
	s := startHardenedService(t)
	orgPath := "/organisations/" + s.org
	srcPath := orgPath + "/sources/" + s.source
	for _, c := range []struct {
		method, path string
		key          bool
		hdr          map[string]string
		body         string
		status       int
	}{
		{"GET", "/organisations", true, nil, "", 200},
		{"GET", "/organisations", false, nil, "", 401},
		{"GET", orgPath + "/instructions", true, nil, "", 200},
		{"GET", orgPath + "/agents", true, nil, "", 200},
		{"POST", orgPath + "/instructions", true, jsonHeader, "{", 400},
		{"GET", "/review-tasks", true, nil, "", 200},
		{"GET", "/review-tasks", false, nil, "", 401},
		{"GET", "/review-tasks/nope", true, nil, "", 404},
		{"GET", "/webhooks", true, nil, "", 200},
		{"GET", orgPath + "/sources", true, nil, "", 200},
		{"GET", srcPath, true, nil, "", 404},
		{"GET", srcPath + "/conversations", true, nil, "", 200},
		{"GET", srcPath + "/conversations", false, nil, "", 401},
		{"POST", srcPath + "/mcp", true, mcpHeader, mcpInitialize, 200},
		{"GET", orgPath + "/conversations", true, nil, "", 200},
		{"GET", orgPath + "/usage", true, nil, "", 200},
		{"POST", "/push/" + s.push, false, jsonHeader, "{}", 401},
		{"GET", "/signin", false, nil, "", 200},
		{"GET", "/", false, nil, "", 303},
	} {
		resp, b := s.send(t, c.method, c.path, c.key, c.hdr, strings.NewReader(c.body))
		name := c.method + " " + c.path
		require.Equal(t, c.status, resp.StatusCode, "%s: %.300s", name, b)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), name)
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), name)
	}
}

// TestServiceBodyLimits: every route of the service that reads a body
// limits it, and a body over the limit is 413. The MCP endpoint of the
// collected view is sent 50 MB.
func TestServiceBodyLimits(t *testing.T) {
	t.Parallel()
	s := startHardenedService(t)
	orgPath := "/organisations/" + s.org
	mib := 1 << 20
	for _, c := range []struct {
		method, path string
		key          bool
		hdr          map[string]string
		size         int // bytes of padding, over the route's limit
	}{
		{"POST", orgPath + "/instructions", true, jsonHeader, mib},
		{"PATCH", orgPath + "/instructions/" + s.source, true, jsonHeader, mib},
		{"POST", "/review-tasks", true, jsonHeader, mib},
		{"POST", "/webhooks", true, jsonHeader, mib},
		{"POST", orgPath + "/sources/" + s.source + "/mcp", true, mcpHeader, 50 * mib},
		{"POST", "/push/" + s.push, false, jsonHeader, 5 * mib},
		{"POST", "/signin", false, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 16 << 10},
	} {
		body := io.MultiReader(strings.NewReader(`{"pad":"`), bytes.NewReader(bytes.Repeat([]byte("a"), c.size)), strings.NewReader(`"}`))
		resp, b := s.send(t, c.method, c.path, c.key, c.hdr, body)
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s %s: %.300s", c.method, c.path, b)
	}
}

// holdRequest opens a connection and sends a POST /review-tasks with key
// whose body never arrives, so the request stays in flight (holding its
// slot) until the test closes the connection.
func (s hardenedService) holdRequest(t *testing.T, key string) net.Conn {
	t.Helper()
	return s.hold(t, "/review-tasks", key)
}

// hold is holdRequest to any path, with key unless it is empty.
func (s hardenedService) hold(t *testing.T, path, key string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	hdr := ""
	if key != "" {
		hdr = "X-API-Key: " + key + "\r\n"
	}
	_, err = io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: x\r\n"+hdr+
		"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	require.NoError(t, err)
	return conn
}

// statusWith returns the status of GET path with key.
func (s hardenedService) statusWith(t *testing.T, path, key string) (int, []byte, http.Header) {
	t.Helper()
	resp, b := s.send(t, http.MethodGet, path, false, map[string]string{"X-API-Key": key}, nil)
	return resp.StatusCode, b, resp.Header
}

// eventually waits (generously) until the status of GET path with key is
// want.
func (s hardenedService) eventually(t *testing.T, path, key string, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, b, _ := s.statusWith(t, path, key)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d, want %d: %s", path, got, want, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServiceConcurrencyLimits: requests held in flight by one key use up
// its slots (--max-concurrent-per-key), and those of an organisation's keys
// its slots (--max-concurrent-per-organisation): the next request is 429 in
// each API's error shape with Retry-After, while another organisation's key
// is served. A slot is given back when its request ends.
func TestServiceConcurrencyLimits(t *testing.T) {
	t.Parallel()
	s := startHardenedService(t, "--max-concurrent-per-key", "2", "--max-concurrent-per-organisation", "3",
		"--read-timeout", "1m")
	var second orgapi.CreatedKey
	var other fixture
	adminOK(t, s.dbURL, &second, "key", "create", "--org", s.org, "--name", "second", "--type", "API")
	adminOK(t, s.dbURL, &other.org, "org", "create", "--name", "Globex")
	adminOK(t, s.dbURL, &other.key, "key", "create", "--org", other.org.ID, "--name", "ci", "--type", "API")

	held := []net.Conn{s.holdRequest(t, s.key), s.holdRequest(t, s.key)}
	s.eventually(t, "/review-tasks", s.key, http.StatusTooManyRequests)
	status, b, hdr := s.statusWith(t, "/review-tasks", s.key)
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Contains(t, string(b), `"code":"RATE_LIMIT_EXCEEDED"`)
	require.Equal(t, "1", hdr.Get("Retry-After"))
	require.NotEmpty(t, hdr.Get("RateLimit-Policy"))
	for _, path := range []string{"/organisations", "/organisations/" + s.org + "/sources"} {
		status, b, hdr = s.statusWith(t, path, s.key)
		require.Equal(t, http.StatusTooManyRequests, status, path)
		require.Contains(t, string(b), `"status":429`, path)
		require.Equal(t, "1", hdr.Get("Retry-After"), path)
	}
	// The organisation has a slot left, for its other key.
	status, b, _ = s.statusWith(t, "/review-tasks", second.Secret)
	require.Equal(t, http.StatusOK, status, string(b))
	s.holdRequest(t, second.Secret)
	s.eventually(t, "/organisations", second.Secret, http.StatusTooManyRequests)
	// Another organisation is served all along.
	for _, path := range []string{"/review-tasks", "/organisations"} {
		status, b, _ = s.statusWith(t, path, other.key.Secret)
		require.Equal(t, http.StatusOK, status, "%s: %s", path, b)
	}
	// The held requests end (their client goes away): their slots are
	// given back.
	for _, c := range held {
		require.NoError(t, c.Close())
	}
	s.eventually(t, "/review-tasks", s.key, http.StatusOK)

	// A push source's deliveries are bounded likewise, before their bodies
	// are read.
	s.hold(t, "/push/"+s.push, "")
	s.hold(t, "/push/"+s.push, "")
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, b := s.send(t, http.MethodPost, "/push/"+s.push, false, jsonHeader, strings.NewReader("{}"))
		if resp.StatusCode == http.StatusTooManyRequests {
			require.Equal(t, "1", resp.Header.Get("Retry-After"))
			break
		}
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "an unsigned push: %s", b)
		require.True(t, time.Now().Before(deadline), "pushes held in flight are not counted")
		time.Sleep(20 * time.Millisecond)
	}
}
