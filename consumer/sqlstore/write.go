package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

const (
	acquireLeaseSQL = `INSERT INTO consumer_leases (source, resource, owner, expires_ms) VALUES ($1, $2, $3, $4)
ON CONFLICT (source, resource) DO UPDATE SET owner = excluded.owner, expires_ms = excluded.expires_ms
WHERE consumer_leases.owner = excluded.owner OR consumer_leases.expires_ms <= $5
	OR ($6 <> '' AND consumer_leases.owner = $6)`
	leaseHolderSQL  = `SELECT owner, expires_ms FROM consumer_leases WHERE source = $1 AND resource = $2`
	releaseLeaseSQL = `DELETE FROM consumer_leases WHERE source = $1 AND resource = $2 AND owner = $3`
	// extendLeaseSQL also reports whether the source and resource have
	// quarantined records, saving SavePage a round trip.
	extendLeaseSQL = `UPDATE consumer_leases SET expires_ms = $4 WHERE source = $1 AND resource = $2 AND owner = $3
RETURNING EXISTS (SELECT 1 FROM consumer_quarantine q WHERE q.source = $1 AND q.resource = $2)`

	putCheckpointSQL = `INSERT INTO consumer_checkpoints (source, resource, run, cursor_token, in_progress, full_repull,
	since_ms, until_ms, watermark_ms, needs_full, needs_full_reason, pages, records, last_success_ms, last_error,
	last_error_at_ms, started_ms, needs_full_since_ms, last_full_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
ON CONFLICT (source, resource) DO UPDATE SET run = excluded.run, cursor_token = excluded.cursor_token,
	in_progress = excluded.in_progress, full_repull = excluded.full_repull, since_ms = excluded.since_ms,
	until_ms = excluded.until_ms, watermark_ms = excluded.watermark_ms, needs_full = excluded.needs_full,
	needs_full_reason = excluded.needs_full_reason, pages = excluded.pages, records = excluded.records,
	last_success_ms = excluded.last_success_ms, last_error = excluded.last_error,
	last_error_at_ms = excluded.last_error_at_ms, started_ms = excluded.started_ms,
	needs_full_since_ms = excluded.needs_full_since_ms, last_full_ms = excluded.last_full_ms`
	recordFailureSQL = `INSERT INTO consumer_checkpoints (source, resource, last_error, last_error_at_ms) VALUES ($1, $2, $3, $4)
ON CONFLICT (source, resource) DO UPDATE SET last_error = excluded.last_error, last_error_at_ms = excluded.last_error_at_ms`

	quarantineSQL = `INSERT INTO consumer_quarantine (source, resource, id, reason, at_ms, body) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (source, resource, id) DO UPDATE SET reason = excluded.reason, at_ms = excluded.at_ms, body = excluded.body`

	// sweepSQL marks Missing the records of a run's range not seen in it. A
	// conversation that is not already a tombstone moves to its Missing
	// time, where the collected view serves it as one.
	sweepSQL = `UPDATE consumer_records SET missing_at = $3,
	pos_ms = CASE WHEN resource = 'conversations' AND NOT deleted THEN $3 ELSE pos_ms END
WHERE source = $1 AND resource = $2 AND run < $4 AND missing_at IS NULL`
)

