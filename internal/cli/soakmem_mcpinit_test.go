package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestSoakMemMCPInitialize sends 100,000 MCP initialize requests with one
// credential to the real binary: to "provider serve" (/mcp) and to "service
// serve" (a source's collected view, .../sources/{id}/mcp, with an
// organisation's API key, on both databases), each once stateless (the
// default) and once with --mcp-sessions (through its environment variable),
// and checks that the process's peak memory (VmHWM) stays within
// soakMCPInitMaxHWM and grows by at most soakMCPInitMaxGrowth over its
// memory before the loop. mcp-go kept 13-16 KB per initialize, never
// released: 1.3-1.6 GB for this loop. Opt-in (AIUSAGE_SOAK=1); the process
// is killed past soakMCPInitKill. AIUSAGE_SOAK_BIN runs another build of
// the binary (an older one, to measure what it did).
func TestSoakMemMCPInitialize(t *testing.T) {
	if os.Getenv(envSoak) != "1" {
		t.Skipf("memory soak test: set %s=1 to run it", envSoak)
	}
	bin := os.Getenv("AIUSAGE_SOAK_BIN")
	if bin == "" {
		bin = buildBinary(t)
	}
	modes := []struct {
		name string
		env  []string
	}{
		{"stateless", nil},
		{"sessions", []string{"AIUSAGE_MCP_SESSIONS=true"}},
	}
	for _, m := range modes {
		t.Run("provider/"+m.name, func(t *testing.T) {
			p := startSoakProvider(t, bin, "sqlite:"+filepath.Join(t.TempDir(), "p.db"), m.env)
			soakMCPInitialize(t, p.cmd.Process.Pid, p.url+"/mcp", soakMCPToken, m.name == "sessions")
		})
	}
	for _, d := range sqldbtest.Dialects() {
		for _, m := range modes {
			t.Run("service/"+string(d)+"/"+m.name, func(t *testing.T) {
				dbURL := "sqlite:" + filepath.Join(t.TempDir(), "s.db")
				if d != sqldb.SQLite {
					dbURL = sqldbtest.URL(t, d)
				}
				secret := make([]byte, 32)
				_, _ = rand.Read(secret)
				env := append(os.Environ(), "AIUSAGE_SECRET_KEY="+base64.StdEncoding.EncodeToString(secret))
				var org, key, src struct{ ID, Secret string }
				soakAdmin(t, bin, env, dbURL, &org, "org", "create", "--name", "Acme")
				soakAdmin(t, bin, env, dbURL, &key, "key", "create", "--org", org.ID, "--name", "mcp", "--type", "API")
				soakAdmin(t, bin, env, dbURL, &src, "source", "add", "--org", org.ID, "--name", "pushed", "--transport", "push")
				svc := startSoakService(t, bin, dbURL, append(env, m.env...))
				u := strings.TrimSuffix(svc.url, "/") + "/organisations/" + org.ID + "/sources/" + src.ID + "/mcp"
				soakMCPInitialize(t, svc.cmd.Process.Pid, u, key.Secret, m.name == "sessions")
			})
		}
	}
}

const (
	soakMCPToken = "soak-mcp-token"
	// soakMCPInitCalls is how many initialize requests each run sends, by
	// soakMCPInitWorkers clients at once.
	soakMCPInitCalls   = 100_000
	soakMCPInitWorkers = 8
	// soakMCPInitMaxHWM bounds the process's peak memory over a run, and
	// soakMCPInitMaxGrowth its growth over the memory it had before.
	soakMCPInitMaxHWM    = 256 << 20
	soakMCPInitMaxGrowth = 64 << 20
	// soakMCPInitKill is the safety stop: the process is killed past it.
	soakMCPInitKill = 3 << 30
)

