package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
)

// watchedProvider is an in-process provider of generated data that records,
// per resource path, how many requests run at once.
type watchedProvider struct {
	name, tenant, token string
	srv                 *httptest.Server
	inner               http.Handler

	mu       sync.Mutex
	seq      int
	inFlight map[string]map[int]bool // path -> ids of the requests running
	max      map[string]int          // path -> most requests running at once
	// overlaps are the moments two requests of one path ran at once, as
	// the ids running; abandoned are the requests whose client went away
	// (the killed process).
	overlaps  map[string][][]int
	abandoned map[int]bool
	requests  int
	// gate holds every request until it is closed.
	gate     chan struct{}
	gateOnce sync.Once
	held     chan struct{} // closed when the first request is held
}

func (p *watchedProvider) open() { p.gateOnce.Do(func() { close(p.gate) }) }

// pageDelay slows every page a little, so that syncs overlap in time and a
// kill lands in the middle of one.
const pageDelay = 40 * time.Millisecond

func newWatchedProvider(t *testing.T, name string, seed uint64, conversations int) *watchedProvider {
	t.Helper()
	p := &watchedProvider{name: name, tenant: "tenant-" + name, token: "tok-" + name,
		inFlight: map[string]map[int]bool{}, max: map[string]int{}, overlaps: map[string][][]int{},
		abandoned: map[int]bool{}, gate: make(chan struct{}), held: make(chan struct{})}
	src := memsource.New()
	cfg := demodata.Config{Seed: seed, Conversations: conversations, Tenant: p.tenant, End: time.Now().UTC().Truncate(time.Hour)}
	require.NoError(t, demodata.Fill(context.Background(), cfg, p.tenant, src))
	h, err := provider.NewHandler(src, provider.WithTokens(provider.Token{Secret: p.token, Tenant: p.tenant}))
	require.NoError(t, err)
	p.inner = h
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *watchedProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	p.mu.Lock()
	p.seq++
	id := p.seq
	if p.requests == 0 {
		close(p.held)
	}
	p.requests++
	running := p.inFlight[path]
	if running == nil {
		running = map[int]bool{}
		p.inFlight[path] = running
	}
	running[id] = true
	if len(running) > p.max[path] {
		p.max[path] = len(running)
	}
	if len(running) > 1 {
		ids := make([]int, 0, len(running))
		for i := range running {
			ids = append(ids, i)
		}
		sort.Ints(ids)
		p.overlaps[path] = append(p.overlaps[path], ids)
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(running, id)
		if r.Context().Err() != nil {
			p.abandoned[id] = true
		}
		p.mu.Unlock()
	}()
	select {
	case <-p.gate:
	case <-r.Context().Done():
		return
	}
	select {
	case <-time.After(pageDelay):
	case <-r.Context().Done():
		return
	}
	p.inner.ServeHTTP(w, r)
}

// concurrency returns, per path, the most requests that ran at once, not
// counting a request whose client went away while it ran (a process killed
// mid-request: its request may end a moment after the process that takes
// over starts), and the overlaps between live requests.
func (p *watchedProvider) concurrency() (raw map[string]int, live map[string][][]int, requests int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	raw = map[string]int{}
	for path, n := range p.max {
		raw[path] = n
	}
	live = map[string][][]int{}
	for path, list := range p.overlaps {
		for _, ids := range list {
			alive := 0
			for _, id := range ids {
				if !p.abandoned[id] {
					alive++
				}
			}
			if alive > 1 {
				live[path] = append(live[path], ids)
			}
		}
	}
	return raw, live, p.requests
}

// get reads path from the provider directly (not through the watch), with
// its token.
func (p *watchedProvider) get(t *testing.T, path string) []byte {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer "+p.token)
	rec := httptest.NewRecorder()
	p.inner.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, "%s: %s", path, rec.Body.String())
	return rec.Body.Bytes()
}

