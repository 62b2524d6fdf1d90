package sqlsource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// WriteBatch runs fn with a [provider.Writer] whose writes all go into one
// transaction: the way to load many records quickly. The writer keeps the
// rows of each table in memory, up to [DefaultBatchRows] of them (or 4 MiB
// of records), and writes them in one statement, in the background while
// fn goes on, so that a batch costs a round trip to the database per few
// hundred records rather than per record. The result is what the same
// writes one after the other would leave: of several upserts of one id the
// last wins, a deletion sees the conversations written before it in the
// batch, revisions and usage sums are those of the single writes.
//
// The batch commits when fn returns nil. It rolls back when fn returns an
// error, or when any write of the batch failed: WriteBatch then returns
// that write's error, even if fn ignored it, and every write after the
// failure is known fails too. Where an error surfaces:
//
//   - From the call itself: a record that is not valid
//     ([provider.ErrInvalid]: an empty id, a missing time, a cost that is
//     not a finite number, an id too long), and an event or usage record
//     whose id the batch holds in memory, not written yet
//     ([provider.ErrConflict]).
//   - Once the rows are written: an event or usage record whose id is
//     stored already, or was written by the batch earlier, is
//     [provider.ErrConflict] naming that id; so are the database's own
//     errors.
//   - Once the deletions are read: a deletion of an id neither stored nor
//     written earlier in the batch is [provider.ErrNotFound] naming that
//     id. A deletion of a conversation the batch does not hold in memory
//     waits, with up to the batch's rows of others, for one read of the
//     stored ones, after every write before it.
//
// An error of the last two kinds comes from a later call than the record's
// or from WriteBatch itself. WriteBatch returns it in every case.
//
// On PostgreSQL (through pgx's stdlib driver) the batch COPYs the rows
// that no earlier write can conflict with: those of a tenant that had no
// rows in the table when the batch first wrote to it, and whose key the
// batch has not written before. It INSERTs the others. If another writer
// stores a record of such a tenant that the batch also COPYs, while the
// batch runs, the batch fails whole with [provider.ErrConflict] saying so;
// written again, it finds the tenant's rows and INSERTs them.
//
// The writer must not be used after fn returns, nor from several goroutines
// at once. On SQLite the batch holds the database's write lock until it
// ends.
func (s *Source) WriteBatch(ctx context.Context, fn func(w provider.Writer) error) error {
	if !s.fastLoad() || s.batchRows <= 1 {
		return s.inTx(ctx, "write batch", func(tx *sql.Tx) error { return s.writeBatch(ctx, tx, nil, fn) })
	}
	// On PostgreSQL the batch COPYs what it can (see fastload.go), on the
	// connection of its transaction.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return dbError(ctx, "write batch", err)
	}
	defer conn.Close()
	cp := newCopier(conn)
	return s.inConnTx(ctx, conn, "write batch", func(tx *sql.Tx) error { return s.writeBatch(ctx, tx, cp, fn) })
}

// writeBatch runs fn with the writer of a batch in tx, COPYing through cp
// when it is not nil, and ends the batch's writes.
func (s *Source) writeBatch(ctx context.Context, tx *sql.Tx, cp *copier, fn func(w provider.Writer) error) error {
	b := s.newBatch(ctx, tx, cp)
	defer b.close()
	err := fn(b)
	if b.check() != nil {
		return b.err
	}
	if err != nil {
		return err
	}
	if err := b.do(revKey{}, b.resolveDeletes(ctx)); err != nil {
		return err
	}
	for _, buf := range b.bufs() {
		b.flush(buf)
	}
	// The requests not added yet join usage_rollups, summed per cell.
	b.flushCells()
	if err := b.wait(); err != nil {
		return b.err
	}
	for rk := range b.changed {
		if err := bumpRevision(ctx, b.cn, rk); err != nil {
			return dbError(ctx, "write batch", err)
		}
	}
	return nil
}

// DefaultBatchRows is how many rows of a table a [Source.WriteBatch] writes
// in one statement at most (Source.batchRows, settable in tests; 1 writes
// row by row, as the kit did before).
const DefaultBatchRows = 500

// maxBatchBytes bounds the bytes of stored JSON a batch keeps in memory per
// table before it writes them.
const maxBatchBytes = 4 << 20

