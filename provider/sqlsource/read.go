package sqlsource

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqlpage"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// keyset describes one keyset query: a page of table in (timeCol, id) order.
type keyset struct {
	table   string // conversations, assistants, events
	timeCol string // updated_at or occurred_at
	tenant  string
	after   *provider.Key
	// since bounds timeCol from below: inclusive (updatedSince) or
	// exclusive (occurredAfter). Zero: no bound.
	since     time.Time
	inclusive bool
	// startedAfter keeps rows with started_at > startedAfter (exclusive).
	startedAfter time.Time
	category     string
	limit        int
	// maxBytes, when positive, is the byte budget of the page's records:
	// the query sizes the rows before it reads their bodies (see
	// [sqlpage.Read]).
	maxBytes int
	// dialect decides the row address of a sized query.
	dialect sqldb.Dialect
}

// sql returns the query and its arguments. The query reads exactly one
// index range: the lower bound on (timeCol, id) is whichever of the keyset
// position and the time filter is the tighter, so that only one range
// condition constrains the index. Its rows are (time, id, body); with a
// byte budget, those of a [sqlpage.Guarded] query: (time, id, body or
// NULL, byte length).
func (k *keyset) sql() (string, []any) { return k.query(sqlpage.ModeOf(k.maxBytes), false) }

// sqlWithRevision returns the query of sql with one more column: the
// tenant's revision of the table (0 before its first write), read in the
// same statement, and so from the same snapshot, as the rows.
func (k *keyset) sqlWithRevision() (string, []any) {
	return k.query(sqlpage.ModeOf(k.maxBytes), true)
}

// query returns the query of k's page in mode, with the revision column
// when withRev.
func (k *keyset) query(mode sqlpage.Mode, withRev bool) (string, []any) {
	if mode == sqlpage.Sized {
		return k.sizedQuery(withRev)
	}
	var b strings.Builder
	args := sqldb.Args{k.tenant}
	body := "body"
	if mode == sqlpage.Guarded {
		// A body larger than a fair share of the budget is left out
		// (NULL); its byte length, read without it, tells whether it fits.
		body = fmt.Sprintf("CASE WHEN octet_length(body) <= %s THEN body END, octet_length(body)", args.Add(sqlpage.GuardBytes(k.maxBytes, k.limit)))
	}
	fmt.Fprintf(&b, "SELECT %s, id, %s%s FROM %s WHERE tenant = $1", k.timeCol, body, k.revision(withRev), k.table)
	k.where(&b, &args)
	fmt.Fprintf(&b, " LIMIT %s", args.Add(k.limit+1))
	return b.String(), args
}

// revision returns the revision column, or "" without withRev. k.table is
// one of the package's table names, never input.
func (k *keyset) revision(withRev bool) string {
	if !withRev {
		return ""
	}
	return fmt.Sprintf(", COALESCE((SELECT rev FROM provider_revisions WHERE tenant = $1 AND resource = '%s'), 0)", k.table)
}

// where writes the conditions after the tenant's and the order.
func (k *keyset) where(b *strings.Builder, args *sqldb.Args) {
	if k.category != "" {
		fmt.Fprintf(b, " AND category = %s", args.Add(k.category))
	}
	b.WriteString(sqldb.KeysetBound(k.timeCol, sqlpage.Position(k.after), k.since, k.inclusive, args.Add))
	if !k.startedAfter.IsZero() {
		fmt.Fprintf(b, " AND started_at > %s", args.Add(ms(k.startedAfter)))
	}
	fmt.Fprintf(b, " ORDER BY %s, id", k.timeCol)
}

