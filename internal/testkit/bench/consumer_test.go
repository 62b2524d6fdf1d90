package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// BenchmarkConsumerSync measures the consumer against the provider of the
// fixture (100,000 conversations in SQLite, served over loopback), with a
// consumer store on each dialect (sub-benchmarks sqlite and postgres; the
// latter runs where AIUSAGE_TEST_DATABASE_URL is set, in fresh schemas), in
// one run:
//
//   - sync/walk: the record rate of a full sync of the conversations into a
//     fresh store, as a ratio of the rate of a client that only walks
//     the same pages and discards them (target >= 0.6); the best of three
//     rounds of each;
//   - incr/full: the time of an incremental sync after 1% of the
//     conversations changed, as a ratio of the full sync's (target <= 0.05);
//   - heap-MB and heap-growth: the peak heap during the full sync, and the
//     peak over its second half divided by the peak over its first fifth
//     (flat memory: about 1).
func BenchmarkConsumerSync(b *testing.B) {
	f := getFixture(b)
	for _, d := range sqldbtest.Dialects() {
		b.Run(string(d), func(b *testing.B) { benchConsumerSync(b, f, d) })
	}
}

func benchConsumerSync(b *testing.B, f *fixture, dialect sqldb.Dialect) {
	storeURL := sqldbtest.URL(b, dialect) // skips PostgreSQL without a database
	b.ResetTimer()
	ctx := context.Background()
	client, err := consumer.NewClient(consumer.ClientConfig{URL: f.srv.URL, Token: token})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		// Three rounds of a walk that discards and a full sync into a
		// fresh store, alternating; the best of each is compared, so a
		// burst of other work on the machine does not decide the ratio.
		var walk, full time.Duration
		var walked int
		var peak, growth float64
		var store *sqlstore.Store
		var poller *consumer.Poller
		for round := range 3 {
			start := time.Now()
			walked = 0
			q := consumer.Query{Limit: 1000}
			for {
				p, err := client.Fetch(ctx, consumer.Conversations, q)
				if err != nil {
					b.Fatal(err)
				}
				walked += len(p.Records)
				if !p.HasMore {
					break
				}
				q.Cursor = p.NextCursor
			}
			if d := time.Since(start); round == 0 || d < walk {
				walk = d
			}

			if store != nil {
				_ = store.Close()
			}
			var err error
			if i > 0 || round > 0 {
				storeURL = sqldbtest.URL(b, dialect) // a fresh database
			}
			store, err = sqlstore.Open(ctx, storeURL)
			if err != nil {
				b.Fatal(err)
			}
			var pages atomic.Int64
			poller, err = consumer.NewPoller(client, store, &consumer.Config{Source: "bench", Resources: []consumer.Resource{consumer.Conversations},
				OnPage: func(consumer.PageProgress) { pages.Add(1) }})
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			sampler := startHeapSampler(func() float64 { return float64(pages.Load()) / float64(walked/1000+1) })
			start = time.Now()
			res, err := poller.SyncOnce(ctx)
			d := time.Since(start)
			pk, gr := sampler.stop()
			if err != nil {
				b.Fatal(err)
			}
			if res.Records() != walked {
				b.Fatalf("the sync stored %d conversations, the walk saw %d", res.Records(), walked)
			}
			if round == 0 || d < full {
				full = d
			}
			peak, growth = max(peak, pk), max(growth, gr)
		}

		// Change 1% of the conversations, then sync again.
		changed := walked / 100
		if err := touch(ctx, f, changed); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		res, err := poller.SyncOnce(ctx)
		incr := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if res.Records() < changed {
			b.Fatalf("the incremental sync stored %d conversations, %d changed", res.Records(), changed)
		}
		_ = store.Close()

		walkRate := float64(walked) / walk.Seconds()
		syncRate := float64(walked) / full.Seconds()
		b.ReportMetric(walkRate, "walk-rec/s")
		b.ReportMetric(syncRate, "sync-rec/s")
		b.ReportMetric(syncRate/walkRate, "sync/walk")
		b.ReportMetric(incr.Seconds()/full.Seconds(), "incr/full")
		b.ReportMetric(peak/(1<<20), "heap-MB")
		b.ReportMetric(growth, "heap-growth")
		if os.Getenv("AIUSAGE_BENCH_VERBOSE") != "" {
			b.Logf("walk %s, full sync %s, incremental %s (%d changed)", walk, full, incr, changed)
		}
	}
}

// touch updates n conversations of the provider (spread over the list), so
// their updatedAt moves to now.
func touch(ctx context.Context, f *fixture, n int) error {
	body, err := f.get(fmt.Sprintf("/conversations?limit=%d", min(n, 1000)))
	if err != nil {
		return err
	}
	var page spec.List[spec.Conversation]
	if err := json.Unmarshal(body, &page); err != nil {
		return err
	}
	done := 0
	for done < n {
		for _, c := range page.Data {
			if done == n {
				break
			}
			c.Status = fmt.Sprintf("touched-%d", done)
			c.UpdatedAt = spec.Time{}
			if err := f.src.UpsertConversation(ctx, tenant, c); err != nil {
				return err
			}
			done++
		}
		if len(page.Data) == 0 {
			return fmt.Errorf("no conversations to touch")
		}
	}
	return nil
}

// heapSampler records the heap in use while a sync runs, against its
// progress (0..1).
type heapSampler struct {
	stopc chan struct{}
	wg    sync.WaitGroup
	early float64 // peak over the first fifth
	late  float64 // peak over the second half
	peak  float64
}

func startHeapSampler(progress func() float64) *heapSampler {
	s := &heapSampler{stopc: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-s.stopc:
				return
			case <-t.C:
			}
			runtime.ReadMemStats(&ms)
			h := float64(ms.HeapInuse)
			p := progress()
			s.peak = max(s.peak, h)
			switch {
			case p <= 0.2:
				s.early = max(s.early, h)
			case p >= 0.5:
				s.late = max(s.late, h)
			}
		}
	}()
	return s
}

// stop returns the peak heap and the growth ratio late/early.
func (s *heapSampler) stop() (peak, growth float64) {
	close(s.stopc)
	s.wg.Wait()
	if s.early == 0 {
		return s.peak, 0
	}
	return s.peak, s.late / s.early
}
