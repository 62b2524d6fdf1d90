package cli

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec/webhook"
)

// slowPost sends a POST of path to the service at base from a connection of
// its own, with key (unless empty), announcing a body of 100 bytes and
// sending only its first, and returns the answer once it comes, its body
// read, and how long it took.
func slowPost(t *testing.T, base, path, key string) (*http.Response, []byte, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	hdr := ""
	if key != "" {
		hdr = "X-API-Key: " + key + "\r\n"
	}
	start := time.Now()
	_, err = io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: x\r\n"+hdr+
		"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "POST %s: no answer", path)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b, time.Since(start)
}

// TestServiceSlowBodyInvalid: a body that does not arrive within
// --read-timeout is answered 400 naming body, in each API's error shape,
// on the review-task API (POST /review-tasks, POST /webhooks) as on the
// organisation API; never 200 with an empty body.
func TestServiceSlowBodyInvalid(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			testSlowBodyInvalid(t, startHardenedServiceAt(t, nil, sqldbtest.URL(t, d), "--read-timeout", "1s"))
		})
	}
}

func testSlowBodyInvalid(t *testing.T, s hardenedService) {
	for _, c := range []struct{ path, want string }{
		{"/review-tasks", `"code":"INVALID_REQUEST"`},
		{"/webhooks", `"code":"INVALID_REQUEST"`},
		{"/organisations/" + s.org + "/instructions", `"status":400`},
		{"/organisations/" + s.org + "/sources/" + s.source + "/mcp", `"status":400`},
	} {
		resp, b, took := slowPost(t, s.base, c.path, s.key)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "POST %s after %s: %q", c.path, took, b)
		require.Contains(t, string(b), c.want, c.path)
		require.Contains(t, string(b), "body", c.path)
		require.Less(t, took, 10*time.Second, c.path)
	}
}

// dialFrom opens a connection to base ("http://host:port") from the local
// address from (on Linux every address of 127.0.0.0/8 is the loopback's,
// so a test can be several clients). It fails the test when the connection
// cannot be made; a connection the server resets at once fails later.
func dialFrom(t *testing.T, base, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clientFrom returns an HTTP client whose connections come from the local
// address from, each request on a connection of its own.
func clientFrom(from string, timeout time.Duration) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// healthz sends GET /healthz from the address from and returns the error
// of the exchange, nil for a 200.
func healthz(base, from string, timeout time.Duration) error {
	resp, err := clientFrom(from, timeout).Get(base + "/healthz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /healthz: %s", resp.Status)
	}
	return nil
}