// sizedQuery returns the [sqlpage.SizedQuery] of a page with a byte budget
// that the guarded one could not serve. Its rows are (time, id, body or
// NULL, row number[, revision]).
func (k *keyset) sizedQuery(withRev bool) (string, []any) {
	args := sqldb.Args{k.tenant}
	var inner strings.Builder
	fmt.Fprintf(&inner, "SELECT %s AS t, id, %s AS r, octet_length(body) AS n FROM %s WHERE tenant = $1", k.timeCol, k.dialect.RowAddress(), k.table)
	k.where(&inner, &args)
	fmt.Fprintf(&inner, " LIMIT %s", args.Add(k.limit+1))
	q := sqlpage.SizedQuery{Inner: inner.String(), Order: "t, id", Table: k.table, Before: "s.t, s.id", Tail: k.revision(withRev)}
	return q.SQL(k.dialect, &args, k.limit, k.maxBytes), args
}

// listRaw returns the page of stored JSON of a keyset query, through the
// page cache when there is one (see [WithPageCache]).
func (s *Source) listRaw(ctx context.Context, op string, k *keyset) (provider.Page[provider.RawRecord], error) {
	if err := sqlpage.CheckLimit(k.limit); err != nil {
		return provider.Page[provider.RawRecord]{}, err
	}
	return s.pages.page(ctx, op, k)
}

// page reads the page of k from the database: the [rawPages] of a Source
// without a page cache.
func (s *Source) page(ctx context.Context, op string, k *keyset) (provider.Page[provider.RawRecord], error) {
	p, _, err := s.readPage(ctx, op, k, false)
	return p, err
}

// readPage reads the page of k from the database, with the table's
// revision when withRev (0 for a page without rows): see [sqlpage.Read].
func (s *Source) readPage(ctx context.Context, op string, k *keyset, withRev bool) (provider.Page[provider.RawRecord], int64, error) {
	k.dialect = s.db.Dialect
	var rev int64
	p, err := sqlpage.Read(k.maxBytes, func(mode sqlpage.Mode) (provider.Page[provider.RawRecord], error) {
		query, args := k.query(mode, withRev)
		st, err := s.prepared(ctx, query)
		if err != nil {
			return provider.Page[provider.RawRecord]{}, dbError(ctx, op, err)
		}
		rows, err := st.QueryContext(ctx, args...)
		if err != nil {
			return provider.Page[provider.RawRecord]{}, dbError(ctx, op, err)
		}
		defer rows.Close()
		var (
			t   int64
			id  string
			raw sql.RawBytes
		)
		r := sqlpage.Reader{
			Limit: k.limit, MaxBytes: k.maxBytes, Mode: mode,
			Dest: []any{&t, &id, &raw}, Body: &raw,
			Append: func(buf []byte) ([]byte, provider.Key, error) {
				return append(buf, raw...), provider.Key{Time: fromMS(t), ID: id}, nil
			},
			DBError: func(err error) error { return dbError(ctx, op, err) },
		}
		if withRev {
			r.Tail = []any{&rev}
		}
		return r.Read(rows)
	})
	return p, rev, err
}

func conversationKeyset(q *provider.ConversationQuery) *keyset {
	return &keyset{
		table: "conversations", timeCol: "updated_at", tenant: q.Tenant, after: q.After,
		since: q.UpdatedSince, inclusive: true, startedAfter: q.StartedAfter, limit: q.Limit, maxBytes: q.MaxBytes,
	}
}

func assistantKeyset(q *provider.AssistantQuery) *keyset {
	return &keyset{
		table: "assistants", timeCol: "updated_at", tenant: q.Tenant, after: q.After,
		since: q.UpdatedSince, inclusive: true, limit: q.Limit, maxBytes: q.MaxBytes,
	}
}

func eventKeyset(q *provider.EventQuery) *keyset {
	return &keyset{
		table: "events", timeCol: "occurred_at", tenant: q.Tenant, after: q.After,
		since: q.OccurredAfter, category: q.Category, limit: q.Limit, maxBytes: q.MaxBytes,
	}
}

// ListConversationsRaw returns a page of the tenant's conversations as stored
// JSON, in (updatedAt, id) order, with the semantics of
// [Source.ListConversations]. It implements [provider.RawSource]. The JSON
// of the records (of every raw list) may be shared with the page cache and
// must not be modified.
func (s *Source) ListConversationsRaw(ctx context.Context, q provider.ConversationQuery) (provider.Page[provider.RawRecord], error) {
	return s.listRaw(ctx, "list conversations", conversationKeyset(&q))
}