// AcquireLease takes or renews the lease of (l.Source, l.Resource) for
// l.Owner until l.Expires, in one statement. It reports false, with no
// error, when another owner holds a lease that expires after l.Now, unless
// that owner is l.TakeOver (when not ""). It implements [consumer.Store].
func (s *Store) AcquireLease(ctx context.Context, l consumer.Lease) (bool, error) {
	if err := checkLease("acquire lease", l); err != nil {
		return false, err
	}
	st, err := s.prepared(ctx, acquireLeaseSQL)
	if err != nil {
		return false, dbError(ctx, "acquire lease", err)
	}
	res, err := st.ExecContext(ctx, l.Source, string(l.Resource), l.Owner, ms(l.Expires), ms(l.Now), l.TakeOver)
	if err != nil {
		return false, dbError(ctx, "acquire lease", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, dbError(ctx, "acquire lease", err)
	}
	return n == 1, nil
}

// LeaseHolder returns the lease of (source, r) as stored, with Source,
// Resource, Owner and Expires set (Now and TakeOver zero), and false when
// there is none. An expired lease that no one released is still returned.
// It implements [consumer.Store].
func (s *Store) LeaseHolder(ctx context.Context, source string, r consumer.Resource) (consumer.Lease, bool, error) {
	if err := checkResource("lease holder", r); err != nil {
		return consumer.Lease{}, false, err
	}
	var (
		owner   string
		expires int64
	)
	err := s.db.QueryRowContext(ctx, leaseHolderSQL, source, string(r)).Scan(&owner, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return consumer.Lease{}, false, nil
	}
	if err != nil {
		return consumer.Lease{}, false, dbError(ctx, "lease holder", err)
	}
	return consumer.Lease{Source: source, Resource: r, Owner: owner, Expires: fromMS(expires)}, true, nil
}

// ReleaseLease gives up owner's lease of (source, r); releasing a lease not
// held is not an error. It implements [consumer.Store].
func (s *Store) ReleaseLease(ctx context.Context, source string, r consumer.Resource, owner string) error {
	if err := checkResource("release lease", r); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, releaseLeaseSQL, source, string(r), owner); err != nil {
		return dbError(ctx, "release lease", err)
	}
	return nil
}

func checkLease(op string, l consumer.Lease) error {
	if err := checkResource(op, l.Resource); err != nil {
		return err
	}
	switch {
	case l.Source == "":
		return fmt.Errorf("sqlstore: %s: the lease has no Source", op)
	case l.Owner == "":
		return fmt.Errorf("sqlstore: %s: the lease has no Owner", op)
	}
	return nil
}

// extendLease checks, in tx, that l.Owner still holds the lease and extends
// it to l.Expires; otherwise it returns [consumer.ErrLeaseLost]. The update
// locks the lease row until tx ends, so no other owner can take the lease
// over while tx writes. It reports whether the source and resource have
// quarantined records.
func (s *Store) extendLease(ctx context.Context, w *writeTx, op string, l consumer.Lease) (quarantined bool, err error) {
	if s.asyncCommit && s.db.Dialect == sqldb.Postgres {
		if _, err := w.exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
			return false, dbError(ctx, op, err)
		}
	}
	err = w.queryRow(ctx, extendLeaseSQL, l.Source, string(l.Resource), l.Owner, ms(l.Expires)).Scan(&quarantined)
	if errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("sqlstore: %s: %s/%s for %q: %w", op, l.Source, l.Resource, l.Owner, consumer.ErrLeaseLost)
	}
	if err != nil {
		return false, dbError(ctx, op, err)
	}
	return quarantined, nil
}

// writeTx is a write transaction and the statements it runs, prepared once
// per Store before the transaction began: preparing one inside it would
// take a second connection from the pool, which on a SQLite memory
// database waits for the transaction's own lock.
type writeTx struct {
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

// exec runs query, prepared when it was given to [Store.write].
func (w *writeTx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := w.stmts[query]; ok {
		return w.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return w.tx.ExecContext(ctx, query, args...)
}

// queryRow runs query, prepared when it was given to [Store.write].
func (w *writeTx) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := w.stmts[query]; ok {
		return w.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return w.tx.QueryRowContext(ctx, query, args...)
}

// write prepares queries (once per Store), then runs fn in a transaction
// (see [sqldb.DB.InTx]). It returns fn's error as is, or the translated
// error of preparing, beginning or committing.
func (s *Store) write(ctx context.Context, op string, queries []string, fn func(*writeTx) error) error {
	w := &writeTx{stmts: make(map[string]*sql.Stmt, len(queries))}
	for _, q := range queries {
		st, err := s.prepared(ctx, q)
		if err != nil {
			return dbError(ctx, op, err)
		}
		w.stmts[q] = st
	}
	var fnErr error
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		w.tx = tx
		fnErr = fn(w)
		return fnErr
	})
	switch {
	case err == nil:
		return nil
	case fnErr != nil:
		return fnErr // a failed rollback after it is of no interest to the caller
	default:
		return dbError(ctx, op, err)
	}
}

