package cli

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
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
	return startHardenedServiceEnv(t, nil, args...)
}

// startHardenedServiceEnv is startHardenedService with the environment
// variables environ.
func startHardenedServiceEnv(t *testing.T, environ map[string]string, args ...string) hardenedService {
	t.Helper()
	return startHardenedServiceAt(t, environ, sqldbtest.URL(t, sqldb.SQLite), args...)
}

// startHardenedServiceAt is startHardenedServiceEnv on the database at dbURL.
func startHardenedServiceAt(t *testing.T, environ map[string]string, dbURL string, args ...string) hardenedService {
	t.Helper()
	f := newFixture(t, dbURL)
	var rest, push map[string]any
	adminOK(t, dbURL, &rest, "source", "add", "--org", f.org.ID, "--name", "rest", "--url", "http://127.0.0.1:9/", "--token", "x", "--allow-private-sources")
	adminOK(t, dbURL, &push, "source", "add", "--org", f.org.ID, "--name", "push", "--transport", "push")
	base, _, _ := startServiceEnv(t, environ, serviceURLText, append([]string{"--database-url", dbURL}, args...)...)
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
		{"POST", "/push/" + s.push, false, pushHeaders(), 5 * mib},
		{"POST", "/signin", false, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 16 << 10},
	} {
		body := io.MultiReader(strings.NewReader(`{"pad":"`), bytes.NewReader(bytes.Repeat([]byte("a"), c.size)), strings.NewReader(`"}`))
		resp, b := s.send(t, c.method, c.path, c.key, c.hdr, body)
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s %s: %.300s", c.method, c.path, b)
	}
}

// holdRequest opens a connection and sends a POST /review-tasks with key
// whose body never arrives, and returns once the service has admitted it:
// the request then stays in flight, holding its slot, until the test
// closes the connection.
func (s hardenedService) holdRequest(t *testing.T, key string) net.Conn {
	t.Helper()
	return s.hold(t, "/review-tasks", key)
}

// hold is holdRequest to any path, with key unless it is empty.
//
// The request says "Expect: 100-continue", and net/http answers "100
// Continue" when the handler first reads the body: the service reads it
// only once the request has its slot ([httpx.Limiter.Admit] reads it after
// taking the slot, the push receiver likewise), so the interim answer says
// the request holds its slot. hold fails when the answer is another (a 429:
// the slot was not free). Sending the request and probing at once would
// not do: the probe, in flight first, could take the slot the held request
// was meant to take, and the held request, refused, would hold nothing.
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
		"Content-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n")
	require.NoError(t, err)
	rd := bufio.NewReader(conn)
	status, err := rd.ReadString('\n')
	require.NoError(t, err, "POST %s: no answer", path)
	if !strings.HasPrefix(status, "HTTP/1.1 100 ") {
		rest, _ := io.ReadAll(io.LimitReader(rd, 2000))
		t.Fatalf("POST %s: not admitted: %s%s", path, status, rest)
	}
	blank, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "\r\n", blank, "the end of the 100 Continue")
	_, err = io.WriteString(conn, "{") // the body starts, and stops
	require.NoError(t, err)
	return conn
}

// statusWith returns the status of GET path with key.
func (s hardenedService) statusWith(t *testing.T, path, key string) (int, []byte, http.Header) {
	t.Helper()
	resp, b := s.send(t, http.MethodGet, path, false, map[string]string{"X-API-Key": key}, nil)
	return resp.StatusCode, b, resp.Header
}

// awaitEnded waits until the service has counted n requests of method to
// route as answered (its metrics, on the metrics token): a request is
// counted after its slot is given back. It polls, without a deadline of
// its own (go test's -timeout bounds it).
func (s hardenedService) awaitEnded(t *testing.T, method, route string, n int) {
	t.Helper()
	for s.answered(t, method, route) < n {
		time.Sleep(10 * time.Millisecond)
	}
}

// answered is the sum of aiusage_http_requests_total of method and route,
// over their statuses.
func (s hardenedService) answered(t *testing.T, method, route string) int {
	t.Helper()
	resp, b := s.send(t, http.MethodGet, "/metrics", false, map[string]string{"Authorization": "Bearer " + testMetricsToken}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%.300s", b)
	sum := 0
	labels := `method="` + method + `",route="` + route + `",`
	for _, line := range strings.Split(string(b), "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(series, "aiusage_http_requests_total{"+labels) {
			continue
		}
		v, err := strconv.Atoi(value)
		require.NoError(t, err, line)
		sum += v
	}
	return sum
}

// TestServiceConcurrencyLimits: requests held in flight by one key use up
// its slots (--max-concurrent-per-key), and those of an organisation's keys
// its slots (--max-concurrent-per-organisation): the next request is 429 in
// each API's error shape with Retry-After, while another organisation's key
// is served. A slot is given back when its request ends.
func TestServiceConcurrencyLimits(t *testing.T) {
	t.Parallel()
	s := startHardenedServiceEnv(t, map[string]string{envMetricsToken: testMetricsToken},
		"--max-concurrent-per-key", "2", "--max-concurrent-per-organisation", "3", "--read-timeout", "1m")
	var second org.CreatedKey
	var other fixture
	adminOK(t, s.dbURL, &second, "key", "create", "--org", s.org, "--name", "second", "--type", "API")
	adminOK(t, s.dbURL, &other.org, "org", "create", "--name", "Globex")
	adminOK(t, s.dbURL, &other.key, "key", "create", "--org", other.org.ID, "--name", "ci", "--type", "API")

	// Each request below is answered before the next is sent, and a request
	// gives its slot back before its answer is sent: only the held ones are
	// in flight.
	held := []net.Conn{s.holdRequest(t, s.key), s.holdRequest(t, s.key)}
	status, b, hdr := s.statusWith(t, "/review-tasks", s.key)
	require.Equal(t, http.StatusTooManyRequests, status, string(b))
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
	status, b, _ = s.statusWith(t, "/organisations", second.Secret)
	require.Equal(t, http.StatusTooManyRequests, status, string(b))
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
	s.awaitEnded(t, http.MethodPost, "/review-tasks", len(held))
	status, b, _ = s.statusWith(t, "/review-tasks", s.key)
	require.Equal(t, http.StatusOK, status, string(b))

	// The push receiver bounds the deliveries it reads from one client
	// address likewise, before their bodies are read.
	for range 2 {
		_, status := slowPush(t, s.base, "127.0.0.1", s.push, pushHeaders())
		require.True(t, strings.HasPrefix(status, "HTTP/1.1 100 "), status)
	}
	resp, b := s.send(t, http.MethodPost, "/push/"+s.push, false, pushHeaders(), strings.NewReader("{}"))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "pushes held in flight are not counted: %s", b)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
}
