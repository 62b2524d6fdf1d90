package sqlstore_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider/sqlsource"
)

func TestLeaseTakeOver(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		try := func(l consumer.Lease) bool {
			t.Helper()
			ok, err := s.AcquireLease(ctx, l)
			require.NoError(t, err)
			return ok
		}
		holder := func(source string, r consumer.Resource) (consumer.Lease, bool) {
			t.Helper()
			l, ok, err := s.LeaseHolder(ctx, source, r)
			require.NoError(t, err)
			return l, ok
		}

		_, ok := holder("src", consumer.Events)
		require.False(t, ok, "no lease yet")

		a := lease("src", consumer.Events, "A")
		require.True(t, try(a))
		got, ok := holder("src", consumer.Events)
		require.True(t, ok)
		require.Equal(t, consumer.Lease{Source: "src", Resource: consumer.Events, Owner: "A", Expires: a.Expires}, got)
		_, ok = holder("src", consumer.Usage)
		require.False(t, ok, "another resource")
		_, ok = holder("other", consumer.Events)
		require.False(t, ok, "another source")

		// B may not take A's unexpired lease, nor by naming another owner;
		// naming A, it may.
		b := lease("src", consumer.Events, "B")
		b.Now, b.Expires = at(time.Minute), at(2*time.Hour)
		require.False(t, try(b))
		b.TakeOver = "C"
		require.False(t, try(b))
		b.TakeOver = "A"
		require.True(t, try(b))
		got, ok = holder("src", consumer.Events)
		require.True(t, ok)
		require.Equal(t, "B", got.Owner)
		require.Equal(t, at(2*time.Hour), got.Expires)

		// A lost it: its pages fail; naming itself as the one to take
		// over from does not help it.
		require.ErrorIs(t, s.SavePage(ctx, consumer.PageWrite{Lease: a}), consumer.ErrLeaseLost)
		a.TakeOver = "A"
		require.False(t, try(a))

		// B renews while naming an owner to take over from.
		b.TakeOver, b.Expires = "A", at(3*time.Hour)
		require.True(t, try(b))
		got, _ = holder("src", consumer.Events)
		require.Equal(t, at(3*time.Hour), got.Expires)

		// An expired lease is still reported, until released.
		a.TakeOver, a.Now, a.Expires = "", at(4*time.Hour), at(5*time.Hour)
		got, ok = holder("src", consumer.Events)
		require.True(t, ok)
		require.Equal(t, "B", got.Owner)
		require.NoError(t, s.ReleaseLease(ctx, "src", consumer.Events, "B"))
		_, ok = holder("src", consumer.Events)
		require.False(t, ok)

		_, _, err := s.LeaseHolder(ctx, "src", "widgets")
		require.ErrorContains(t, err, "unknown resource")
	})
}

