package sqlstore

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

// keyset describes one keyset query of the collected view: a page of one
// source's records of one resource in (pos_ms, id) order.
type keyset struct {
	resource string // conversations, assistants, events
	source   string
	after    *provider.Key
	// atOrAfter starts the page at the position rather than strictly after
	// it: the merged view's page of a source that sorts after the source of
	// the position (see [Merged]).
	atOrAfter bool
	// since bounds pos_ms from below: inclusive (updatedSince) or exclusive
	// (occurredAfter). Zero: no bound.
	since     time.Time
	inclusive bool
	// startedAfter keeps rows with started_ms > startedAfter (exclusive).
	startedAfter time.Time
	category     string
	limit        int
	// maxBytes, when positive, is the byte budget of the page's records:
	// the query sizes the rows before it reads their bodies (see
	// [sqldb.SizedPage]).
	maxBytes int
}

// viewColumns are the columns a page of the collected view reads, in the
// order storedRow scans them.
const viewColumns = "pos_ms, time_ms, id, body, missing_at, deleted, started_ms"

// sizedColumns are the columns the keyset query of a sized page reads (see
// [sizedSQL]): those of viewColumns but the body, the row's address (r, an
// argument of fmt) and the byte length of the body (n).
const sizedColumns = "pos_ms, time_ms, id, missing_at, deleted, started_ms, %s AS r, octet_length(body) AS n"

// guardedColumns are the columns of the first query of a page with a byte
// budget (see [pageMode]): those of viewColumns, the body NULL when it is
// longer than the first argument ($1), then its byte length (n).
const guardedColumns = "pos_ms, time_ms, id, CASE WHEN octet_length(body) <= $1 THEN body END AS body, missing_at, deleted, started_ms"

// pageMode says which query reads a page, and so what its rows hold.
type pageMode int

const (
	// plain rows are those of viewColumns: a page without a byte budget.
	plain pageMode = iota
	// guarded rows are those of viewColumns with the bodies of at most
	// guardBytes (NULL otherwise), then the byte length: the first query
	// of a page with a byte budget. A page whose records are smaller, the
	// common case, costs one query, as a plain one does.
	guarded
	// sized rows are those of [sizedSQL], for a page the guarded query
	// could not serve: a body it left out fits the budget.
	sized
)

// guardBytes is the largest body the guarded query of a page reads:
// limit+1 of them take at most the budget.
func guardBytes(maxBytes, limit int) int { return maxBytes / (limit + 1) }

// errSized is readPage's answer to a guarded query that left out a body
// the page needs.
var errSized = errors.New("sqlstore: a body of the page was left out")

// sql returns the query of k's page in mode (see [pageMode]) and its
// arguments. It reads one range of the index (source, resource, pos_ms,
// id): the lower bound is whichever of the keyset position and the time
// filter is the tighter. Conversations marked Missing stay in (served as
// tombstones); other records marked Missing are left out.
func (k *keyset) sql(d sqldb.Dialect, mode pageMode) (string, []any) {
	var b strings.Builder
	var args []any
	switch mode {
	case guarded:
		args = append(args, guardBytes(k.maxBytes, k.limit))
		k.write(&b, &args, guardedColumns+", octet_length(body) AS n")
	case sized:
		k.write(&b, &args, fmt.Sprintf(sizedColumns, d.RowAddress()))
		return sizedSQL(d, b.String(), args, "pos_ms, id", "", k.limit, k.maxBytes)
	default:
		k.write(&b, &args, viewColumns)
	}
	return b.String(), args
}

// sizedSQL wraps inner, a keyset query of sizedColumns (and extra, ", source"
// or "") in list order (order), into the query of a page with a byte
// budget (see [sqldb.SizedPage]): its rows are those of viewColumns (and
// extra), the body NULL in the row that ends the page, then the row's
// number.
func sizedSQL(d sqldb.Dialect, inner string, args []any, order, extra string, limit, maxBytes int) (string, []any) {
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	f := sqldb.SizedPage(inner, order, arg(limit), arg(maxBytes))
	var cols strings.Builder
	for c := range strings.SplitSeq(extra, ",") {
		if c = strings.TrimSpace(c); c != "" {
			cols.WriteString(", s." + c)
		}
	}
	return fmt.Sprintf("%sSELECT s.pos_ms, s.time_ms, s.id, CASE WHEN %s THEN (SELECT body FROM consumer_records WHERE %s = s.r) END,"+
		" s.missing_at, s.deleted, s.started_ms%s, s.i FROM sized s WHERE %s", f.With, f.Fits, d.RowAddress(), cols.String(), f.Where), args
}

