package sqlsource

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/infra/sqldb"
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
	// [sqldb.SizedPage]).
	maxBytes int
	// dialect decides the row address of a sized query.
	dialect sqldb.Dialect
}

// sql returns the query and its arguments. The query reads exactly one
// index range: the lower bound on (timeCol, id) is whichever of the keyset
// position and the time filter is the tighter, so that only one range
// condition constrains the index. Its rows are (time, id, body); with a
// byte budget, (time, id, body or NULL, byte length) (see [pageMode]).
func (k *keyset) sql() (string, []any) { return k.query(false) }

// sqlWithRevision returns the query of sql with one more column: the
// tenant's revision of the table (0 before its first write), read in the
// same statement, and so from the same snapshot, as the rows.
func (k *keyset) sqlWithRevision() (string, []any) { return k.query(true) }

// query returns the query of sql, with the revision column when withRev.
func (k *keyset) query(withRev bool) (string, []any) {
	var b strings.Builder
	args := []any{k.tenant}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	body := "body"
	if k.maxBytes > 0 {
		// A body larger than a fair share of the budget is left out
		// (NULL); its byte length, read without it, tells whether it fits.
		body = fmt.Sprintf("CASE WHEN octet_length(body) <= %s THEN body END, octet_length(body)", arg(guardBytes(k.maxBytes, k.limit)))
	}
	fmt.Fprintf(&b, "SELECT %s, id, %s%s FROM %s WHERE tenant = $1", k.timeCol, body, k.revision(withRev), k.table)
	k.where(&b, arg)
	fmt.Fprintf(&b, " LIMIT %s", arg(k.limit+1))
	return b.String(), args
}

// guardBytes is the largest body the first query of a page with a byte
// budget reads: limit+1 of them take at most the budget.
func guardBytes(maxBytes, limit int) int { return maxBytes / (limit + 1) }

// revision returns the revision column, or "" without withRev. k.table is
// one of the package's table names, never input.
func (k *keyset) revision(withRev bool) string {
	if !withRev {
		return ""
	}
	return fmt.Sprintf(", COALESCE((SELECT rev FROM provider_revisions WHERE tenant = $1 AND resource = '%s'), 0)", k.table)
}

// where writes the conditions after the tenant's and the order.
func (k *keyset) where(b *strings.Builder, arg func(any) string) {
	if k.category != "" {
		fmt.Fprintf(b, " AND category = %s", arg(k.category))
	}
	b.WriteString(sqldb.KeysetBound(k.timeCol, position(k.after), k.since, k.inclusive, arg))
	if !k.startedAfter.IsZero() {
		fmt.Fprintf(b, " AND started_at > %s", arg(ms(k.startedAfter)))
	}
	fmt.Fprintf(b, " ORDER BY %s, id", k.timeCol)
}

// sizedQuery returns the query of a page with a byte budget that the
// first one (of sql) could not serve, because a body it left out fits:
// the keyset query selects the rows' positions and the byte lengths of
// their bodies, and only the bodies that fit the budget are read (see
// [sqldb.SizedPage]). Its rows are (time, id, body or NULL, row
// number[, revision]).
func (k *keyset) sizedQuery(withRev bool) (string, []any) {
	var b strings.Builder
	args := []any{k.tenant}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	addr := k.dialect.RowAddress()
	var inner strings.Builder
	fmt.Fprintf(&inner, "SELECT %s AS t, id, %s AS r, octet_length(body) AS n FROM %s WHERE tenant = $1", k.timeCol, addr, k.table)
	k.where(&inner, arg)
	fmt.Fprintf(&inner, " LIMIT %s", arg(k.limit+1))
	f := sqldb.SizedPage(inner.String(), "t, id", arg(k.limit), arg(k.maxBytes))
	fmt.Fprintf(&b, "%sSELECT s.t, s.id, CASE WHEN %s THEN (SELECT body FROM %s WHERE %s = s.r) END, s.i%s FROM sized s WHERE %s",
		f.With, f.Fits, k.table, addr, k.revision(withRev), f.Where)
	return b.String(), args
}

func checkLimit(limit int) error {
	if limit < 1 || limit > provider.MaxLimit {
		return provider.Invalid("limit", "must be between 1 and %d, not %d", provider.MaxLimit, limit)
	}
	return nil
}