// SavePage writes p in one transaction: it checks and extends p.Lease
// (otherwise it writes nothing and returns [consumer.ErrLeaseLost]), upserts
// p.Records, takes the records stored valid out of quarantine, quarantines
// p.Quarantine and replaces the checkpoint with p.Checkpoint. Records and
// quarantined records belong to p.Lease's source and resource (their own
// Source and Resource fields are not read).
//
// An upsert replaces a stored record only when the new one's Time is not
// older; it always sets the record's run to p.Checkpoint.Run and clears its
// Missing mark. When a page holds one ID twice, the later of the two
// (by Time, then by position) is kept. A stored record whose ID is
// quarantined keeps its version and its Missing mark, and gets the run too,
// so that the sweep of a full re-pull in which it arrived invalid leaves it
// alone. It implements [consumer.Store].
//
// A conversation never moves back in the collected view: one that comes
// back after it was marked Missing (and served as a tombstone at its
// Missing time) keeps that position when its Time is older, and is then
// served with updatedAt set to it.
func (s *Store) SavePage(ctx context.Context, p consumer.PageWrite) error {
	const op = "save page"
	if err := checkLease(op, p.Lease); err != nil {
		return err
	}
	rows, err := recordRows(op, p.Lease.Resource, p.Records)
	if err != nil {
		return err
	}
	l := p.Lease
	queries := append([]string{extendLeaseSQL, putCheckpointSQL}, s.pageQueries(len(rows), len(p.Quarantine))...)
	return s.write(ctx, op, queries, func(w *writeTx) error {
		quarantined, err := s.extendLease(ctx, w, op, l)
		if err != nil {
			return err
		}
		if err := s.writePage(ctx, w, op, l, p.Checkpoint.Run, rows, p.Quarantine, quarantined); err != nil {
			return err
		}
		return s.putCheckpoint(ctx, w, op, l.Source, l.Resource, p.Checkpoint)
	})
}

// pageQueries returns the statements writePage runs for a page of n records
// and q quarantined ones, to prepare before the transaction.
func (s *Store) pageQueries(n, q int) []string {
	queries := s.upsertQueries(n)
	if q > 0 {
		queries = append(queries, quarantineSQL)
	}
	return queries
}

// writePage writes the records and the quarantined records of a page of
// run in w, after the lease was checked: the part of SavePage, and of
// EndRun, before the checkpoint. quarantined reports whether the source and
// resource had quarantined records before the page.
func (s *Store) writePage(ctx context.Context, w *writeTx, op string, l consumer.Lease, run int64, rows []recordRow,
	quarantine []consumer.Quarantine, quarantined bool,
) error {
	if err := s.upsertRecords(ctx, w, op, l.Source, l.Resource, run, rows); err != nil {
		return err
	}
	if quarantined && len(rows) > 0 {
		if err := unquarantine(ctx, w, op, l.Source, l.Resource, rows); err != nil {
			return err
		}
	}
	if len(quarantine) == 0 {
		return nil
	}
	for _, q := range quarantine {
		if _, err := w.exec(ctx, quarantineSQL, l.Source, string(l.Resource), q.ID, q.Reason, ms(q.At), append([]byte{}, q.JSON...)); err != nil { // never nil: NULL is not a body
			return dbError(ctx, op, err)
		}
	}
	return markSeen(ctx, w, op, l.Source, l.Resource, run, quarantine)
}

// markSeen sets the run of the stored records of the quarantined ids to run:
// they still exist at the provider, so no sweep must mark them Missing.
// Their version and Missing mark stay. It is rare enough to run unprepared
// statements.
func markSeen(ctx context.Context, w *writeTx, op, source string, r consumer.Resource, run int64, quarantine []consumer.Quarantine) error {
	return chunks(len(quarantine), maxDeleteRows, func(from, n int) error {
		args := make([]any, 0, 3+n)
		args = append(args, source, string(r), run)
		for _, q := range quarantine[from : from+n] {
			args = append(args, q.ID)
		}
		if _, err := w.exec(ctx, inListSQL(markSeenPrefix, 4, n), args...); err != nil {
			return dbError(ctx, op, err)
		}
		return nil
	})
}