// write writes the query of k selecting columns to b, its arguments
// appended to args.
func (k *keyset) write(b *strings.Builder, args *[]any, columns string) {
	arg := func(v any) string {
		*args = append(*args, v)
		return "$" + strconv.Itoa(len(*args))
	}
	// The resource is a literal: one of three constants.
	fmt.Fprintf(b, "SELECT %s FROM consumer_records WHERE source = %s AND resource = '%s'", columns, arg(k.source), k.resource)
	if k.resource != "conversations" {
		b.WriteString(" AND missing_at IS NULL")
	}
	if k.category != "" {
		fmt.Fprintf(b, " AND category = %s", arg(k.category))
	}
	b.WriteString(keysetBound(position(k.after), k.atOrAfter, k.since, k.inclusive, arg))
	if !k.startedAfter.IsZero() {
		fmt.Fprintf(b, " AND started_ms > %s", arg(ms(k.startedAfter)))
	}
	fmt.Fprintf(b, " ORDER BY pos_ms, id LIMIT %s", arg(k.limit+1))
}

// keysetBound is [sqldb.KeysetBound] on pos_ms, except that with atOrAfter
// a page starts at the position itself: (pos_ms, id) >= (...).
func keysetBound(after *sqldb.Position, atOrAfter bool, since time.Time, inclusive bool, arg func(any) string) string {
	if !atOrAfter || after == nil {
		return sqldb.KeysetBound("pos_ms", after, since, inclusive, arg)
	}
	if !since.IsZero() {
		lo := sqldb.Millis(since) + 1
		if inclusive {
			lo = sqldb.MillisCeil(since)
		}
		if after.Millis < lo {
			// Every row with pos_ms >= lo follows the position.
			return fmt.Sprintf(" AND pos_ms >= %s", arg(lo))
		}
	}
	return fmt.Sprintf(" AND (pos_ms, id) >= (%s, %s)", arg(after.Millis), arg(after.ID))
}

// listRaw runs a keyset query. The records' bytes share one buffer per
// page.
func (s *Store) listRaw(ctx context.Context, op string, k *keyset) (provider.Page[provider.RawRecord], error) {
	if err := checkLimit(k.limit); err != nil {
		return provider.Page[provider.RawRecord]{}, err
	}
	mode := plain
	if k.maxBytes > 0 {
		mode = guarded
	}
	p, err := s.queryPage(ctx, op, k, mode)
	if errors.Is(err, errSized) {
		return s.queryPage(ctx, op, k, sized)
	}
	return p, err
}

