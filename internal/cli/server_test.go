package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/httpx"
)

// findCommand returns the command at path in the tree.
func findCommand(t *testing.T, path []string) *command {
	t.Helper()
	c := findPath(root(), path)
	require.NotNil(t, c, "no command %v", path)
	return c
}

// TestServerFlagsShared checks that the serving commands declare the server
// flags once, the same way: same names, same help.
func TestServerFlagsShared(t *testing.T) {
	t.Parallel()
	var want map[string]string
	for _, cmd := range serving {
		path := strings.Fields(cmd)
		fs := newFlagSet(findCommand(t, path), append([]string{"aiusage"}, path...))
		got := map[string]string{}
		for _, name := range []string{"addr", "log-format", "shutdown-timeout", "read-timeout", "write-timeout", "stream-timeout",
			"max-connections", "max-connections-per-address", "header-timeout", "idle-timeout"} {
			f := fs.Lookup(name)
			require.NotNil(t, f, "%v has no --%s", path, name)
			got[name] = f.Usage
		}
		if want == nil {
			want = got
		}
		require.Equal(t, want, got, "%v", path)
	}
}

// TestServerFlagsChecks checks the usage errors of the server flags, named
// after the command, in every serving command.
func TestServerFlagsChecks(t *testing.T) {
	t.Parallel()
	// What each needs besides, so that the server flags are what is wrong
	// (and, should a check be missed, no file is left behind).
	extra := map[string][]string{
		"demo":           {"--database-url", "sqlite::memory:"},
		"provider serve": {"--token", "x", "--database-url", "sqlite::memory:"},
		"service serve":  {"--database-url", "sqlite::memory:"},
		"webhook listen": {"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
	}
	for _, cmd := range serving {
		path := strings.Fields(cmd)
		name := strings.Join(path, " ")
		for flagArgs, want := range map[[2]string]string{
			{"--log-format", "xml"}:                 name + `: --log-format must be text or json, got "xml"`,
			{"--shutdown-timeout", "0s"}:            name + ": --shutdown-timeout must be positive, got 0s",
			{"--shutdown-timeout", "-1s"}:           name + ": --shutdown-timeout must be positive, got -1s",
			{"--read-timeout", "0s"}:                name + ": --read-timeout must be positive, got 0s",
			{"--stream-timeout", "-1s"}:             name + ": --stream-timeout must be positive, got -1s",
			{"--header-timeout", "0s"}:              name + ": --header-timeout must be positive, got 0s",
			{"--idle-timeout", "-1s"}:               name + ": --idle-timeout must be positive, got -1s",
			{"--max-connections-per-address", "-1"}: name + ": --max-connections-per-address must be 0 (no bound) or more, got -1",
		} {
			args := append(append(append([]string(nil), path...), extra[name]...), flagArgs[0], flagArgs[1])
			r := runCLI(t, "", nil, args...)
			require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
			require.Equal(t, "aiusage: "+want+"\n", r.stderr, args)
		}
	}
}

// TestServeLifecycle runs the lifecycle with hooks: start before the ready
// line, ready with the base URL, stop after the server has shut down.
func TestServeLifecycle(t *testing.T) {
	t.Parallel()
	var (
		mu     sync.Mutex
		events []string
	)
	note := func(s string) { mu.Lock(); events = append(events, s); mu.Unlock() }
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	sf := &serverFlags{addr: "127.0.0.1:0", logFormat: "text", shutdownTimeout: 5 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	baseC := make(chan string, 1)
	done := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { note("request"); _, _ = io.WriteString(w, "ok") })
	go func() {
		done <- sf.serve(ctx, log, h, serveHooks{
			start: func() error { note("start"); return nil },
			ready: func(base string) { note("ready"); baseC <- base },
			stop:  func(ctx context.Context) error { note("stop"); return ctx.Err() },
		}, "test serving", slog.String("extra", "x"))
	}()
	base := <-baseC
	require.Contains(t, logs.String(), `msg="test serving" url=`+base+"/ extra=x")
	resp, err := http.Get(base + "/")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, "ok", string(b))
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, []string{"start", "ready", "request", "stop"}, events)
	require.Contains(t, logs.String(), `msg="shutting down"`)
	require.Contains(t, logs.String(), "msg=stopped")
}