// EndRun ends a run in one transaction: it checks and extends e.Lease
// (otherwise it writes nothing and returns [consumer.ErrLeaseLost]); it
// writes e.Page's records and quarantined records as [Store.SavePage] does,
// in run e.Checkpoint.Run (so the sweep that follows does not mark them);
// when e.Sweep is set, it marks Missing at e.At every record of the source
// and resource whose run is older than e.Checkpoint.Run, that is not Missing
// already and, when e.SweepFrom or e.SweepUntil are set, whose Time lies in
// [SweepFrom, SweepUntil); then it replaces the checkpoint with
// e.Checkpoint. e.Page.Lease and e.Page.Checkpoint are not read. It
// implements [consumer.Store].
//
// Swept records stay stored. The collected view leaves out assistants,
// events and usage buckets marked Missing and serves a conversation marked
// Missing as a tombstone deleted at e.At, listed at that time (a
// conversation that already was a tombstone keeps its place).
func (s *Store) EndRun(ctx context.Context, e consumer.RunEnd) error {
	const op = "end run"
	if err := checkLease(op, e.Lease); err != nil {
		return err
	}
	l := e.Lease
	rows, err := recordRows(op, l.Resource, e.Page.Records)
	if err != nil {
		return err
	}
	queries := append([]string{extendLeaseSQL, putCheckpointSQL}, s.pageQueries(len(rows), len(e.Page.Quarantine))...)
	return s.write(ctx, op, queries, func(w *writeTx) error {
		quarantined, err := s.extendLease(ctx, w, op, l)
		if err != nil {
			return err
		}
		if err := s.writePage(ctx, w, op, l, e.Checkpoint.Run, rows, e.Page.Quarantine, quarantined); err != nil {
			return err
		}
		if e.Sweep {
			query, args := sweepQuery(&e)
			if _, err := w.exec(ctx, query, args...); err != nil {
				return dbError(ctx, op, err)
			}
		}
		return s.putCheckpoint(ctx, w, op, l.Source, l.Resource, e.Checkpoint)
	})
}

// sweepQuery returns the statement and arguments of e's sweep. The bounds
// of its window also bound pos_ms, so that the statement reads one range of
// the index (source, resource, pos_ms, id) rather than every record of the
// source and resource: pos_ms is time_ms for assistants, events and usage
// buckets, and is never below time_ms for a record not marked Missing
// (a conversation that came back after it was marked Missing may keep a
// later position), so for conversations only the lower bound carries over.
func sweepQuery(e *consumer.RunEnd) (string, []any) {
	l := &e.Lease
	query := sweepSQL
	args := []any{l.Source, string(l.Resource), ms(e.At), e.Checkpoint.Run}
	if !e.SweepFrom.IsZero() {
		args = append(args, sqldb.MillisCeil(e.SweepFrom))
		n := "$" + strconv.Itoa(len(args))
		query += " AND time_ms >= " + n + " AND pos_ms >= " + n
	}
	if !e.SweepUntil.IsZero() {
		args = append(args, sqldb.MillisCeil(e.SweepUntil))
		n := "$" + strconv.Itoa(len(args))
		query += " AND time_ms < " + n
		if l.Resource != consumer.Conversations {
			query += " AND pos_ms < " + n
		}
	}
	return query, args
}

// RecordFailure stores err as the last error of (source, r) at time at,
// leaving the rest of the checkpoint as it is (a zero checkpoint when there
// was none). It needs no lease. It implements [consumer.Store].
func (s *Store) RecordFailure(ctx context.Context, source string, r consumer.Resource, at time.Time, err string) error {
	if e := checkResource("record failure", r); e != nil {
		return e
	}
	if _, e := s.db.ExecContext(ctx, recordFailureSQL, source, string(r), err, nullMS(at)); e != nil {
		return dbError(ctx, "record failure", e)
	}
	return nil
}

func (s *Store) putCheckpoint(ctx context.Context, w *writeTx, op, source string, r consumer.Resource, c consumer.Checkpoint) error {
	_, err := w.exec(ctx, putCheckpointSQL, source, string(r), c.Run, c.Cursor, c.InProgress, c.Full,
		nullMS(c.Since), nullMS(c.Until), nullMS(c.Watermark), c.NeedsFull, c.NeedsFullReason, c.Pages, c.Records,
		nullMS(c.LastSuccess), c.LastError, nullMS(c.LastErrorAt), nullMS(c.Started), nullMS(c.NeedsFullSince),
		nullMS(c.LastFull))
	if err != nil {
		return dbError(ctx, op, err)
	}
	return nil
}