// queryPage reads k's page with the query of mode.
func (s *Store) queryPage(ctx context.Context, op string, k *keyset, mode pageMode) (provider.Page[provider.RawRecord], error) {
	query, args := k.sql(s.db.Dialect, mode)
	st, err := s.prepared(ctx, query)
	if err != nil {
		return provider.Page[provider.RawRecord]{}, dbError(ctx, op, err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return provider.Page[provider.RawRecord]{}, dbError(ctx, op, err)
	}
	defer rows.Close()
	return readPage(ctx, op, rows, k, mode, false)
}

// readPage reads a page of at most k.limit records, and whether more
// follow, from rows of viewColumns; with merged, rows have the source as
// one more column, each record is served with its sourceId and its key
// names its source (see [mergedKeyID]). In the modes of a byte budget
// (k.maxBytes), a last column holds each row's byte length (guarded) or
// number (sized), and the page ends at the first record past the budget;
// a guarded query that left out a body the page needs is [errSized].
func readPage(ctx context.Context, op string, rows *sql.Rows, k *keyset, mode pageMode, merged bool) (provider.Page[provider.RawRecord], error) {
	limit := k.limit
	n := min(limit, 128)
	keys := make([]provider.Key, 0, n)
	ends := make([]int, 0, n)
	var (
		buf     []byte
		hasMore bool
		source  string
		extra   int64 // the byte length (guarded), the row number (sized)
		size    int   // of the records so far, joined by commas, as sized
	)
rows:
	for rows.Next() {
		if len(keys) == limit {
			hasMore = true
			break
		}
		var r storedRow
		dest := []any{&r.pos, &r.time, &r.id, &r.body, &r.missingAt, &r.deleted, &r.started}
		if merged {
			dest = append(dest, &source)
		}
		if mode != plain {
			dest = append(dest, &extra)
		}
		if err := rows.Scan(dest...); err != nil {
			return provider.Page[provider.RawRecord]{}, dbError(ctx, op, err)
		}
		switch mode {
		case guarded:
			if len(keys) > 0 && size+1+int(extra) > k.maxBytes {
				hasMore = true // the record past the budget
				break rows
			}
			if r.body == nil {
				return provider.Page[provider.RawRecord]{}, errSized
			}
			size += int(extra)
			if len(keys) > 0 {
				size++
			}
		case sized:
			if extra != int64(len(keys)+1) {
				return provider.Page[provider.RawRecord]{}, fmt.Errorf("sqlstore: %s: sized page: row %d came as row %d", op, extra, len(keys)+1)
			}
			if r.body == nil { // the record past the limit or the budget
				hasMore = true
				break rows
			}
		}
		body, err := r.served()
		if err != nil {
			return provider.Page[provider.RawRecord]{}, fmt.Errorf("sqlstore: %s: %w", op, err)
		}
		if buf == nil {
			size := len(body)*n + len(body)*n/4
			if k.maxBytes > 0 {
				// No more than the budget (or the first record) allows.
				size = min(size, max(k.maxBytes, len(body))+64)
			}
			buf = make([]byte, 0, size)
		}
		key := provider.Key{Time: fromMS(r.pos), ID: r.id}
		if merged {
			if buf, err = appendWithSourceID(buf, body, source); err != nil {
				return provider.Page[provider.RawRecord]{}, fmt.Errorf("sqlstore: %s: stored record %q: %v", op, r.id, err)
			}
			key.ID = mergedKeyID(source, r.id)
		} else {
			buf = append(buf, body...)
		}
		keys = append(keys, key)
		ends = append(ends, len(buf))
	}
	if err := rows.Err(); err != nil {
		return provider.Page[provider.RawRecord]{}, dbError(ctx, op, err)
	}
	if cap(buf) > len(buf)+len(buf)/2 {
		buf = bytes.Clone(buf) // a short page: keep no more than its bytes
	}
	items := make([]provider.RawRecord, len(keys))
	start := 0
	for i, end := range ends {
		items[i] = provider.RawRecord{Key: keys[i], JSON: json.RawMessage(buf[start:end:end])}
		start = end
	}
	return provider.Page[provider.RawRecord]{Items: items, HasMore: hasMore}, nil
}

// storedRow is a record of the collected view as read.
type storedRow struct {
	pos, time int64
	id        string
	body      sql.RawBytes
	missingAt sql.NullInt64
	deleted   bool
	started   int64
}

// served returns the JSON the collected view serves for r: the stored body;
// for a conversation marked Missing that was not a tombstone, a tombstone
// deleted (and updated) at the Missing time; for a conversation listed
// later than its Time (one that came back after it was marked Missing), the
// stored body with updatedAt set to its position, so that a reader polling
// with updatedSince sees it where it is listed. The result may alias
// r.body.
func (r *storedRow) served() ([]byte, error) {
	if r.missingAt.Valid && !r.deleted {
		return r.tombstone()
	}
	if r.pos == r.time { // always, but for conversations that came back
		return r.body, nil
	}
	at, err := spec.NewTime(fromMS(r.pos)).MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("stored conversation %q: position: %v", r.id, err)
	}
	b, err := setMember(r.body, "updatedAt", at)
	if err != nil {
		return nil, fmt.Errorf("stored conversation %q: %v", r.id, err)
	}
	return b, nil
}

func (r *storedRow) tombstone() ([]byte, error) {
	var c struct {
		ConversationID string    `json:"conversationId"`
		StartedAt      spec.Time `json:"startedAt"`
	}
	if err := json.Unmarshal(r.body, &c); err != nil {
		return nil, fmt.Errorf("stored conversation %q: %v", r.id, err)
	}
	if c.StartedAt.IsZero() {
		c.StartedAt = spec.NewTime(fromMS(r.started))
	}
	at := spec.NewTime(fromMS(r.missingAt.Int64))
	b, err := json.Marshal(spec.Conversation{
		ID: r.id, ConversationID: c.ConversationID, StartedAt: c.StartedAt, UpdatedAt: at, DeletedAt: at,
	})
	if err != nil {
		return nil, fmt.Errorf("tombstone of conversation %q: %v", r.id, err)
	}
	return b, nil
}

