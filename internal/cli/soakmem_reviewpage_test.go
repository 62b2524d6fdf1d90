package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// The memory soak of the dashboard's review pages (issue 28, point 5): a
// real `aiusage service serve` whose organisation has soakReviewTasks tasks
// of about 1 MB waiting for a person, and one signed-in Reviewer session
// asking for soakReviewParallel pages at once, soakReviewRounds times each:
// the queue, the task page and the text download. The service's peak
// resident memory (VmHWM, of a process started after the tasks were made
// and the Reviewer signed in, so that neither the tasks' evaluation nor the
// password's hash counts) must stay within soakReviewPeakRSS. Before the
// queue was paged and cut, 64 parallel GET /review (one round) took the
// service to 1.7 GB on SQLite and 1.4 GB on PostgreSQL here (3.75 GB in the
// issue).
const (
	soakReviewTasks    = 30
	soakReviewContent  = 1_000_000 // bytes (and characters) of each task's message
	soakReviewParallel = 64
	soakReviewRounds   = 5
	// soakReviewPeakRSS bounds the service's VmHWM. Measured: 139-143 MiB
	// on SQLite (of which 87-97 MiB are pages of the binary and of the
	// database file, which SQLite reads through a memory map), 45-47 MiB on
	// PostgreSQL.
	soakReviewPeakRSS = 192 << 20
	// soakReviewAbort is a safety stop: past it the service is killed.
	soakReviewAbort = 3 << 30
)

func TestSoakMemReviewPage(t *testing.T) {
	if os.Getenv(envSoak) != "1" {
		t.Skipf("memory soak of the review pages: set %s=1 to run it", envSoak)
	}
	bin := buildBinary(t)
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			var dbURL string
			if d == sqldb.SQLite {
				dbURL = "sqlite:" + filepath.Join(t.TempDir(), "soak.db")
			} else {
				dbURL = sqldbtest.URL(t, d)
			}
			soakReviewPage(t, bin, dbURL)
		})
	}
}

