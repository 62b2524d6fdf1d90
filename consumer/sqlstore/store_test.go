package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/sqlsource"
)

func TestNewIsIdempotent(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		// The provider's tables may share the database.
		src, err := sqlsource.New(t.Context(), db.DB, db.Dialect)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, src.Close()) })
		newStore(t, db)
		newStore(t, db) // migrations already applied
		ok, err := db.MigrationsApplied(t.Context(), sqlstore.Component, sqlstore.Migrations())
		require.NoError(t, err)
		require.True(t, ok)
	})
}

func TestOpenOwnsDB(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := sqlstore.Open(ctx, "sqlite::memory:")
	require.NoError(t, err)
	require.Equal(t, sqldb.SQLite, sqlstore.DBOf(s).Dialect)
	require.NoError(t, s.Close())
	require.Error(t, sqlstore.DBOf(s).PingContext(ctx), "Close closes the database it opened")

	_, err = sqlstore.Open(ctx, "mysql://x")
	require.Error(t, err)
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, err := sqlstore.New(ctx, nil, sqlstore.SQLite)
	require.ErrorContains(t, err, "db is nil")

	db := sqldbtest.Open(t, sqldb.SQLite)
	_, err = sqlstore.New(ctx, db.DB, "mysql")
	require.ErrorContains(t, err, `unsupported dialect "mysql"`)
	_, err = sqlstore.New(ctx, db.DB, sqlstore.Postgres)
	require.ErrorContains(t, err, "modernc.org/sqlite pool")
	bare, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "bare.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, bare.Close()) })
	_, err = sqlstore.New(ctx, bare, sqlstore.SQLite)
	require.ErrorContains(t, err, "busy_timeout", "a pool opened without the kit's settings")

	s, err := sqlstore.New(ctx, db.DB, sqlstore.SQLite)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, db.PingContext(ctx), "Close leaves a database given to New open")
}

func TestUpsertKeepsNewer(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db)
		l := acquire(t, s, lease("src", consumer.Conversations, "p1"))
		v2 := conv("c1", at(0), at(2*time.Minute), "v2")
		save(t, s, l, 1, v2)
		require.Equal(t, []string{string(v2.JSON)}, exported(t, s, "src", consumer.Conversations, false))

		// An older version arriving late is ignored, but the run is set.
		save(t, s, l, 2, conv("c1", at(0), at(time.Minute), "v1"))
		require.Equal(t, []string{string(v2.JSON)}, exported(t, s, "src", consumer.Conversations, false))
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM consumer_records WHERE id = 'c1' AND run = 2`))

		// The same Time replaces.
		v2b := conv("c1", at(0), at(2*time.Minute), "v2b")
		save(t, s, l, 3, v2b)
		require.Equal(t, []string{string(v2b.JSON)}, exported(t, s, "src", consumer.Conversations, false))

		// A newer one replaces, and moves the record in the view.
		v3 := conv("c1", at(0), at(3*time.Minute), "v3")
		save(t, s, l, 3, v3)
		p, err := s.ListConversationsRaw(t.Context(), convQuery("src", 10))
		require.NoError(t, err)
		require.Len(t, p.Items, 1)
		require.Equal(t, at(3*time.Minute), p.Items[0].Key.Time)
		require.JSONEq(t, string(v3.JSON), string(p.Items[0].JSON))

		// One ID twice in a page: the later Time wins, then the later one.
		save(t, s, l, 4, conv("c2", at(0), at(5*time.Minute), "new"), conv("c2", at(0), at(4*time.Minute), "old"))
		save(t, s, l, 4, conv("c3", at(0), at(5*time.Minute), "first"), conv("c3", at(0), at(5*time.Minute), "second"))
		got := exported(t, s, "src", consumer.Conversations, false)
		require.Equal(t, []string{
			string(v3.JSON),
			string(conv("c2", at(0), at(5*time.Minute), "new").JSON),
			string(conv("c3", at(0), at(5*time.Minute), "second").JSON),
		}, got)
	})
}

// TestSavePageChunks writes pages larger than a statement's chunk, with
// WithAsyncCommit.
func TestSavePageChunks(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		s, err := sqlstore.New(t.Context(), db.DB, db.Dialect, sqlstore.WithAsyncCommit())
		require.NoError(t, err)
		l := acquire(t, s, lease("src", consumer.Events, "p1"))
		var recs []consumer.Record
		var want []string
		for i := range 95 {
			id := fmt.Sprintf("e%03d", i)
			recs = append(recs, eventRec(id, at(time.Duration(i)*time.Second), "Access"))
			want = append(want, id)
		}
		save(t, s, l, 1, recs...)
		require.Equal(t, want, exportedIDs(t, s, "src", consumer.Events, false))
		// Quarantine, then the same ids valid in chunks: all leave it.
		require.NoError(t, s.SavePage(t.Context(), consumer.PageWrite{Lease: l, Quarantine: []consumer.Quarantine{
			{ID: "e000", Reason: "bad", At: t0}, {ID: "e094", Reason: "bad", At: t0}, {ID: "zz", Reason: "bad", At: t0},
		}}))
		save(t, s, l, 2, recs...)
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM consumer_quarantine`))
	})
}

