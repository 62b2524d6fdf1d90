package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/pagemem"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/sqlsource"
)

// The large-records soak: real "provider serve" and "service serve"
// processes over 1,001 conversations of 300 KB; one client asks
// limit=1000, then 64 clients at once, each with a query of its own so
// that every request reads the database (one credential, so that the
// per-credential bound of requests in flight, 16 by default, holds them:
// those it refuses with 429 retry after its Retry-After). Each answer is a
// page of about the page cap (8 MiB). Before pages were sized from the
// database, one such request took 1.4-1.8 GB, eight in parallel passed
// 6 GB. Opt-in: AIUSAGE_SOAK=1.
const (
	// largeOneRSS bounds the process's peak resident memory (VmHWM) after
	// one limit=1000 request, start-up and loading included.
	largeOneRSS = 256 << 20
	// largeParallelRSS bounds it after 64 parallel ones: at most 16 in
	// flight, each holding about two page caps (the page read, the answer
	// written), and the collector's slack.
	largeParallelRSS = 1 << 30
	// largeKillRSS is a safety stop, not a criterion: past it the process
	// is killed.
	largeKillRSS = 3 << 30
	// largeParallel is the number of parallel clients.
	largeParallel = 64
	// largeToken is the provider's token.
	largeToken = "soak-large-token"
)

// TestSoakMemLargeRecords runs the soak on SQLite and PostgreSQL: the
// provider's /conversations, and the service's collected view of one
// source and its organisation's view.
func TestSoakMemLargeRecords(t *testing.T) {
	if os.Getenv(envSoak) != "1" {
		t.Skipf("large-records soak: set %s=1 to run it", envSoak)
	}
	bin := buildBinary(t)
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Run("provider", func(t *testing.T) { soakLargeProvider(t, bin, d) })
			t.Run("service", func(t *testing.T) { soakLargeService(t, bin, d) })
		})
	}
}

