package cli

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	s := startHardenedService(t, "--read-timeout", "1s")
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
