package sqlsource

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

func convWith(id, prompt string) spec.Conversation {
	return spec.Conversation{ID: id, StartedAt: spec.NewTime(t0), UpdatedAt: spec.NewTime(t0), SystemPrompt: prompt}
}

// TestBatchBuffer checks the batch at the edges of its buffers, three rows a
// statement: several upserts of one id, deletions of a buffered, a written
// and a stored conversation, and conflicts found in the buffer (at the call)
// and in the database (from a later call or from WriteBatch).
func TestBatchBuffer(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newSource(t, db)
		s.batchRows = 3
		require.NoError(t, s.UpsertConversation(ctx, "t1", convWith("stored", "v0")))
		require.NoError(t, s.AppendEvent(ctx, "t1", spec.Event{ID: "e-stored", OccurredAt: spec.NewTime(t0)}))
		require.NoError(t, s.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "u-stored", At: t0, InputTokens: 1}))

		require.NoError(t, s.WriteBatch(ctx, func(w provider.Writer) error {
			b := w.(*batch)
			require.NoError(t, w.UpsertConversation(ctx, "t1", convWith("dup", "v1")))
			require.NoError(t, w.UpsertConversation(ctx, "t1", convWith("dup", "v2")))
			require.Len(t, b.convs.rows, 1, "one row per id")
			require.NoError(t, w.UpsertConversation(ctx, "t1", convWith("buffered", "b1")))
			require.NoError(t, w.DeleteConversation(ctx, "t1", "buffered", t0.Add(time.Hour)))
			require.Len(t, b.convs.rows, 2)
			require.NoError(t, w.UpsertConversation(ctx, "t1", convWith("f1", "x")))
			require.Empty(t, b.convs.rows, "written at three rows")
			require.NoError(t, w.UpsertConversation(ctx, "t1", convWith("dup", "v3")))
			require.NoError(t, w.DeleteConversation(ctx, "t1", "f1", t0.Add(2*time.Hour)))
			require.NoError(t, w.DeleteConversation(ctx, "t1", "stored", t0.Add(3*time.Hour)))
			require.Len(t, b.convs.rows, 1, "dup v3")
			require.Len(t, b.dels, 2, "the deletions of conversations not in the buffer wait to be read together")
			// Deleted, then written again: the last write wins.
			require.NoError(t, w.DeleteConversation(ctx, "t1", "dup", t0.Add(4*time.Hour)))
			require.NoError(t, w.UpsertConversation(ctx, "t1", convWith("dup", "v4")))
			require.NoError(t, w.UpsertConversation(ctx, "t2", convWith("dup", "other tenant")))
			for i := range 5 {
				require.NoError(t, w.AppendEvent(ctx, "t1", spec.Event{ID: fmt.Sprintf("e%d", i), OccurredAt: spec.NewTime(t0)}))
				require.NoError(t, w.RecordUsage(ctx, "t1", provider.UsageRecord{ID: fmt.Sprintf("u%d", i), At: t0, InputTokens: 10}))
			}
			return nil
		}))
		get := func(tenant, id string) spec.Conversation {
			c, err := s.GetConversation(ctx, tenant, id)
			require.NoError(t, err)
			return c
		}
		require.Equal(t, "v4", get("t1", "dup").SystemPrompt)
		dup := get("t1", "dup")
		require.False(t, dup.Deleted())
		require.Equal(t, "other tenant", get("t2", "dup").SystemPrompt)
		for id, at := range map[string]time.Duration{"buffered": time.Hour, "f1": 2 * time.Hour, "stored": 3 * time.Hour} {
			c := get("t1", id)
			require.True(t, c.Deleted(), id)
			require.Equal(t, t0.Add(at), c.DeletedAt.Time, id)
			require.Empty(t, c.SystemPrompt, id)
		}
		es, err := s.ListEvents(ctx, provider.EventQuery{Tenant: "t1", Limit: 10})
		require.NoError(t, err)
		require.Len(t, es.Items, 6)
		requireInputTokens(t, s, 51)

		// Every failure below rolls its batch back, "rolled" with it.
		failing := func(fn func(w provider.Writer)) error {
			err := s.WriteBatch(ctx, func(w provider.Writer) error {
				require.NoError(t, w.UpsertConversation(ctx, "t1", convWith("rolled", "")))
				fn(w)
				return nil
			})
			_, gerr := s.GetConversation(ctx, "t1", "rolled")
			require.ErrorIs(t, gerr, provider.ErrNotFound)
			requireInputTokens(t, s, 51)
			return err
		}
		// In the buffer: the call says so.
		err = failing(func(w provider.Writer) {
			require.NoError(t, w.AppendEvent(ctx, "t1", spec.Event{ID: "new", OccurredAt: spec.NewTime(t0)}))
			require.ErrorIs(t, w.AppendEvent(ctx, "t1", spec.Event{ID: "new", OccurredAt: spec.NewTime(t0)}), provider.ErrConflict)
		})
		require.ErrorIs(t, err, provider.ErrConflict)
		err = failing(func(w provider.Writer) {
			require.NoError(t, w.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "new", At: t0}))
			require.ErrorIs(t, w.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "new", At: t0}), provider.ErrConflict)
		})
		require.ErrorIs(t, err, provider.ErrConflict)
		// Stored: WriteBatch says so, naming the id.
		err = failing(func(w provider.Writer) {
			require.NoError(t, w.AppendEvent(ctx, "t1", spec.Event{ID: "e-stored", OccurredAt: spec.NewTime(t0)}))
		})
		require.ErrorIs(t, err, provider.ErrConflict)
		require.ErrorContains(t, err, `event "e-stored" exists`)
		err = failing(func(w provider.Writer) {
			require.NoError(t, w.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "x", At: t0, InputTokens: 5}))
			require.NoError(t, w.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "u-stored", At: t0, InputTokens: 5}))
		})
		require.ErrorIs(t, err, provider.ErrConflict)
		require.ErrorContains(t, err, `usage record "u-stored" exists`)
		// Written by the batch, then again after its rows were written.
		err = failing(func(w provider.Writer) {
			for _, id := range []string{"n1", "n2", "n3", "n1"} {
				require.NoError(t, w.RecordUsage(ctx, "t1", provider.UsageRecord{ID: id, At: t0}))
			}
		})
		require.ErrorContains(t, err, `usage record "n1" exists`)
		// Found once the full buffer is written: a later call says so (here
		// the third deletion, whose read of the three waits for the writes
		// before it), and every call after it.
		err = failing(func(w provider.Writer) {
			require.NoError(t, w.AppendEvent(ctx, "t1", spec.Event{ID: "e1", OccurredAt: spec.NewTime(t0)}))
			require.NoError(t, w.AppendEvent(ctx, "t1", spec.Event{ID: "n2", OccurredAt: spec.NewTime(t0)}))
			require.NoError(t, w.AppendEvent(ctx, "t1", spec.Event{ID: "n3", OccurredAt: spec.NewTime(t0)}))
			require.NoError(t, w.DeleteConversation(ctx, "t1", "dup", t0))
			require.NoError(t, w.DeleteConversation(ctx, "t1", "buffered", t0))
			err := w.DeleteConversation(ctx, "t1", "f1", t0)
			require.ErrorIs(t, err, provider.ErrConflict)
			require.ErrorContains(t, err, `event "e1" exists`)
			require.ErrorIs(t, w.UpsertAssistant(ctx, "t1", spec.Assistant{ID: "a", CreatedAt: spec.NewTime(t0)}), provider.ErrConflict)
		})
		require.ErrorContains(t, err, `event "e1" exists`)
		// Deleting an id neither stored nor buffered: found when the
		// deletions are read, by WriteBatch here, naming the id.
		err = failing(func(w provider.Writer) {
			require.NoError(t, w.DeleteConversation(ctx, "t1", "nope", t0))
		})
		require.ErrorIs(t, err, provider.ErrNotFound)
		require.ErrorContains(t, err, `"nope"`)
		// Or by the call whose deletion fills the batch's pending ones,
		// and every call after it.
		err = failing(func(w provider.Writer) {
			require.NoError(t, w.DeleteConversation(ctx, "t1", "dup", t0))
			require.NoError(t, w.DeleteConversation(ctx, "t1", "nope", t0))
			require.ErrorIs(t, w.DeleteConversation(ctx, "t1", "stored", t0), provider.ErrNotFound)
			require.ErrorIs(t, w.UpsertAssistant(ctx, "t1", spec.Assistant{ID: "a", CreatedAt: spec.NewTime(t0)}), provider.ErrNotFound)
		})
		require.ErrorIs(t, err, provider.ErrNotFound)
		// Records that are not valid: the call.
		for _, bad := range []func(w provider.Writer) error{
			func(w provider.Writer) error { return w.UpsertConversation(ctx, "t1", spec.Conversation{ID: "c"}) },
			func(w provider.Writer) error {
				return w.UpsertAssistant(ctx, "t1", spec.Assistant{CreatedAt: spec.NewTime(t0)})
			},
			func(w provider.Writer) error { return w.AppendEvent(ctx, "t1", spec.Event{ID: "e"}) },
			func(w provider.Writer) error {
				return w.RecordUsage(ctx, "t1", provider.UsageRecord{ID: "c", At: t0, Cost: math.NaN()})
			},
			func(w provider.Writer) error {
				return w.RecordUsage(ctx, "t1", provider.UsageRecord{ID: strings.Repeat("x", 10_000), At: t0})
			},
		} {
			err = failing(func(w provider.Writer) { require.ErrorIs(t, bad(w), provider.ErrInvalid) })
			require.ErrorIs(t, err, provider.ErrInvalid)
		}
	})
}