func TestSweep(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		l := acquire(t, s, lease("src", consumer.Assistants, "p1"))
		save(t, s, l, 1, assistantRec("a1", at(1*time.Hour)), assistantRec("a2", at(2*time.Hour)),
			assistantRec("a3", at(3*time.Hour)), assistantRec("a4", at(4*time.Hour)))

		// Run 2 sees a1 and a3 only. Without Sweep, nothing is marked.
		save(t, s, l, 2, assistantRec("a1", at(1*time.Hour)), assistantRec("a3", at(3*time.Hour)))
		require.NoError(t, s.EndRun(ctx, consumer.RunEnd{Lease: l, At: at(10 * time.Hour), Checkpoint: consumer.Checkpoint{Run: 2}}))
		require.Equal(t, []string{"a1", "a2", "a3", "a4"}, exportedIDs(t, s, "src", consumer.Assistants, false))

		// Sweep within [2h, 4h): only a2 is marked.
		end := consumer.RunEnd{Lease: l, At: at(10 * time.Hour), Sweep: true, SweepFrom: at(2 * time.Hour), SweepUntil: at(4 * time.Hour),
			Checkpoint: consumer.Checkpoint{Run: 2, LastSuccess: at(10 * time.Hour)}}
		require.NoError(t, s.EndRun(ctx, end))
		require.Equal(t, []string{"a1", "a3", "a4"}, exportedIDs(t, s, "src", consumer.Assistants, false))
		require.Equal(t, []string{"a1", "a2", "a3", "a4"}, exportedIDs(t, s, "src", consumer.Assistants, true))
		cp, err := s.Checkpoint(ctx, "src", consumer.Assistants)
		require.NoError(t, err)
		require.Equal(t, end.Checkpoint, cp)

		// A sweep without window marks a4; a2 keeps its first Missing time.
		require.NoError(t, s.EndRun(ctx, consumer.RunEnd{Lease: l, At: at(11 * time.Hour), Sweep: true, Checkpoint: consumer.Checkpoint{Run: 2}}))
		require.Equal(t, []string{"a1", "a3"}, exportedIDs(t, s, "src", consumer.Assistants, false))
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM consumer_records WHERE id = 'a2' AND missing_at = $1`, at(10*time.Hour).UnixMilli()))
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM consumer_records WHERE id = 'a4' AND missing_at = $1`, at(11*time.Hour).UnixMilli()))

		// Records of this run are never swept; a record seen again is no
		// longer Missing, even in an older version.
		save(t, s, l, 3, assistantRec("a2", at(time.Hour)))
		require.NoError(t, s.EndRun(ctx, consumer.RunEnd{Lease: l, At: at(12 * time.Hour), Sweep: true, Checkpoint: consumer.Checkpoint{Run: 3}}))
		require.Equal(t, []string{"a2"}, exportedIDs(t, s, "src", consumer.Assistants, false))
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM consumer_records WHERE id = 'a2' AND time_ms = $1`, at(2*time.Hour).UnixMilli()),
			"the newer stored version is kept")

		st, err := s.Status(ctx)
		require.NoError(t, err)
		require.Len(t, st, 1)
		require.Equal(t, int64(1), st[0].Records)
		require.Equal(t, int64(3), st[0].Missing)

		// Another source and resource are untouched.
		l2 := acquire(t, s, lease("other", consumer.Assistants, "p1"))
		save(t, s, l2, 1, assistantRec("a1", at(time.Hour)))
		require.NoError(t, s.EndRun(ctx, consumer.RunEnd{Lease: l, At: at(13 * time.Hour), Sweep: true, Checkpoint: consumer.Checkpoint{Run: 9}}))
		require.Equal(t, []string{"a1"}, exportedIDs(t, s, "other", consumer.Assistants, false))
	})
}

func TestQuarantine(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		l := acquire(t, s, lease("src", consumer.Events, "p1"))
		le := acquire(t, s, lease("s0", consumer.Conversations, "p1"))
		bad := consumer.Quarantine{Source: "ignored", ID: "e1", Reason: "occurredAt: missing", At: at(time.Minute), JSON: json.RawMessage(`{"id":"e1"}`)}
		other := consumer.Quarantine{ID: "sha256:ab", Reason: "not JSON", At: at(2 * time.Minute), JSON: json.RawMessage(`"x"`)}
		require.NoError(t, s.SavePage(ctx, consumer.PageWrite{Lease: l, Quarantine: []consumer.Quarantine{other, bad}}))
		early := consumer.Quarantine{ID: "c9", Reason: "r", At: at(0), JSON: json.RawMessage(`{}`)}
		require.NoError(t, s.SavePage(ctx, consumer.PageWrite{Lease: le, Quarantine: []consumer.Quarantine{early}}))

		list := func(source string) []consumer.Quarantine {
			var out []consumer.Quarantine
			require.NoError(t, s.Quarantined(ctx, source, func(q consumer.Quarantine) error {
				out = append(out, q)
				return nil
			}))
			return out
		}
		bad.Source, bad.Resource = "src", consumer.Events
		other.Source, other.Resource = "src", consumer.Events
		early.Source, early.Resource = "s0", consumer.Conversations
		require.Equal(t, []consumer.Quarantine{bad, other}, list("src"))
		require.Equal(t, []consumer.Quarantine{early, bad, other}, list(""), "oldest first")
		require.Empty(t, list("nope"))

		// Quarantined again: replaced, not duplicated.
		bad.Reason = "still bad"
		require.NoError(t, s.SavePage(ctx, consumer.PageWrite{Lease: l, Quarantine: []consumer.Quarantine{bad}}))
		require.Equal(t, []consumer.Quarantine{bad, other}, list("src"))

		// Not served by the view.
		p, err := s.ListEventsRaw(ctx, eventQuery("src", 10))
		require.NoError(t, err)
		require.Empty(t, p.Items)

		// Arriving valid takes it out of quarantine.
		save(t, s, l, 1, eventRec("e1", at(time.Minute), "Access"))
		require.Equal(t, []consumer.Quarantine{other}, list("src"))
		p, err = s.ListEventsRaw(ctx, eventQuery("src", 10))
		require.NoError(t, err)
		require.Len(t, p.Items, 1)

		st, err := s.Status(ctx)
		require.NoError(t, err)
		require.Len(t, st, 2)
		require.Equal(t, "s0", st[0].Source)
		require.Equal(t, int64(1), st[0].Quarantined)
		require.Equal(t, int64(1), st[1].Quarantined)
		require.Equal(t, int64(1), st[1].Records)

		// fn's error stops the walk.
		boom := errors.New("boom")
		calls := 0
		err = s.Quarantined(ctx, "", func(consumer.Quarantine) error { calls++; return boom })
		require.ErrorIs(t, err, boom)
		require.Equal(t, 1, calls)
	})
}

func TestCheckpointRoundTrip(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		cp, err := s.Checkpoint(ctx, "src", consumer.Usage)
		require.NoError(t, err)
		require.Equal(t, consumer.Checkpoint{}, cp)

		l := acquire(t, s, lease("src", consumer.Usage, "p1"))
		paris := time.FixedZone("Paris", 3600)
		full := consumer.Checkpoint{
			Run: 7, Cursor: "opaque/cursor+==", InProgress: true, Full: true,
			Since: time.Date(2026, 2, 27, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 3, 1, 1, 0, 0, 0, paris),
			Watermark: time.Date(2026, 2, 28, 23, 59, 59, 999_000_000, time.UTC), NeedsFull: true,
			NeedsFullReason: "no nextCursor", Pages: 12, Records: 11_999,
			LastSuccess: time.Date(1969, 12, 31, 23, 59, 59, 1_000_000, time.UTC), // before the epoch
			LastError:   "500: boom", LastErrorAt: time.Date(2026, 3, 1, 0, 0, 0, 123_000_000, time.UTC),
			Started:        time.Date(2026, 2, 28, 23, 59, 0, 7_000_000, time.UTC),
			NeedsFullSince: time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, paris),
			LastFull:       time.Date(2026, 2, 27, 12, 0, 0, 999_000_000, time.UTC),
		}
		require.NoError(t, s.SavePage(ctx, consumer.PageWrite{Lease: l, Checkpoint: full}))
		cp, err = s.Checkpoint(ctx, "src", consumer.Usage)
		require.NoError(t, err)
		want := full
		want.Until, want.NeedsFullSince = full.Until.UTC(), full.NeedsFullSince.UTC()
		require.Equal(t, want, cp)
		st, err := s.Status(ctx)
		require.NoError(t, err)
		require.Len(t, st, 1)
		require.Equal(t, want, st[0].Checkpoint, "Status carries every field")

		// EndRun stores the same.
		want.Run, want.InProgress, want.LastFull = 9, false, at(time.Hour)
		require.NoError(t, s.EndRun(ctx, consumer.RunEnd{Lease: l, At: at(time.Hour), Checkpoint: want}))
		cp, err = s.Checkpoint(ctx, "src", consumer.Usage)
		require.NoError(t, err)
		require.Equal(t, want, cp)
		st, err = s.Status(ctx)
		require.NoError(t, err)
		require.Equal(t, want, st[0].Checkpoint)

		// Zero values stay zero.
		require.NoError(t, s.SavePage(ctx, consumer.PageWrite{Lease: l, Checkpoint: consumer.Checkpoint{Run: 8}}))
		cp, err = s.Checkpoint(ctx, "src", consumer.Usage)
		require.NoError(t, err)
		require.Equal(t, consumer.Checkpoint{Run: 8}, cp)

		// RecordFailure keeps the rest, also creating a checkpoint.
		require.NoError(t, s.RecordFailure(ctx, "src", consumer.Usage, at(time.Second), "timeout"))
		cp, err = s.Checkpoint(ctx, "src", consumer.Usage)
		require.NoError(t, err)
		require.Equal(t, consumer.Checkpoint{Run: 8, LastError: "timeout", LastErrorAt: at(time.Second)}, cp)
		require.NoError(t, s.RecordFailure(ctx, "new", consumer.Events, at(time.Second), "401"))
		cp, err = s.Checkpoint(ctx, "new", consumer.Events)
		require.NoError(t, err)
		require.Equal(t, consumer.Checkpoint{LastError: "401", LastErrorAt: at(time.Second)}, cp)

		_, err = s.Checkpoint(ctx, "src", "widgets")
		require.ErrorContains(t, err, "unknown resource")
	})
}

func TestLeases(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		a := lease("src", consumer.Conversations, "A")
		b := lease("src", consumer.Conversations, "B")
		try := func(l consumer.Lease) bool {
			t.Helper()
			ok, err := s.AcquireLease(ctx, l)
			require.NoError(t, err)
			return ok
		}
		require.True(t, try(a))
		require.False(t, try(b), "A holds it until t0+1h")
		require.True(t, try(lease("src", consumer.Events, "B")), "another resource is another lease")
		require.True(t, try(lease("other", consumer.Conversations, "B")), "another source is another lease")

		// A renews; B is still refused just before expiry.
		a.Now, a.Expires = at(30*time.Minute), at(2*time.Hour)
		require.True(t, try(a))
		b.Now, b.Expires = at(2*time.Hour-time.Millisecond), at(3*time.Hour)
		require.False(t, try(b))

		// A page extends the lease too.
		a.Expires = at(4 * time.Hour)
		save(t, s, a, 1, conv("c1", at(0), at(time.Minute), "A"))
		b.Now = at(3 * time.Hour)
		require.False(t, try(b), "the page extended A's lease to 4h")

		// At expiry, B takes over.
		b.Now, b.Expires = at(4*time.Hour), at(5*time.Hour)
		require.True(t, try(b))
		require.False(t, try(a), "B's lease is not expired for A")

		// A lost the lease: its page and run end write nothing.
		cpBefore, err := s.Checkpoint(ctx, "src", consumer.Conversations)
		require.NoError(t, err)
		err = s.SavePage(ctx, consumer.PageWrite{
			Lease:      a,
			Records:    []consumer.Record{conv("c1", at(0), at(time.Hour), "late"), conv("c2", at(0), at(time.Hour), "late")},
			Quarantine: []consumer.Quarantine{{ID: "q", Reason: "r", At: t0, JSON: json.RawMessage(`{}`)}},
			Checkpoint: consumer.Checkpoint{Run: 2, Cursor: "x"},
		})
		require.ErrorIs(t, err, consumer.ErrLeaseLost)
		err = s.EndRun(ctx, consumer.RunEnd{Lease: a, At: at(time.Hour), Sweep: true, Checkpoint: consumer.Checkpoint{Run: 3}})
		require.ErrorIs(t, err, consumer.ErrLeaseLost)
		require.Equal(t, []string{string(conv("c1", at(0), at(time.Minute), "A").JSON)}, exported(t, s, "src", consumer.Conversations, true))
		require.Equal(t, 0, count(t, s, `SELECT count(*) FROM consumer_quarantine`))
		require.Equal(t, 0, count(t, s, `SELECT count(*) FROM consumer_records WHERE missing_at IS NOT NULL`))
		cp, err := s.Checkpoint(ctx, "src", consumer.Conversations)
		require.NoError(t, err)
		require.Equal(t, cpBefore, cp)
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM consumer_leases WHERE source = 'src' AND resource = 'conversations' AND owner = 'B' AND expires_ms = $1`,
			at(5*time.Hour).UnixMilli()), "the lost page did not extend anything")

		// Releasing a lease not held is no error and changes nothing.
		require.NoError(t, s.ReleaseLease(ctx, "src", consumer.Conversations, "A"))
		require.False(t, try(a))
		// B releases: A takes it at once, and B's pages fail.
		require.NoError(t, s.ReleaseLease(ctx, "src", consumer.Conversations, "B"))
		require.ErrorIs(t, s.SavePage(ctx, consumer.PageWrite{Lease: b}), consumer.ErrLeaseLost)
		require.True(t, try(a))

		// Bad leases are errors.
		_, err = s.AcquireLease(ctx, consumer.Lease{Source: "src", Resource: consumer.Events})
		require.ErrorContains(t, err, "Owner")
		require.Error(t, s.SavePage(ctx, consumer.PageWrite{Lease: consumer.Lease{Source: "src", Resource: "x", Owner: "A"}}))
	})
}