// soakMCPInitialize loops on initialize against the MCP endpoint u of the
// process pid, and checks its memory.
func soakMCPInitialize(t *testing.T, pid int, u, token string, sessions bool) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: soakMCPInitWorkers}, Timeout: 30 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	initialize := func() (int, string, error) {
		req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"loop","version":"1"}}}`))
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), nil
	}
	call := func(session string) int {
		req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	// Warm up (the first requests allocate what every request reuses), then
	// take the memory before the loop.
	for range 200 {
		status, _, err := initialize()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
	}
	before, _, err := procStatus(pid)
	require.NoError(t, err)

	var sent, failed atomic.Int64
	var killed atomic.Bool
	var first, last atomic.Value
	stop := make(chan struct{})
	watchDone := make(chan struct{})
	go func() { // the safety stop
		defer close(watchDone)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if rss, _, err := procStatus(pid); err == nil && rss > soakMCPInitKill {
				killed.Store(true)
				_ = syscall.Kill(pid, syscall.SIGKILL)
				return
			}
		}
	}()
	begin := time.Now()
	var wg sync.WaitGroup
	for range soakMCPInitWorkers {
		wg.Go(func() {
			for sent.Add(1) <= soakMCPInitCalls && !killed.Load() {
				status, id, err := initialize()
				if err != nil || status != http.StatusOK {
					failed.Add(1)
					continue
				}
				first.CompareAndSwap(nil, id)
				last.Store(id)
			}
		})
	}
	wg.Wait()
	took := time.Since(begin)
	close(stop)
	<-watchDone
	rss, hwm, _ := procStatus(pid)
	t.Logf("%d initialize in %s (%.0f/s), %d failed; VmRSS %d MiB before, %d MiB after; VmHWM %d MiB",
		soakMCPInitCalls, took.Round(time.Millisecond), float64(soakMCPInitCalls)/took.Seconds(), failed.Load(), before>>20, rss>>20, hwm>>20)
	require.False(t, killed.Load(), "killed past %d MiB", soakMCPInitKill>>20)
	require.Zero(t, failed.Load(), "failed initialize requests")
	require.LessOrEqual(t, hwm, uint64(soakMCPInitMaxHWM), "VmHWM %d MiB", hwm>>20)
	require.LessOrEqual(t, hwm, before+soakMCPInitMaxGrowth, "VmHWM %d MiB, %d MiB before the loop", hwm>>20, before>>20)

	firstID, _ := first.Load().(string)
	lastID, _ := last.Load().(string)
	if !sessions {
		require.Empty(t, lastID, "a stateless endpoint answered a session id")
		return
	}
	require.NotEmpty(t, firstID)
	require.Equal(t, http.StatusNotFound, call(firstID), "the first session outlived 100,000 newer ones of its credential")
	require.Equal(t, http.StatusOK, call(lastID), "the last session")
}

// soakAdmin runs an admin command of bin on dbURL and decodes its JSON.
func soakAdmin(t *testing.T, bin string, env []string, dbURL string, v any, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string{"admin"}, args...), "--actor", "soak", "--database-url", dbURL)...)
	cmd.Env = env
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%v: %s", args, stderr.String())
	require.NoError(t, json.Unmarshal(out, v), "%v: %s", args, out)
}

// soakProvider is a running "aiusage provider serve" process.
type soakProvider struct {
	cmd *exec.Cmd
	url string // without the trailing slash
}

// startSoakProvider runs "aiusage provider serve" on dbURL with the token
// soakMCPToken and the environment variables extra, its log (a line per
// request) in a file, and returns once it is ready. It is stopped when the
// test ends.
func startSoakProvider(t *testing.T, bin, dbURL string, extra []string) *soakProvider {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "provider.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	p := &soakProvider{cmd: exec.Command(bin, "provider", "serve", "--addr", "127.0.0.1:0", "--database-url", dbURL,
		"--token", soakMCPToken, "--shutdown-timeout", "5s")}
	p.cmd.Env = append(os.Environ(), extra...)
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, logFile
	require.NoError(t, p.cmd.Start())
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); _ = logFile.Close(); close(done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		b, _ := os.ReadFile(logPath)
		if m := providerURLText.FindSubmatch(b); m != nil {
			p.url = strings.TrimSuffix(string(m[1]), "/")
			return p
		}
		select {
		case <-done:
			t.Fatalf("provider serve exited: %s", b)
		case <-ctx.Done():
			t.Fatalf("provider serve not ready: %s", b)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