// requireInputTokens checks the input tokens of tenant t1's usage on t0's
// day, as summed in usage_rollups.
func requireInputTokens(t *testing.T, s *Source, want int64) {
	t.Helper()
	p, err := s.Usage(t.Context(), provider.UsageQuery{
		Tenant: "t1", Start: t0.Truncate(24 * time.Hour), End: t0.Truncate(24 * time.Hour).Add(24 * time.Hour),
		Granularity: spec.GranularityDay, Limit: 10,
	})
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
	require.Equal(t, want, p.Items[0].Metrics.InputTokens)
}

// TestBatchMemoryBound checks that a batch writes its buffered records once
// they reach a few MiB, however few they are.
func TestBatchMemoryBound(t *testing.T) {
	t.Parallel()
	s := newSource(t, sqldbtest.Open(t, sqldb.SQLite))
	ctx := t.Context()
	big := strings.Repeat("x", 1<<20)
	require.NoError(t, s.WriteBatch(ctx, func(w provider.Writer) error {
		for i := range 20 {
			require.NoError(t, w.UpsertConversation(ctx, "t1", convWith(fmt.Sprint(i), big)))
			require.LessOrEqual(t, w.(*batch).convs.bytes, maxBatchBytes)
		}
		return nil
	}))
	p, err := s.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "t1", Limit: 100})
	require.NoError(t, err)
	require.Len(t, p.Items, 20)
}