func TestLeaseContention(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db)
		for round := range 5 {
			const owners = 8
			var (
				wg  sync.WaitGroup
				mu  sync.Mutex
				won []string
			)
			for i := range owners {
				owner := string(rune('A' + i))
				wg.Go(func() {
					l := lease("src", consumer.Usage, owner)
					l.Now = at(time.Duration(round) * 2 * time.Hour)
					l.Expires = l.Now.Add(time.Hour)
					ok, err := s.AcquireLease(context.Background(), l)
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						mu.Lock()
						won = append(won, owner)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			require.Len(t, won, 1, "round %d: exactly one owner wins: %v", round, won)
		}
	})
}

func TestExportOrder(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		l := acquire(t, s, lease("src", consumer.Conversations, "p1"))
		same := at(time.Minute)
		save(t, s, l, 1,
			conv("é", at(0), same, ""), conv("a", at(0), same, ""), conv("z", at(0), at(0), ""),
			conv("B", at(0), same, ""), conv("0", at(0), at(2*time.Minute), ""), conv("ab", at(0), same, ""),
		)
		want := []string{"z", "B", "a", "ab", "é", "0"}
		require.Equal(t, want, exportedIDs(t, s, "src", consumer.Conversations, false))
		require.Empty(t, exportedIDs(t, s, "nope", consumer.Conversations, true))

		// A Missing conversation is exported at its own Time.
		save(t, s, l, 2, conv("é", at(0), same, ""), conv("a", at(0), same, ""), conv("B", at(0), same, ""),
			conv("0", at(0), at(2*time.Minute), ""), conv("ab", at(0), same, ""))
		require.NoError(t, s.EndRun(ctx, consumer.RunEnd{Lease: l, At: at(time.Hour), Sweep: true, Checkpoint: consumer.Checkpoint{Run: 2}}))
		require.Equal(t, want[1:], exportedIDs(t, s, "src", consumer.Conversations, false))
		require.Equal(t, want, exportedIDs(t, s, "src", consumer.Conversations, true))

		boom := errors.New("boom")
		calls := 0
		err := s.Export(ctx, "src", consumer.Conversations, false, func(json.RawMessage) error { calls++; return boom })
		require.ErrorIs(t, err, boom)
		require.Equal(t, 1, calls)
		require.Error(t, s.Export(ctx, "src", "nope", false, func(json.RawMessage) error { return nil }))

		// Usage: by start, then dimensions byte by byte, then record ID.
		lu := acquire(t, s, lease("src", consumer.Usage, "p1"))
		h := func(n int) time.Time { return at(time.Duration(n) * time.Hour) }
		recs := []consumer.Record{
			bucket{gran: "hour", start: h(1), dims: map[string]string{"model": "b"}, requests: 1}.record(),
			bucket{gran: "hour", start: h(0), dims: map[string]string{"model": "é"}, requests: 2}.record(),
			bucket{gran: "hour", start: h(0), dims: map[string]string{"model": "B"}, requests: 3}.record(),
			bucket{gran: "hour", start: h(0), dims: map[string]string{"model": "B", "userId": "u"}, requests: 4}.record(),
			bucket{gran: "day", start: h(0), dims: map[string]string{"model": "B"}, requests: 5}.record(),
			bucket{gran: "hour", start: h(0), dims: map[string]string{"model": "a"}, requests: 6}.record(),
		}
		save(t, s, lu, 1, recs...)
		var got []int64
		for _, j := range exported(t, s, "src", consumer.Usage, false) {
			var v struct{ Metrics struct{ Requests int64 } }
			require.NoError(t, json.Unmarshal([]byte(j), &v))
			got = append(got, v.Metrics.Requests)
		}
		// (0,B,"") twice: ["day",...] < ["hour",...]; then (0,B,u), (0,a), (0,é), (1,b).
		require.Equal(t, []int64{5, 3, 4, 6, 2, 1}, got)
	})
}