// ListAssistantsRaw returns a page of the tenant's assistants as stored JSON,
// in (updatedAt, id) order. It implements [provider.RawSource].
func (s *Source) ListAssistantsRaw(ctx context.Context, q provider.AssistantQuery) (provider.Page[provider.RawRecord], error) {
	return s.listRaw(ctx, "list assistants", assistantKeyset(&q))
}

// ListEventsRaw returns a page of the tenant's events as stored JSON, in
// (occurredAt, id) order. It implements [provider.RawSource].
func (s *Source) ListEventsRaw(ctx context.Context, q provider.EventQuery) (provider.Page[provider.RawRecord], error) {
	return s.listRaw(ctx, "list events", eventKeyset(&q))
}

// ListConversations returns a page of the tenant's conversations in
// (updatedAt, id) order, starting after q.After, keeping those with
// updatedAt >= q.UpdatedSince and startedAt > q.StartedAfter. Tombstones are
// listed. A limit outside 1..1000 is [provider.ErrInvalid].
func (s *Source) ListConversations(ctx context.Context, q provider.ConversationQuery) (provider.Page[spec.Conversation], error) {
	p, err := s.ListConversationsRaw(ctx, q)
	return sqlpage.Decode[spec.Conversation]("sqlsource: list conversations", p, err)
}

// ListAssistants returns a page of the tenant's assistants in (updatedAt, id)
// order, starting after q.After, keeping those with updatedAt >=
// q.UpdatedSince.
func (s *Source) ListAssistants(ctx context.Context, q provider.AssistantQuery) (provider.Page[spec.Assistant], error) {
	p, err := s.ListAssistantsRaw(ctx, q)
	return sqlpage.Decode[spec.Assistant]("sqlsource: list assistants", p, err)
}

// ListEvents returns a page of the tenant's events in (occurredAt, id) order,
// starting after q.After, keeping those with occurredAt > q.OccurredAfter and,
// when q.Category is set, of that category.
func (s *Source) ListEvents(ctx context.Context, q provider.EventQuery) (provider.Page[spec.Event], error) {
	p, err := s.ListEventsRaw(ctx, q)
	return sqlpage.Decode[spec.Event]("sqlsource: list events", p, err)
}

// GetConversation returns the tenant's conversation id, or its tombstone.
// An unknown id, or another tenant's, is [provider.ErrNotFound].
func (s *Source) GetConversation(ctx context.Context, tenant, id string) (spec.Conversation, error) {
	var c spec.Conversation
	err := s.get(ctx, "conversation", `SELECT body FROM conversations WHERE tenant = $1 AND id = $2`, tenant, id, &c)
	return c, err
}

// GetAssistant returns the tenant's assistant id. An unknown id, or another
// tenant's, is [provider.ErrNotFound].
func (s *Source) GetAssistant(ctx context.Context, tenant, id string) (spec.Assistant, error) {
	var a spec.Assistant
	err := s.get(ctx, "assistant", `SELECT body FROM assistants WHERE tenant = $1 AND id = $2`, tenant, id, &a)
	return a, err
}

func (s *Source) get(ctx context.Context, what, query, tenant, id string, v any) error {
	st, err := s.prepared(ctx, query)
	if err != nil {
		return dbError(ctx, "get "+what, err)
	}
	var body []byte
	err = st.QueryRowContext(ctx, tenant, id).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(what, id)
	}
	if err != nil {
		return dbError(ctx, "get "+what, err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("sqlsource: get %s: stored record %q: %v", what, id, err)
	}
	return nil
}

func notFound(what, id string) error {
	return &provider.Error{Kind: provider.ErrNotFound, Detail: fmt.Sprintf("no %s with id %q", what, id)}
}