// walkIDs follows the cursors of a list from first (a path with its query)
// and returns the ids of the records.
func walkIDs(t *testing.T, first string, get func(string) []byte) []string {
	t.Helper()
	var ids []string
	next := first
	for range 1000 {
		var page struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
			HasMore    bool   `json:"hasMore"`
			NextCursor string `json:"nextCursor"`
		}
		require.NoError(t, json.Unmarshal(get(next), &page))
		for _, d := range page.Data {
			ids = append(ids, d.ID)
		}
		if !page.HasMore {
			sort.Strings(ids)
			return ids
		}
		require.NotEmpty(t, page.NextCursor)
		next = first + "&cursor=" + url.QueryEscape(page.NextCursor)
	}
	t.Fatalf("%s: more than 1000 pages", first)
	return nil
}

// binJSON runs the binary and decodes the one JSON object it prints.
func binJSON(t *testing.T, bin string, v any, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%v: %s", args, stderr.String())
	require.NoError(t, json.Unmarshal(out, v), "%v: %s", args, out)
}

// serviceProcess is a running "aiusage service serve" process.
type serviceProcess struct {
	cmd  *exec.Cmd
	url  string
	logs *syncBuffer
	done chan struct{}
}

func startServiceProcess(t *testing.T, bin, dbURL string, more ...string) *serviceProcess {
	t.Helper()
	p := &serviceProcess{logs: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"service", "serve", "--addr", "127.0.0.1:0", "--database-url", dbURL, "--allow-private-sources"}, more...)...)
	p.cmd.Stdout = io.Discard
	p.cmd.Stderr = p.logs
	require.NoError(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := serviceURLText.FindStringSubmatch(p.logs.String()); m != nil {
			p.url = m[1]
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("service serve exited: %s", p.logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("service serve not ready: %s", p.logs.String())
	return nil
}

// syncState describes the sync jobs of the queue and the consumer's leases,
// for a failure message.
func syncState(t *testing.T, dbURL string) string {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, dbURL)
	if err != nil {
		return err.Error()
	}
	defer db.Close()
	var b strings.Builder
	for _, q := range []string{
		`SELECT 'job ' || id || ' ' || state || ' attempt ' || attempt || '/' || max_attempts || ' ' || args::text || ' attempted_at ' || COALESCE(attempted_at::text, '-') || ' by ' || COALESCE(array_to_string(attempted_by, ','), '-') FROM river_job WHERE kind = 'aiusage_source_sync' ORDER BY id`,
		`SELECT 'lease ' || source || ' ' || resource || ' ' || owner || ' expires ' || expires_ms FROM consumer_leases ORDER BY source, resource`,
	} {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", q, err)
			continue
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err == nil {
				b.WriteString(line + "\n")
			}
		}
		_ = rows.Close()
	}
	return b.String()
}