// unquarantine deletes the quarantined records of the ids of rows. It is
// rare enough to run unprepared statements.
func unquarantine(ctx context.Context, w *writeTx, op, source string, r consumer.Resource, rows []recordRow) error {
	return chunks(len(rows), maxDeleteRows, func(from, n int) error {
		args := make([]any, 0, 2+n)
		args = append(args, source, string(r))
		for _, row := range rows[from : from+n] {
			args = append(args, row.id)
		}
		if _, err := w.exec(ctx, inListSQL(deleteQuarantinePrefix, 3, n), args...); err != nil {
			return dbError(ctx, op, err)
		}
		return nil
	})
}

// chunks calls fn for consecutive chunks of n items, each the largest power
// of two not above max and the items left, so that the statements of a
// chunk size are few and prepared once.
func chunks(n, max int, fn func(from, size int) error) error {
	for from := 0; from < n; {
		size := 1 << (bits.Len(uint(min(n-from, max))) - 1)
		if err := fn(from, size); err != nil {
			return err
		}
		from += size
	}
	return nil
}

// Rows per statement on SQLite. modernc.org/sqlite looks each "$N"
// parameter up in a list of the statement's parameters when it binds it, so
// binding costs the square of the parameters: BenchmarkSavePage measured
// chunks of 1 to 8 records about equal, and 16 or more slower. A delete
// binds one parameter per id.
const (
	sqliteBatchRows = 4
	maxDeleteRows   = 64
)

// recordRow is a record as the columns of consumer_records.
type recordRow struct {
	id                               string
	time, started                    int64
	deleted                          bool
	category, body                   string
	granularity                      string
	end                              int64
	grouped                          string
	model, assistantID, userID, dept string
	requests, convs, active, in, out int64
	cost                             float64
	hasCost                          bool
	// estCost is the part of cost that is a tool's estimate.
	estCost float64
	// dailyCost is the part of cost that a vendor reports per day and
	// project, not per person or hour.
	dailyCost float64
}

// The columns of an upsert of consumer_records: three shared by every
// record ($1..$3), then perRow per record (pos_ms takes the value of
// time_ms).
const (
	sharedColumns = "source, resource, run"
	rowColumns    = "id, time_ms, pos_ms, started_ms, deleted, category, body, granularity, end_ms, grouped, model, " +
		"assistant_id, user_id, department, requests, conversations, active_users, input_tokens, output_tokens, cost, has_cost, estimated_cost, daily_cost"
	perRow = 22
)

// onConflictSQL ends an upsert of consumer_records: it always sets the run
// and clears the Missing mark, and replaces the rest only when the new
// version's Time is not older than the stored one's. pos_ms then becomes
// the new time_ms, except that a conversation keeps a later position: the
// Missing time of its tombstone, or one kept that way before. pos_ms stays
// time_ms for the other resources, and never falls below time_ms.
var onConflictSQL = func() string {
	var b strings.Builder
	b.WriteString("\nON CONFLICT (source, resource, id) DO UPDATE SET run = excluded.run, missing_at = NULL")
	for _, c := range []string{"time_ms", "pos_ms", "started_ms", "deleted", "category", "body", "granularity",
		"end_ms", "grouped", "model", "assistant_id", "user_id", "department", "requests", "conversations",
		"active_users", "input_tokens", "output_tokens", "cost", "has_cost", "estimated_cost", "daily_cost"} {
		if c == "pos_ms" {
			// A conversation never moves back in the view: it keeps a later
			// position, such as the Missing time of its tombstone.
			b.WriteString(",\n\tpos_ms = CASE WHEN excluded.time_ms < consumer_records.time_ms THEN consumer_records.pos_ms" +
				"\n\t\tWHEN consumer_records.resource = 'conversations' AND consumer_records.pos_ms > excluded.time_ms" +
				" THEN consumer_records.pos_ms ELSE excluded.time_ms END")
			continue
		}
		fmt.Fprintf(&b, ",\n\t%[1]s = CASE WHEN excluded.time_ms >= consumer_records.time_ms THEN excluded.%[1]s ELSE consumer_records.%[1]s END", c)
	}
	return b.String()
}()

type inListKey struct {
	prefix string
	n      int
}

var (
	upsertMu    sync.Mutex
	upsertCache = map[int]string{}
	inListCache = map[inListKey]string{}
)

