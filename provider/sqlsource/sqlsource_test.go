package sqlsource

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"modernc.org/sqlite"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// clock is the fixed time of the tests' sources.
var clock = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newSource(t testing.TB, db *sqldb.DB) *Source {
	t.Helper()
	s, err := New(context.Background(), db.DB, db.Dialect, WithNow(func() time.Time { return clock }))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := New(t.Context(), nil, SQLite)
	require.ErrorContains(t, err, "db is nil")

	db := sqldbtest.Open(t, sqldb.SQLite)
	_, err = New(t.Context(), db.DB, "mysql")
	require.ErrorContains(t, err, `unsupported dialect "mysql"`)
	_, err = New(t.Context(), db.DB, Postgres)
	require.ErrorContains(t, err, "modernc.org/sqlite pool")
	_, err = New(t.Context(), db.DB, SQLite, WithNow(nil))
	require.ErrorContains(t, err, "WithNow(nil)")
}

func TestMigrationsIdempotent(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s1 := newSource(t, db)
		require.NoError(t, s1.UpsertConversation(ctx, "t1", spec.Conversation{ID: "c1", StartedAt: spec.NewTime(clock)}))
		s2 := newSource(t, db) // migrations already applied
		_, err := s2.GetConversation(ctx, "t1", "c1")
		require.NoError(t, err)
		ok, err := db.MigrationsApplied(ctx, Component, Migrations())
		require.NoError(t, err)
		require.True(t, ok)
	})
}

func TestCursorKey(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		// Several sources racing for the first key agree on one.
		const n = 6
		keys := make([][]byte, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			s := newSource(t, db)
			wg.Go(func() { keys[i], errs[i] = s.CursorKey(ctx) })
		}
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i])
			require.Len(t, keys[i], 32)
			require.Equal(t, keys[0], keys[i])
		}
		// A later source, and a second call, read the same key.
		s := newSource(t, db)
		k1, err := s.CursorKey(ctx)
		require.NoError(t, err)
		require.Equal(t, keys[0], k1)
		k1[0] ^= 0xff // the caller's copy
		k2, err := s.CursorKey(ctx)
		require.NoError(t, err)
		require.Equal(t, keys[0], k2)
		require.NotEqual(t, make([]byte, 32), k2)
	})
}

func TestErrorsHideDriverTypes(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newSource(t, db)
		_, err := db.ExecContext(ctx, `DROP TABLE conversations`)
		require.NoError(t, err)

		_, err = s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", Limit: 10})
		require.Error(t, err)
		var se *sqlite.Error
		var pe *pgconn.PgError
		require.False(t, errors.As(err, &se), "driver error escaped: %v", err)
		require.False(t, errors.As(err, &pe), "driver error escaped: %v", err)

		err = s.UpsertConversation(ctx, "t", spec.Conversation{ID: "c", StartedAt: spec.NewTime(clock)})
		require.Error(t, err)
		require.False(t, errors.As(err, &se), "driver error escaped: %v", err)
		require.False(t, errors.As(err, &pe), "driver error escaped: %v", err)
	})
}

func TestContextHonoured(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		s := newSource(t, db)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := s.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "t", Limit: 10})
		require.ErrorIs(t, err, context.Canceled)
		_, err = s.Usage(ctx, provider.UsageQuery{Tenant: "t", Start: clock.Add(-24 * time.Hour), End: clock, Granularity: "day", Limit: 10})
		require.ErrorIs(t, err, context.Canceled)
		err = s.AppendEvent(ctx, "t", spec.Event{ID: "e", OccurredAt: spec.NewTime(clock)})
		require.ErrorIs(t, err, context.Canceled)
		_, err = s.GetAssistant(ctx, "t", "a")
		require.ErrorIs(t, err, context.Canceled)
		err = s.WriteBatch(ctx, func(w provider.Writer) error { return nil })
		require.ErrorIs(t, err, context.Canceled)
	})
}

func TestInvalidArguments(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.SQLite)
	s := newSource(t, db)
	ctx := t.Context()
	field := func(err error) string {
		var pe *provider.Error
		require.ErrorAs(t, err, &pe)
		require.ErrorIs(t, err, provider.ErrInvalid)
		return pe.Field
	}
	_, err := s.ListConversations(ctx, provider.ConversationQuery{Tenant: "t"})
	require.Equal(t, "limit", field(err))
	_, err = s.ListEvents(ctx, provider.EventQuery{Tenant: "t", Limit: 1001})
	require.Equal(t, "limit", field(err))
	day := clock.Truncate(24 * time.Hour)
	_, err = s.Usage(ctx, provider.UsageQuery{Tenant: "t", Start: day, End: day.Add(24 * time.Hour), Granularity: "week", Limit: 10})
	require.Equal(t, "granularity", field(err))
	_, err = s.Usage(ctx, provider.UsageQuery{Tenant: "t", Start: day, End: day.Add(24 * time.Hour), Granularity: "day", GroupBy: []string{"colour"}, Limit: 10})
	require.Equal(t, "groupBy", field(err))
	_, err = s.Usage(ctx, provider.UsageQuery{Tenant: "t", Start: day, End: day.Add(24 * time.Hour), Granularity: "day", GroupBy: []string{"model", "model"}, Limit: 10})
	require.Equal(t, "groupBy", field(err))

	require.Equal(t, "id", field(s.UpsertConversation(ctx, "t", spec.Conversation{StartedAt: spec.NewTime(clock)})))
	require.Equal(t, "startedAt", field(s.UpsertConversation(ctx, "t", spec.Conversation{ID: "c"})))
	require.Equal(t, "createdAt", field(s.UpsertAssistant(ctx, "t", spec.Assistant{ID: "a"})))
	require.Equal(t, "occurredAt", field(s.AppendEvent(ctx, "t", spec.Event{ID: "e"})))
	require.Equal(t, "id", field(s.RecordUsage(ctx, "t", provider.UsageRecord{At: clock})))
	require.Equal(t, "at", field(s.RecordUsage(ctx, "t", provider.UsageRecord{ID: "r"})))
	require.Equal(t, "cost", field(s.RecordUsage(ctx, "t", provider.UsageRecord{ID: "r", At: clock, Cost: math.NaN()})))
	require.Equal(t, "cost", field(s.RecordUsage(ctx, "t", provider.UsageRecord{ID: "r", At: clock, Cost: math.Inf(1)})))
	require.Equal(t, "event", field(s.AppendEvent(ctx, "t", spec.Event{ID: "e", OccurredAt: spec.NewTime(clock), Payload: []byte("{not json")})))
}

func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open(ctx, sqldbtest.URL(t, sqldb.SQLite))
	require.NoError(t, err)
	require.NoError(t, s.UpsertConversation(ctx, "t", spec.Conversation{ID: "c", StartedAt: spec.NewTime(clock)}))
	require.NoError(t, s.Close())
	require.Error(t, s.db.PingContext(ctx), "Close closes the database Open opened")

	_, err = Open(ctx, "mysql://nope")
	require.ErrorContains(t, err, "unsupported database URL")
}