// TestEndRunWithPage commits a walk's last page with its end: the page's
// records are of the run, so its sweep leaves them.
func TestEndRunWithPage(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		l := acquire(t, s, lease("src", consumer.Assistants, "p1"))
		save(t, s, l, 1, assistantRec("a1", at(1*time.Hour)), assistantRec("a2", at(2*time.Hour)),
			assistantRec("a3", at(3*time.Hour)), assistantRec("bad", at(4*time.Hour)))
		require.NoError(t, s.SavePage(ctx, consumer.PageWrite{Lease: l, Quarantine: []consumer.Quarantine{
			{ID: "a3", Reason: "earlier", At: t0, JSON: json.RawMessage(`{}`)},
		}}))

		// Run 2: a1 on a first page, then a last page with a3 (valid
		// again), a new a4 and "bad" quarantined, ending with a sweep.
		save(t, s, l, 2, assistantRec("a1", at(1*time.Hour)))
		a3 := assistantRec("a3", at(5*time.Hour))
		end := consumer.RunEnd{
			Lease: l,
			Page: consumer.PageWrite{
				Records:    []consumer.Record{a3, assistantRec("a4", at(6*time.Hour))},
				Quarantine: []consumer.Quarantine{{ID: "bad", Reason: "name: missing", At: at(7 * time.Hour), JSON: json.RawMessage(`{"id":"bad"}`)}},
				// Not used:
				Lease:      lease("nope", consumer.Events, "nobody"),
				Checkpoint: consumer.Checkpoint{Run: 99, Cursor: "ignored"},
			},
			At: at(8 * time.Hour), Sweep: true,
			Checkpoint: consumer.Checkpoint{Run: 2, LastSuccess: at(8 * time.Hour), LastFull: at(8 * time.Hour)},
		}
		require.NoError(t, s.EndRun(ctx, end))

		require.Equal(t, []string{"a1", "bad", "a3", "a4"}, exportedIDs(t, s, "src", consumer.Assistants, false),
			"a2 swept; bad keeps its last valid version; a3 at its new Time")
		require.Equal(t, []string{string(a3.JSON)}, exported(t, s, "src", consumer.Assistants, false)[2:3])
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM consumer_records WHERE missing_at IS NOT NULL`))
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM consumer_records WHERE id = 'a2' AND missing_at = $1`, at(8*time.Hour).UnixMilli()))
		require.Equal(t, 0, count(t, s, `SELECT count(*) FROM consumer_records WHERE run <> 2 AND id <> 'a2'`))
		var qs []consumer.Quarantine
		require.NoError(t, s.Quarantined(ctx, "src", func(q consumer.Quarantine) error { qs = append(qs, q); return nil }))
		require.Len(t, qs, 1)
		require.Equal(t, "bad", qs[0].ID, "a3 left quarantine")
		cp, err := s.Checkpoint(ctx, "src", consumer.Assistants)
		require.NoError(t, err)
		require.Equal(t, end.Checkpoint, cp)
		require.Equal(t, 0, count(t, s, `SELECT count(*) FROM consumer_leases WHERE source = 'nope'`))

		// A lost lease: nothing at all is written, neither the page nor
		// the sweep nor the checkpoint.
		b := lease("src", consumer.Assistants, "p2")
		b.Now, b.Expires = at(30*time.Minute), at(3*time.Hour)
		b.TakeOver = "p1" // its lease holds until 1h
		require.True(t, try(t, s, b))
		before := exported(t, s, "src", consumer.Assistants, true)
		err = s.EndRun(ctx, consumer.RunEnd{
			Lease: l,
			Page: consumer.PageWrite{
				Records:    []consumer.Record{assistantRec("a1", at(9*time.Hour)), assistantRec("a9", at(9*time.Hour))},
				Quarantine: []consumer.Quarantine{{ID: "a4", Reason: "r", At: t0, JSON: json.RawMessage(`{}`)}},
			},
			At: at(10 * time.Hour), Sweep: true, Checkpoint: consumer.Checkpoint{Run: 3},
		})
		require.ErrorIs(t, err, consumer.ErrLeaseLost)
		require.Equal(t, before, exported(t, s, "src", consumer.Assistants, true))
		require.Equal(t, 0, count(t, s, `SELECT count(*) FROM consumer_records WHERE run = 3 OR id = 'a9'`))
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM consumer_records WHERE missing_at IS NOT NULL`))
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM consumer_quarantine`))
		cp, err = s.Checkpoint(ctx, "src", consumer.Assistants)
		require.NoError(t, err)
		require.Equal(t, end.Checkpoint, cp)
		holder, _, err := s.LeaseHolder(ctx, "src", consumer.Assistants)
		require.NoError(t, err)
		require.Equal(t, consumer.Lease{Source: "src", Resource: consumer.Assistants, Owner: "p2", Expires: at(3 * time.Hour)}, holder)

		// A page that cannot be written (a record without ID) fails the
		// whole run end.
		err = s.EndRun(ctx, consumer.RunEnd{Lease: b, Page: consumer.PageWrite{Records: []consumer.Record{{JSON: json.RawMessage(`{}`)}}},
			At: at(10 * time.Hour), Sweep: true, Checkpoint: consumer.Checkpoint{Run: 3}})
		require.ErrorContains(t, err, "end run: a record has no ID")
		cp, err = s.Checkpoint(ctx, "src", consumer.Assistants)
		require.NoError(t, err)
		require.Equal(t, end.Checkpoint, cp)
	})
}