func soakReviewPage(t *testing.T, bin, dbURL string) {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	env := append(os.Environ(), "AIUSAGE_SECRET_KEY="+base64.StdEncoding.EncodeToString(secret))
	adm := func(stdin string, v any, args ...string) {
		t.Helper()
		cmd := exec.Command(bin, append(append([]string{"admin"}, args...), "--actor", "soak", "--database-url", dbURL)...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(stdin)
		var stderr syncBuffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "%v: %s", args, stderr.String())
		if v != nil {
			require.NoError(t, json.Unmarshal(out, v), "%v: %s", args, out)
		}
	}
	type idOnly struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	const password = "a long soak passphrase"
	var org, agent, key idOnly
	adm("", &org, "org", "create", "--name", "Acme", "--plan", "enterprise", "--hourly-limit", "100000000")
	adm("", &agent, "agent", "create", "--org", org.ID, "--name", "Guard")
	adm("", &key, "key", "create", "--org", org.ID, "--name", "app", "--type", "API")
	adm(password+"\n", nil, "user", "create", "--org", org.ID, "--email", "rex@acme.test", "--name", "Rex", "--role", "Reviewer", "--password-stdin")

	// The tasks, made by a first process.
	setup := startSoakService(t, bin, dbURL, env)
	base := strings.TrimSuffix(setup.url, "/")
	client := &http.Client{Timeout: 2 * time.Minute}
	must := func(c *http.Client, method, path, key string, body any, want int) []byte {
		t.Helper()
		status, b, err := soakJSON(context.Background(), c, method, base+path, key, body)
		require.NoError(t, err, "%s %s", method, path)
		require.Equal(t, want, status, "%s %s: %.500s", method, path, b)
		return b
	}
	must(client, http.MethodPost, "/organisations/"+org.ID+"/instructions", key.Secret, map[string]any{
		"agentType": "DataProtection", "title": "Project names", "action": "Block", "criticality": "High",
		"trigger": map[string]any{"type": "StringMatch", "values": []string{"Project Falcon"}}, "usedBy": []string{agent.ID}}, http.StatusCreated)
	content := "Project Falcon " + strings.Repeat("x", soakReviewContent-15)
	var firstTask string
	for i := range soakReviewTasks {
		b := must(client, http.MethodPost, "/review-tasks", key.Secret, map[string]any{"agentId": agent.ID,
			"request": map[string]any{"messages": []map[string]string{{"role": "user", "content": content}}}}, http.StatusCreated)
		var task struct{ ID, Status string }
		require.NoError(t, json.Unmarshal(b, &task))
		require.Equal(t, "requires_intervention", task.Status)
		if i == 0 {
			firstTask = task.ID
		}
	}
	// The Reviewer signs in here too: the password's hash (argon2id, 64 MiB)
	// is not what is measured. The session lives in the database.
	jar, _ := cookiejar.New(nil)
	session := &http.Client{Jar: jar, Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: soakReviewParallel},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(session.CloseIdleConnections)
	res, err := session.PostForm(base+"/signin", url.Values{"email": {"rex@acme.test"}, "password": {password}, "next": {"/review"}})
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "sign-in")
	setupURL, _ := url.Parse(base)
	cookies := jar.Cookies(setupURL)
	require.NotEmpty(t, cookies)
	client.CloseIdleConnections()
	setup.stop(t)

	// The process measured.
	svc := startSoakService(t, bin, dbURL, env)
	base = strings.TrimSuffix(svc.url, "/")
	pid := svc.cmd.Process.Pid
	_, startHWM, err := procStatus(pid)
	require.NoError(t, err)
	var killed atomic.Bool
	var peakAnon, peakFile atomic.Uint64
	mem := startRSSSampler(t, pid)
	stopWatch, watchDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watchDone)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopWatch:
				return
			case <-tick.C:
			}
			if rss, _, err := procStatus(pid); err == nil && rss > soakReviewAbort {
				killed.Store(true)
				_ = svc.cmd.Process.Kill()
				return
			}
			anon, file := rssParts(pid)
			peakAnon.Store(max(peakAnon.Load(), anon))
			peakFile.Store(max(peakFile.Load(), file))
		}
	}()
	stopWatching := sync.OnceFunc(func() { close(stopWatch); <-watchDone })
	defer stopWatching()

	// The one session of the Reviewer, shared by every request.
	measuredURL, _ := url.Parse(base)
	jar.SetCookies(measuredURL, cookies)
	res, err = session.Get(base + "/review")
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "the session signed in on the first process")

	type phase struct {
		path             string
		statuses         map[int]int
		largest, bytes   int64
		rss              uint64
		took             time.Duration
		transportFailure string
	}
	run := func(path string) phase {
		p := phase{path: path, statuses: map[int]int{}}
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for range soakReviewParallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range soakReviewRounds {
					res, err := session.Get(base + path)
					if err != nil {
						mu.Lock()
						p.transportFailure = err.Error()
						mu.Unlock()
						return
					}
					n, err := io.Copy(io.Discard, res.Body)
					_ = res.Body.Close()
					mu.Lock()
					if err != nil {
						p.transportFailure = err.Error()
					}
					p.statuses[res.StatusCode]++
					p.largest = max(p.largest, n)
					p.bytes += n
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		p.took = time.Since(start)
		p.rss = mem.phase()
		return p
	}
	var phases []phase
	for _, path := range []string{"/review", "/review/" + firstTask, "/review/" + firstTask + "/request.txt"} {
		phases = append(phases, run(path))
	}
	hwm := mem.stop()
	stopWatching()
	require.False(t, killed.Load(), "the service passed the safety stop of %d MiB and was killed", soakReviewAbort>>20)
	_, lastHWM, err := procStatus(pid)
	require.NoError(t, err)
	hwm = max(hwm, lastHWM)
	svc.stop(t)

	t.Logf("service after start: VmHWM %d MiB; %d tasks of %d bytes waiting", startHWM>>20, soakReviewTasks, soakReviewContent)
	for _, p := range phases {
		t.Logf("%d x %d GET %s: statuses %v, largest answer %d KiB, %d MiB in all, peak VmRSS %d MiB, %s",
			soakReviewParallel, soakReviewRounds, p.path, p.statuses, p.largest>>10, p.bytes>>20, p.rss>>20, p.took.Round(time.Millisecond))
		require.Empty(t, p.transportFailure, p.path)
		for status := range p.statuses {
			require.Contains(t, []int{http.StatusOK, http.StatusTooManyRequests}, status, "%s: %v", p.path, p.statuses)
		}
		require.Positive(t, p.statuses[http.StatusOK], p.path)
	}
	t.Logf("peak VmHWM %d MiB (bound %d MiB); peak RssAnon %d MiB, peak RssFile %d MiB (mapped files: the binary, and SQLite's database)",
		hwm>>20, soakReviewPeakRSS>>20, peakAnon.Load()>>20, peakFile.Load()>>20)
	require.LessOrEqual(t, hwm, uint64(soakReviewPeakRSS), fmt.Sprintf("peak VmHWM %d MiB", hwm>>20))
}

// rssParts reads RssAnon and RssFile, in bytes, from /proc/PID/status: the
// process's own memory, and the pages of files it maps.
func rssParts(pid int) (anon, file uint64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "RssAnon:":
			anon = kb << 10
		case "RssFile:":
			file = kb << 10
		}
	}
	return anon, file
}
