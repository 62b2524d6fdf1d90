package sqlsource

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Statements of the writer, the same on both dialects.
const (
	upsertConversationSQL = `INSERT INTO conversations (tenant, id, updated_at, started_at, deleted, body)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (tenant, id) DO UPDATE SET updated_at = excluded.updated_at, started_at = excluded.started_at,
	deleted = excluded.deleted, body = excluded.body`
	upsertAssistantSQL = `INSERT INTO assistants (tenant, id, updated_at, created_at, body)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (tenant, id) DO UPDATE SET updated_at = excluded.updated_at, created_at = excluded.created_at,
	body = excluded.body`
	insertEventSQL = `INSERT INTO events (tenant, id, occurred_at, category, body) VALUES ($1, $2, $3, $4, $5)`
	insertUsageSQL = `INSERT INTO usage_records (tenant, id, at, conversation_id, user_id, department, model, assistant_id,
	input_tokens, output_tokens, cost) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
	selectConversationSQL = `SELECT body FROM conversations WHERE tenant = $1 AND id = $2`
)

// conn runs the writer's statements in a transaction: directly, or through
// the prepared statements of a batch.
type conn interface {
	exec(ctx context.Context, query string, args ...any) error
	queryRow(ctx context.Context, query string, args ...any) *sql.Row
	// execBulk runs the statement of st for rows.
	execBulk(ctx context.Context, st *bulkInsert, rows [][]any) error
}

// txConn runs statements in a transaction; with prepare set, it prepares each
// statement once per transaction (for batches), and each multi-row statement
// of a full set of rows.
type txConn struct {
	tx      *sql.Tx
	prepare bool
	dialect sqldb.Dialect
	rows    int // rows of a multi-row statement at most (see bulkInsert.perStatement)
	stmts   map[string]*sql.Stmt
}

// form returns the form of the multi-row statements: columns as arrays on
// PostgreSQL, but rows of numbered parameters when a statement holds one
// row (the statements of single writes, and of a batch written row by row
// to compare with).
func (c *txConn) form() bulkForm {
	switch {
	case c.dialect != sqldb.Postgres:
		return anonymous
	case c.rows > 1:
		return arrays
	default:
		return numbered
	}
}

// close releases the prepared statements.
func (c *txConn) close() {
	for _, st := range c.stmts {
		_ = st.Close()
	}
}

// bulkStmt returns the statement of st for n rows: in a batch, a prepared
// one, once per transaction, of a full set of rows on SQLite (the common
// case), of any number on PostgreSQL (the statement is the same); else nil
// and the statement's text.
func (c *txConn) bulkStmt(ctx context.Context, st *bulkInsert, n int) (*sql.Stmt, string, error) {
	form := c.form()
	query := st.sql(form, n)
	if !c.prepare || (form != arrays && n != st.perStatement(c.rows)) {
		return nil, query, nil
	}
	ps, err := c.stmt(ctx, query)
	return ps, query, err
}

func (c *txConn) execBulk(ctx context.Context, st *bulkInsert, rows [][]any) error {
	ps, query, err := c.bulkStmt(ctx, st, len(rows))
	if err != nil {
		return err
	}
	args, err := st.args(c.form(), rows)
	switch {
	case err != nil:
	case ps != nil:
		_, err = ps.ExecContext(ctx, args...)
	default:
		_, err = c.tx.ExecContext(ctx, query, args...)
	}
	return err
}

func (c *txConn) queryBulk(ctx context.Context, st *bulkInsert, rows [][]any) (*sql.Rows, error) {
	ps, query, err := c.bulkStmt(ctx, st, len(rows))
	if err != nil {
		return nil, err
	}
	args, err := st.args(c.form(), rows)
	switch {
	case err != nil:
		return nil, err
	case ps != nil:
		return ps.QueryContext(ctx, args...)
	default:
		return c.tx.QueryContext(ctx, query, args...)
	}
}

func (c *txConn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := c.stmts[query]; ok {
		return st, nil
	}
	st, err := c.tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[query] = st
	return st, nil
}

func (c *txConn) exec(ctx context.Context, query string, args ...any) error {
	if !c.prepare {
		_, err := c.tx.ExecContext(ctx, query, args...)
		return err
	}
	st, err := c.stmt(ctx, query)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}

func (c *txConn) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return c.tx.QueryRowContext(ctx, query, args...)
}

// txConn returns the conn of a single write in tx.
func (s *Source) txConn(tx *sql.Tx) *txConn {
	return &txConn{tx: tx, dialect: s.db.Dialect, rows: s.batchRows}
}

// UpsertConversation creates or replaces the tenant's conversation c.ID. A
// zero UpdatedAt becomes the current time; times are kept at millisecond
// precision, in UTC. A conversation with DeletedAt set is stored as a
// tombstone (content dropped). An empty id or a zero StartedAt is
// [provider.ErrInvalid].
func (s *Source) UpsertConversation(ctx context.Context, tenant string, c spec.Conversation) error {
	return s.write(ctx, "upsert conversation", revKey{tenant, "conversations"}, func(cn conn) error {
		return s.upsertConversation(ctx, cn, tenant, c)
	})
}

// write runs fn in a transaction that then sets a new revision of the
// tenant's table fn changed.
func (s *Source) write(ctx context.Context, op string, rk revKey, fn func(cn conn) error) error {
	return s.inTx(ctx, op, func(tx *sql.Tx) error {
		cn := s.txConn(tx)
		if err := fn(cn); err != nil {
			return err
		}
		if err := bumpRevision(ctx, cn, rk); err != nil {
			return dbError(ctx, op, err)
		}
		return nil
	})
}

func (s *Source) upsertConversation(ctx context.Context, cn conn, tenant string, c spec.Conversation) error {
	row, err := s.conversationRow(tenant, c)
	if err != nil {
		return err
	}
	return putConversation(ctx, cn, row)
}

// conversationRow checks c and returns its row of conversations, as
// UpsertConversation stores it.
func (s *Source) conversationRow(tenant string, c spec.Conversation) ([]any, error) {
	if err := provider.CheckIDLength(c.ID); err != nil {
		return nil, err
	}
	if c.ID == "" {
		return nil, provider.Invalid("id", "a conversation needs an id")
	}
	if c.StartedAt.IsZero() {
		return nil, provider.Invalid("startedAt", "conversation %q has no startedAt", c.ID)
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = spec.NewTime(s.now())
	}
	if c.Deleted() {
		updated := c.UpdatedAt
		c = provider.TombstoneOf(c, c.DeletedAt.Time)
		c.UpdatedAt = spec.NewTime(updated.Time)
	}
	return storedConversationRow(tenant, c)
}

// Columns of a row of conversations, as conversationRow lays it out.
const (
	convColBody = 5
)

// storedConversationRow returns the row of conversations that holds c as
// given: tenant, id, updated_at, started_at, deleted, body.
func storedConversationRow(tenant string, c spec.Conversation) ([]any, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, provider.Invalid("conversation", "conversation %q cannot be encoded: %v", c.ID, err)
	}
	key := provider.ConversationKey(&c)
	return []any{tenant, c.ID, ms(key.Time), ms(c.StartedAt.Time), c.Deleted(), string(body)}, nil
}

// putConversation stores a row of conversationRow.
func putConversation(ctx context.Context, cn conn, row []any) error {
	if err := cn.exec(ctx, upsertConversationSQL, row...); err != nil {
		return dbError(ctx, "upsert conversation", err)
	}
	return nil
}

// DeleteConversation turns the tenant's conversation id into a tombstone (see
// [provider.TombstoneOf]): content dropped, DeletedAt and UpdatedAt set to at
// (the current time when at is zero), which becomes its list position. An
// unknown id is [provider.ErrNotFound].
func (s *Source) DeleteConversation(ctx context.Context, tenant, id string, at time.Time) error {
	return s.write(ctx, "delete conversation", revKey{tenant, "conversations"}, func(cn conn) error {
		return s.deleteConversation(ctx, cn, tenant, id, at)
	})
}

// inTx runs fn in a transaction (see [sqldb.DB.InTx]) and returns fn's error
// as is, or the translated error of beginning or committing.
func (s *Source) inTx(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	return runTx(ctx, op, s.db.InTx, fn)
}

// inConnTx is inTx on conn.
func (s *Source) inConnTx(ctx context.Context, conn *sql.Conn, op string, fn func(*sql.Tx) error) error {
	return runTx(ctx, op, func(ctx context.Context, fn func(*sql.Tx) error) error { return sqldb.InConnTx(ctx, conn, fn) }, fn)
}

// runTx runs fn in a transaction of inTx, and returns fn's error as it is,
// the transaction's own errors (begin, commit) wrapped for op.
func runTx(ctx context.Context, op string, inTx func(context.Context, func(*sql.Tx) error) error, fn func(*sql.Tx) error) error {
	var fnErr error
	err := inTx(ctx, func(tx *sql.Tx) error {
		fnErr = fn(tx)
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

func (s *Source) deleteConversation(ctx context.Context, cn conn, tenant, id string, at time.Time) error {
	if at.IsZero() {
		at = s.now()
	}
	body, err := s.storedConversation(ctx, cn, tenant, id)
	if err != nil {
		return err
	}
	row, err := tombstoneRow(tenant, id, body, at)
	if err != nil {
		return err
	}
	return putConversation(ctx, cn, row)
}

// storedConversation reads the body of the tenant's conversation id, locked
// for the rest of the transaction; an unknown id is [provider.ErrNotFound].
func (s *Source) storedConversation(ctx context.Context, cn conn, tenant, id string) ([]byte, error) {
	query := selectConversationSQL
	if s.db.Dialect == sqldb.Postgres {
		query += " FOR UPDATE" // SQLite: the transaction holds the write lock
	}
	var body []byte
	err := cn.queryRow(ctx, query, tenant, id).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("conversation", id)
	}
	if err != nil {
		return nil, dbError(ctx, "delete conversation", err)
	}
	return body, nil
}

// tombstoneRow returns the row of conversations that holds the tombstone,
// deleted at at, of the conversation stored as body.
func tombstoneRow(tenant, id string, body []byte, at time.Time) ([]any, error) {
	var c spec.Conversation
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("sqlsource: delete conversation: stored record %q: %v", id, err)
	}
	return storedConversationRow(tenant, provider.TombstoneOf(c, at))
}

// UpsertAssistant creates or replaces the tenant's assistant a.ID. A zero
// UpdatedAt becomes the current time. An empty id or a zero CreatedAt is
// [provider.ErrInvalid].
func (s *Source) UpsertAssistant(ctx context.Context, tenant string, a spec.Assistant) error {
	return s.write(ctx, "upsert assistant", revKey{tenant, "assistants"}, func(cn conn) error {
		return s.upsertAssistant(ctx, cn, tenant, a)
	})
}

func (s *Source) upsertAssistant(ctx context.Context, cn conn, tenant string, a spec.Assistant) error {
	row, err := s.assistantRow(tenant, a)
	if err != nil {
		return err
	}
	if err := cn.exec(ctx, upsertAssistantSQL, row...); err != nil {
		return dbError(ctx, "upsert assistant", err)
	}
	return nil
}

// assistantRow checks a and returns its row of assistants: tenant, id,
// updated_at, created_at, body.
func (s *Source) assistantRow(tenant string, a spec.Assistant) ([]any, error) {
	if err := provider.CheckIDLength(a.ID); err != nil {
		return nil, err
	}
	if a.ID == "" {
		return nil, provider.Invalid("id", "an assistant needs an id")
	}
	if a.CreatedAt.IsZero() {
		return nil, provider.Invalid("createdAt", "assistant %q has no createdAt", a.ID)
	}
	if a.UpdatedAt.IsZero() {
		a.UpdatedAt = spec.NewTime(s.now())
	}
	body, err := json.Marshal(a)
	if err != nil {
		return nil, provider.Invalid("assistant", "assistant %q cannot be encoded: %v", a.ID, err)
	}
	key := provider.AssistantKey(&a)
	return []any{tenant, a.ID, ms(key.Time), ms(a.CreatedAt.Time), string(body)}, nil
}

// AppendEvent records the tenant's event e. An id the tenant already has is
// [provider.ErrConflict]; an empty id or a zero OccurredAt is
// [provider.ErrInvalid].
func (s *Source) AppendEvent(ctx context.Context, tenant string, e spec.Event) error {
	return s.write(ctx, "append event", revKey{tenant, "events"}, func(cn conn) error {
		return s.appendEvent(ctx, cn, tenant, e)
	})
}

func (s *Source) appendEvent(ctx context.Context, cn conn, tenant string, e spec.Event) error {
	row, err := eventRow(tenant, e)
	if err != nil {
		return err
	}
	err = cn.exec(ctx, insertEventSQL, row...)
	if sqldb.IsUniqueViolation(err) {
		return conflict(eventsBulk.noun, e.ID)
	}
	if err != nil {
		return dbError(ctx, "append event", err)
	}
	return nil
}

// eventRow checks e and returns its row of events: tenant, id, occurred_at,
// category, body.
func eventRow(tenant string, e spec.Event) ([]any, error) {
	if err := provider.CheckIDLength(e.ID); err != nil {
		return nil, err
	}
	if e.ID == "" {
		return nil, provider.Invalid("id", "an event needs an id")
	}
	if e.OccurredAt.IsZero() {
		return nil, provider.Invalid("occurredAt", "event %q has no occurredAt", e.ID)
	}
	body, err := json.Marshal(e)
	if err != nil {
		return nil, provider.Invalid("event", "event %q cannot be encoded: %v", e.ID, err)
	}
	return []any{tenant, e.ID, ms(provider.EventKey(&e).Time), e.Category, string(body)}, nil
}

// conflict is the [provider.ErrConflict] of a record (noun) whose id the
// tenant already has.
func conflict(noun, id string) error {
	return &provider.Error{Kind: provider.ErrConflict, Field: "id", Detail: fmt.Sprintf("%s %q exists", noun, id)}
}

// RecordUsage records the usage of one AI request, the raw material of
// [Source.Usage]. An id the tenant already has is [provider.ErrConflict]; an
// empty id or a zero At is [provider.ErrInvalid].
func (s *Source) RecordUsage(ctx context.Context, tenant string, u provider.UsageRecord) error {
	if err := checkUsage(&u); err != nil {
		return err
	}
	return s.inTx(ctx, "record usage", func(tx *sql.Tx) error {
		cn := s.txConn(tx)
		r := rollup{}
		if err := s.recordUsage(ctx, cn, tenant, u, r); err != nil {
			return err
		}
		return r.flush(ctx, cn, cn.rows)
	})
}

func checkUsage(u *provider.UsageRecord) error {
	if err := provider.CheckIDLength(u.ID); err != nil {
		return err
	}
	if u.ID == "" {
		return provider.Invalid("id", "a usage record needs an id")
	}
	if u.At.IsZero() {
		return provider.Invalid("at", "usage record %q has no time", u.ID)
	}
	if math.IsNaN(u.Cost) || math.IsInf(u.Cost, 0) {
		return provider.Invalid("cost", "usage record %q: cost %v is not a finite number", u.ID, u.Cost)
	}
	return nil
}

// recordUsage writes u and counts it in r, which the caller flushes in the
// same transaction.
func (s *Source) recordUsage(ctx context.Context, cn conn, tenant string, u provider.UsageRecord, r rollup) error {
	if err := checkUsage(&u); err != nil {
		return err
	}
	err := cn.exec(ctx, insertUsageSQL, usageRow(tenant, &u)...)
	if sqldb.IsUniqueViolation(err) {
		return conflict(usageBulk.noun, u.ID)
	}
	if err != nil {
		return dbError(ctx, "record usage", err)
	}
	r.add(tenant, &u)
	return nil
}

// usageRow returns the row of usage_records of u, checked: tenant, id, at,
// conversation_id, user_id, department, model, assistant_id, input_tokens,
// output_tokens, cost.
func usageRow(tenant string, u *provider.UsageRecord) []any {
	return []any{tenant, u.ID, ms(u.At), u.ConversationID, u.UserID, u.Department,
		u.Model, u.AssistantID, u.InputTokens, u.OutputTokens, u.Cost}
}