func TestStatus(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		st, err := s.Status(ctx)
		require.NoError(t, err)
		require.Empty(t, st)

		for _, k := range []struct {
			source string
			r      consumer.Resource
		}{{"s2", consumer.Conversations}, {"s1", consumer.Usage}, {"s1", consumer.Events}, {"S", consumer.Assistants}, {"s1", consumer.Conversations}} {
			l := acquire(t, s, lease(k.source, k.r, "p1"))
			require.NoError(t, s.SavePage(ctx, consumer.PageWrite{Lease: l, Checkpoint: consumer.Checkpoint{Run: 1, Pages: 1}}))
		}
		l := lease("s1", consumer.Conversations, "p1")
		save(t, s, l, 2, conv("c1", at(0), at(0), ""), conv("c2", at(0), at(0), ""), conv("c3", at(0), at(0), ""))
		save(t, s, l, 3, conv("c1", at(0), at(0), ""))
		require.NoError(t, s.EndRun(ctx, consumer.RunEnd{Lease: l, At: at(time.Hour), Sweep: true, Checkpoint: consumer.Checkpoint{Run: 3, LastSuccess: at(time.Hour)}}))
		require.NoError(t, s.SavePage(ctx, consumer.PageWrite{Lease: l, Checkpoint: consumer.Checkpoint{Run: 4, InProgress: true},
			Quarantine: []consumer.Quarantine{{ID: "x", Reason: "r", At: t0, JSON: json.RawMessage(`1`)}}}))

		st, err = s.Status(ctx)
		require.NoError(t, err)
		var keys []string
		for _, line := range st {
			keys = append(keys, line.Source+"/"+string(line.Resource))
		}
		require.Equal(t, []string{"S/assistants", "s1/conversations", "s1/events", "s1/usage", "s2/conversations"}, keys)
		require.Equal(t, consumer.Status{
			Source: "s1", Resource: consumer.Conversations, Records: 1, Missing: 2, Quarantined: 1,
			Checkpoint: consumer.Checkpoint{Run: 4, InProgress: true},
		}, st[1])
		require.Equal(t, consumer.Status{Source: "s1", Resource: consumer.Events, Checkpoint: consumer.Checkpoint{Run: 1, Pages: 1}}, st[2])
	})
}