// setMember returns a copy of the JSON object obj in which the value of
// every top-level member named name (compared once unescaped) is value,
// every other byte as it was; when there is no such member, it is added
// last (name must need no escaping).
func setMember(obj []byte, name string, value []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var (
		out     []byte
		copied  int // obj[:copied] is in out
		members int
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		members++
		if key, _ := tok.(string); key == name {
			end := int(dec.InputOffset())
			out = append(append(out, obj[copied:end-len(v)]...), value...)
			copied = end
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if out == nil {
		closing := int(dec.InputOffset()) - 1
		out = append(out, obj[:closing]...)
		if members > 0 {
			out = append(out, ',')
		}
		out = append(append(append(append(out, '"'), name...), `":`...), value...)
		copied = closing
	}
	return append(out, obj[copied:]...), nil
}

// decodePage decodes a page of stored JSON into records.
func decodePage[T any](op string, p provider.Page[provider.RawRecord], err error) (provider.Page[T], error) {
	if err != nil {
		return provider.Page[T]{}, err
	}
	items := make([]T, len(p.Items))
	for i, r := range p.Items {
		if err := json.Unmarshal(r.JSON, &items[i]); err != nil {
			return provider.Page[T]{}, fmt.Errorf("sqlstore: %s: stored record %q: %v", op, r.Key.ID, err)
		}
	}
	return provider.Page[T]{Items: items, HasMore: p.HasMore}, nil
}

// ListConversationsRaw returns a page of the conversations collected from
// source q.Tenant as stored JSON, in (updatedAt, id) order, with the
// semantics of [Store.ListConversations]. It implements
// [provider.RawSource].
func (s *Store) ListConversationsRaw(ctx context.Context, q provider.ConversationQuery) (provider.Page[provider.RawRecord], error) {
	return s.listRaw(ctx, "list conversations", &keyset{
		resource: "conversations", source: q.Tenant, after: q.After,
		since: q.UpdatedSince, inclusive: true, startedAfter: q.StartedAfter, limit: q.Limit, maxBytes: q.MaxBytes,
	})
}

// ListAssistantsRaw returns a page of the assistants collected from source
// q.Tenant as stored JSON, in (updatedAt, id) order. It implements
// [provider.RawSource].
func (s *Store) ListAssistantsRaw(ctx context.Context, q provider.AssistantQuery) (provider.Page[provider.RawRecord], error) {
	return s.listRaw(ctx, "list assistants", &keyset{
		resource: "assistants", source: q.Tenant, after: q.After, since: q.UpdatedSince, inclusive: true, limit: q.Limit, maxBytes: q.MaxBytes,
	})
}

// ListEventsRaw returns a page of the events collected from source q.Tenant
// as stored JSON, in (occurredAt, id) order. It implements
// [provider.RawSource].
func (s *Store) ListEventsRaw(ctx context.Context, q provider.EventQuery) (provider.Page[provider.RawRecord], error) {
	return s.listRaw(ctx, "list events", &keyset{
		resource: "events", source: q.Tenant, after: q.After, since: q.OccurredAfter, category: q.Category, limit: q.Limit, maxBytes: q.MaxBytes,
	})
}

// ListConversations returns a page of the conversations collected from
// source q.Tenant in (updatedAt, id) order, starting after q.After, keeping
// those with updatedAt >= q.UpdatedSince and startedAt > q.StartedAfter.
// Tombstones are listed, and so are conversations a full re-pull no longer
// found (marked Missing): as tombstones deleted at the Missing time, listed
// at that time. An unknown source has no conversations. A limit outside
// 1..1000 is [provider.ErrInvalid]. It implements [provider.DataSource].
func (s *Store) ListConversations(ctx context.Context, q provider.ConversationQuery) (provider.Page[spec.Conversation], error) {
	p, err := s.ListConversationsRaw(ctx, q)
	return decodePage[spec.Conversation]("list conversations", p, err)
}

// ListAssistants returns a page of the assistants collected from source
// q.Tenant in (updatedAt, id) order, starting after q.After, keeping those
// with updatedAt >= q.UpdatedSince. Assistants marked Missing are left out.
// It implements [provider.DataSource].
func (s *Store) ListAssistants(ctx context.Context, q provider.AssistantQuery) (provider.Page[spec.Assistant], error) {
	p, err := s.ListAssistantsRaw(ctx, q)
	return decodePage[spec.Assistant]("list assistants", p, err)
}

// ListEvents returns a page of the events collected from source q.Tenant in
// (occurredAt, id) order, starting after q.After, keeping those with
// occurredAt > q.OccurredAfter and, when q.Category is set, of that
// category. Events marked Missing are left out. It implements
// [provider.DataSource].
func (s *Store) ListEvents(ctx context.Context, q provider.EventQuery) (provider.Page[spec.Event], error) {
	p, err := s.ListEventsRaw(ctx, q)
	return decodePage[spec.Event]("list events", p, err)
}

const (
	getConversationSQL = `SELECT pos_ms, time_ms, id, body, missing_at, deleted, started_ms FROM consumer_records
WHERE source = $1 AND resource = 'conversations' AND id = $2`
	getAssistantSQL = `SELECT pos_ms, time_ms, id, body, missing_at, deleted, started_ms FROM consumer_records
WHERE source = $1 AND resource = 'assistants' AND id = $2 AND missing_at IS NULL`
)

// GetConversationRaw returns the JSON of conversation id collected from
// source tenant, exactly as [Store.ListConversationsRaw] lists it. An
// unknown id or source is [provider.ErrNotFound]. It implements
// [provider.RawGetter].
func (s *Store) GetConversationRaw(ctx context.Context, tenant, id string) (json.RawMessage, error) {
	return s.getRaw(ctx, "conversation", getConversationSQL, tenant, id)
}

// GetAssistantRaw returns the stored JSON of assistant id collected from
// source tenant. An unknown id or source, or an assistant marked Missing,
// is [provider.ErrNotFound]. It implements [provider.RawGetter].
func (s *Store) GetAssistantRaw(ctx context.Context, tenant, id string) (json.RawMessage, error) {
	return s.getRaw(ctx, "assistant", getAssistantSQL, tenant, id)
}

// GetConversation returns conversation id collected from source tenant, or
// its tombstone (see [Store.ListConversations]). An unknown id or source is
// [provider.ErrNotFound]. It implements [provider.DataSource].
func (s *Store) GetConversation(ctx context.Context, tenant, id string) (spec.Conversation, error) {
	var c spec.Conversation
	err := s.get(ctx, "conversation", getConversationSQL, tenant, id, &c)
	return c, err
}

// GetAssistant returns assistant id collected from source tenant. An
// unknown id or source, or an assistant marked Missing, is
// [provider.ErrNotFound]. It implements [provider.DataSource].
func (s *Store) GetAssistant(ctx context.Context, tenant, id string) (spec.Assistant, error) {
	var a spec.Assistant
	err := s.get(ctx, "assistant", getAssistantSQL, tenant, id, &a)
	return a, err
}

func (s *Store) get(ctx context.Context, what, query, tenant, id string, v any) error {
	body, err := s.getRaw(ctx, what, query, tenant, id)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("sqlstore: get %s: stored record %q: %v", what, id, err)
	}
	return nil
}

func (s *Store) getRaw(ctx context.Context, what, query, tenant, id string) (json.RawMessage, error) {
	st, err := s.prepared(ctx, query)
	if err != nil {
		return nil, dbError(ctx, "get "+what, err)
	}
	var r storedRow
	var body []byte
	err = st.QueryRowContext(ctx, tenant, id).Scan(&r.pos, &r.time, &r.id, &body, &r.missingAt, &r.deleted, &r.started)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &provider.Error{Kind: provider.ErrNotFound, Detail: fmt.Sprintf("no %s with id %q", what, id)}
	}
	if err != nil {
		return nil, dbError(ctx, "get "+what, err)
	}
	r.body = body
	out, err := r.served()
	if err != nil {
		return nil, fmt.Errorf("sqlstore: get %s: %w", what, err)
	}
	return json.RawMessage(out), nil
}