// maxBatchCells bounds the rollup cells a batch keeps in memory before it
// adds them to usage_rollups (Source.batchCells, for tests).
const maxBatchCells = 1 << 16

// maxBindParams is the most parameters one statement binds on both
// dialects: SQLite's default limit since 3.32 (PostgreSQL allows 65535).
const maxBindParams = 32766

// bulkInsert is a multi-row INSERT into one table: "INSERT INTO into VALUES
// (row), (row) ... onConflict".
type bulkInsert struct {
	into       string // the table and its columns
	cols       int
	keyCols    int    // the columns of the primary key, first
	pgTypes    string // the PostgreSQL array types of the columns, in order
	onConflict string
	// noun names the records of an insert-only table, whose existing ids
	// are conflicts: its onConflict is DO NOTHING RETURNING tenant, id, and
	// a row that was not stored is [provider.ErrConflict]. Empty for
	// upserts.
	noun string
}

// The tables a batch writes.
var (
	conversationsBulk = &bulkInsert{
		into: `conversations (tenant, id, updated_at, started_at, deleted, body)`, cols: 6, keyCols: 2,
		pgTypes: `text[], text[], bigint[], bigint[], boolean[], text[]`,
		onConflict: `ON CONFLICT (tenant, id) DO UPDATE SET updated_at = excluded.updated_at,
	started_at = excluded.started_at, deleted = excluded.deleted, body = excluded.body`,
	}
	assistantsBulk = &bulkInsert{
		into: `assistants (tenant, id, updated_at, created_at, body)`, cols: 5, keyCols: 2,
		pgTypes: `text[], text[], bigint[], bigint[], text[]`,
		onConflict: `ON CONFLICT (tenant, id) DO UPDATE SET updated_at = excluded.updated_at,
	created_at = excluded.created_at, body = excluded.body`,
	}
	eventsBulk = &bulkInsert{
		into: `events (tenant, id, occurred_at, category, body)`, cols: 5, keyCols: 2,
		pgTypes:    `text[], text[], bigint[], text[], text[]`,
		onConflict: `ON CONFLICT (tenant, id) DO NOTHING RETURNING tenant, id`, noun: "event",
	}
	usageBulk = &bulkInsert{
		into: `usage_records (tenant, id, at, conversation_id, user_id, department, model, assistant_id,
	input_tokens, output_tokens, cost)`, cols: 11, keyCols: 2,
		pgTypes:    `text[], text[], bigint[], text[], text[], text[], text[], text[], bigint[], bigint[], double precision[]`,
		onConflict: `ON CONFLICT (tenant, id) DO NOTHING RETURNING tenant, id`, noun: "usage record",
	}
	rollupsBulk = &bulkInsert{
		into: `usage_rollups (tenant, width, bucket, model, department, assistant_id, user_id,
	conversation_id, requests, input_tokens, output_tokens, cost)`, cols: 12, keyCols: 8,
		pgTypes: `text[], bigint[], bigint[], text[], text[], text[], text[], text[], bigint[], bigint[], bigint[], double precision[]`,
		onConflict: `ON CONFLICT (tenant, width, bucket, model, department, assistant_id, user_id, conversation_id) DO UPDATE SET
	requests = usage_rollups.requests + excluded.requests,
	input_tokens = usage_rollups.input_tokens + excluded.input_tokens,
	output_tokens = usage_rollups.output_tokens + excluded.output_tokens,
	cost = usage_rollups.cost + excluded.cost`,
	}
)

// perStatement returns how many rows one statement of b holds at most,
// given the batch's bound.
func (b *bulkInsert) perStatement(rows int) int {
	return max(1, min(rows, maxBindParams/b.cols))
}

// bulkForm is the form of a multi-row statement.
type bulkForm int

const (
	// anonymous: a multi-row INSERT whose parameters are anonymous (?), for
	// SQLite, which looks a numbered parameter up among those before it, in
	// time quadratic in their count.
	anonymous bulkForm = iota
	// numbered: a multi-row INSERT of numbered parameters ($1), for
	// PostgreSQL.
	numbered
	// arrays: one statement for any number of rows, whose parameters are
	// the columns as arrays, for PostgreSQL: planned once, and its few
	// parameters cost far less to bind than those of every row of a
	// multi-row INSERT.
	arrays
)

