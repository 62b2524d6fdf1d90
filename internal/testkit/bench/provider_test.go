package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
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

// fixture is one provider over 100,000 generated conversations in SQLite or
// PostgreSQL, built once per benchmark binary and dialect.
type fixture struct {
	srv      *httptest.Server
	src      *sqlsource.Source // the provider's store, for writes
	uncached *httptest.Server  // the same, over a sqlsource without page cache
	client   *http.Client
	cursors  []string // cursors spread over the whole list, for limit=100 pages
	walk     []string // the cursor of every limit=100 page of the list, in order
	deep     string   // a cursor at 90% depth
	first    []byte   // the first page, as served
	load     time.Duration

	staticOnce sync.Once
	static     float64 // pages per second of the static handler
	firstOnce  sync.Once
	firstCost  time.Duration // the first page, uncached
}

type fixtureOnce struct {
	once sync.Once
	fix  *fixture
	err  error
}

var (
	fixtures = map[sqldb.Dialect]*fixtureOnce{sqldb.SQLite: {}, sqldb.Postgres: {}}
	dir      string
	pgSchema struct {
		admin *sqldb.DB
		name  string
	}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	if pgSchema.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, _ = pgSchema.admin.ExecContext(ctx, "DROP SCHEMA "+pgSchema.name+" CASCADE")
		cancel()
		_ = pgSchema.admin.Close()
	}
	os.Exit(code)
}

// getFixture returns the SQLite fixture.
func getFixture(b *testing.B) *fixture {
	b.Helper()
	return getFixtureOf(b, sqldb.SQLite)
}

// getFixtureOf returns the fixture of dialect d. The PostgreSQL one lives in
// a schema of its own in the database of AIUSAGE_TEST_DATABASE_URL (dropped
// when the binary ends); without that variable its benchmarks are skipped,
// or fail when AIUSAGE_REQUIRE_POSTGRES=1.
func getFixtureOf(b *testing.B, d sqldb.Dialect) *fixture {
	b.Helper()
	var base string
	if d == sqldb.Postgres {
		base = sqldbtest.PostgresURL(b)
	}
	fo := fixtures[d]
	fo.once.Do(func() { fo.fix, fo.err = build(d, base) })
	if fo.err != nil {
		b.Fatal(fo.err)
	}
	return fo.fix
}

// dialects runs fn as one sub-benchmark per dialect, named after it.
func dialects(b *testing.B, fn func(b *testing.B, f *fixture)) {
	for _, d := range []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres} {
		b.Run(string(d), func(b *testing.B) { fn(b, getFixtureOf(b, d)) })
	}
}

// openBenchDB opens the database of a fixture: a SQLite file in a
// temporary directory, or a fresh PostgreSQL schema.
func openBenchDB(ctx context.Context, d sqldb.Dialect, base string) (*sqldb.DB, error) {
	if d == sqldb.SQLite {
		var err error
		if dir, err = os.MkdirTemp("", "aiusage-bench-"); err != nil {
			return nil, err
		}
		return sqldb.Open(ctx, "sqlite:"+filepath.Join(dir, "provider.db"))
	}
	adm, err := sqldb.Open(ctx, base)
	if err != nil {
		return nil, err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := "bench_" + hex.EncodeToString(rnd[:])
	if _, err := adm.ExecContext(ctx, "CREATE SCHEMA "+name); err != nil {
		_ = adm.Close()
		return nil, err
	}
	pgSchema.admin, pgSchema.name = adm, name
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return sqldb.Open(ctx, u.String())
}

func build(d sqldb.Dialect, base string) (*fixture, error) {
	ctx := context.Background()
	db, err := openBenchDB(ctx, d, base)
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
	// The cursor of every limit=100 page, walked without the page cache.
	next = ""
	for {
		f.walk = append(f.walk, next)
		body, err := f.getFrom(f.uncached.URL, "/conversations?limit=100"+cursorParam(next))
		if err != nil {
			return nil, err
		}
		var page struct {
			HasMore    bool   `json:"hasMore"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, err
		}
		if !page.HasMore {
			break
		}
		next = page.NextCursor
	}
	return f, nil
}

func cursorParam(c string) string {
	if c == "" {
		return ""
	}
	return "&cursor=" + url.QueryEscape(c)
}

func (f *fixture) get(path string) ([]byte, error) { return f.getFrom(f.srv.URL, path) }

func (f *fixture) getFrom(base, path string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
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

// staticRate returns the pages per second of a plain handler writing f's
// first page, from two client goroutines, measured once per fixture.
func (f *fixture) staticRate(b *testing.B) float64 {
	f.staticOnce.Do(func() {
		static := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", fmt.Sprint(len(f.first)))
			_, _ = w.Write(f.first)
		}))
		defer static.Close()
		f.static = rate(2, func() { fetch(b, f.client, static.URL+"/conversations?limit=100") })
	})
	return f.static
}

// rotate serves pages of the given cursors in turn, from two client
// goroutines, and reports the rate as a ratio of the static handler's
// (metric name ratio).
func rotate(b *testing.B, f *fixture, base string, cursors []string, ratio string) {
	static := f.staticRate(b)
	b.SetBytes(int64(len(f.first)))
	b.ResetTimer()
	var i atomic.Int64
	b.SetParallelism(1)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c := cursors[int(i.Add(1)-1)%len(cursors)]
			fetch(b, f.client, base+"/conversations?limit=100"+cursorParam(c))
		}
	})
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "pages/s")
	b.ReportMetric(static, "static-pages/s")
	b.ReportMetric(rate/static, ratio)
}

// BenchmarkConversationsThroughput serves limit=100 pages, from two client
// goroutines (on two cores), and reports the throughput as a ratio of a
// plain handler writing the first page's bytes under the same load, on
// SQLite and PostgreSQL:
//
//   - hit: a rotation of 100 cursors spread over the list, all of whose
//     pages sqlsource's page cache holds ("x-static-hit");
//   - miss: every page of the list in turn, as a consumer's walk reads
//     them, with the page cache on: the list is five times the cache's
//     budget (at 100,000 conversations), so no page is in it when it
//     comes round again
//     ("x-static-miss").
func BenchmarkConversationsThroughput(b *testing.B) {
	dialects(b, func(b *testing.B, f *fixture) {
		b.Run("hit", func(b *testing.B) { rotate(b, f, f.srv.URL, f.cursors, "x-static-hit") })
		b.Run("miss", func(b *testing.B) { rotate(b, f, f.srv.URL, f.walk, "x-static-miss") })
	})
}

// BenchmarkConversationsDepth reads the limit=100 page at 90% depth, one
// request at a time, and reports its cost as a ratio of the first page's,
// both read from the database every time (the page cache off): this is
// what keyset pagination decides.
func BenchmarkConversationsDepth(b *testing.B) {
	dialects(b, func(b *testing.B, f *fixture) {
		f.firstOnce.Do(func() {
			f.firstCost = time.Duration(float64(time.Second) / rate(1, func() { fetch(b, f.client, f.uncached.URL+"/conversations?limit=100") }))
		})
		u := f.uncached.URL + "/conversations?limit=100" + cursorParam(f.deep)
		b.ResetTimer()
		for b.Loop() {
			fetch(b, f.client, u)
		}
		deep := b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(float64(f.firstCost.Microseconds()), "first-page-µs")
		b.ReportMetric(float64(deep.Microseconds()), "deep-page-µs")
		b.ReportMetric(float64(deep)/float64(f.firstCost), "x-first-page")
	})
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