// upsertRecordsSQL returns the statement upserting n records on SQLite.
func upsertRecordsSQL(n int) string {
	upsertMu.Lock()
	defer upsertMu.Unlock()
	if q, ok := upsertCache[n]; ok {
		return q
	}
	var b strings.Builder
	b.WriteString("INSERT INTO consumer_records (" + sharedColumns + ", " + rowColumns + ") VALUES ")
	p := 4
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("($1, $2, $3")
		for j := range perRow {
			b.WriteString(", $")
			b.WriteString(strconv.Itoa(p))
			if j == 1 { // pos_ms = time_ms
				b.WriteString(", $")
				b.WriteString(strconv.Itoa(p))
			}
			p++
		}
		b.WriteString(")")
	}
	b.WriteString(onConflictSQL)
	q := b.String()
	upsertCache[n] = q
	return q
}

// Statements on a list of ids, completed by inListSQL.
const (
	deleteQuarantinePrefix = "DELETE FROM consumer_quarantine WHERE source = $1 AND resource = $2 AND id IN ("
	markSeenPrefix         = "UPDATE consumer_records SET run = $3 WHERE source = $1 AND resource = $2 AND id IN ("
)

// inListSQL returns prefix followed by n parameters, numbered from first,
// and a closing parenthesis.
func inListSQL(prefix string, first, n int) string {
	key := inListKey{prefix, n}
	upsertMu.Lock()
	defer upsertMu.Unlock()
	if q, ok := inListCache[key]; ok {
		return q
	}
	var b strings.Builder
	b.WriteString(prefix)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(first+i))
	}
	b.WriteString(")")
	q := b.String()
	inListCache[key] = q
	return q
}

// upsertQueries returns the statements upsertRecords runs for n records.
func (s *Store) upsertQueries(n int) []string {
	if n == 0 {
		return nil
	}
	if s.db.Dialect == sqldb.Postgres {
		return []string{upsertArraysSQL}
	}
	var qs []string
	_ = chunks(n, sqliteBatchRows, func(_, size int) error {
		if q := upsertRecordsSQL(size); len(qs) == 0 || qs[len(qs)-1] != q {
			qs = append(qs, q)
		}
		return nil
	})
	return qs
}

// upsertRecords upserts rows: on PostgreSQL with one statement taking
// arrays, on SQLite with multi-row statements of a few records.
func (s *Store) upsertRecords(ctx context.Context, w *writeTx, op, source string, r consumer.Resource, run int64, rows []recordRow) error {
	if len(rows) == 0 {
		return nil
	}
	if s.db.Dialect == sqldb.Postgres {
		return upsertRecordsArrays(ctx, w, op, source, r, run, rows)
	}
	args := make([]any, 0, 3+perRow*sqliteBatchRows)
	return chunks(len(rows), sqliteBatchRows, func(from, n int) error {
		args = append(args[:0], source, string(r), run)
		for i := range rows[from : from+n] {
			row := &rows[from+i]
			args = append(args, row.id, row.time, row.started, row.deleted, row.category, row.body, row.granularity,
				row.end, row.grouped, row.model, row.assistantID, row.userID, row.dept, row.requests, row.convs,
				row.active, row.in, row.out, row.cost, row.hasCost, row.estCost, row.dailyCost)
		}
		if _, err := w.exec(ctx, upsertRecordsSQL(n), args...); err != nil {
			return dbError(ctx, op, err)
		}
		return nil
	})
}

// recordRows returns the rows of records, one per ID: of two records with
// one ID, the one with the later Time, or the later one on a tie, as
// upserting them one after the other would keep. A statement may not
// upsert one row twice on PostgreSQL.
func recordRows(op string, r consumer.Resource, records []consumer.Record) ([]recordRow, error) {
	rows := make([]recordRow, 0, len(records))
	var index map[string]int
	if len(records) > 1 {
		index = make(map[string]int, len(records))
	}
	for i := range records {
		rec := &records[i]
		row, err := rowOf(op, r, rec)
		if err != nil {
			return nil, err
		}
		if index == nil {
			rows = append(rows, row)
			continue
		}
		if j, dup := index[rec.ID]; dup {
			if row.time >= rows[j].time {
				rows[j] = row
			}
			continue
		}
		index[rec.ID] = len(rows)
		rows = append(rows, row)
	}
	return rows, nil
}