// TestTwoServiceProcessesShareTheSources runs two "service serve" processes
// of the real binary on one PostgreSQL database with three sources, kills one
// of them with SIGKILL while it syncs, and checks that the other syncs every
// source completely, and that no provider ever saw one resource walked twice
// at the same time.
func TestTwoServiceProcessesShareTheSources(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dbURL := sqldbtest.URL(t, sqldb.Postgres)
	begin := time.Now()
	bin := buildBinary(t)

	var providers []*watchedProvider
	for i, name := range []string{"alpha", "beta", "gamma"} {
		providers = append(providers, newWatchedProvider(t, name, uint64(i+1), 300))
	}

	var org struct {
		ID string `json:"id"`
	}
	binJSON(t, bin, &org, "admin", "org", "create", "--name", "Acme", "--actor", "test", "--database-url", dbURL)
	var key struct {
		Secret string `json:"secret"`
	}
	binJSON(t, bin, &key, "admin", "key", "create", "--org", org.ID, "--name", "ci", "--type", "API", "--actor", "test", "--database-url", dbURL)
	require.NotEmpty(t, key.Secret)
	sourceOf := map[string]*watchedProvider{} // source id -> provider
	for _, p := range providers {
		var s struct {
			ID string `json:"id"`
		}
		binJSON(t, bin, &s, "admin", "source", "add", "--org", org.ID, "--name", p.name, "--url", p.srv.URL,
			"--token", p.token, "--every", "10s", "--actor", "test", "--database-url", dbURL, "--allow-private-sources")
		sourceOf[s.ID] = p
	}
	t.Logf("setup took %s", time.Since(begin).Round(time.Millisecond))

	// A starts alone; the providers hold its first requests, so that each
	// source's sync is under way in A (its leases taken, its first walk
	// begun) when A is killed. B starts meanwhile, so that both processes
	// run when A dies.
	a := startServiceProcess(t, bin, dbURL)
	for _, p := range providers {
		t.Cleanup(p.open)
		select {
		case <-p.held:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s saw no request within 30 s\nA: %s", p.name, a.logs.String())
		}
	}
	b := startServiceProcess(t, bin, dbURL)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	<-a.done
	for _, p := range providers {
		p.open()
	}
	killed := time.Now()
	t.Logf("killed A %s after the processes started", killed.Sub(begin).Round(time.Millisecond))

	// B syncs every source completely.
	type listed struct {
		ID        string `json:"id"`
		Resources map[string]struct {
			Records     int64      `json:"records"`
			InProgress  bool       `json:"inProgress"`
			LastSuccess *time.Time `json:"lastSuccess"`
			LastError   string     `json:"lastError"`
		} `json:"resources"`
	}
	orgURL := b.url + "organisations/" + org.ID
	viewGet := func(id string) func(string) []byte {
		return func(path string) []byte {
			status, body, _ := call(t, http.MethodGet, orgURL+"/sources/"+id+path, key.Secret, nil)
			require.Equal(t, http.StatusOK, status, "%s: %s", path, body)
			return body
		}
	}
	want := map[string][]string{}
	for id, p := range sourceOf {
		want[id] = walkIDs(t, "/conversations?limit=1000", func(path string) []byte { return p.get(t, path) })
		require.NotEmpty(t, want[id])
	}
	var last []listed
	var pending []string
	deadline := time.Now().Add(90 * time.Second)
	for {
		status, body, _ := call(t, http.MethodGet, orgURL+"/sources", key.Secret, nil)
		require.Equal(t, http.StatusOK, status, string(body))
		require.NoError(t, json.Unmarshal(body, &last))
		require.Len(t, last, len(sourceOf))
		pending = pending[:0]
		for _, s := range last {
			for res, st := range s.Resources {
				if st.LastSuccess == nil || st.InProgress {
					pending = append(pending, sourceOf[s.ID].name+"/"+res)
				}
			}
			c := s.Resources["conversations"]
			if c.LastSuccess != nil && !c.InProgress && c.Records >= int64(len(want[s.ID])) {
				if got := walkIDs(t, "/conversations?limit=1000", viewGet(s.ID)); len(got) != len(want[s.ID]) {
					pending = append(pending, fmt.Sprintf("%s/conversations collected %d of %d", sourceOf[s.ID].name, len(got), len(want[s.ID])))
				}
			} else if c.LastSuccess != nil {
				pending = append(pending, fmt.Sprintf("%s/conversations records %d of %d", sourceOf[s.ID].name, c.Records, len(want[s.ID])))
			}
		}
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			lj, _ := json.MarshalIndent(last, "", "  ")
			t.Fatalf("not every source synced through B within 90 s of the kill; pending %v\nsources: %s\nqueue and leases:\n%s\nB's log:\n%s\nA's log:\n%s",
				pending, lj, syncState(t, dbURL), b.logs.String(), a.logs.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("every source synced through B %s after the kill", time.Since(killed).Round(time.Millisecond))
	for id, p := range sourceOf {
		require.Equal(t, want[id], walkIDs(t, "/conversations?limit=1000", viewGet(id)), "%s: the collected conversations", p.name)
	}

	// No resource of a source was walked by two processes at once.
	for _, p := range providers {
		raw, live, n := p.concurrency()
		t.Logf("%s: %d requests; most at once per path %v", p.name, n, raw)
		for _, path := range []string{"/conversations", "/assistants", "/events", "/usage"} {
			require.NotZero(t, raw[path], "%s: %s never requested", p.name, path)
		}
		for path, o := range live {
			require.Empty(t, o, "%s %s: requests of live clients ran at once: %v", p.name, path, o)
		}
		for path, n := range raw {
			if n > 1 {
				t.Logf("%s %s: %d at once, but only with a request of the killed process", p.name, path, n)
			}
		}
	}
	t.Logf("total %s", time.Since(begin).Round(time.Millisecond))
}
