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
}

// txConn runs statements in a transaction; with prepare set, it prepares each
// statement once per transaction (for batches).
type txConn struct {
	tx      *sql.Tx
	prepare bool
	stmts   map[string]*sql.Stmt
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
		cn := &txConn{tx: tx}
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
	if err := provider.CheckIDLength(c.ID); err != nil {
		return err
	}
	if c.ID == "" {
		return provider.Invalid("id", "a conversation needs an id")
	}
	if c.StartedAt.IsZero() {
		return provider.Invalid("startedAt", "conversation %q has no startedAt", c.ID)
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = spec.NewTime(s.now())
	}
	if c.Deleted() {
		updated := c.UpdatedAt
		c = provider.TombstoneOf(c, c.DeletedAt.Time)
		c.UpdatedAt = spec.NewTime(updated.Time)
	}
	return s.putConversation(ctx, cn, tenant, c)
}

// putConversation stores c as given.
func (s *Source) putConversation(ctx context.Context, cn conn, tenant string, c spec.Conversation) error {
	body, err := json.Marshal(c)
	if err != nil {
		return provider.Invalid("conversation", "conversation %q cannot be encoded: %v", c.ID, err)
	}
	key := provider.ConversationKey(&c)
	err = cn.exec(ctx, upsertConversationSQL, tenant, c.ID, ms(key.Time), ms(c.StartedAt.Time), c.Deleted(), string(body))
	if err != nil {
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
	var fnErr error
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
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
	query := selectConversationSQL
	if s.db.Dialect == sqldb.Postgres {
		query += " FOR UPDATE" // SQLite: the transaction holds the write lock
	}
	var body []byte
	err := cn.queryRow(ctx, query, tenant, id).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("conversation", id)
	}
	if err != nil {
		return dbError(ctx, "delete conversation", err)
	}
	var c spec.Conversation
	if err := json.Unmarshal(body, &c); err != nil {
		return fmt.Errorf("sqlsource: delete conversation: stored record %q: %v", id, err)
	}
	return s.putConversation(ctx, cn, tenant, provider.TombstoneOf(c, at))
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
	if err := provider.CheckIDLength(a.ID); err != nil {
		return err
	}
	if a.ID == "" {
		return provider.Invalid("id", "an assistant needs an id")
	}
	if a.CreatedAt.IsZero() {
		return provider.Invalid("createdAt", "assistant %q has no createdAt", a.ID)
	}
	if a.UpdatedAt.IsZero() {
		a.UpdatedAt = spec.NewTime(s.now())
	}
	body, err := json.Marshal(a)
	if err != nil {
		return provider.Invalid("assistant", "assistant %q cannot be encoded: %v", a.ID, err)
	}
	key := provider.AssistantKey(&a)
	if err := cn.exec(ctx, upsertAssistantSQL, tenant, a.ID, ms(key.Time), ms(a.CreatedAt.Time), string(body)); err != nil {
		return dbError(ctx, "upsert assistant", err)
	}
	return nil
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
	if err := provider.CheckIDLength(e.ID); err != nil {
		return err
	}
	if e.ID == "" {
		return provider.Invalid("id", "an event needs an id")
	}
	if e.OccurredAt.IsZero() {
		return provider.Invalid("occurredAt", "event %q has no occurredAt", e.ID)
	}
	body, err := json.Marshal(e)
	if err != nil {
		return provider.Invalid("event", "event %q cannot be encoded: %v", e.ID, err)
	}
	err = cn.exec(ctx, insertEventSQL, tenant, e.ID, ms(provider.EventKey(&e).Time), e.Category, string(body))
	if sqldb.IsUniqueViolation(err) {
		return &provider.Error{Kind: provider.ErrConflict, Field: "id", Detail: fmt.Sprintf("event %q exists", e.ID)}
	}
	if err != nil {
		return dbError(ctx, "append event", err)
	}
	return nil
}