// sql returns the statement of n rows in form f.
func (b *bulkInsert) sql(f bulkForm, n int) string {
	if f == arrays {
		return b.pgSQL()
	}
	return b.multiRowSQL(f, n)
}

// pgSQL returns the PostgreSQL statement of b: INSERT ... SELECT * FROM
// unnest($1::type[], ...) ON CONFLICT ...
func (b *bulkInsert) pgSQL() string {
	var sb strings.Builder
	sb.WriteString("INSERT INTO ")
	sb.WriteString(b.into)
	sb.WriteString(" SELECT * FROM unnest(")
	for i, typ := range strings.Split(b.pgTypes, ", ") {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "$%d::%s", i+1, typ)
	}
	sb.WriteString(") ")
	sb.WriteString(b.onConflict)
	return sb.String()
}

// args returns the parameters of the statement of rows in form f: the
// values row after row, or a slice per column (arrays).
func (b *bulkInsert) args(f bulkForm, rows [][]any) ([]any, error) {
	if f != arrays {
		args := make([]any, 0, len(rows)*b.cols)
		for _, row := range rows {
			args = append(args, row...)
		}
		return args, nil
	}
	args := make([]any, b.cols)
	for c := range b.cols {
		switch rows[0][c].(type) {
		case string:
			args[c] = column[string](rows, c)
		case int64:
			args[c] = column[int64](rows, c)
		case bool:
			args[c] = column[bool](rows, c)
		case float64:
			args[c] = column[float64](rows, c)
		default:
			return nil, fmt.Errorf("sqlsource: column %d of %s: a %T", c, b.into, rows[0][c])
		}
	}
	return args, nil
}

// column returns column c of rows, whose values are of type T (the row
// builders give every row of a table the same types).
func column[T any](rows [][]any, c int) []T {
	col := make([]T, len(rows))
	for i, row := range rows {
		col[i], _ = row[c].(T)
	}
	return col
}

// multiRowSQL returns the multi-row INSERT of n rows.
func (b *bulkInsert) multiRowSQL(f bulkForm, n int) string {
	var sb strings.Builder
	sb.Grow(len(b.into) + len(b.onConflict) + 32 + n*b.cols*7)
	sb.WriteString("INSERT INTO ")
	sb.WriteString(b.into)
	sb.WriteString(" VALUES ")
	p := 0
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('(')
		for c := range b.cols {
			if c > 0 {
				sb.WriteByte(',')
			}
			p++
			if f == numbered {
				sb.WriteByte('$')
				sb.WriteString(strconv.Itoa(p))
			} else {
				sb.WriteByte('?')
			}
		}
		sb.WriteByte(')')
	}
	sb.WriteByte(' ')
	sb.WriteString(b.onConflict)
	return sb.String()
}

// rowKey identifies a record of a table.
type rowKey struct{ tenant, id string }

// rowBuf holds the rows of one table that a batch has yet to write, each
// id once.
type rowBuf struct {
	st    *bulkInsert
	rows  [][]any        // tenant and id first
	at    map[rowKey]int // index in rows
	bytes int            // of stored JSON
}

func newRowBuf(st *bulkInsert) *rowBuf { return &rowBuf{st: st, at: map[rowKey]int{}} }

// put adds row, of size bytes, in place of the buffered row of the same id
// if there is one.
func (r *rowBuf) put(row []any, size int) {
	k := rowKey{row[0].(string), row[1].(string)}
	if i, ok := r.at[k]; ok {
		r.bytes -= bodySize(r.rows[i])
		r.rows[i] = row
	} else {
		r.at[k] = len(r.rows)
		r.rows = append(r.rows, row)
	}
	r.bytes += size
}

func (r *rowBuf) has(tenant, id string) bool {
	_, ok := r.at[rowKey{tenant, id}]
	return ok
}

// bodySize returns the size of a row's stored JSON (its last column for the
// tables that have one).
func bodySize(row []any) int {
	if s, ok := row[len(row)-1].(string); ok {
		return len(s)
	}
	return 0
}

