package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqlpage"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// ConversationSearch selects conversations of several sources by user,
// assistant and time range, newest first: what a dashboard lists.
type ConversationSearch struct {
	// Sources are the sources searched. None: nothing is found.
	Sources []string
	// UserID, when set, keeps the conversations whose user.id is exactly
	// this. Only ids of at most 256 bytes are searchable.
	UserID string
	// AssistantID, when set, keeps those whose assistant.id is exactly this
	// (at most 256 bytes too).
	AssistantID string
	// From and To, when set, keep those with From <= startedAt < To
	// (milliseconds).
	From, To time.Time
	// After continues a search after the last conversation of its previous
	// page (ConversationPage.Next); nil starts at the newest.
	After *ConversationPosition
	// Limit is the most conversations returned, 1..provider.MaxLimit; 0 is
	// provider.DefaultLimit.
	Limit int
}

// ConversationPosition is the place of a conversation in a search's order:
// startedAt, id and source, all descending.
type ConversationPosition struct {
	StartedAt  time.Time
	ID, Source string
}

// FoundConversation is a conversation a search found.
type FoundConversation struct {
	// Source is the name of its source.
	Source string
	// JSON is the conversation as [Merged] lists it: as received, with
	// sourceId.
	JSON json.RawMessage
	// Conversation is JSON decoded.
	Conversation spec.Conversation
	// Position is its place in the search's order.
	Position ConversationPosition
}

// ConversationPage is a page of a search.
type ConversationPage struct {
	Items []FoundConversation
	// Next continues the search (ConversationSearch.After); nil after the
	// last page.
	Next *ConversationPosition
}

// SearchConversations returns a page of the conversations of q.Sources
// that match q, newest first: by startedAt, then id, then source, all
// descending. Tombstones and conversations marked Missing are left out.
// A page reads, for each source, at most Limit+1 entries of one range of an
// index (by user, by assistant, or by startedAt alone), so it costs the
// same at any depth. A bad limit or range is [spec.ErrInvalid].
func (s *Store) SearchConversations(ctx context.Context, q ConversationSearch) (ConversationPage, error) {
	if q.Limit == 0 {
		q.Limit = provider.DefaultLimit
	}
	if err := sqlpage.CheckLimit(q.Limit); err != nil {
		return ConversationPage{}, err
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.To.After(q.From) {
		return ConversationPage{}, provider.Invalid("to", "must be after from")
	}
	sources := slices.Compact(slices.Sorted(slices.Values(q.Sources)))
	if len(sources) == 0 || len(q.UserID) > maxRefLength || len(q.AssistantID) > maxRefLength {
		return ConversationPage{Items: []FoundConversation{}}, nil
	}
	query, args := searchSQL(&q, sources)
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return ConversationPage{}, dbError(ctx, "search conversations", err)
	}
	defer rows.Close()
	page := ConversationPage{Items: make([]FoundConversation, 0, min(q.Limit, 128))}
	for rows.Next() {
		if len(page.Items) == q.Limit {
			last := page.Items[len(page.Items)-1].Position
			page.Next = &last
			break
		}
		var (
			r      storedRow
			source string
		)
		if err := rows.Scan(&r.pos, &r.time, &r.id, &r.body, &r.missingAt, &r.deleted, &r.started, &source); err != nil {
			return ConversationPage{}, dbError(ctx, "search conversations", err)
		}
		body, err := r.served()
		if err != nil {
			return ConversationPage{}, fmt.Errorf("sqlstore: search conversations: %w", err)
		}
		js, err := appendWithSourceID(nil, body, source)
		if err != nil {
			return ConversationPage{}, fmt.Errorf("sqlstore: search conversations: stored record %q: %v", r.id, err)
		}
		f := FoundConversation{Source: source, JSON: js,
			Position: ConversationPosition{StartedAt: fromMS(r.started), ID: r.id, Source: source}}
		if err := json.Unmarshal(js, &f.Conversation); err != nil {
			return ConversationPage{}, fmt.Errorf("sqlstore: search conversations: stored record %q: %v", r.id, err)
		}
		page.Items = append(page.Items, f)
	}
	if err := rows.Err(); err != nil {
		return ConversationPage{}, dbError(ctx, "search conversations", err)
	}
	return page, nil
}

// searchSQL returns the query of a search page: per source, one range of a
// partial index of live conversations (by user, by assistant, or by
// started_ms; the conditions name the index's predicate so that the
// planners may use it), merged in (started_ms, id, source) order,
// descending.
func searchSQL(q *ConversationSearch, sources []string) (string, []any) {
	var (
		b    strings.Builder
		args sqldb.Args
	)
	const columns = viewColumns + ", source"
	for i, src := range sources {
		if len(sources) > 1 {
			if i > 0 {
				b.WriteString("\nUNION ALL ")
			}
			fmt.Fprintf(&b, "SELECT %s FROM (", columns)
		}
		fmt.Fprintf(&b, "SELECT %s FROM consumer_records WHERE source = %s AND resource = 'conversations'"+
			" AND deleted = FALSE AND missing_at IS NULL", columns, args.Add(src))
		if q.UserID != "" {
			fmt.Fprintf(&b, " AND user_id = %s", args.Add(q.UserID))
		}
		if q.AssistantID != "" {
			fmt.Fprintf(&b, " AND assistant_id = %s", args.Add(q.AssistantID))
		}
		if !q.From.IsZero() {
			fmt.Fprintf(&b, " AND started_ms >= %s", args.Add(ms(q.From.Add(time.Millisecond-1))))
		}
		// One upper bound, the tighter: the position's or To's. Rows
		// before the position start at or before it, so before To when
		// it does; and when it does not, every row before To is before
		// the position.
		to := ms(q.To.Add(time.Millisecond - 1))
		if a := q.After; a != nil && (q.To.IsZero() || ms(a.StartedAt) < to) {
			// The sources after the position's in the order (before it
			// by name) still hold its ties.
			op := "<"
			if src < a.Source {
				op = "<="
			}
			fmt.Fprintf(&b, " AND (started_ms, id) %s (%s, %s)", op, args.Add(ms(a.StartedAt)), args.Add(a.ID))
		} else if !q.To.IsZero() {
			fmt.Fprintf(&b, " AND started_ms < %s", args.Add(to))
		}
		fmt.Fprintf(&b, " ORDER BY started_ms DESC, id DESC LIMIT %s", args.Add(q.Limit+1))
		if len(sources) > 1 {
			fmt.Fprintf(&b, ") AS s%d", i)
		}
	}
	if len(sources) > 1 {
		fmt.Fprintf(&b, "\nORDER BY started_ms DESC, id DESC, source DESC LIMIT %s", args.Add(q.Limit+1))
	}
	return b.String(), args
}
