package sqlsource

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Size of the benchmarks' data set: conversations over benchDays days, with
// one usage row per assistant turn (about three per conversation).
const (
	benchConversations = 100_000
	benchDays          = 30
	benchTenant        = "bench"
)

var benchStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// benchData is a generated data set loaded into a SQLite file.
type benchData struct {
	s         *Source
	keys      []provider.Key // conversations, in list order
	usageRows int
}

// loadBench generates the data set into a fresh SQLite database under
// b.TempDir() with [Source.WriteBatch], and reports how long loading took.
func loadBench(b *testing.B) *benchData {
	b.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	s, err := New(ctx, db.DB, SQLite)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })

	r := rand.New(rand.NewPCG(1, 2))
	models := []string{"gpt-4o", "gpt-4o-mini", "claude-sonnet-4", "claude-haiku-4", "gemini-2.5-pro", "mistral-large"}
	departments := []string{"Engineering", "Sales", "Marketing", "Support", "Finance"}
	words := strings.Fields("the quarterly report summary customer contract draft review please explain code function error " +
		"deploy pipeline budget forecast policy translate email meeting notes action items risk analysis table chart")
	sentence := func(n int) string {
		var sb strings.Builder
		for i := range n {
			if i > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[r.IntN(len(words))])
		}
		return sb.String()
	}
	span := int64(benchDays * 24 * time.Hour)

	d := &benchData{s: s}
	started := time.Now()
	const perBatch = 10_000
	for first := 0; first < benchConversations; first += perBatch {
		err := s.WriteBatch(ctx, func(w provider.Writer) error {
			for i := first; i < first+perBatch; i++ {
				// Conversations end within the range, usage rows included.
				startedAt := benchStart.Add(time.Duration(r.Int64N(span - int64(10*time.Minute)))).Truncate(time.Millisecond)
				updatedAt := startedAt.Add(time.Duration(r.IntN(600_000)) * time.Millisecond)
				if i%2 == 0 {
					// Those started in the same minute share one updatedAt.
					updatedAt = startedAt.Truncate(time.Minute).Add(10 * time.Minute)
				}
				user := r.IntN(400)
				dept := departments[user%len(departments)]
				model := models[r.IntN(len(models))]
				asst := fmt.Sprintf("asst-%02d", r.IntN(12))
				id := fmt.Sprintf("conv-%06d", i)
				c := spec.Conversation{
					ID: id, ConversationID: "thread-" + id,
					StartedAt: spec.NewTime(startedAt), UpdatedAt: spec.NewTime(updatedAt),
					User:      &spec.User{ID: fmt.Sprintf("user-%03d", user), Email: fmt.Sprintf("user%03d@example.com", user), Department: dept, Groups: []string{dept + "-team"}},
					Assistant: &spec.AssistantRef{ID: asst, Name: "Assistant " + asst},
					Model:     model, ModelProvider: "vendor", Status: "completed",
					Parameters:   &spec.Parameters{Temperature: ptr(0.7), MaxTokens: ptr(int64(2048))},
					SystemPrompt: "You are a helpful assistant for " + dept + ". " + sentence(12),
				}
				turns := 2 + r.IntN(3)
				var usage spec.TokenUsage
				for turn := range turns {
					at := startedAt.Add(time.Duration(turn) * 20 * time.Second)
					c.Messages = append(c.Messages,
						spec.Message{ID: fmt.Sprintf("m%d", 2*turn), Role: spec.RoleUser, Content: sentence(25), CreatedAt: spec.NewTime(at)},
						spec.Message{ID: fmt.Sprintf("m%d", 2*turn+1), Role: spec.RoleAssistant, Content: sentence(45), CreatedAt: spec.NewTime(at.Add(3 * time.Second))},
					)
					u := provider.UsageRecord{
						ID: fmt.Sprintf("%s-%d", id, turn), At: at.Add(3 * time.Second), ConversationID: id,
						UserID: c.User.ID, Department: dept, Model: model, AssistantID: asst,
						InputTokens: 200 + r.Int64N(2000), OutputTokens: 100 + r.Int64N(800),
					}
					u.Cost = float64(u.InputTokens)*0.0000025 + float64(u.OutputTokens)*0.00001
					usage.InputTokens += u.InputTokens
					usage.OutputTokens += u.OutputTokens
					usage.Cost += u.Cost
					if err := w.RecordUsage(ctx, benchTenant, u); err != nil {
						return err
					}
					d.usageRows++
				}
				usage.TotalTokens = usage.InputTokens + usage.OutputTokens
				c.Usage = &usage
				c.Tools = []spec.Tool{{ID: "t1", Name: "web_search", Type: "builtin"}}
				if err := w.UpsertConversation(ctx, benchTenant, c); err != nil {
					return err
				}
				d.keys = append(d.keys, provider.ConversationKey(&c))
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	slices.SortFunc(d.keys, func(x, y provider.Key) int {
		switch {
		case x.Less(y):
			return -1
		case y.Less(x):
			return 1
		}
		return 0
	})
	b.Logf("loaded %d conversations and %d usage rows into SQLite in %v", benchConversations, d.usageRows, time.Since(started).Round(time.Millisecond))
	return d
}

// BenchmarkListConversationsRaw reads a page of 100 conversations as stored
// JSON: the first page, and the page at 90% depth, which must cost about the
// same (keyset pagination); served again from the page cache (the default),
// and read from the database every time (WithPageCache(0)), without and
// with (sized) the byte budget of a Handler's page. walk/uncached
// reads the pages one after the other, as a consumer's walk does (wrapping
// round at the end), each read from the database: the cache-miss path
// without HTTP.
func BenchmarkListConversationsRaw(b *testing.B) {
	d := loadBench(b)
	ctx := context.Background()
	uncached, err := newFromDB(ctx, d.s.db, WithPageCache(0))
	if err != nil {
		b.Fatal(err)
	}
	deep := d.keys[len(d.keys)*9/10-1]
	for _, bc := range []struct {
		name     string
		s        *Source
		after    *provider.Key
		maxBytes int
	}{
		{"first", d.s, nil, 0}, {"depth90", d.s, &deep, 0},
		{"first/uncached", uncached, nil, 0}, {"depth90/uncached", uncached, &deep, 0},
		// With the byte budget a Handler passes: the page is sized first.
		{"first/uncached/sized", uncached, nil, provider.DefaultMaxPageBytes},
		{"depth90/uncached/sized", uncached, &deep, provider.DefaultMaxPageBytes},
	} {
		b.Run(bc.name, func(b *testing.B) {
			q := provider.ConversationQuery{Tenant: benchTenant, After: bc.after, Limit: 100, MaxBytes: bc.maxBytes}
			var n int
			for b.Loop() {
				p, err := bc.s.ListConversationsRaw(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Items) != 100 || !p.HasMore {
					b.Fatalf("page of %d, hasMore %v", len(p.Items), p.HasMore)
				}
				n = 0
				for _, r := range p.Items {
					n += len(r.JSON)
				}
			}
			b.SetBytes(int64(n))
		})
	}
	b.Run("walk/uncached", func(b *testing.B) {
		var after *provider.Key
		for b.Loop() {
			p, err := uncached.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: benchTenant, After: after, Limit: 100})
			if err != nil {
				b.Fatal(err)
			}
			after = nil
			if p.HasMore {
				after = &p.Items[len(p.Items)-1].Key
			}
		}
	})
}

// BenchmarkUsage30Days answers /usage?granularity=day&groupBy=model,department
// over 30 days (6 models, 5 departments: 900 buckets): a first page of 100
// buckets, and every bucket in one page of up to 1000; also hourly buckets,
// ungrouped, a page of 100.
func BenchmarkUsage30Days(b *testing.B) {
	d := loadBench(b)
	ctx := context.Background()
	q := provider.UsageQuery{
		Tenant: benchTenant, Start: benchStart, End: benchStart.Add(benchDays * 24 * time.Hour),
		Granularity: spec.GranularityDay, GroupBy: []string{spec.DimensionModel, spec.DimensionDepartment}, Limit: 100,
	}
	b.Run("limit-100", func(b *testing.B) {
		for b.Loop() {
			p, err := d.s.Usage(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			if len(p.Items) != 100 || !p.HasMore {
				b.Fatalf("%d buckets, hasMore %v", len(p.Items), p.HasMore)
			}
		}
	})
	b.Run("limit-1000", func(b *testing.B) {
		q := q
		q.Limit = 1000
		for b.Loop() {
			p, err := d.s.Usage(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			var n int64
			for i := range p.Items {
				n += p.Items[i].Metrics.Requests
			}
			if p.HasMore || n != int64(d.usageRows) {
				b.Fatalf("%d buckets, hasMore %v, %d requests, want %d", len(p.Items), p.HasMore, n, d.usageRows)
			}
		}
	})
	b.Run("hour-ungrouped-limit-100", func(b *testing.B) {
		q := q
		q.Granularity, q.GroupBy = spec.GranularityHour, nil
		for b.Loop() {
			if _, err := d.s.Usage(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchLoadConversations is the size of the demo data set that
// BenchmarkWriteBatch loads (about 3.4 records a conversation).
const benchLoadConversations = 5000

// BenchmarkWriteBatch loads the demo's data set (conversations, deletions,
// assistants, events, usage) with one [Source.WriteBatch] into a fresh
// database, as `provider serve --demo` does: one row a statement, as the
// batch wrote before multi-row statements, and DefaultBatchRows rows a
// statement, back to back in the same run. It reports the records written
// per second by each and their ratio (x-row: how many times faster the
// multi-row statements are).
func BenchmarkWriteBatch(b *testing.B) {
	for _, d := range sqldbtest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			var row, bulk, insert float64
			for b.Loop() {
				row += loadRate(b, d, 1, false)
				bulk += loadRate(b, d, DefaultBatchRows, false)
				if d == sqldb.Postgres {
					insert += loadRate(b, d, DefaultBatchRows, true)
				}
			}
			b.ReportMetric(row/float64(b.N), "records/s-row")
			b.ReportMetric(bulk/float64(b.N), "records/s-bulk")
			b.ReportMetric(bulk/row, "x-row")
			if d == sqldb.Postgres {
				// The multi-row INSERTs alone, without COPY.
				b.ReportMetric(insert/float64(b.N), "records/s-insert")
				b.ReportMetric(bulk/insert, "x-insert")
			}
		})
	}
}

// loadRate loads the demo data set into a fresh database of dialect d,
// rows a statement (and with no COPY, on PostgreSQL, if noCopy), and
// returns the records written per second.
func loadRate(b *testing.B, d sqldb.Dialect, rows int, noCopy bool) float64 {
	ctx := context.Background()
	s, err := New(ctx, sqldbtest.Open(b, d).DB, d)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.batchRows, s.noCopy = rows, noCopy
	var n int64
	w := countingWriter{n: &n}
	cfg := demodata.Config{Seed: 1, Conversations: benchLoadConversations, Tenant: "acme"}
	start := time.Now()
	err = s.WriteBatch(ctx, func(bw provider.Writer) error {
		w.w = bw
		return demodata.Fill(ctx, cfg, "acme", &w)
	})
	if err != nil {
		b.Fatal(err)
	}
	return float64(n) / time.Since(start).Seconds()
}