// position is the keyset position of k, or nil.
func position(k *provider.Key) *sqldb.Position {
	if k == nil {
		return nil
	}
	return &sqldb.Position{Millis: ms(k.Time), ID: k.ID}
}

// listRaw returns the page of stored JSON of a keyset query: from the page
// cache while the tenant's table is unchanged since the page was read,
// otherwise from the database.
//
// A page not in the cache at all (the common case of a client walking the
// whole list, each page once) is read with its revision in one statement
// (see [keyset.sqlWithRevision]), one round trip instead of two; a page in
// the cache is checked against the revision first.
func (s *Source) listRaw(ctx context.Context, op string, k *keyset) (provider.Page[provider.RawRecord], error) {
	if err := checkLimit(k.limit); err != nil {
		return provider.Page[provider.RawRecord]{}, err
	}
	k.dialect = s.db.Dialect
	if s.cache == nil {
		p, _, err := s.readPage(ctx, op, k, false)
		return p, err
	}
	key := cacheKey(k.sql())
	if !s.cache.has(key) {
		p, rev, err := s.readPage(ctx, op, k, true)
		if err == nil && len(p.Items) > 0 {
			s.cache.put(key, rev, p)
		}
		return p, err
	}
	rev, err := s.revision(ctx, revKey{k.tenant, k.table})
	if err != nil {
		return provider.Page[provider.RawRecord]{}, dbError(ctx, op, err)
	}
	if p, ok := s.cache.get(key, rev); ok {
		return p, nil
	}
	p, _, err := s.readPage(ctx, op, k, false)
	if err == nil {
		s.cache.put(key, rev, p)
	}
	return p, err
}

// pageMode says what the rows of a keyset query hold.
type pageMode int

const (
	// plain rows are (time, id, body): a page without a byte budget.
	plain pageMode = iota
	// guarded rows are (time, id, body or NULL, byte length): the first
	// query of a page with a byte budget, which reads the bodies of at
	// most guardBytes. A page whose records are smaller, the common case,
	// costs one query, as a plain one does.
	guarded
	// sized rows are (time, id, body or NULL, row number): the query of
	// [keyset.sizedQuery], for a page the guarded query could not serve.
	sized
)

// errSized is queryRaw's answer to a guarded query that left out a body
// the page needs.
var errSized = errors.New("sqlsource: a body of the page was left out")

// readPage reads the page of k, with the table's revision when withRev:
// with a byte budget, first with the guarded query and, when it left out a
// body that fits, again with the sized one. Either way no more than about
// the budget of bodies is read.
func (s *Source) readPage(ctx context.Context, op string, k *keyset, withRev bool) (provider.Page[provider.RawRecord], int64, error) {
	mode := plain
	if k.maxBytes > 0 {
		mode = guarded
	}
	query, args := k.query(withRev)
	p, rev, err := s.queryRaw(ctx, op, k, query, args, withRev, mode)
	if errors.Is(err, errSized) {
		query, args = k.sizedQuery(withRev)
		return s.queryRaw(ctx, op, k, query, args, withRev, sized)
	}
	return p, rev, err
}