// batch is the Writer of [Source.WriteBatch]. It hands the rows of a full
// buffer to a goroutine of its own (bg), which writes them while the caller
// goes on producing records, so that encoding records and storing them
// overlap; the writes keep their order. Only that goroutine uses the
// transaction, except after b.wait (deletions, revisions).
type batch struct {
	s                             *Source
	ctx                           context.Context // of WriteBatch
	cn                            *txConn
	cp                            *copier // nil: every row is INSERTed
	convs, assts, events, records *rowBuf
	cells                         rollup          // the requests recorded, summed per cell
	changed                       map[revKey]bool // the tables written
	err                           error           // first failed write
	bg                            *bgWriter       // started with the first rows to write
	dels                          []pendingDelete // deletions of conversations yet to read, in order
	delAt                         map[rowKey]bool // the keys of dels
}

var _ provider.Writer = (*batch)(nil)

// bgWriter writes the rows of a batch, a job after the other.
type bgWriter struct {
	jobs chan bgJob
	done chan struct{}
	mu   sync.Mutex
	err  error // first failed job; the jobs after it are dropped
}

// bgJob is rows of a table to write, or a barrier (sync).
type bgJob struct {
	st   *bulkInsert
	rows [][]any
	sync chan struct{} // closed once every job before it is done
}

func (w *bgWriter) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *bgWriter) run(ctx context.Context, cn *txConn, cp *copier) {
	defer close(w.done)
	for j := range w.jobs {
		switch {
		case j.sync != nil:
			close(j.sync)
		case w.failure() == nil:
			if err := writeRows(ctx, cn, cp, j.st, j.rows); err != nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
			}
		}
	}
}

// send hands rows of st to the background writer.
func (b *batch) send(st *bulkInsert, rows [][]any) {
	if b.bg == nil {
		// Room for one job while another is written: a batch holds at
		// most two sets of rows beside its buffers.
		b.bg = &bgWriter{jobs: make(chan bgJob, 1), done: make(chan struct{})}
		go b.bg.run(b.ctx, b.cn, b.cp)
	}
	b.bg.jobs <- bgJob{st: st, rows: rows}
}

// wait returns once every row handed to the background writer is written,
// with the batch's failure.
func (b *batch) wait() error {
	if b.bg == nil {
		return b.check()
	}
	j := bgJob{sync: make(chan struct{})}
	b.bg.jobs <- j
	<-j.sync
	return b.check()
}

// check notes the background writer's failure, and returns the batch's.
func (b *batch) check() error {
	if b.err == nil && b.bg != nil {
		b.err = b.bg.failure()
	}
	if b.err != nil {
		return b.failed()
	}
	return nil
}

// close stops the background writer, then releases the statements.
func (b *batch) close() {
	if b.bg != nil {
		close(b.bg.jobs)
		<-b.bg.done
	}
	b.cn.close()
}

func (s *Source) newBatch(ctx context.Context, tx *sql.Tx, cp *copier) *batch {
	return &batch{
		s:     s,
		ctx:   ctx,
		cp:    cp,
		cn:    &txConn{tx: tx, prepare: true, dialect: s.db.Dialect, rows: s.batchRows},
		convs: newRowBuf(conversationsBulk), assts: newRowBuf(assistantsBulk),
		events: newRowBuf(eventsBulk), records: newRowBuf(usageBulk),
		cells: rollup{}, changed: map[revKey]bool{}, delAt: map[rowKey]bool{},
	}
}

func (b *batch) bufs() [4]*rowBuf { return [4]*rowBuf{b.convs, b.assts, b.events, b.records} }

func (b *batch) do(rk revKey, err error) error {
	if err != nil {
		if b.err == nil {
			b.err = err
		}
		return err
	}
	if rk.table != "" {
		b.changed[rk] = true
	}
	return nil
}

func (b *batch) failed() error {
	return fmt.Errorf("sqlsource: batch failed earlier: %w", b.err)
}

// add buffers row into buf and hands the buffer to be written once it is
// full.
func (b *batch) add(buf *rowBuf, row []any) {
	buf.put(row, bodySize(row))
	if len(buf.rows) >= buf.st.perStatement(b.cn.rows) || buf.bytes >= maxBatchBytes {
		b.flush(buf)
	}
}

// flush hands the rows of buf to be written and empties it.
func (b *batch) flush(buf *rowBuf) {
	if len(buf.rows) == 0 {
		return
	}
	b.send(buf.st, buf.rows)
	buf.rows = make([][]any, 0, cap(buf.rows))
	clear(buf.at)
	buf.bytes = 0
}