// TestBatchSameAsSingleRows loads the same records row by row (one row a
// statement, as before multi-row statements), seven rows a statement and
// with the default, and compares every table: the same rows, the same
// bodies, the same usage sums, the same revisions.
func TestBatchSameAsSingleRows(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		var dumps []string
		for i, rows := range []int{0, 1, 7, DefaultBatchRows} {
			if i > 0 {
				db = sqldbtest.Open(t, db.Dialect)
			}
			s := newSource(t, db)
			write := s.WriteBatch
			if rows == 0 {
				// The Source's own writes, one transaction each.
				write = func(_ context.Context, fn func(provider.Writer) error) error { return fn(s) }
			} else {
				s.batchRows, s.batchCells = rows, 50
			}
			loadMixed(t, write)
			dumps = append(dumps, dumpTables(t, db))
		}
		require.Greater(t, strings.Count(dumps[0], "\n"), 900)
		require.Equal(t, dumps[0], dumps[1], "one row a statement")
		require.Equal(t, dumps[0], dumps[2], "seven rows a statement")
		require.Equal(t, dumps[0], dumps[3], "default rows a statement")
	})
}

// loadMixed writes a generated data set (deletions, assistants, events,
// usage) in one batch, then updates, deletions of records of the batch and
// of stored ones, and writes again, in a second.
func loadMixed(t *testing.T, write func(context.Context, func(provider.Writer) error) error) {
	ctx := t.Context()
	cfg := demodata.Config{Seed: 5, Conversations: 150, Tenant: "acme"}
	require.NoError(t, write(ctx, func(w provider.Writer) error { return demodata.Fill(ctx, cfg, "acme", w) }))
	require.NoError(t, write(ctx, func(w provider.Writer) error {
		for i := range 40 {
			id := fmt.Sprintf("m%02d", i%13)
			c := convWith(id, fmt.Sprint("round ", i))
			c.UpdatedAt = spec.Time{} // the clock's
			if err := w.UpsertConversation(ctx, "acme", c); err != nil {
				return err
			}
			if i%3 == 0 {
				// Written earlier in this batch: buffered, or not.
				if err := w.DeleteConversation(ctx, "acme", fmt.Sprintf("m%02d", (i/2)%13), time.Time{}); err != nil {
					return err
				}
			}
			if err := w.UpsertAssistant(ctx, "other", spec.Assistant{ID: id, Name: fmt.Sprint(i), CreatedAt: spec.NewTime(t0)}); err != nil {
				return err
			}
			if err := w.RecordUsage(ctx, "other", provider.UsageRecord{
				ID: fmt.Sprint("r", i), At: t0.Add(time.Duration(i) * 17 * time.Minute), Model: id, InputTokens: int64(i), Cost: 0.1 * float64(i),
			}); err != nil {
				return err
			}
		}
		return nil
	}))
	// Deletions of stored conversations.
	require.NoError(t, write(ctx, func(w provider.Writer) error {
		for i := range 13 {
			if i%2 == 0 {
				if err := w.DeleteConversation(ctx, "acme", fmt.Sprintf("m%02d", i), t0.Add(time.Duration(i)*time.Hour)); err != nil {
					return err
				}
			}
		}
		return nil
	}))
}

