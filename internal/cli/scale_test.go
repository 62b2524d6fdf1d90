package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// The scale test is opt-in: AIUSAGE_SCALE=N runs it with N generated
// conversations (and N/10 beside, to see whether memory grows with the
// collection), AIUSAGE_SCALE_REPORT=FILE appends its figures to FILE.
const (
	envScale       = "AIUSAGE_SCALE"
	envScaleReport = "AIUSAGE_SCALE_REPORT"
	scaleToken     = "scale-token"
)

var providerURLText = regexp.MustCompile(`msg="provider serving" url=(http://\S+?)/? `)

// TestScale runs the real binaries at scale, on SQLite and, when
// AIUSAGE_TEST_DATABASE_URL is set, PostgreSQL: "provider serve --demo N"
// loads N conversations (the load time is the time to its ready line); a
// client walks /conversations once, 100 at a time, timing each page (the
// depth ratio compares the pages of the last tenth of the walk with those
// of the first); then "consumer sync" copies everything into a fresh store.
// It reports the provider's and the consumer's peak resident memory. The
// columns, in order: database, conversations, load time, page p50 over the
// first and over the last tenth of the walk and their ratio (the depth
// ratio), the walk of the conversations (and its rate), the sync of all
// four resources (conversations, assistants, events, usage), the
// provider's resident memory once loaded and after the walk and the sync,
// its peak (the load included), and the consumer's peak; then the same in
// private memory (RssAnon, without the database pages SQLite maps): the
// provider's once loaded, after the walk and the sync, and its peak during
// them (sampled), and the consumer's peak (sampled).
func TestScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envScale))
	if n <= 0 {
		t.Skipf("the scale test runs with %s=N (N conversations, for example 1000000); see docs/performance.md", envScale)
	}
	bin := buildBinary(t)
	for _, d := range []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres} {
		if d == sqldb.Postgres && os.Getenv(sqldbtest.EnvDatabaseURL) == "" {
			continue
		}
		for _, size := range []int{max(1, n/10), n} {
			t.Run(fmt.Sprintf("%s/%d", d, size), func(t *testing.T) {
				r := runScale(t, bin, d, size)
				t.Log("\n" + r)
				if path := os.Getenv(envScaleReport); path != "" {
					f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
					require.NoError(t, err)
					_, err = f.WriteString(r + "\n")
					require.NoError(t, err)
					require.NoError(t, f.Close())
				}
			})
		}
	}
}

// scaleDB returns a fresh database URL of dialect d for the scale test.
func scaleDB(t *testing.T, d sqldb.Dialect, name string) string {
	if d == sqldb.SQLite {
		return "sqlite:" + filepath.Join(t.TempDir(), name+".db")
	}
	return sqldbtest.URL(t, d)
}