// holdSignin opens a connection from the address from and sends POST
// /signin with a body that never arrives, as an attacker without
// credentials would, and waits until the server reads the body: the
// connection is then held by the server.
func holdSignin(t *testing.T, base, from string) net.Conn {
	t.Helper()
	c := dialFrom(t, base, from)
	_, err := io.WriteString(c, "POST /signin HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"+
		"Content-Length: 1000\r\nExpect: 100-continue\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err, "POST /signin from %s: no answer", from)
	require.True(t, strings.HasPrefix(line, "HTTP/1.1 100 "), "POST /signin from %s: %s", from, line)
	_, err = io.WriteString(c, "email=")
	require.NoError(t, err)
	return c
}

// TestServiceConnectionLimits: slow unauthenticated /signin bodies from one
// address hold at most --max-connections-per-address connections; the next
// connection of that address is reset at once while another address is
// served. Past --max-connections, a connection waits until one closes. A
// connection that sends no request is closed after --header-timeout and
// holds no place after.
func TestServiceConnectionLimits(t *testing.T) {
	t.Parallel()
	s := startHardenedService(t, "--max-connections-per-address", "4", "--max-connections", "8", "--read-timeout", "1m")
	const attacker, other = "127.0.0.2", "127.0.0.3"
	for range 4 {
		holdSignin(t, s.base, attacker)
	}
	for i := range 20 {
		require.Error(t, healthz(s.base, attacker, 5*time.Second), "connection %d past the bound of the address is served", i+5)
	}
	start := time.Now()
	require.NoError(t, healthz(s.base, other, 5*time.Second), "another address is served")
	require.Less(t, time.Since(start), 2*time.Second)

	// Four more places, held from two more addresses, fill the total of 8:
	// the next connection waits, and is served once one closes.
	var last net.Conn
	for i := range 4 {
		last = holdSignin(t, s.base, fmt.Sprintf("127.0.0.%d", 4+i%2))
	}
	done := make(chan error, 1)
	go func() { done <- healthz(s.base, other, 30*time.Second) }()
	select {
	case err := <-done:
		t.Fatalf("a connection past --max-connections was answered at once: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, last.Close())
	select {
	case err := <-done:
		require.NoError(t, err, "the waiting connection is served once a place is free")
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting connection was not served after a place was freed")
	}
}

// TestServiceIdleConnections: connections that send nothing are closed
// after --header-timeout, and their places are given back; a kept-alive
// connection is closed after --idle-timeout without a request.
func TestServiceIdleConnections(t *testing.T) {
	t.Parallel()
	s := startHardenedService(t, "--max-connections-per-address", "2", "--header-timeout", "500ms", "--idle-timeout", "700ms")
	const from = "127.0.0.6"
	idle := []net.Conn{dialFrom(t, s.base, from), dialFrom(t, s.base, from)}
	require.Error(t, healthz(s.base, from, 5*time.Second), "the address is at its bound")
	for _, c := range idle {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err := c.Read(make([]byte, 1))
		require.Error(t, err, "the idle connection is closed")
	}
	require.NoError(t, healthz(s.base, from, 5*time.Second), "their places are given back")

	kept := dialFrom(t, s.base, "127.0.0.10")
	_, err := io.WriteString(kept, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	rd := bufio.NewReader(kept)
	resp, err := http.ReadResponse(rd, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.False(t, resp.Close, "the connection is kept alive")
	start := time.Now()
	require.NoError(t, kept.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = rd.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the idle connection is closed")
	require.Less(t, time.Since(start), 5*time.Second)
}

// TestProviderConnectionLimits: provider serve bounds connections per
// address too (every serving command shares the listener).
func TestProviderConnectionLimits(t *testing.T) {
	t.Parallel()
	base, _, _ := startServe(t, "--database-url", "sqlite::memory:", "--token", "t", "--max-connections-per-address", "1")
	base = strings.TrimSuffix(base, "/")
	dialFrom(t, base, "127.0.0.7")
	require.Eventually(t, func() bool { return healthz(base, "127.0.0.7", 5*time.Second) != nil }, 5*time.Second, 20*time.Millisecond)
	require.NoError(t, healthz(base, "127.0.0.8", 5*time.Second))
}

// pushHeaders returns the Standard Webhooks headers of a delivery that
// could be authentic (an id, the current time, a v1 signature of the right
// form) but is not: what a client knowing only a push source's id sends.
func pushHeaders() map[string]string {
	return map[string]string{
		"Content-Type":          "application/json",
		webhook.HeaderID:        "msg_forged",
		webhook.HeaderTimestamp: strconv.FormatInt(time.Now().Unix(), 10),
		webhook.HeaderSignature: "v1," + base64.StdEncoding.EncodeToString(make([]byte, 32)),
	}
}

// slowPush opens a connection from the address from and sends POST
// /push/{id} with hdr, announcing a body of 1000 bytes and asking "Expect:
// 100-continue". It returns the connection and the first status line: "100
// Continue" when the receiver started reading the body (the body then
// starts and stops, and the connection is held), else the answer.
func slowPush(t *testing.T, base, from, id string, hdr map[string]string) (net.Conn, string) {
	t.Helper()
	c := dialFrom(t, base, from)
	var b strings.Builder
	b.WriteString("POST /push/" + id + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n")
	for k, v := range hdr {
		b.WriteString(k + ": " + v + "\r\n")
	}
	b.WriteString("\r\n")
	_, err := io.WriteString(c, b.String())
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err, "POST /push from %s: no answer", from)
	if strings.HasPrefix(line, "HTTP/1.1 100 ") {
		_, err = io.WriteString(c, `{"type":"records",`)
		require.NoError(t, err)
	}
	return c, strings.TrimSpace(line)
}

// TestServicePushSlowSenders: clients that know only a push source's id
// cannot hold its receiver. Slow deliveries without the secret's signature
// hold at most their own address's places (--max-concurrent-per-key, 16),
// and one without the Standard Webhooks headers is refused at once, while
// 'aiusage provider push' delivers every record of the source, signed, all
// along. Before, 16 such connections took the source's 16 places and its
// provider's deliveries were refused 429 until the read deadline.
func TestServicePushSlowSenders(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			testPushSlowSenders(t, d)
		})
	}
}

func testPushSlowSenders(t *testing.T, d sqldb.Dialect) {
	provDB := sqldbtest.URL(t, sqldb.SQLite)
	_, _, stopProvider := startServe(t, "--database-url", provDB, "--token", "t", "--demo", "30")
	stopProvider()

	dbURL := sqldbtest.URL(t, d)
	f := newFixture(t, dbURL)
	var src map[string]any
	adminOK(t, dbURL, &src, "source", "add", "--org", f.org.ID, "--name", "pushed", "--transport", "push")
	id, secret := src["id"].(string), src["secret"].(string)
	base, _, _ := startService(t, serviceURLText, "--database-url", dbURL, "--read-timeout", "1m")
	base = strings.TrimSuffix(base, "/")

	const attacker = "127.0.0.9"
	held := 0
	for range 20 {
		if _, status := slowPush(t, base, attacker, id, pushHeaders()); strings.HasPrefix(status, "HTTP/1.1 100 ") {
			held++
		} else {
			require.Contains(t, status, " 429 ", "a slow delivery past the address's places")
		}
	}
	require.Equal(t, 16, held, "the attacker's address holds 16 places")
	_, status := slowPush(t, base, attacker, id, map[string]string{"Content-Type": "application/json"})
	require.Contains(t, status, " 401 ", "a delivery without the Standard Webhooks headers is refused before its body")

	start := time.Now()
	r := runCLI(t, "", nil, "provider", "push", "--database-url", provDB, "--to", base+"/push/"+id,
		"--secret", secret, "--attempts", "3")
	require.Equal(t, ExitOK, r.code, "the provider's deliveries while 16 slow ones hold on: %s", r.stderr)
	require.Contains(t, r.stderr, "every delivery acknowledged")
	require.Less(t, time.Since(start), 20*time.Second)

	status2, b, _ := call(t, http.MethodGet, base+"/organisations/"+f.org.ID+"/sources/"+id+"/conversations?limit=100", f.key.Secret, nil)
	require.Equal(t, http.StatusOK, status2, string(b))
	var page struct {
		Data []json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(b, &page))
	require.Len(t, page.Data, 30, "every conversation pushed")
}

// TestConnectionFlags: --max-connections takes auto or a count (0: no
// bound), from the flag or its environment variable, and the ready line
// names the bounds in force.
func TestConnectionFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args    []string
		environ map[string]string
		want    string
	}{
		{[]string{"--max-connections", "-5"}, nil, `invalid value "-5" for flag -max-connections: want auto or a number of connections, 0 for no bound`},
		{[]string{"--max-connections", "many"}, nil, `invalid value "many" for flag -max-connections`},
		{nil, map[string]string{"AIUSAGE_MAX_CONNECTIONS": "x"}, `invalid value "x" of AIUSAGE_MAX_CONNECTIONS (for --max-connections)`},
	} {
		r := runCLI(t, "", c.environ, append([]string{"service", "serve", "--database-url", "sqlite::memory:"}, c.args...)...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
	}
	_, logs, _ := startServeEnv(t, map[string]string{"AIUSAGE_MAX_CONNECTIONS": "100", "AIUSAGE_MAX_CONNECTIONS_PER_ADDRESS": "7"},
		"--database-url", "sqlite::memory:", "--token", "t")
	require.Contains(t, logs.String(), "max_connections=100 max_connections_per_address=7")
	_, logs, _ = startServe(t, "--database-url", "sqlite::memory:", "--token", "t", "--max-connections", "auto")
	require.Contains(t, logs.String(), fmt.Sprintf("max_connections=%d max_connections_per_address=256", httpx.DefaultMaxConnections()))
}