// bucketMetrics is what a usage bucket's JSON contributes to aggregation.
// Numbers are read as float64, so that a value written 1.0 is accepted, and
// one beyond the range of float64 saturates rather than failing the page.
type bucketMetrics struct {
	Metrics struct {
		Requests      json.Number `json:"requests"`
		Conversations json.Number `json:"conversations"`
		ActiveUsers   json.Number `json:"activeUsers"`
		InputTokens   json.Number `json:"inputTokens"`
		OutputTokens  json.Number `json:"outputTokens"`
		Cost          json.Number `json:"cost"`
		// EstimatedCost is the part of Cost that is a tool's estimate: a
		// member the usage data interface leaves to sources (the service's
		// telemetry buckets carry it).
		EstimatedCost json.Number `json:"estimatedCost"`
		// DailyCost is the part of Cost that a vendor reports per day and
		// project (the OpenAI and Anthropic sources' cost buckets carry
		// it), another member left to sources.
		DailyCost json.Number `json:"dailyCost"`
	} `json:"metrics"`
}

func rowOf(op string, r consumer.Resource, rec *consumer.Record) (recordRow, error) {
	if rec.ID == "" {
		return recordRow{}, fmt.Errorf("sqlstore: %s: a record has no ID", op)
	}
	row := recordRow{
		id: rec.ID, time: ms(rec.Time), deleted: rec.Deleted, category: rec.Category, body: string(rec.JSON),
	}
	if !rec.StartedAt.IsZero() {
		row.started = ms(rec.StartedAt)
	}
	if r == consumer.Conversations {
		if rec.Refs != nil {
			row.userID, row.assistantID = ref(rec.Refs.UserID), ref(rec.Refs.AssistantID)
		} else {
			row.userID, row.assistantID = conversationRefs(rec.JSON)
		}
		return row, nil
	}
	if r != consumer.Usage {
		return row, nil
	}
	b := rec.Bucket
	if b == nil {
		return recordRow{}, fmt.Errorf("sqlstore: %s: usage record %q has no Bucket", op, rec.ID)
	}
	var m bucketMetrics
	if err := json.Unmarshal(rec.JSON, &m); err != nil {
		return recordRow{}, fmt.Errorf("sqlstore: %s: usage record %q: metrics: %v", op, rec.ID, err)
	}
	// pos_ms takes the value of time_ms, the bucket's start.
	row.time = ms(b.Start)
	row.end = ms(b.End)
	row.granularity = b.Granularity
	if row.granularity == "" {
		// Left out by the source: the bucket's width tells.
		switch row.end - row.time {
		case hourMS:
			row.granularity = spec.GranularityHour
		case dayMS:
			row.granularity = spec.GranularityDay
		}
	}
	row.grouped = strings.Join(b.Grouped, ",")
	row.model, row.assistantID, row.userID, row.dept = b.Model, b.AssistantID, b.UserID, b.Department
	mm := &m.Metrics
	row.requests, row.convs, row.active = metricInt(mm.Requests), metricInt(mm.Conversations), metricInt(mm.ActiveUsers)
	row.in, row.out, row.cost = metricInt(mm.InputTokens), metricInt(mm.OutputTokens), metricFloat(mm.Cost)
	row.hasCost = mm.Cost != ""
	// Clamped as sums clamp cost: never negative, never above the cost.
	row.estCost = min(metricFloat(mm.EstimatedCost), clampMetric(row.cost))
	row.dailyCost = min(metricFloat(mm.DailyCost), clampMetric(row.cost))
	return row, nil
}

// conversationRefs returns the user.id and assistant.id of a conversation's
// JSON, kept in the columns user_id and assistant_id for
// [Store.SearchConversations]; "" for one that is absent, not a string,
// longer than maxRefLength bytes or holding a NUL (which no index
// could hold on every database).
func conversationRefs(body []byte) (userID, assistantID string) {
	var c struct {
		User      struct{ ID any } `json:"user"`
		Assistant struct{ ID any } `json:"assistant"`
	}
	if json.Unmarshal(body, &c) != nil {
		return "", ""
	}
	u, _ := c.User.ID.(string)
	a, _ := c.Assistant.ID.(string)
	return ref(u), ref(a)
}

// ref returns s as a searchable user or assistant id: "" when it is longer
// than maxRefLength bytes or holds a NUL.
func ref(s string) string {
	if len(s) > maxRefLength || strings.ContainsRune(s, 0) {
		return ""
	}
	return s
}