// queryRaw runs a keyset query of k whose rows mode describes. The
// records' bytes share one buffer per page, joined by commas as the list
// serves them. With a byte budget (k.maxBytes), the page ends at the first
// record past it (see [provider.DataSource]). With withRev, each row has
// one more column, the table's revision (the same in every row), returned
// as rev; a page without rows then has revision 0.
func (s *Source) queryRaw(ctx context.Context, op string, k *keyset, query string, args []any, withRev bool, mode pageMode) (provider.Page[provider.RawRecord], int64, error) {
	st, err := s.prepared(ctx, query)
	if err != nil {
		return provider.Page[provider.RawRecord]{}, 0, dbError(ctx, op, err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return provider.Page[provider.RawRecord]{}, 0, dbError(ctx, op, err)
	}
	defer rows.Close()

	limit := k.limit
	keys := make([]provider.Key, 0, min(limit, 128))
	starts := make([]int, 0, min(limit, 128))
	ends := make([]int, 0, min(limit, 128))
	var (
		buf     []byte
		raw     sql.RawBytes
		hasMore bool
		extra   int64 // the byte length (guarded), the row number (sized)
		rev     int64
	)
	dest := []any{nil, nil, &raw}
	if mode != plain {
		dest = append(dest, &extra)
	}
	if withRev {
		dest = append(dest, &rev)
	}
rows:
	for rows.Next() {
		if len(keys) == limit {
			hasMore = true
			break
		}
		var (
			t  int64
			id string
		)
		dest[0], dest[1] = &t, &id
		if err := rows.Scan(dest...); err != nil {
			return provider.Page[provider.RawRecord]{}, 0, dbError(ctx, op, err)
		}
		switch mode {
		case guarded:
			if len(keys) > 0 && len(buf)+1+int(extra) > k.maxBytes {
				hasMore = true // the record past the budget
				break rows
			}
			if raw == nil {
				return provider.Page[provider.RawRecord]{}, 0, errSized
			}
		case sized:
			if extra != int64(len(keys)+1) {
				return provider.Page[provider.RawRecord]{}, 0, fmt.Errorf("sqlsource: %s: sized page: row %d came as row %d", op, extra, len(keys)+1)
			}
			if raw == nil { // the record past the limit or the budget
				hasMore = true
				break rows
			}
		}
		if buf == nil {
			buf = make([]byte, 0, pageBufferSize(len(raw), limit, k.maxBytes))
		} else {
			// The records lie as the list serves them, joined by commas
			// (see provider.RawRecord): the handler writes them as they are.
			buf = append(buf, ',')
		}
		starts = append(starts, len(buf))
		buf = append(buf, raw...)
		keys = append(keys, provider.Key{Time: fromMS(t), ID: id})
		ends = append(ends, len(buf))
	}
	if err := rows.Err(); err != nil {
		return provider.Page[provider.RawRecord]{}, 0, dbError(ctx, op, err)
	}
	if cap(buf) > len(buf)+len(buf)/2 {
		// A short page: keep (and cache) no more than its bytes.
		buf = bytes.Clone(buf)
	}
	items := make([]provider.RawRecord, len(keys))
	for i, end := range ends {
		// Not capped at end: the capacity reaches into the next record.
		items[i] = provider.RawRecord{Key: keys[i], JSON: json.RawMessage(buf[starts[i]:end])}
	}
	return provider.Page[provider.RawRecord]{Items: items, HasMore: hasMore}, rev, nil
}

// pageBufferSize is the capacity to start a page's buffer with, given its
// first record's size: room for the page (up to 128 records) if its
// records are about the size of the first, but no more than the byte
// budget (when there is one) and the first record allow.
func pageBufferSize(first, limit, maxBytes int) int {
	n := min(limit, 128)
	size := (first+1)*n + first*n/4
	if maxBytes > 0 {
		size = min(size, max(maxBytes, first)+1)
	}
	return size
}

// decodePage decodes a page of stored JSON into records.
func decodePage[T any](op string, p provider.Page[provider.RawRecord], err error) (provider.Page[T], error) {
	if err != nil {
		return provider.Page[T]{}, err
	}
	items := make([]T, len(p.Items))
	for i, r := range p.Items {
		if err := json.Unmarshal(r.JSON, &items[i]); err != nil {
			return provider.Page[T]{}, fmt.Errorf("sqlsource: %s: stored record %q: %v", op, r.Key.ID, err)
		}
	}
	return provider.Page[T]{Items: items, HasMore: p.HasMore}, nil
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
	return decodePage[spec.Conversation]("list conversations", p, err)
}

// ListAssistants returns a page of the tenant's assistants in (updatedAt, id)
// order, starting after q.After, keeping those with updatedAt >=
// q.UpdatedSince.
func (s *Source) ListAssistants(ctx context.Context, q provider.AssistantQuery) (provider.Page[spec.Assistant], error) {
	p, err := s.ListAssistantsRaw(ctx, q)
	return decodePage[spec.Assistant]("list assistants", p, err)
}

// ListEvents returns a page of the tenant's events in (occurredAt, id) order,
// starting after q.After, keeping those with occurredAt > q.OccurredAfter and,
// when q.Category is set, of that category.
func (s *Source) ListEvents(ctx context.Context, q provider.EventQuery) (provider.Page[spec.Event], error) {
	p, err := s.ListEventsRaw(ctx, q)
	return decodePage[spec.Event]("list events", p, err)
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