func TestSavePageRejects(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := sqlstore.Open(ctx, "sqlite::memory:")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	lu := acquire(t, s, lease("src", consumer.Usage, "p1"))
	noKey := bucket{gran: "hour", start: t0, requests: 1}.record()
	noKey.Bucket = nil
	require.ErrorContains(t, s.SavePage(ctx, consumer.PageWrite{Lease: lu, Records: []consumer.Record{noKey}}), "no Bucket")
	badMetrics := bucket{gran: "hour", start: t0}.record()
	badMetrics.JSON = json.RawMessage(`{"metrics":{"requests":"many"}}`)
	require.ErrorContains(t, s.SavePage(ctx, consumer.PageWrite{Lease: lu, Records: []consumer.Record{badMetrics}}), "metrics")
	lc := acquire(t, s, lease("src", consumer.Conversations, "p1"))
	require.ErrorContains(t, s.SavePage(ctx, consumer.PageWrite{Lease: lc, Records: []consumer.Record{{JSON: json.RawMessage(`{}`)}}}), "no ID")
	require.Equal(t, 0, count(t, s, `SELECT count(*) FROM consumer_checkpoints`), "nothing written")

	// A bucket without granularity gets the one its width says.
	noGran := bucket{gran: "hour", start: t0, requests: 2}.record()
	noGran.Bucket.Granularity = ""
	save(t, s, lu, 1, noGran)
	p, err := s.Usage(ctx, provider.UsageQuery{Tenant: "src", Start: t0, End: t0.Add(time.Hour), Granularity: "hour", Limit: 10})
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
	require.Equal(t, int64(2), p.Items[0].Metrics.Requests)
}