// maxRefLength is the longest user or assistant id of a conversation that
// is searchable: the longest usage dimension the consumer keeps.
const maxRefLength = 256

// maxMetric bounds every stored metric and every sum the collected view
// serves: 2^53, the largest integer a float64 (and so a JSON number read by
// most clients) holds exactly.
const maxMetric = 1 << 53

// metricFloat returns the value of n within [0, maxMetric]: NaN, negative
// values and values out of range saturate (0 for an absent metric).
func metricFloat(n json.Number) float64 {
	if n == "" {
		return 0
	}
	f, _ := strconv.ParseFloat(string(n), 64) // ±Inf when out of range; n is a valid number
	return clampMetric(f)
}

func clampMetric(f float64) float64 {
	switch {
	case !(f > 0): // NaN too
		return 0
	case f > maxMetric:
		return maxMetric
	}
	return f
}

// metricInt returns metricFloat(n) rounded to an integer.
func metricInt(n json.Number) int64 { return int64(math.Round(metricFloat(n))) }

// upsertArraysSQL upserts the records whose columns are passed as arrays
// ($4...), on PostgreSQL: one statement, planned once, for any number of
// records, and one round trip per page.
var upsertArraysSQL = func() string {
	var b strings.Builder
	b.WriteString("INSERT INTO consumer_records (" + sharedColumns + ", " + rowColumns + ")\nSELECT $1, $2, $3, " +
		"u.id, u.t, u.t, u.started_ms, u.deleted, u.category, u.body, u.granularity, u.end_ms, u.grouped, u.model, " +
		"u.assistant_id, u.user_id, u.department, u.requests, u.conversations, u.active_users, u.input_tokens, " +
		"u.output_tokens, u.cost, u.has_cost, u.estimated_cost, u.daily_cost\nFROM unnest($4::text[], $5::bigint[], $6::bigint[], $7::boolean[], $8::text[], " +
		"$9::text[], $10::text[], $11::bigint[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], " +
		"$17::bigint[], $18::bigint[], $19::bigint[], $20::bigint[], $21::bigint[], $22::double precision[], $23::boolean[], $24::double precision[], $25::double precision[]) " +
		"AS u(id, t, started_ms, deleted, category, body, granularity, end_ms, grouped, model, assistant_id, user_id, " +
		"department, requests, conversations, active_users, input_tokens, output_tokens, cost, has_cost, estimated_cost, daily_cost)")
	b.WriteString(onConflictSQL)
	return b.String()
}()

// upsertRecordsArrays upserts rows on PostgreSQL with [upsertArraysSQL].
func upsertRecordsArrays(ctx context.Context, w *writeTx, op, source string, r consumer.Resource, run int64, rows []recordRow) error {
	n := len(rows)
	var (
		ids, cats, bodies, grans, groupeds = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		models, assistants, users, depts   = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		times, starteds, ends              = make([]int64, n), make([]int64, n), make([]int64, n)
		reqs, convs, actives, ins, outs    = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		deleted, hasCosts                  = make([]bool, n), make([]bool, n)
		costs, estCosts, dailyCosts        = make([]float64, n), make([]float64, n), make([]float64, n)
	)
	for i := range rows {
		row := &rows[i]
		ids[i], times[i], starteds[i], deleted[i], cats[i], bodies[i] = row.id, row.time, row.started, row.deleted, row.category, row.body
		grans[i], ends[i], groupeds[i] = row.granularity, row.end, row.grouped
		models[i], assistants[i], users[i], depts[i] = row.model, row.assistantID, row.userID, row.dept
		reqs[i], convs[i], actives[i], ins[i], outs[i], costs[i] = row.requests, row.convs, row.active, row.in, row.out, row.cost
		hasCosts[i], estCosts[i], dailyCosts[i] = row.hasCost, row.estCost, row.dailyCost
	}
	_, err := w.exec(ctx, upsertArraysSQL, source, string(r), run, ids, times, starteds, deleted, cats, bodies, grans, ends,
		groupeds, models, assistants, users, depts, reqs, convs, actives, ins, outs, costs, hasCosts, estCosts, dailyCosts)
	if err != nil {
		return dbError(ctx, op, err)
	}
	return nil
}
