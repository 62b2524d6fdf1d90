package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/sqlsource"
)

const (
	tenant = "bench"
	token  = "bench-token"
)

// conversations is the size of the data set: 100,000, or
// AIUSAGE_BENCH_CONVERSATIONS for a quick run.
var conversations = func() int {
	if n, err := strconv.Atoi(os.Getenv("AIUSAGE_BENCH_CONVERSATIONS")); err == nil && n >= 1000 {
		return n
	}
	return 100_000
}()

var dataEnd = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// fixture is one provider over 100,000 generated conversations in SQLite,
// built once per benchmark binary.
type fixture struct {
	srv      *httptest.Server
	src      *sqlsource.Source // the provider's store, for writes
	uncached *httptest.Server  // the same, over a sqlsource without page cache
	client   *http.Client
	cursors  []string // cursors spread over the whole list, for limit=100 pages
	deep     string   // a cursor at 90% depth
	first    []byte   // the first page, as served
	load     time.Duration
}

var (
	fixOnce sync.Once
	fix     *fixture
	fixErr  error
	dir     string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

func getFixture(b *testing.B) *fixture {
	b.Helper()
	fixOnce.Do(func() { fix, fixErr = build() })
	if fixErr != nil {
		b.Fatal(fixErr)
	}
	return fix
}

func build() (*fixture, error) {
	ctx := context.Background()
	var err error
	if dir, err = os.MkdirTemp("", "aiusage-bench-"); err != nil {
		return nil, err
	}
	db, err := sqldb.Open(ctx, "sqlite:"+filepath.Join(dir, "provider.db"))
	if err != nil {
		return nil, err
	}
	src, err := sqlsource.New(ctx, db.DB, sqlsource.Dialect(db.Dialect))
	if err != nil {
		return nil, err
	}
	start := time.Now()
	cfg := demodata.Config{Seed: 1, Conversations: conversations, Tenant: tenant, End: dataEnd}
	if err := src.WriteBatch(ctx, func(w provider.Writer) error { return demodata.Fill(ctx, cfg, tenant, w) }); err != nil {
		return nil, err
	}
	f := &fixture{load: time.Since(start), src: src}
	key, err := src.CursorKey(ctx)
	if err != nil {
		return nil, err
	}
	opts := []provider.Option{provider.WithTokens(provider.Token{Secret: token, Tenant: tenant}), provider.WithCursorKey(key)}
	h, err := provider.NewHandler(src, opts...)
	if err != nil {
		return nil, err
	}
	f.srv = httptest.NewServer(h)
	plain, err := sqlsource.New(ctx, db.DB, sqlsource.Dialect(db.Dialect), sqlsource.WithPageCache(0))
	if err != nil {
		return nil, err
	}
	hu, err := provider.NewHandler(plain, opts...)
	if err != nil {
		return nil, err
	}
	f.uncached = httptest.NewServer(hu)
	f.client = &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}}

	// Walk the whole list in pages of 1% of it, keeping a cursor after every
	// page and the one at 90% depth.
	var total int
	next := ""
	step := strconv.Itoa(conversations / 100)
	for {
		body, err := f.get("/conversations?limit=" + step + cursorParam(next))
		if err != nil {
			return nil, err
		}
		var page struct {
			Data       []json.RawMessage `json:"data"`
			HasMore    bool              `json:"hasMore"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, err
		}
		total += len(page.Data)
		if !page.HasMore {
			break
		}
		next = page.NextCursor
		f.cursors = append(f.cursors, next)
		if total == conversations*9/10 {
			f.deep = next
		}
	}
	if total != conversations || f.deep == "" {
		return nil, fmt.Errorf("walked %d conversations, want %d (deep cursor %t)", total, conversations, f.deep != "")
	}
	if f.first, err = f.get("/conversations?limit=100"); err != nil {
		return nil, err
	}
	return f, nil
}

func cursorParam(c string) string {
	if c == "" {
		return ""
	}
	return "&cursor=" + url.QueryEscape(c)
}

func (f *fixture) get(path string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return body, nil
}

// fetch reads one page and discards it, as a client that streams it would.
func fetch(b *testing.B, client *http.Client, u string) {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Errorf("GET %s: %d", u, resp.StatusCode)
	}
}

// rate runs fn from workers goroutines for about two seconds (after a short
// warm-up) and returns the calls per second. The baselines are measured this
// way, inside the benchmark they are compared with, because testing.Benchmark
// cannot run inside a running benchmark.
func rate(workers int, fn func()) float64 {
	run := func(d time.Duration) int64 {
		var n atomic.Int64
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					fn()
					n.Add(1)
				}
			})
		}
		wg.Wait()
		return n.Load()
	}
	run(200 * time.Millisecond)
	start := time.Now()
	n := run(2 * time.Second)
	return float64(n) / time.Since(start).Seconds()
}

var (
	staticOnce   sync.Once
	staticRate   float64 // pages per second of the static handler
	uncachedRate float64 // pages per second of the provider without page cache
)

// BenchmarkConversationsThroughput serves limit=100 pages from all over the
// list, from two client goroutines, and reports the throughput as a ratio of
// a plain handler writing the first page's bytes under the same load. The
// pages come from a rotation of 100 cursors, so sqlsource's page cache holds
// them all ("x-static"); "x-static-uncached" is the same load with the cache
// off, every page read from SQLite.
func BenchmarkConversationsThroughput(b *testing.B) {
	f := getFixture(b)
	staticOnce.Do(func() {
		static := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", fmt.Sprint(len(f.first)))
			_, _ = w.Write(f.first)
		}))
		defer static.Close()
		staticRate = rate(2, func() { fetch(b, f.client, static.URL+"/conversations?limit=100") })
		var mu sync.Mutex
		i := 0
		uncachedRate = rate(2, func() {
			mu.Lock()
			c := f.cursors[i%len(f.cursors)]
			i++
			mu.Unlock()
			fetch(b, f.client, f.uncached.URL+"/conversations?limit=100"+cursorParam(c))
		})
	})
	b.SetBytes(int64(len(f.first)))
	b.ResetTimer()
	var mu sync.Mutex
	i := 0
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mu.Lock()
			c := f.cursors[i%len(f.cursors)]
			i++
			mu.Unlock()
			fetch(b, f.client, f.srv.URL+"/conversations?limit=100"+cursorParam(c))
		}
	})
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "pages/s")
	b.ReportMetric(staticRate, "static-pages/s")
	b.ReportMetric(rate/staticRate, "x-static")
	b.ReportMetric(uncachedRate/staticRate, "x-static-uncached")
}

var (
	firstOnce sync.Once
	firstCost time.Duration
)

// BenchmarkConversationsDepth reads the limit=100 page at 90% depth, one
// request at a time, and reports its cost as a ratio of the first page's,
// both read from SQLite every time (the page cache off): this is what keyset
// pagination decides.
func BenchmarkConversationsDepth(b *testing.B) {
	f := getFixture(b)
	firstOnce.Do(func() {
		firstCost = time.Duration(float64(time.Second) / rate(1, func() { fetch(b, f.client, f.uncached.URL+"/conversations?limit=100") }))
	})
	u := f.uncached.URL + "/conversations?limit=100" + cursorParam(f.deep)
	b.ResetTimer()
	for b.Loop() {
		fetch(b, f.client, u)
	}
	deep := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(firstCost.Microseconds()), "first-page-µs")
	b.ReportMetric(float64(deep.Microseconds()), "deep-page-µs")
	b.ReportMetric(float64(deep)/float64(firstCost), "x-first-page")
}

// BenchmarkUsage30Days aggregates the last 30 days of usage by day, model
// and department: one op reads the whole answer, following cursors.
func BenchmarkUsage30Days(b *testing.B) {
	f := getFixture(b)
	start := dataEnd.Add(-30 * 24 * time.Hour).Format(time.RFC3339)
	path := "/usage?granularity=day&groupBy=model,department&limit=1000&startAt=" + start + "&endAt=" + dataEnd.Format(time.RFC3339)
	walk := func() (buckets, pages int) {
		next := ""
		for {
			body, err := f.get(path + cursorParam(next))
			if err != nil {
				b.Fatal(err)
			}
			var page struct {
				Data       []json.RawMessage `json:"data"`
				HasMore    bool              `json:"hasMore"`
				NextCursor string            `json:"nextCursor"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				b.Fatal(err)
			}
			buckets += len(page.Data)
			pages++
			if !page.HasMore {
				return buckets, pages
			}
			next = page.NextCursor
		}
	}
	buckets, pages := walk()
	if buckets == 0 {
		b.Fatal("no usage buckets in the last 30 days of the data")
	}
	b.ResetTimer()
	for b.Loop() {
		walk()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	b.ReportMetric(float64(buckets), "buckets")
	b.ReportMetric(float64(pages), "pages")
}

// BenchmarkLoad100k reports how long filling SQLite with the 100,000
// generated conversations took (once per run).
func BenchmarkLoad100k(b *testing.B) {
	f := getFixture(b)
	for b.Loop() {
	}
	b.ReportMetric(f.load.Seconds(), "load-s")
}
