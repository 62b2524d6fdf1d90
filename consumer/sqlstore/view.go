package sqlstore

import (
	"bytes"
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
	// [sqlpage.Read]).
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
// budget (see [sqlpage.Guarded]): those of viewColumns, the body NULL when
// it is longer than the first argument ($1), then its byte length (n).
const guardedColumns = "pos_ms, time_ms, id, CASE WHEN octet_length(body) <= $1 THEN body END AS body, missing_at, deleted, started_ms"

// sql returns the query of k's page in mode and its arguments. It reads
// one range of the index (source, resource, pos_ms, id): the lower bound
// is whichever of the keyset position and the time filter is the tighter.
// Conversations marked Missing stay in (served as tombstones); other
// records marked Missing are left out.
func (k *keyset) sql(d sqldb.Dialect, mode sqlpage.Mode) (string, []any) {
	var b strings.Builder
	var args sqldb.Args
	switch mode {
	case sqlpage.Guarded:
		args.Add(sqlpage.GuardBytes(k.maxBytes, k.limit))
		k.write(&b, &args, guardedColumns+", octet_length(body) AS n")
	case sqlpage.Sized:
		k.write(&b, &args, fmt.Sprintf(sizedColumns, d.RowAddress()))
		return sizedSQL(d, b.String(), args, "pos_ms, id", "", k.limit, k.maxBytes)
	default:
		k.write(&b, &args, viewColumns)
	}
	return b.String(), args
}

// sizedSQL wraps inner, a keyset query of sizedColumns (and extra, ", s.source"
// or "") in list order (order), into the [sqlpage.SizedQuery] of a page
// with a byte budget: its rows are those of viewColumns (and extra), the
// body NULL in the row that ends the page, then the row's number.
func sizedSQL(d sqldb.Dialect, inner string, args sqldb.Args, order, extra string, limit, maxBytes int) (string, []any) {
	q := sqlpage.SizedQuery{
		Inner: inner, Order: order, Table: "consumer_records",
		Before: "s.pos_ms, s.time_ms, s.id", After: ", s.missing_at, s.deleted, s.started_ms" + extra,
	}
	return q.SQL(d, &args, limit, maxBytes), args
}

// write writes the query of k selecting columns to b, its arguments
// appended to args.
func (k *keyset) write(b *strings.Builder, args *sqldb.Args, columns string) {
	// The resource is a literal: one of three constants.
	fmt.Fprintf(b, "SELECT %s FROM consumer_records WHERE source = %s AND resource = '%s'", columns, args.Add(k.source), k.resource)
	if k.resource != "conversations" {
		b.WriteString(" AND missing_at IS NULL")
	}
	if k.category != "" {
		fmt.Fprintf(b, " AND category = %s", args.Add(k.category))
	}
	b.WriteString(keysetBound(sqlpage.Position(k.after), k.atOrAfter, k.since, k.inclusive, args.Add))
	if !k.startedAfter.IsZero() {
		fmt.Fprintf(b, " AND started_ms > %s", args.Add(ms(k.startedAfter)))
	}
	fmt.Fprintf(b, " ORDER BY pos_ms, id LIMIT %s", args.Add(k.limit+1))
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

// listRaw reads a page of k (see [sqlpage.Read]).
func (s *Store) listRaw(ctx context.Context, op string, k *keyset) (provider.Page[provider.RawRecord], error) {
	if err := sqlpage.CheckLimit(k.limit); err != nil {
		return provider.Page[provider.RawRecord]{}, err
	}
	return sqlpage.Read(k.maxBytes, func(mode sqlpage.Mode) (provider.Page[provider.RawRecord], error) {
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
	})
}

// readPage reads a page of k from rows of viewColumns (see
// [sqlpage.Reader]); with merged, rows have the source as one more column,
// each record is served with its sourceId and its key names its source
// (see [mergedKeyID]).
func readPage(ctx context.Context, op string, rows *sql.Rows, k *keyset, mode sqlpage.Mode, merged bool) (provider.Page[provider.RawRecord], error) {
	var (
		r      storedRow
		source string
	)
	dest := []any{&r.pos, &r.time, &r.id, &r.body, &r.missingAt, &r.deleted, &r.started}
	if merged {
		dest = append(dest, &source)
	}
	reader := sqlpage.Reader{
		Limit: k.limit, MaxBytes: k.maxBytes, Mode: mode, Dest: dest, Body: &r.body,
		Append: func(buf []byte) ([]byte, provider.Key, error) {
			body, err := r.served()
			if err != nil {
				return nil, provider.Key{}, fmt.Errorf("sqlstore: %s: %w", op, err)
			}
			key := provider.Key{Time: fromMS(r.pos), ID: r.id}
			if !merged {
				return append(buf, body...), key, nil
			}
			if buf, err = appendWithSourceID(buf, body, source); err != nil {
				return nil, provider.Key{}, fmt.Errorf("sqlstore: %s: stored record %q: %v", op, r.id, err)
			}
			key.ID = mergedKeyID(source, r.id)
			return buf, key, nil
		},
		DBError: func(err error) error { return dbError(ctx, op, err) },
	}
	return reader.Read(rows)
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
	return sqlpage.Decode[spec.Conversation]("sqlstore: list conversations", p, err)
}

// ListAssistants returns a page of the assistants collected from source
// q.Tenant in (updatedAt, id) order, starting after q.After, keeping those
// with updatedAt >= q.UpdatedSince. Assistants marked Missing are left out.
// It implements [provider.DataSource].
func (s *Store) ListAssistants(ctx context.Context, q provider.AssistantQuery) (provider.Page[spec.Assistant], error) {
	p, err := s.ListAssistantsRaw(ctx, q)
	return sqlpage.Decode[spec.Assistant]("sqlstore: list assistants", p, err)
}

// ListEvents returns a page of the events collected from source q.Tenant in
// (occurredAt, id) order, starting after q.After, keeping those with
// occurredAt > q.OccurredAfter and, when q.Category is set, of that
// category. Events marked Missing are left out. It implements
// [provider.DataSource].
func (s *Store) ListEvents(ctx context.Context, q provider.EventQuery) (provider.Page[spec.Event], error) {
	p, err := s.ListEventsRaw(ctx, q)
	return sqlpage.Decode[spec.Event]("sqlstore: list events", p, err)
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