// flushCells hands the rollup cells to be written, as one job (in
// statements of up to the batch's rows), so that the caller goes on while
// they are written, and empties the rollup.
func (b *batch) flushCells() {
	if rows := b.cells.take(); len(rows) > 0 {
		b.send(rollupsBulk, rows)
	}
}

// writeRows writes rows of st: through cp those it can COPY, the others in
// INSERTs of up to the batch's rows each. Of an insert-only table, a row the
// INSERT did not store (its id exists) is [provider.ErrConflict], as is a
// COPY that met another writer's key.
func writeRows(ctx context.Context, cn *txConn, cp *copier, st *bulkInsert, buf [][]any) error {
	err := copyAndInsert(ctx, cn, cp, st, buf)
	if err == nil || errors.Is(err, provider.ErrConflict) {
		return err
	}
	return dbError(ctx, "write batch: "+st.table(), err)
}

func copyAndInsert(ctx context.Context, cn *txConn, cp *copier, st *bulkInsert, buf [][]any) error {
	if cp != nil {
		copyRows, rest, err := cp.split(ctx, cn.tx, st, buf)
		if err == nil && len(copyRows) > 0 {
			err = cp.copyFrom(ctx, st, copyRows)
		}
		if err != nil {
			return err
		}
		buf = rest
	}
	for chunk := range slices.Chunk(buf, st.perStatement(cn.rows)) {
		if err := insertRows(ctx, cn, st, chunk); err != nil {
			return err
		}
	}
	return nil
}

// insertRows writes rows of st in one statement; see writeRows.
func insertRows(ctx context.Context, cn *txConn, st *bulkInsert, buf [][]any) error {
	n := len(buf)
	if st.noun == "" {
		return cn.execBulk(ctx, st, buf)
	}
	rows, err := cn.queryBulk(ctx, st, buf)
	if err != nil {
		return err
	}
	defer rows.Close()
	stored := make(map[rowKey]bool, n)
	for rows.Next() {
		var k rowKey
		if err := rows.Scan(&k.tenant, &k.id); err != nil {
			return err
		}
		stored[k] = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(stored) == n {
		return nil
	}
	for _, row := range buf {
		if k := (rowKey{row[0].(string), row[1].(string)}); !stored[k] {
			return conflict(st.noun, k.id)
		}
	}
	return fmt.Errorf("sqlsource: %d rows given, %d stored", n, len(stored))
}

func (b *batch) UpsertConversation(ctx context.Context, tenant string, c spec.Conversation) error {
	if err := b.check(); err != nil {
		return err
	}
	row, err := b.s.conversationRow(tenant, c)
	if err == nil && b.delAt[rowKey{tenant, c.ID}] {
		// Deleted earlier in the batch: the deletion comes first.
		err = b.resolveDeletes(ctx)
	}
	if err == nil {
		b.add(b.convs, row)
	}
	return b.do(revKey{tenant, "conversations"}, err)
}

func (b *batch) DeleteConversation(ctx context.Context, tenant, id string, at time.Time) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.do(revKey{tenant, "conversations"}, b.deleteConversation(ctx, tenant, id, at))
}

// deleteConversation buffers the tombstone of the conversation as the
// batch holds it; a conversation stored, or written by the batch already,
// waits among the batch's pending deletions, which are read from the
// database together, a round trip for up to the batch's rows of them
// (resolveDeletes).
func (b *batch) deleteConversation(ctx context.Context, tenant, id string, at time.Time) error {
	if at.IsZero() {
		at = b.s.now()
	}
	k := rowKey{tenant, id}
	if b.delAt[k] {
		// Deleted again: the first deletion's tombstone is deleted.
		if err := b.resolveDeletes(ctx); err != nil {
			return err
		}
	}
	if i, ok := b.convs.at[k]; ok {
		row, err := tombstoneRow(tenant, id, []byte(b.convs.rows[i][convColBody].(string)), at)
		if err != nil {
			return err
		}
		b.add(b.convs, row)
		return nil
	}
	b.dels = append(b.dels, pendingDelete{k, at})
	b.delAt[k] = true
	if len(b.dels) >= max(1, min(b.cn.rows, maxBindParams-1)) {
		return b.resolveDeletes(ctx)
	}
	return nil
}