func try(t *testing.T, s *sqlstore.Store, l consumer.Lease) bool {
	t.Helper()
	ok, err := s.AcquireLease(t.Context(), l)
	require.NoError(t, err)
	return ok
}

// TestQuarantineKeepsRecord: a record that arrives invalid in a full
// re-pull still exists at the provider: its last valid version is kept and
// not swept.
func TestQuarantineKeepsRecord(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		l := acquire(t, s, lease("src", consumer.Conversations, "p1"))
		c1 := conv("c1", at(0), at(time.Minute), "valid")
		c2 := conv("c2", at(0), at(2*time.Minute), "")
		save(t, s, l, 1, c1, c2, conv("c3", at(0), at(3*time.Minute), ""))
		// c3 was marked Missing by an earlier sweep.
		save(t, s, l, 2, c1, c2)
		require.NoError(t, s.EndRun(ctx, consumer.RunEnd{Lease: l, At: at(time.Hour), Sweep: true, Checkpoint: consumer.Checkpoint{Run: 2}}))

		// Run 3, a full re-pull: c1 invalid on a page, c3 invalid in the
		// last one, c2 valid.
		bad := func(id string) consumer.Quarantine {
			return consumer.Quarantine{ID: id, Reason: "updatedAt: bad", At: at(2 * time.Hour), JSON: json.RawMessage(`{"id":"` + id + `"}`)}
		}
		require.NoError(t, s.SavePage(ctx, consumer.PageWrite{Lease: l, Records: []consumer.Record{c2},
			Quarantine: []consumer.Quarantine{bad("c1"), bad("unknown")}, Checkpoint: consumer.Checkpoint{Run: 3, InProgress: true}}))
		require.NoError(t, s.EndRun(ctx, consumer.RunEnd{Lease: l, Page: consumer.PageWrite{Quarantine: []consumer.Quarantine{bad("c3")}},
			At: at(3 * time.Hour), Sweep: true, Checkpoint: consumer.Checkpoint{Run: 3}}))

		require.Equal(t, []string{string(c1.JSON), string(c2.JSON)}, exported(t, s, "src", consumer.Conversations, false),
			"c1 keeps its last valid version and is not swept")
		require.Equal(t, 3, count(t, s, `SELECT count(*) FROM consumer_records WHERE run = 3`))
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM consumer_records WHERE id = 'c3' AND missing_at = $1`, at(time.Hour).UnixMilli()),
			"c3 stays Missing, from its first Missing time")
		require.Equal(t, 0, count(t, s, `SELECT count(*) FROM consumer_records WHERE id = 'unknown'`))
		require.Equal(t, 3, count(t, s, `SELECT count(*) FROM consumer_quarantine`))
	})
}

func TestSources(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		got, err := s.Sources(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{}, got)
		for _, k := range []struct {
			source string
			r      consumer.Resource
		}{{"s2", consumer.Conversations}, {"é", consumer.Usage}, {"s1", consumer.Events}, {"S", consumer.Assistants}, {"s1", consumer.Conversations}} {
			require.NoError(t, s.RecordFailure(ctx, k.source, k.r, t0, "x"))
		}
		// Records and leases without a checkpoint do not count.
		acquire(t, s, lease("leased", consumer.Events, "p1"))
		got, err = s.Sources(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"S", "s1", "s2", "é"}, got)
	})
}

func TestOpenExisting(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	t.Run("sqlite files", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		path := filepath.Join(dir, "consumer.db")
		_, err := sqlstore.OpenExisting(ctx, "sqlite:"+path)
		require.ErrorIs(t, err, sqlstore.ErrNoStore)
		_, err = sqlstore.OpenExisting(ctx, "sqlite:"+path+"?_pragma=synchronous(FULL)")
		require.ErrorIs(t, err, sqlstore.ErrNoStore)
		_, err = os.Stat(path)
		require.ErrorIs(t, err, os.ErrNotExist, "no file created")
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries)

		_, err = sqlstore.OpenExisting(ctx, "sqlite::memory:")
		require.ErrorIs(t, err, sqlstore.ErrNoStore)
		// A malformed URL is an error of its own, also before any file is
		// looked up.
		for _, u := range []string{"mysql://x", "sqlite:" + path + "?%zz", "sqlite:", "sqlite://x.db"} {
			_, err = sqlstore.OpenExisting(ctx, u)
			require.Error(t, err, u)
			require.NotErrorIs(t, err, sqlstore.ErrNoStore, u)
		}
		entries, err = os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries)

		// An empty file is no store, and stays empty.
		empty := filepath.Join(dir, "empty.db")
		require.NoError(t, os.WriteFile(empty, nil, 0o600))
		_, err = sqlstore.OpenExisting(ctx, "sqlite:"+empty)
		require.ErrorIs(t, err, sqlstore.ErrNoStore)
		fi, err := os.Stat(empty)
		require.NoError(t, err)
		require.Zero(t, fi.Size())

		// Once created, it opens and owns its database.
		s, err := sqlstore.Open(ctx, "sqlite:"+path)
		require.NoError(t, err)
		require.NoError(t, s.RecordFailure(ctx, "src", consumer.Events, t0, "x"))
		require.NoError(t, s.Close())
		s, err = sqlstore.OpenExisting(ctx, "sqlite:"+path)
		require.NoError(t, err)
		got, err := s.Sources(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"src"}, got)
		require.NoError(t, s.Close())
		require.Error(t, sqlstore.DBOf(s).PingContext(ctx), "Close closes the database it opened")
	})
	sqldbtest.Each(t, func(t *testing.T, other *sqldb.DB) {
		url := other.URL() // no password to mask
		// No tables at all.
		_, err := sqlstore.OpenExisting(ctx, url)
		require.ErrorIs(t, err, sqlstore.ErrNoStore)
		require.Equal(t, 0, tables(t, other), "nothing created")

		// Another component's migrations only.
		src, err := sqlsource.New(ctx, other.DB, sqlsource.Dialect(other.Dialect))
		require.NoError(t, err)
		require.NoError(t, src.Close())
		n := tables(t, other)
		_, err = sqlstore.OpenExisting(ctx, url)
		require.ErrorIs(t, err, sqlstore.ErrNoStore)
		require.Equal(t, n, tables(t, other), "nothing created")

		// Migrations recorded but one missing: not all applied.
		s, err := sqlstore.New(ctx, other.DB, sqlstore.Dialect(other.Dialect))
		require.NoError(t, err)
		require.NoError(t, s.Close())
		_, err = other.ExecContext(ctx, `DELETE FROM schema_migrations WHERE component = $1`, sqlstore.Component)
		require.NoError(t, err)
		_, err = sqlstore.OpenExisting(ctx, url)
		require.ErrorIs(t, err, sqlstore.ErrNoStore)
		for v, name := range []string{"0001_init.sql", "0002_merged_view.sql", "0003_estimated_cost.sql", "0004_daily_cost.sql"} {
			_, err = other.ExecContext(ctx, `INSERT INTO schema_migrations (component, version, name) VALUES ($1, $2, $3)`, sqlstore.Component, v+1, name)
			require.NoError(t, err)
			if v == 0 {
				_, err = sqlstore.OpenExisting(ctx, url)
				require.ErrorIs(t, err, sqlstore.ErrNoStore, "one migration missing")
			}
		}

		s, err = sqlstore.OpenExisting(ctx, url)
		require.NoError(t, err)
		st, err := s.Status(ctx)
		require.NoError(t, err)
		require.Empty(t, st)
		require.NoError(t, s.Close())
	})
}

// tables counts the tables of the database's current schema.
func tables(t *testing.T, db *sqldb.DB) int {
	t.Helper()
	q := `SELECT count(*) FROM sqlite_master WHERE type = 'table'`
	if db.Dialect == sqldb.Postgres {
		q = `SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema()`
	}
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(), q).Scan(&n))
	return n
}