// TestServeLifecycleErrors: an address that cannot be listened on is a usage
// error naming --addr; a failing start hook ends serve and frees the address.
func TestServeLifecycleErrors(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	sf := &serverFlags{addr: addr, shutdownTimeout: time.Second}
	err = sf.serve(context.Background(), log, http.NotFoundHandler(), serveHooks{}, "x")
	var ue *usageError
	require.ErrorAs(t, err, &ue)
	require.True(t, strings.HasPrefix(ue.msg, "--addr: "), ue.msg)
	require.NoError(t, ln.Close())

	boom := errors.New("boom")
	err = sf.serve(context.Background(), log, http.NotFoundHandler(), serveHooks{start: func() error { return boom }}, "x")
	require.ErrorIs(t, err, boom)
	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err, "the address is free again")
	require.NoError(t, ln.Close())
}

// serveFlagsForTest runs sf.serve with h until the test ends and returns its base
// URL.
func serveFlagsForTest(t *testing.T, sf *serverFlags, h http.Handler) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	baseC := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- sf.serve(ctx, slog.New(slog.DiscardHandler), h, serveHooks{ready: func(base string) { baseC <- base }}, "test")
	}()
	t.Cleanup(func() { cancel(); <-done })
	return <-baseC
}

// TestServeCutsOffSlowBody: a client sending its body a byte at a time is
// cut off at the read deadline (answered 400 or disconnected), rather than
// holding its connection and handler for as long as it likes.
func TestServeCutsOffSlowBody(t *testing.T) {
	t.Parallel()
	sf := &serverFlags{addr: "127.0.0.1:0", shutdownTimeout: 5 * time.Second}
	sf.deadlines.Read = 300 * time.Millisecond
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := httpx.ReadJSON(w, r); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, "read")
	})
	base := serveFlagsForTest(t, sf, h)
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
	require.NoError(t, err)
	// Send a byte every 50 ms for up to 30 s; the server must answer or
	// close long before (the deadline is 0.3 s; the bound is generous).
	answered := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(conn)
		answered <- string(b)
	}()
	stop := time.After(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case got := <-answered:
			if got != "" {
				require.Contains(t, got, "HTTP/1.1 400", got)
				require.Contains(t, got, "did not arrive within the request's read deadline", got)
			}
			return
		case <-stop:
			t.Fatal("the server still reads a body sent a byte every 50 ms after 30 s")
		case <-tick.C:
			_, _ = conn.Write([]byte(" "))
		}
	}
}

// TestServeEventStreamOutlivesDeadlines: an event stream (a GET accepting
// text/event-stream, MCP's server-to-client stream) is not cut off at the
// read and write deadlines of ordinary requests.
func TestServeEventStreamOutlivesDeadlines(t *testing.T) {
	t.Parallel()
	sf := &serverFlags{addr: "127.0.0.1:0", shutdownTimeout: 5 * time.Second}
	sf.deadlines = httpx.Deadlines{Read: 200 * time.Millisecond, Write: 200 * time.Millisecond}
	const events = 8
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range events {
			if _, err := io.WriteString(w, "data: "+strconv.Itoa(i)+"\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			// Together 8 * 100 ms, four times the deadlines.
			select {
			case <-time.After(100 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	})
	base := serveFlagsForTest(t, sf, h)
	stream := func(path string) string {
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body) // cut off: an error
		return string(b)
	}
	for _, path := range []string{"/mcp", "/organisations/x/sources/y/mcp"} {
		b := stream(path)
		require.Equal(t, events, strings.Count(b, "data: "), "%s: %s", path, b)
	}
	// Another path does not stream: asking for an event stream there does
	// not lengthen its deadline (the answer is cut at 0.2 s of its 0.8 s).
	b := stream("/review-tasks")
	require.Less(t, strings.Count(b, "data: "), events, b)
}
