package sqlsource

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// TestKeyFilter checks the batch's filter of written keys: a key added is
// never "not written" again, a key never added rarely reads "maybe
// written", keys of other tables and other splits into columns are other
// keys, and past its memory bound every key is "maybe written".
func TestKeyFilter(t *testing.T) {
	t.Parallel()
	var f keyFilter
	const n = 200_000
	falsePositives := 0
	for i := range n {
		if !f.add(0, []any{"t", fmt.Sprint("k", i)}) {
			falsePositives++
		}
	}
	require.Less(t, falsePositives, n/200, "keys never written that read as written")
	for i := range n {
		require.False(t, f.add(0, []any{"t", fmt.Sprint("k", i)}), "key %d written", i)
	}
	require.LessOrEqual(t, f.bytes, 8*n, "memory")

	var g keyFilter
	require.True(t, g.add(0, []any{"ab", "c"}))
	require.True(t, g.add(0, []any{"a", "bc"}), "the columns are kept apart")
	require.True(t, g.add(1, []any{"ab", "c"}), "another table")
	require.True(t, g.add(4, []any{"t", int64(1), int64(2), "m"}))
	require.True(t, g.add(4, []any{"t", int64(2), int64(1), "m"}))
	require.False(t, g.add(4, []any{"t", int64(1), int64(2), "m"}))

	small := keyFilter{maxBytes: 64 << 10}
	fresh := 0
	for i := range 100_000 {
		if small.add(0, []any{"t", fmt.Sprint(i)}) {
			fresh++
		}
	}
	require.True(t, small.full)
	require.LessOrEqual(t, small.bytes, 64<<10)
	require.Less(t, fresh, 100_000, "past the bound no key is fresh")
	require.False(t, small.add(0, []any{"t", "never written"}))
}

// loadForCopy writes, in tenant "new" (empty) and "old" (with a stored
// conversation), conversations, upserts and a deletion of conversations
// written earlier, events, and usage whose cells recur.
func loadForCopy(ctx context.Context, w provider.Writer) error {
	for i := range 10 {
		for _, tenant := range []string{"new", "old"} {
			if err := w.UpsertConversation(ctx, tenant, convWith(fmt.Sprint("c", i), "v1")); err != nil {
				return err
			}
		}
	}
	if err := w.UpsertConversation(ctx, "new", convWith("c1", "v2")); err != nil {
		return err
	}
	if err := w.DeleteConversation(ctx, "new", "c2", t0.Add(time.Hour)); err != nil {
		return err
	}
	if err := w.UpsertAssistant(ctx, "new", spec.Assistant{ID: "a1", Name: "A", CreatedAt: spec.NewTime(t0)}); err != nil {
		return err
	}
	for i := range 6 {
		if err := w.AppendEvent(ctx, "new", spec.Event{ID: fmt.Sprint("e", i), OccurredAt: spec.NewTime(t0)}); err != nil {
			return err
		}
	}
	for i := range 10 {
		u := provider.UsageRecord{ID: fmt.Sprint("u", i), At: t0.Add(time.Duration(i) * 7 * time.Minute),
			ConversationID: fmt.Sprint("c", i%2), Model: "m", InputTokens: int64(i), Cost: 0.5}
		if err := w.RecordUsage(ctx, "new", u); err != nil {
			return err
		}
	}
	return nil
}