func soakLargeProvider(t *testing.T, bin string, d sqldb.Dialect) {
	dbURL := scaleDB(t, d, "provider")
	ctx := t.Context()
	src, err := sqlsource.Open(ctx, dbURL)
	require.NoError(t, err)
	for i := 0; i < pagemem.Records; i += 50 {
		require.NoError(t, src.WriteBatch(ctx, func(w provider.Writer) error {
			for j := i; j < min(i+50, pagemem.Records); j++ {
				if err := w.UpsertConversation(ctx, "default", pagemem.Conversation(j, pagemem.RecordBytes, time.Now().Add(-time.Hour))); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	require.NoError(t, src.Close())

	logPath := filepath.Join(t.TempDir(), "provider.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(bin, "provider", "serve", "--addr", "127.0.0.1:0", "--database-url", dbURL,
		"--token", largeToken, "--shutdown-timeout", "5s")
	cmd.Env = append(os.Environ(), "AIUSAGE_SECRET_KEY=")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	var base string
	for deadline := time.Now().Add(time.Minute); base == ""; {
		b, _ := os.ReadFile(logPath)
		if m := providerURLText.FindSubmatch(b); m != nil {
			base = string(m[1])
			break
		}
		require.True(t, time.Now().Before(deadline), "provider serve not ready: %s", b)
		select {
		case <-done:
			t.Fatalf("provider serve exited: %s", b)
		case <-time.After(50 * time.Millisecond):
		}
	}
	soakLargeRun(t, string(d), "provider serve", "/conversations", cmd.Process.Pid, base+"/conversations?limit=1000", largeToken)
}

func soakLargeService(t *testing.T, bin string, d sqldb.Dialect) {
	dbURL := scaleDB(t, d, "service")
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	env := append(os.Environ(), "AIUSAGE_SECRET_KEY="+base64.StdEncoding.EncodeToString(secret))
	adm := func(v any, args ...string) {
		t.Helper()
		cmd := exec.Command(bin, append(append([]string{"admin"}, args...), "--actor", "soak", "--database-url", dbURL)...)
		cmd.Env = env
		var stderr syncBuffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "%v: %s", args, stderr.String())
		require.NoError(t, json.Unmarshal(out, v), "%v: %s", args, out)
	}
	var org, key, source struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	adm(&org, "org", "create", "--name", "Large records")
	adm(&key, "key", "create", "--org", org.ID, "--name", "reader", "--type", "API")
	// A push source: nothing syncs it; its records are written below as
	// a sync would.
	adm(&source, "source", "add", "--org", org.ID, "--name", "large", "--transport", "push")

	ctx := t.Context()
	store, err := sqlstore.Open(ctx, dbURL)
	require.NoError(t, err)
	now := time.Now()
	l := consumer.Lease{Source: source.ID, Resource: consumer.Conversations, Owner: "soak", Now: now, Expires: now.Add(time.Minute)}
	ok, err := store.AcquireLease(ctx, l)
	require.NoError(t, err)
	require.True(t, ok)
	for i := 0; i < pagemem.Records; i += 50 {
		var recs []consumer.Record
		for j := i; j < min(i+50, pagemem.Records); j++ {
			c := pagemem.Conversation(j, pagemem.RecordBytes, now.Add(-time.Hour))
			b, err := json.Marshal(c)
			require.NoError(t, err)
			recs = append(recs, consumer.Record{ID: c.ID, Time: c.UpdatedAt.Time, StartedAt: c.StartedAt.Time, JSON: b})
		}
		require.NoError(t, store.SavePage(ctx, consumer.PageWrite{Lease: l, Records: recs, Checkpoint: consumer.Checkpoint{Run: 1, InProgress: true}}))
	}
	require.NoError(t, store.ReleaseLease(ctx, l.Source, l.Resource, l.Owner))
	require.NoError(t, store.Close())

	for _, view := range []struct{ name, path string }{
		{"collected view of a source", "/organisations/" + org.ID + "/sources/" + source.ID + "/conversations"},
		{"organisation view", "/organisations/" + org.ID + "/conversations"},
	} {
		// A fresh process for each view, so that each peak is its own.
		svc := startSoakService(t, bin, dbURL, env)
		soakLargeRun(t, string(d), "service serve", view.name, svc.cmd.Process.Pid, strings.TrimSuffix(svc.url, "/")+view.path+"?limit=1000", key.Secret)
		svc.stop(t)
	}
}

// soakLargeRun asks url once, then from largeParallel clients at once,
// and checks the process's peak resident memory after each.
func soakLargeRun(t *testing.T, dialect, process, what string, pid int, url, token string) {
	sampler := startRSSSampler(t, pid)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sampler.onAbort(cancel) // past soakRSSAbort: stop asking
	// The safety stop of this soak: past largeKillRSS the process is
	// killed, so that a regression cannot exhaust the machine.
	go func() {
		for ctx.Err() == nil {
			if rss, _, err := procStatus(pid); err == nil && rss > largeKillRSS {
				t.Errorf("%s passed %s of resident memory: killed", process, mib(largeKillRSS))
				_ = syscall.Kill(pid, syscall.SIGKILL)
				cancel()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: largeParallel}}
	defer client.CloseIdleConnections()
	get := func(url string) (records int, refused int, err error) {
		for {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return 0, refused, err
			}
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := client.Do(req)
			if err != nil {
				return 0, refused, err
			}
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				return 0, refused, err
			}
			if resp.StatusCode == http.StatusTooManyRequests {
				refused++
				wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
				select {
				case <-ctx.Done():
					return 0, refused, ctx.Err()
				case <-time.After(time.Duration(max(wait, 1)) * time.Second / 4):
				}
				continue
			}
			if resp.StatusCode != http.StatusOK {
				return 0, refused, fmt.Errorf("%d %.300s", resp.StatusCode, body)
			}
			var page struct {
				Data    []json.RawMessage `json:"data"`
				HasMore bool              `json:"hasMore"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				return 0, refused, err
			}
			if !page.HasMore {
				return 0, refused, fmt.Errorf("a page of %d records without hasMore", len(page.Data))
			}
			return len(page.Data), refused, nil
		}
	}

	begin := time.Now()
	records, _, err := get(url)
	require.NoError(t, err)
	_, one, _ := procStatus(pid)
	oneTook := time.Since(begin)

	begin = time.Now()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		refused int
		errs    []error
	)
	for i := range largeParallel {
		// Each client its own query (an updatedSince before every
		// record, a millisecond apart), so that no page cache serves
		// one client's page to another: every request reads the database.
		since := time.Now().Add(-24*time.Hour + time.Duration(i)*time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z")
		wg.Go(func() {
			_, r, err := get(url + "&updatedSince=" + since)
			mu.Lock()
			defer mu.Unlock()
			refused += r
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	parallelTook := time.Since(begin)
	peak := sampler.stop()
	t.Logf("| %s | %s: %s | %d records of %d KB per page | one limit=1000 request: VmHWM %s (%s) | %d in parallel: VmHWM %s (%s, %d answers 429 retried) |",
		dialect, process, what, records, pagemem.RecordBytes>>10, mib(one), oneTook.Round(time.Millisecond),
		largeParallel, mib(peak), parallelTook.Round(time.Millisecond), refused)
	require.Empty(t, errs)
	require.LessOrEqual(t, one, uint64(largeOneRSS), "%s: one request: VmHWM %s, bound %s", what, mib(one), mib(largeOneRSS))
	require.LessOrEqual(t, peak, uint64(largeParallelRSS), "%s: %d parallel requests: VmHWM %s, bound %s", what, largeParallel, mib(peak), mib(largeParallelRSS))
}