func runScale(t *testing.T, bin string, d sqldb.Dialect, n int) string {
	env := append(os.Environ(), "AIUSAGE_SECRET_KEY=")
	// The provider: load, then serve.
	logPath := filepath.Join(t.TempDir(), "provider.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	prov := exec.Command(bin, "provider", "serve", "--addr", "127.0.0.1:0", "--database-url", scaleDB(t, d, "provider"),
		"--demo", strconv.Itoa(n), "--token", scaleToken, "--shutdown-timeout", "5s")
	prov.Env, prov.Stdout, prov.Stderr = env, logFile, logFile
	begin := time.Now()
	require.NoError(t, prov.Start())
	done := make(chan struct{})
	go func() { _ = prov.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = prov.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = prov.Process.Kill()
			<-done
		}
		_ = logFile.Close()
	})
	var base string
	for base == "" {
		b, _ := os.ReadFile(logPath)
		if m := providerURLText.FindSubmatch(b); m != nil {
			base = string(m[1])
			break
		}
		select {
		case <-done:
			t.Fatalf("provider serve exited: %s", b)
		case <-time.After(100 * time.Millisecond):
		}
	}
	load := time.Since(begin)
	rssLoaded := procStatusKB(t, prov.Process.Pid, "VmRSS")
	anonLoaded := procStatusKB(t, prov.Process.Pid, "RssAnon")
	stopProvider := sampleAnon(prov.Process.Pid)

	// A walk-only client: every page once, timed.
	var pages []time.Duration
	walkStart := time.Now()
	cursor, records := "", 0
	client := &http.Client{Timeout: time.Minute}
	for {
		u := base + "/conversations?limit=100"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		req, err := http.NewRequest(http.MethodGet, u, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+scaleToken)
		start := time.Now()
		resp, err := client.Do(req)
		require.NoError(t, err)
		var page struct {
			Data       []json.RawMessage `json:"data"`
			HasMore    bool              `json:"hasMore"`
			NextCursor *string           `json:"nextCursor"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		_ = resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		pages = append(pages, time.Since(start))
		records += len(page.Data)
		if !page.HasMore || page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	walk := time.Since(walkStart)
	require.Equal(t, n, records, "the walk saw every conversation once")
	tenth := max(1, len(pages)/10)
	first, last := median(pages[:tenth]), median(pages[len(pages)-tenth:])

	// The consumer: a full sync into a fresh store.
	sync := exec.Command(bin, "consumer", "sync", "--url", base, "--token", scaleToken, "--source", "scale",
		"--database-url", scaleDB(t, d, "consumer"))
	sync.Env = env
	var out bytes.Buffer
	sync.Stdout, sync.Stderr = &out, &out
	syncStart := time.Now()
	require.NoError(t, sync.Start())
	stopConsumer := sampleAnon(sync.Process.Pid)
	err = sync.Wait()
	syncTime := time.Since(syncStart)
	consumerAnon := stopConsumer()
	require.NoError(t, err, "%s", tail(out.String(), 20))
	consumerPeak := sync.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB on Linux
	providerPeak := procStatusKB(t, prov.Process.Pid, "VmHWM")
	providerEnd := procStatusKB(t, prov.Process.Pid, "VmRSS")
	anonEnd := procStatusKB(t, prov.Process.Pid, "RssAnon")
	anonPeak := max(stopProvider(), anonEnd)

	var b strings.Builder
	fmt.Fprintf(&b, "| %s | %d | %.1f s | %s | %s | %.2f | %.1f s (%.0f/s) | %.1f s | %d / %d / %d MiB | %d MiB | %d / %d / %d MiB | %d MiB |",
		d, n, load.Seconds(), ms(first), ms(last), float64(last)/float64(first),
		walk.Seconds(), float64(n)/walk.Seconds(), syncTime.Seconds(), rssLoaded/1024, providerEnd/1024, providerPeak/1024, consumerPeak/1024,
		anonLoaded/1024, anonEnd/1024, anonPeak/1024, consumerAnon/1024)
	return b.String()
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// sampleAnon samples RssAnon, the private resident memory of process pid,
// every 50 ms until the returned stop is called, which returns the highest
// value seen, in KiB (0 when none could be read). Resident memory (VmRSS)
// also counts the pages of the database files SQLite maps (mmap_size),
// which the kernel takes back when it needs them; RssAnon is the memory
// the process itself holds: its heap, stacks and runtime.
func sampleAnon(pid int) (stop func() int64) {
	done := make(chan struct{})
	result := make(chan int64, 1)
	go func() {
		var peak int64
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if kb, ok := readStatusKB(pid, "RssAnon"); ok {
				peak = max(peak, kb)
			}
			select {
			case <-done:
				result <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		return <-result
	}
}

// readStatusKB reads a field in KiB of /proc/PID/status; false when the
// process or the field is gone.
func readStatusKB(pid int, field string) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}

// procStatusKB reads a field in KiB (VmRSS, VmHWM, RssAnon) of /proc/PID/status.
func procStatusKB(t *testing.T, pid int, field string) int64 {
	kb, ok := readStatusKB(pid, field)
	if !ok {
		t.Fatalf("no %s in /proc/%d/status", field, pid)
	}
	return kb
}

func tail(s string, lines int) string {
	ls := strings.Split(s, "\n")
	return strings.Join(ls[max(0, len(ls)-lines):], "\n")
}