// RecordUsage records the usage of one AI request, the raw material of
// [Source.Usage]. An id the tenant already has is [provider.ErrConflict]; an
// empty id or a zero At is [provider.ErrInvalid].
func (s *Source) RecordUsage(ctx context.Context, tenant string, u provider.UsageRecord) error {
	if err := checkUsage(&u); err != nil {
		return err
	}
	return s.inTx(ctx, "record usage", func(tx *sql.Tx) error {
		cn := &txConn{tx: tx}
		r := rollup{}
		if err := s.recordUsage(ctx, cn, tenant, u, r); err != nil {
			return err
		}
		return r.flush(ctx, cn)
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
	at := ms(u.At)
	err := cn.exec(ctx, insertUsageSQL, tenant, u.ID, at, u.ConversationID, u.UserID, u.Department,
		u.Model, u.AssistantID, u.InputTokens, u.OutputTokens, u.Cost)
	if sqldb.IsUniqueViolation(err) {
		return &provider.Error{Kind: provider.ErrConflict, Field: "id", Detail: fmt.Sprintf("usage record %q exists", u.ID)}
	}
	if err != nil {
		return dbError(ctx, "record usage", err)
	}
	r.add(tenant, &u)
	return nil
}

// WriteBatch runs fn with a [provider.Writer] whose writes all go into one
// transaction, through statements prepared once: the way to load many
// records quickly. The batch commits when fn returns nil. It rolls back when
// fn returns an error, or when any write of the batch failed (WriteBatch
// then returns that write's error, even if fn ignored it: on PostgreSQL a
// failed statement aborts the transaction, so after a failed write every
// further write of the batch fails too). The writer must not be used after
// fn returns, nor from several goroutines at once. On SQLite the batch holds
// the database's write lock until it ends.
func (s *Source) WriteBatch(ctx context.Context, fn func(w provider.Writer) error) error {
	return s.inTx(ctx, "write batch", func(tx *sql.Tx) error {
		b := &batch{s: s, cn: &txConn{tx: tx, prepare: true}, usage: rollup{}, changed: map[revKey]bool{}}
		defer func() {
			for _, st := range b.cn.stmts {
				_ = st.Close()
			}
		}()
		err := fn(b)
		if b.err != nil {
			return b.err
		}
		if err != nil {
			return err
		}
		// The requests not added yet join usage_rollups, summed per cell.
		if err := b.usage.flush(ctx, b.cn); err != nil {
			return err
		}
		for rk := range b.changed {
			if err := bumpRevision(ctx, b.cn, rk); err != nil {
				return dbError(ctx, "write batch", err)
			}
		}
		return nil
	})
}

// maxBatchCells bounds the rollup cells a batch keeps in memory before it
// adds them to usage_rollups (Source.batchCells, for tests).
const maxBatchCells = 1 << 16

// batch is the Writer of [Source.WriteBatch].
type batch struct {
	s       *Source
	cn      *txConn
	usage   rollup          // the requests recorded, summed per cell
	changed map[revKey]bool // the tables written
	err     error           // first failed write
}

var _ provider.Writer = (*batch)(nil)

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

func (b *batch) UpsertConversation(ctx context.Context, tenant string, c spec.Conversation) error {
	if b.err != nil {
		return b.failed()
	}
	return b.do(revKey{tenant, "conversations"}, b.s.upsertConversation(ctx, b.cn, tenant, c))
}

func (b *batch) DeleteConversation(ctx context.Context, tenant, id string, at time.Time) error {
	if b.err != nil {
		return b.failed()
	}
	return b.do(revKey{tenant, "conversations"}, b.s.deleteConversation(ctx, b.cn, tenant, id, at))
}

func (b *batch) UpsertAssistant(ctx context.Context, tenant string, a spec.Assistant) error {
	if b.err != nil {
		return b.failed()
	}
	return b.do(revKey{tenant, "assistants"}, b.s.upsertAssistant(ctx, b.cn, tenant, a))
}

func (b *batch) AppendEvent(ctx context.Context, tenant string, e spec.Event) error {
	if b.err != nil {
		return b.failed()
	}
	return b.do(revKey{tenant, "events"}, b.s.appendEvent(ctx, b.cn, tenant, e))
}

func (b *batch) RecordUsage(ctx context.Context, tenant string, u provider.UsageRecord) error {
	if b.err != nil {
		return b.failed()
	}
	if err := b.do(revKey{}, b.s.recordUsage(ctx, b.cn, tenant, u, b.usage)); err != nil {
		return err
	}
	if len(b.usage) >= b.s.batchCells {
		return b.do(revKey{}, b.usage.flush(ctx, b.cn))
	}
	return nil
}