// dumpTables returns the rows of every table a Source writes, in key order,
// with the tables that have a revision (the revisions themselves are
// random).
func dumpTables(t *testing.T, db *sqldb.DB) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT tenant, id, updated_at, started_at, deleted, body FROM conversations ORDER BY tenant, id`,
		`SELECT tenant, id, updated_at, created_at, body FROM assistants ORDER BY tenant, id`,
		`SELECT tenant, id, occurred_at, category, body FROM events ORDER BY tenant, id`,
		`SELECT * FROM usage_records ORDER BY tenant, id`,
		`SELECT * FROM usage_rollups ORDER BY tenant, width, bucket, model, department, assistant_id, user_id, conversation_id`,
		`SELECT tenant, resource FROM provider_revisions ORDER BY tenant, resource`,
	} {
		rows, err := db.QueryContext(t.Context(), q)
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			require.NoError(t, rows.Scan(ptrs...))
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%v\t", v)
			}
			b.WriteByte('\n')
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
	}
	return b.String()
}

// queryCounter counts the statements a pgx connection sends.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestBatchRoundTripsPostgres counts the statements a batch sends to
// PostgreSQL, a round trip each: a few per few hundred records, where
// writing row by row took one or more per record (839 s for the demo's
// million conversations).
func TestBatchRoundTripsPostgres(t *testing.T) {
	t.Parallel()
	cfg, err := pgx.ParseConfig(sqldbtest.URL(t, sqldb.Postgres))
	require.NoError(t, err)
	counter := &queryCounter{}
	cfg.Tracer = counter
	pool := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { _ = pool.Close() })
	ctx := t.Context()
	s, err := New(ctx, pool, Postgres, WithNow(func() time.Time { return clock }))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	var records int64
	counting := countingWriter{n: &records}
	before := counter.n.Load()
	require.NoError(t, s.WriteBatch(ctx, func(w provider.Writer) error {
		counting.w = w
		return demodata.Fill(ctx, demodata.Config{Seed: 9, Conversations: 2000, Tenant: "acme"}, "acme", &counting)
	}))
	statements := counter.n.Load() - before
	t.Logf("%d records in %d statements", records, statements)
	// A statement per 500 rows of a table (1,999 conversations, 63
	// deletions, 2,185 events and usage records, about 2,000 rollup
	// cells), and one read of the deletions of stored conversations per
	// 500 of them: one row a statement took 10,980, reading each deletion
	// on its own 88.
	require.Less(t, statements, int64(40), "statements for %d records", records)
}

// countingWriter counts the writes it passes on to w.
type countingWriter struct {
	n *int64
	w provider.Writer
}

func (c *countingWriter) UpsertConversation(ctx context.Context, tenant string, v spec.Conversation) error {
	*c.n++
	return c.w.UpsertConversation(ctx, tenant, v)
}

func (c *countingWriter) DeleteConversation(ctx context.Context, tenant, id string, at time.Time) error {
	*c.n++
	return c.w.DeleteConversation(ctx, tenant, id, at)
}

func (c *countingWriter) UpsertAssistant(ctx context.Context, tenant string, a spec.Assistant) error {
	*c.n++
	return c.w.UpsertAssistant(ctx, tenant, a)
}

func (c *countingWriter) AppendEvent(ctx context.Context, tenant string, e spec.Event) error {
	*c.n++
	return c.w.AppendEvent(ctx, tenant, e)
}

func (c *countingWriter) RecordUsage(ctx context.Context, tenant string, u provider.UsageRecord) error {
	*c.n++
	return c.w.RecordUsage(ctx, tenant, u)
}