// pendingDelete is a deletion of a conversation that the batch has yet to
// read from the database.
type pendingDelete struct {
	k  rowKey
	at time.Time
}

// resolveDeletes reads the conversations of the pending deletions, once
// every write before them is done, and buffers their tombstones, in the
// order of the deletions. An id not stored is [provider.ErrNotFound].
func (b *batch) resolveDeletes(ctx context.Context) error {
	if len(b.dels) == 0 {
		return nil
	}
	if err := b.wait(); err != nil {
		return err
	}
	dels := b.dels
	b.dels = nil
	clear(b.delAt)
	keys := make([]rowKey, len(dels))
	for i, d := range dels {
		keys[i] = d.k
	}
	bodies, err := b.s.storedConversations(ctx, b.cn, keys)
	if err != nil {
		return err
	}
	for _, d := range dels {
		body, ok := bodies[d.k]
		if !ok {
			return notFound("conversation", d.k.id)
		}
		row, err := tombstoneRow(d.k.tenant, d.k.id, body, d.at)
		if err != nil {
			return err
		}
		b.add(b.convs, row)
	}
	return nil
}

// storedConversations returns the stored bodies of the conversations keys
// that exist, locked until the transaction ends on PostgreSQL (SQLite: the
// transaction holds the write lock).
func (s *Source) storedConversations(ctx context.Context, cn *txConn, keys []rowKey) (map[rowKey][]byte, error) {
	byTenant := map[string][]any{}
	var tenants []string
	for _, k := range keys {
		if _, ok := byTenant[k.tenant]; !ok {
			tenants = append(tenants, k.tenant)
		}
		byTenant[k.tenant] = append(byTenant[k.tenant], k.id)
	}
	out := make(map[rowKey][]byte, len(keys))
	for _, tenant := range tenants {
		ids := byTenant[tenant]
		var query string
		var args []any
		if s.db.Dialect == sqldb.Postgres {
			strs := make([]string, len(ids))
			for i, id := range ids {
				strs[i] = id.(string)
			}
			query = `SELECT id, body FROM conversations WHERE tenant = $1 AND id = ANY($2::text[]) FOR UPDATE`
			args = []any{tenant, strs}
		} else {
			query = `SELECT id, body FROM conversations WHERE tenant = ? AND id IN (?` + strings.Repeat(`, ?`, len(ids)-1) + `)`
			args = append([]any{tenant}, ids...)
		}
		if err := func() error {
			rows, err := cn.tx.QueryContext(ctx, query, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id string
				var body []byte
				if err := rows.Scan(&id, &body); err != nil {
					return err
				}
				out[rowKey{tenant, id}] = body
			}
			return rows.Err()
		}(); err != nil {
			return nil, dbError(ctx, "delete conversation", err)
		}
	}
	return out, nil
}

func (b *batch) UpsertAssistant(ctx context.Context, tenant string, a spec.Assistant) error {
	if err := b.check(); err != nil {
		return err
	}
	row, err := b.s.assistantRow(tenant, a)
	if err == nil {
		b.add(b.assts, row)
	}
	return b.do(revKey{tenant, "assistants"}, err)
}

func (b *batch) AppendEvent(ctx context.Context, tenant string, e spec.Event) error {
	if err := b.check(); err != nil {
		return err
	}
	row, err := eventRow(tenant, e)
	switch {
	case err != nil:
	case b.events.has(tenant, e.ID):
		err = conflict(eventsBulk.noun, e.ID)
	default:
		b.add(b.events, row)
	}
	return b.do(revKey{tenant, "events"}, err)
}

func (b *batch) RecordUsage(ctx context.Context, tenant string, u provider.UsageRecord) error {
	if err := b.check(); err != nil {
		return err
	}
	err := checkUsage(&u)
	switch {
	case err != nil:
	case b.records.has(tenant, u.ID):
		err = conflict(usageBulk.noun, u.ID)
	default:
		b.cells.add(tenant, &u)
		b.add(b.records, usageRow(tenant, &u))
	}
	if err != nil {
		return b.do(revKey{}, err)
	}
	if len(b.cells) >= b.s.batchCells {
		b.flushCells()
	}
	return nil
}
