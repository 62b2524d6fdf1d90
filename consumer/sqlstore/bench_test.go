package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// benchPage returns n conversation records of about 2 KB, ids prefixed
// with prefix.
func benchPage(prefix string, n int, updated time.Time) []consumer.Record {
	recs := make([]consumer.Record, n)
	for i := range recs {
		id := fmt.Sprintf("%s-%06d", prefix, i)
		b, _ := json.Marshal(map[string]any{
			"id": id, "startedAt": spec.NewTime(t0), "updatedAt": spec.NewTime(updated),
			"user":     map[string]any{"id": "user-42", "email": "someone@example.com", "department": "Engineering"},
			"model":    "gpt-4o",
			"messages": []map[string]any{{"role": "user", "content": pad(900)}, {"role": "assistant", "content": pad(900)}},
		})
		recs[i] = consumer.Record{ID: id, Time: updated, StartedAt: t0, JSON: b}
	}
	return recs
}

// BenchmarkSavePage measures SavePage of 100 conversations of about 2 KB:
// new records ("insert"), and the same records again in a later run
// ("update"). "sqlite-normal" opens the file with synchronous(NORMAL),
// "postgres-async" uses WithAsyncCommit.
func BenchmarkSavePage(b *testing.B) {
	const perPage = 100
	for _, d := range []string{"sqlite", "sqlite-normal", "postgres", "postgres-async"} {
		for _, mode := range []string{"insert", "update"} {
			b.Run(d+"/"+mode, func(b *testing.B) {
				ctx := context.Background()
				var (
					db   *sqldb.DB
					opts []sqlstore.Option
				)
				switch d {
				case "sqlite":
					db = sqldbtest.Open(b, sqldb.SQLite)
				case "sqlite-normal":
					var err error
					db, err = sqldb.Open(ctx, sqldbtest.URL(b, sqldb.SQLite)+"?_pragma=synchronous(NORMAL)")
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { _ = db.Close() })
				case "postgres":
					db = sqldbtest.Open(b, sqldb.Postgres)
				case "postgres-async":
					db = sqldbtest.Open(b, sqldb.Postgres)
					opts = append(opts, sqlstore.WithAsyncCommit())
				}
				s, err := sqlstore.New(ctx, db.DB, db.Dialect, opts...)
				if err != nil {
					b.Fatal(err)
				}
				l := lease("bench", consumer.Conversations, "p1")
				if ok, err := s.AcquireLease(ctx, l); err != nil || !ok {
					b.Fatal(ok, err)
				}
				same := benchPage("same", perPage, t0)
				if mode == "update" {
					if err := s.SavePage(ctx, consumer.PageWrite{Lease: l, Records: same}); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(perPage * len(same[0].JSON)))
				b.ResetTimer()
				for i := range b.N {
					b.StopTimer()
					recs := same
					if mode == "insert" {
						recs = benchPage(fmt.Sprintf("p%d", i), perPage, t0)
					}
					p := consumer.PageWrite{Lease: l, Records: recs, Checkpoint: consumer.Checkpoint{
						Run: int64(i + 1), Cursor: "c", InProgress: true, Pages: int64(i), Records: int64(i * perPage),
					}}
					b.StartTimer()
					if err := s.SavePage(ctx, p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