// TestBatchCopiesPostgres checks the fast load: a batch COPYs the rows of a
// tenant new to a table and not written before in the batch, INSERTs the
// others (a tenant with rows, a row written again), and leaves what the
// same writes one by one leave.
func TestBatchCopiesPostgres(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var dumps []string
	var cp *copier
	for _, batched := range []bool{false, true} {
		db := sqldbtest.Open(t, sqldb.Postgres)
		s := newSource(t, db)
		s.batchRows, s.batchCells = 3, 4
		require.NoError(t, s.UpsertConversation(ctx, "old", convWith("stored", "v0")))
		if batched {
			require.NoError(t, s.WriteBatch(ctx, func(w provider.Writer) error {
				cp = w.(*batch).cp
				return loadForCopy(ctx, w)
			}))
		} else {
			require.NoError(t, loadForCopy(ctx, s))
		}
		dumps = append(dumps, dumpTables(t, db))
	}
	require.Equal(t, dumps[0], dumps[1])
	require.NotNil(t, cp, "a pgx connection")
	// The ten new conversations, not their later upsert and tombstone, nor
	// those of tenant "old".
	require.Equal(t, 10, cp.copied[0], "conversations")
	require.Equal(t, 1, cp.copied[1], "assistants")
	require.Equal(t, 6, cp.copied[2], "events")
	require.Equal(t, 10, cp.copied[3], "usage records")
	// Cells flushed at four: some recur, and are added, not COPYed.
	require.Positive(t, cp.copied[4], "rollup cells")
	require.Contains(t, dumps[1], "new\tc1\t")

	// Without COPY (the Source's option for tests), the same again.
	db := sqldbtest.Open(t, sqldb.Postgres)
	s := newSource(t, db)
	s.noCopy = true
	require.NoError(t, s.UpsertConversation(ctx, "old", convWith("stored", "v0")))
	require.NoError(t, s.WriteBatch(ctx, func(w provider.Writer) error {
		require.Nil(t, w.(*batch).cp)
		return loadForCopy(ctx, w)
	}))
	require.Equal(t, dumps[0], dumpTables(t, db))
}

// TestBatchCopyConflictPostgres checks that an event written twice in a
// batch that COPYs is a conflict naming it, and that the batch leaves
// nothing.
func TestBatchCopyConflictPostgres(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := sqldbtest.Open(t, sqldb.Postgres)
	s := newSource(t, db)
	s.batchRows = 3
	err := s.WriteBatch(ctx, func(w provider.Writer) error {
		for _, id := range []string{"e1", "e2", "e3", "e4", "e1"} {
			if err := w.AppendEvent(ctx, "new", spec.Event{ID: id, OccurredAt: spec.NewTime(t0)}); err != nil {
				return err
			}
		}
		return nil
	})
	require.ErrorIs(t, err, provider.ErrConflict)
	require.ErrorContains(t, err, `"e1"`)
	var n int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n))
	require.Zero(t, n)
}

// TestBatchConcurrentWriterPostgres checks a batch that COPYs a new tenant
// beside single writes of that tenant, as another process makes them: a
// single write of another record neither waits nor fails; one of a record
// the batch then COPYs makes the batch fail whole with a conflict that says
// why, and the batch written again INSERTs, and its record wins.
func TestBatchConcurrentWriterPostgres(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newSource(t, sqldbtest.Open(t, sqldb.Postgres))
	err := s.WriteBatch(ctx, func(w provider.Writer) error {
		b := w.(*batch)
		require.NoError(t, w.UpsertConversation(ctx, "new", convWith("c1", "batch")))
		b.flush(b.convs)
		require.NoError(t, b.wait(), "c1 COPYed, the tenant looked up")
		require.Equal(t, 1, b.cp.copied[0])
		short, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, s.UpsertConversation(short, "new", convWith("c2", "single")), "another record of the tenant")
		require.NoError(t, s.UpsertConversation(short, "new", convWith("c3", "single")), "a record the batch writes next")
		return w.UpsertConversation(ctx, "new", convWith("c3", "batch"))
	})
	require.ErrorIs(t, err, provider.ErrConflict)
	require.ErrorContains(t, err, "another writer stored a record of a tenant while this batch was loading it into conversations")
	_, err = s.GetConversation(ctx, "new", "c1")
	require.ErrorIs(t, err, provider.ErrNotFound, "the batch wrote nothing")
	for _, id := range []string{"c2", "c3"} {
		c, err := s.GetConversation(ctx, "new", id)
		require.NoError(t, err)
		require.Equal(t, "single", c.SystemPrompt, "the single writes stand")
	}

	var cp *copier
	require.NoError(t, s.WriteBatch(ctx, func(w provider.Writer) error {
		cp = w.(*batch).cp
		for _, id := range []string{"c1", "c3"} {
			if err := w.UpsertConversation(ctx, "new", convWith(id, "batch")); err != nil {
				return err
			}
		}
		return nil
	}))
	require.Zero(t, cp.copied[0], "the tenant has rows: INSERTed")
	for id, want := range map[string]string{"c1": "batch", "c2": "single", "c3": "batch"} {
		c, err := s.GetConversation(ctx, "new", id)
		require.NoError(t, err)
		require.Equal(t, want, c.SystemPrompt, id)
	}
}
