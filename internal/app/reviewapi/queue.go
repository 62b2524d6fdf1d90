package reviewapi

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// The reviewer's queue as the dashboard reads it: a page of the tasks
// waiting for a person, each cut to what a page shows. The database cuts
// the texts (SQLite's json_extract and substr, PostgreSQL's jsonb operators
// and left) and measures them (length, in code points, as the matches'
// spans are), so a page never loads a whole request: a task of 1 MiB costs
// the service the few KB its page shows.

// Bounds of a page of the queue ([QueueQuery]) and of a window of a task's
// text ([TextQuery]).
const (
	// DefaultQueuePage is the default of [QueueQuery.Limit].
	DefaultQueuePage = 10
	// MaxQueuePage is the most tasks one page of the queue holds.
	MaxQueuePage = 25
	// DefaultExcerptChars is the default of [QueueQuery.ExcerptChars]: the
	// characters of each message a page of the queue shows.
	DefaultExcerptChars = 2000
	// DefaultExcerptMessages is the default of
	// [QueueQuery.ExcerptMessages]: the messages of each task a page of the
	// queue shows.
	DefaultExcerptMessages = 3
	// MaxExcerptSpans is the most match spans a page of the queue reads per
	// task to mark in its excerpts, the first in the order of the text.
	MaxExcerptSpans = 2000
	// MaxSemanticShown is the most sentences of one Semantic reason a page
	// shows, each cut to MaxSemanticChars.
	MaxSemanticShown = 3
	MaxSemanticChars = 400
	// MaxTextChars is the most characters [Service.TaskText] reads at once.
	MaxTextChars = 64 << 10
)

// QueueKey is the position of a task in the queue, oldest first: its
// creation time and its id.
type QueueKey struct {
	CreatedAt time.Time
	ID        string
}

// String encodes the key for a page link: the creation time in Unix
// milliseconds, a dot, the id.
func (k QueueKey) String() string {
	return strconv.FormatInt(k.CreatedAt.UnixMilli(), 10) + "." + k.ID
}

// ParseQueueKey decodes a key written by [QueueKey.String]; anything else is
// an error of kind spec.ErrInvalid.
func ParseQueueKey(s string) (QueueKey, error) {
	ms, id, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(ms, 10, 64)
	id, idOK := ident.CanonicalUUID(id)
	if !ok || err != nil || n < 0 || !idOK {
		return QueueKey{}, fmt.Errorf("the page position %q is not one this service wrote: %w", s, spec.ErrInvalid)
	}
	return QueueKey{CreatedAt: time.UnixMilli(n).UTC(), ID: id}, nil
}

// QueueQuery selects a page of the queue.
type QueueQuery struct {
	// After, when set, starts the page after this position (the next
	// page); Before ends it before this position (the previous page). At
	// most one is set; neither: the first page.
	After, Before *QueueKey
	// Limit is the most tasks of the page: 1 to MaxQueuePage; 0 means
	// DefaultQueuePage.
	Limit int
	// ExcerptChars is the most characters of each message shown: 1 to
	// MaxTextChars; 0 means DefaultExcerptChars.
	ExcerptChars int
	// ExcerptMessages is the most messages of each task shown (of the
	// request, and of its redacted copy): 0 means DefaultExcerptMessages,
	// negative none.
	ExcerptMessages int
}

func (q *QueueQuery) withDefaults() error {
	switch {
	case q.Limit == 0:
		q.Limit = DefaultQueuePage
	case q.Limit < 0 || q.Limit > MaxQueuePage:
		return fmt.Errorf("queue page of %d tasks: must be 1 to %d: %w", q.Limit, MaxQueuePage, spec.ErrInvalid)
	}
	switch {
	case q.ExcerptChars == 0:
		q.ExcerptChars = DefaultExcerptChars
	case q.ExcerptChars < 0 || q.ExcerptChars > MaxTextChars:
		return fmt.Errorf("excerpt of %d characters: must be 1 to %d: %w", q.ExcerptChars, MaxTextChars, spec.ErrInvalid)
	}
	switch {
	case q.ExcerptMessages == 0:
		q.ExcerptMessages = DefaultExcerptMessages
	case q.ExcerptMessages < 0:
		q.ExcerptMessages = 0
	}
	if q.After != nil && q.Before != nil {
		return fmt.Errorf("a queue page is after a position or before one, not both: %w", spec.ErrInvalid)
	}
	return nil
}

// QueuePage is a page of the queue.
type QueuePage struct {
	Items []QueueItem
	// Total is how many tasks wait in all; Offset how many wait before the
	// first item.
	Total, Offset int
	// Prev and Next are the positions of the pages before and after, nil
	// when there is none.
	Prev, Next *QueueKey
}

// QueueItem is a task as a page shows it: its request and redacted copy cut
// to excerpts, its reasons without their matches but the spans within the
// excerpts.
type QueueItem struct {
	ID             string
	Status         string
	CreatedAt      time.Time
	ReviewDeadline time.Time // zero unless waiting
	// User is the email (else the id) of the user the request was made
	// for, cut to 200 characters; empty when none.
	User string
	// DecisionReason and DecisionComment are the task's decision's reason
	// and comment (cut to 2,000 characters), as the policy left them
	// (reason budget: why it could not decide).
	DecisionReason, DecisionComment string
	Reasons                         []QueueReason
	// Messages are the first messages of the request, MessageCount how
	// many it has.
	Messages     []Excerpt
	MessageCount int
	// HasProposal is true when the policy proposed a redacted copy;
	// Proposal are its first messages, ProposalCount how many it has.
	HasProposal   bool
	Proposal      []Excerpt
	ProposalCount int
}

// Key returns the item's position in the queue.
func (it QueueItem) Key() QueueKey { return QueueKey{CreatedAt: it.CreatedAt, ID: it.ID} }

// QueueReason is a reason of a task without its matches.
type QueueReason struct {
	InstructionID, Title, Action, Criticality string
	// Matches is how many matches the reason has.
	Matches int
	// Semantic are the first sentences of a Semantic reason (at most
	// MaxSemanticShown, each cut to MaxSemanticChars, as is the quote of a
	// judged one), with their similarity, quote and verdict.
	Semantic []spec.MatchSpan
}

// Excerpt is a part of one message's content.
type Excerpt struct {
	// Index is the message's index in the request.
	Index int
	Role  string
	// Start is where Text starts in the content, in code points; Chars is
	// the content's length in code points.
	Start, Chars int
	Text         string
	// Spans are the spans of the reasons' matches that meet Text, in code
	// points of Text (clipped to it), of the request only.
	Spans [][2]int
}

// Cut reports whether the excerpt shows less than the whole content.
func (e Excerpt) Cut() bool { return e.Start > 0 || e.Start+utf8Len(e.Text) < e.Chars }

func utf8Len(s string) int { return len([]rune(s)) }

// QueuePage returns a page of the organisation's tasks waiting for a
// person, oldest first, with how many wait in all.
func (s *Service) QueuePage(ctx context.Context, orgID string, q QueueQuery) (QueuePage, error) {
	var page QueuePage
	if err := q.withDefaults(); err != nil {
		return page, err
	}
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM reviewapi_tasks WHERE org_id = $1 AND status = $2`,
		orgID, spec.StatusRequiresIntervention).Scan(&page.Total); err != nil {
		return page, err
	}
	keys, more, err := s.queueKeys(ctx, orgID, q)
	if err != nil {
		return page, err
	}
	if q.Before != nil && len(keys) < q.Limit {
		// Fewer than a page before the position (tasks were decided
		// meanwhile): the first page.
		q.Before = nil
		if keys, more, err = s.queueKeys(ctx, orgID, q); err != nil {
			return page, err
		}
	}
	if len(keys) > 0 {
		if page.Offset, err = s.queueCount(ctx, orgID, keys[0], "<"); err != nil {
			return page, err
		}
		first, last := keys[0], keys[len(keys)-1]
		if page.Offset > 0 {
			page.Prev = &first
		}
		switch {
		case q.Before != nil:
			page.Next = &last // the position it was before follows
		case more:
			page.Next = &last
		}
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	items, err := s.queueItems(ctx, orgID, ids, q.ExcerptChars, q.ExcerptMessages, MaxSemanticShown)
	if err != nil {
		return page, err
	}
	// A task decided between the two reads is left out.
	for _, id := range ids {
		if it, ok := items[id]; ok && it.Status == spec.StatusRequiresIntervention {
			page.Items = append(page.Items, *it)
		}
	}
	return page, nil
}

// queueKeys returns the positions of the page's tasks, oldest first, and
// whether more follow in the page's direction.
func (s *Service) queueKeys(ctx context.Context, orgID string, q QueueQuery) ([]QueueKey, bool, error) {
	args := []any{orgID, spec.StatusRequiresIntervention}
	cond, order := "", "created_at, id"
	switch {
	case q.After != nil:
		args = append(args, sqldb.Millis(q.After.CreatedAt), q.After.ID)
		cond = ` AND (created_at > $3 OR (created_at = $3 AND id > $4))`
	case q.Before != nil:
		args = append(args, sqldb.Millis(q.Before.CreatedAt), q.Before.ID)
		cond, order = ` AND (created_at < $3 OR (created_at = $3 AND id < $4))`, "created_at DESC, id DESC"
	}
	args = append(args, q.Limit+1)
	rows, err := s.db.QueryContext(ctx, fmt.Sprintf(`SELECT id, created_at FROM reviewapi_tasks
		WHERE org_id = $1 AND status = $2%s ORDER BY %s LIMIT $%d`, cond, order, len(args)), args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var keys []QueueKey
	for rows.Next() {
		var k QueueKey
		var ms int64
		if err := rows.Scan(&k.ID, &ms); err != nil {
			return nil, false, err
		}
		k.CreatedAt = time.UnixMilli(ms).UTC()
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	more := len(keys) > q.Limit
	if more {
		keys = keys[:q.Limit]
	}
	if q.Before != nil {
		slices.Reverse(keys)
	}
	return keys, more, nil
}

// queueCount counts the waiting tasks before (op "<") the position.
func (s *Service) queueCount(ctx context.Context, orgID string, k QueueKey, op string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM reviewapi_tasks WHERE org_id = $1 AND status = $2
		AND (created_at `+op+` $3 OR (created_at = $3 AND id `+op+` $4))`,
		orgID, spec.StatusRequiresIntervention, sqldb.Millis(k.CreatedAt), k.ID).Scan(&n)
	return n, err
}

// TaskSummary returns one task of the organisation, in any state, as a
// page shows it: the first excerptMessages messages cut to excerptChars
// (see [QueueQuery]), its reasons with at most semantic sentences each (cut
// to MaxSemanticChars). An unknown task is ErrTaskNotFound.
func (s *Service) TaskSummary(ctx context.Context, orgID, id string, excerptChars, excerptMessages, semantic int) (QueueItem, error) {
	q := QueueQuery{Limit: 1, ExcerptChars: excerptChars, ExcerptMessages: excerptMessages}
	if err := q.withDefaults(); err != nil {
		return QueueItem{}, err
	}
	items, err := s.queueItems(ctx, orgID, []string{id}, q.ExcerptChars, q.ExcerptMessages, semantic)
	if err != nil {
		return QueueItem{}, err
	}
	it, ok := items[id]
	if !ok {
		return QueueItem{}, fmt.Errorf("task %s: %w", id, ErrTaskNotFound)
	}
	return *it, nil
}

// inList returns "$first, $first+1, ..." for n values.
func inList(first, n int) string {
	ph := make([]string, n)
	for i := range ph {
		ph[i] = "$" + strconv.Itoa(first+i)
	}
	return strings.Join(ph, ", ")
}

// queueItems reads the tasks ids of the organisation, cut as the page
// shows them, by id.
func (s *Service) queueItems(ctx context.Context, orgID string, ids []string, chars, messages, semantic int) (map[string]*QueueItem, error) {
	items := make(map[string]*QueueItem, len(ids))
	if len(ids) == 0 {
		return items, nil
	}
	if err := s.queueHeads(ctx, items, orgID, ids); err != nil || len(items) == 0 {
		return items, err
	}
	// Ids of another organisation are left out from here on.
	ids = ids[:0]
	for id := range items {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if messages > 0 {
		if err := s.queueExcerpts(ctx, items, ids, chars, messages); err != nil {
			return nil, err
		}
	}
	if err := s.queueReasons(ctx, items, ids); err != nil {
		return nil, err
	}
	if semantic > 0 {
		if err := s.queueSemantic(ctx, items, ids, semantic); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// idArgs returns lead followed by ids, the arguments of a query whose
// list of ids follows its leading parameters.
func idArgs(ids []string, lead ...any) []any {
	out := append(make([]any, 0, len(lead)+len(ids)), lead...)
	for _, id := range ids {
		out = append(out, id)
	}
	return out
}

// queueHeads reads into items the tasks of organisation orgID named by ids:
// their state, user, decision and the sizes of their request and proposal.
func (s *Service) queueHeads(ctx context.Context, items map[string]*QueueItem, orgID string, ids []string) error {
	pg := s.db.Dialect == sqldb.Postgres
	head := `SELECT id, status, created_at, COALESCE(review_deadline, 0),
		substr(COALESCE(json_extract(body, '$.user.email'), json_extract(body, '$.user.id'), ''), 1, 200),
		COALESCE(json_extract(body, '$.decision.reason'), ''),
		substr(COALESCE(json_extract(body, '$.decision.comment'), ''), 1, 2000),
		COALESCE(json_array_length(body, '$.request.messages'), 0),
		json_type(body, '$.redactedRequest') IS NOT NULL,
		COALESCE(json_array_length(body, '$.redactedRequest.messages'), 0)
		FROM reviewapi_tasks WHERE org_id = $1 AND id IN (` + inList(2, len(ids)) + `)`
	if pg {
		head = `SELECT id, status, created_at, COALESCE(review_deadline, 0),
		left(COALESCE(b #>> '{user,email}', b #>> '{user,id}', ''), 200),
		COALESCE(b #>> '{decision,reason}', ''),
		left(COALESCE(b #>> '{decision,comment}', ''), 2000),
		CASE WHEN jsonb_typeof(b #> '{request,messages}') = 'array' THEN jsonb_array_length(b #> '{request,messages}') ELSE 0 END,
		b -> 'redactedRequest' IS NOT NULL,
		CASE WHEN jsonb_typeof(b #> '{redactedRequest,messages}') = 'array' THEN jsonb_array_length(b #> '{redactedRequest,messages}') ELSE 0 END
		FROM reviewapi_tasks CROSS JOIN LATERAL (SELECT body::jsonb AS b OFFSET 0) j WHERE org_id = $1 AND id IN (` + inList(2, len(ids)) + `)`
	}
	return s.scanRows(ctx, head, idArgs(ids, orgID), func(rows *sql.Rows) error {
		var it QueueItem
		var created, deadline int64
		if err := rows.Scan(&it.ID, &it.Status, &created, &deadline, &it.User, &it.DecisionReason, &it.DecisionComment,
			&it.MessageCount, &it.HasProposal, &it.ProposalCount); err != nil {
			return err
		}
		it.CreatedAt = time.UnixMilli(created).UTC()
		if deadline > 0 && it.Status == spec.StatusRequiresIntervention {
			it.ReviewDeadline = time.UnixMilli(deadline).UTC()
		}
		items[it.ID] = &it
		return nil
	})
}

// queueExcerpts reads into items the first messages of each task's
// request and of its redacted copy, at most chars characters of each, with
// the spans of the matches in the request's.
func (s *Service) queueExcerpts(ctx context.Context, items map[string]*QueueItem, ids []string, chars, messages int) error {
	pg := s.db.Dialect == sqldb.Postgres
	q := `SELECT t.id, 0, CAST(m.key AS INTEGER), substr(COALESCE(json_extract(m.value, '$.role'), ''), 1, 100),
		substr(COALESCE(json_extract(m.value, '$.content'), ''), 1, $1), length(COALESCE(json_extract(m.value, '$.content'), ''))
		FROM reviewapi_tasks t, json_each(t.body, '$.request.messages') m WHERE t.id IN (` + inList(3, len(ids)) + `) AND m.key < $2
		UNION ALL
		SELECT t.id, 1, CAST(m.key AS INTEGER), substr(COALESCE(json_extract(m.value, '$.role'), ''), 1, 100),
		substr(COALESCE(json_extract(m.value, '$.content'), ''), 1, $1), length(COALESCE(json_extract(m.value, '$.content'), ''))
		FROM reviewapi_tasks t, json_each(t.body, '$.redactedRequest.messages') m WHERE t.id IN (` + inList(3, len(ids)) + `) AND m.key < $2
		ORDER BY 1, 2, 3`
	if pg {
		q = `SELECT t.id, c.copy, (m.i - 1)::int, left(COALESCE(m.v ->> 'role', ''), 100),
		left(COALESCE(m.v ->> 'content', ''), $1), length(COALESCE(m.v ->> 'content', ''))
		FROM reviewapi_tasks t CROSS JOIN LATERAL (SELECT t.body::jsonb AS b OFFSET 0) j
		CROSS JOIN LATERAL (VALUES (0, j.b #> '{request,messages}'), (1, j.b #> '{redactedRequest,messages}')) AS c(copy, msgs)
		CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(c.msgs) = 'array' THEN c.msgs ELSE '[]'::jsonb END) WITH ORDINALITY AS m(v, i)
		WHERE t.id IN (` + inList(3, len(ids)) + `) AND m.i <= $2
		ORDER BY 1, 2, 3`
	}
	err := s.scanRows(ctx, q, idArgs(ids, chars, messages), func(rows *sql.Rows) error {
		var id string
		var copyOf int
		var e Excerpt
		if err := rows.Scan(&id, &copyOf, &e.Index, &e.Role, &e.Text, &e.Chars); err != nil {
			return err
		}
		if copyOf == 1 {
			items[id].Proposal = append(items[id].Proposal, e)
		} else {
			items[id].Messages = append(items[id].Messages, e)
		}
		return nil
	})
	if err != nil {
		return err
	}
	spans, err := s.matchSpans(ctx, ids, 0, messages-1, chars, MaxExcerptSpans)
	if err != nil {
		return err
	}
	for id, it := range items {
		for i := range it.Messages {
			it.Messages[i].Spans = clipSpans(spans[id][it.Messages[i].Index], 0, utf8Len(it.Messages[i].Text))
		}
	}
	return nil
}

// queueReasons reads into items each task's reasons, without their
// matches.
func (s *Service) queueReasons(ctx context.Context, items map[string]*QueueItem, ids []string) error {
	pg := s.db.Dialect == sqldb.Postgres
	q := `SELECT t.id, CAST(r.key AS INTEGER), COALESCE(json_extract(r.value, '$.instructionId'), ''),
		substr(COALESCE(json_extract(r.value, '$.title'), ''), 1, 300), COALESCE(json_extract(r.value, '$.action'), ''),
		COALESCE(json_extract(r.value, '$.criticality'), ''), COALESCE(json_array_length(r.value, '$.matches'), 0)
		FROM reviewapi_tasks t, json_each(t.body, '$.reasons') r WHERE t.id IN (` + inList(1, len(ids)) + `) ORDER BY 1, 2`
	if pg {
		q = `SELECT t.id, (r.i - 1)::int, COALESCE(r.v ->> 'instructionId', ''), left(COALESCE(r.v ->> 'title', ''), 300),
		COALESCE(r.v ->> 'action', ''), COALESCE(r.v ->> 'criticality', ''),
		CASE WHEN jsonb_typeof(r.v -> 'matches') = 'array' THEN jsonb_array_length(r.v -> 'matches') ELSE 0 END
		FROM reviewapi_tasks t CROSS JOIN LATERAL jsonb_array_elements(t.body::jsonb -> 'reasons') WITH ORDINALITY AS r(v, i)
		WHERE t.id IN (` + inList(1, len(ids)) + `) ORDER BY 1, 2`
	}
	return s.scanRows(ctx, q, idArgs(ids), func(rows *sql.Rows) error {
		var id string
		var idx int
		var r QueueReason
		if err := rows.Scan(&id, &idx, &r.InstructionID, &r.Title, &r.Action, &r.Criticality, &r.Matches); err != nil {
			return err
		}
		items[id].Reasons = append(items[id].Reasons, r)
		return nil
	})
}

// queueSemantic reads into items the first semantic sentences of each
// Semantic reason, at most semantic of each.
func (s *Service) queueSemantic(ctx context.Context, items map[string]*QueueItem, ids []string, semantic int) error {
	pg := s.db.Dialect == sqldb.Postgres
	q := `SELECT id, rk, tx, sim, qt, vd FROM (
		SELECT t.id AS id, CAST(r.key AS INTEGER) AS rk, substr(json_extract(m.value, '$.text'), 1, $1) AS tx, COALESCE(json_extract(m.value, '$.similarity'), 0) AS sim,
			substr(COALESCE(json_extract(m.value, '$.quote'), ''), 1, $1) AS qt, COALESCE(json_extract(m.value, '$.verdict'), '') AS vd,
			ROW_NUMBER() OVER (PARTITION BY t.id, r.key ORDER BY m.key) AS n
		FROM reviewapi_tasks t, json_each(t.body, '$.reasons') r, json_each(r.value, '$.matches') m
		WHERE t.id IN (` + inList(3, len(ids)) + `) AND COALESCE(json_extract(m.value, '$.text'), '') <> ''
	) WHERE n <= $2 ORDER BY id, rk, n`
	if pg {
		q = `SELECT id, rk, tx, sim, qt, vd FROM (
		SELECT t.id AS id, (r.i - 1)::int AS rk, left(m.v ->> 'text', $1) AS tx,
			COALESCE((m.v ->> 'similarity')::float8, 0) AS sim,
			left(COALESCE(m.v ->> 'quote', ''), $1) AS qt, COALESCE(m.v ->> 'verdict', '') AS vd,
			ROW_NUMBER() OVER (PARTITION BY t.id, r.i ORDER BY m.i) AS n
		FROM reviewapi_tasks t CROSS JOIN LATERAL jsonb_array_elements(t.body::jsonb -> 'reasons') WITH ORDINALITY AS r(v, i)
		CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(r.v -> 'matches') = 'array' THEN r.v -> 'matches' ELSE '[]'::jsonb END) WITH ORDINALITY AS m(v, i)
		WHERE t.id IN (` + inList(3, len(ids)) + `) AND COALESCE(m.v ->> 'text', '') <> ''
		) x WHERE n <= $2 ORDER BY id, rk, n`
	}
	return s.scanRows(ctx, q, idArgs(ids, MaxSemanticChars, semantic), func(rows *sql.Rows) error {
		var id string
		var rk int
		var m spec.MatchSpan
		if err := rows.Scan(&id, &rk, &m.Text, &m.Similarity, &m.Quote, &m.Verdict); err != nil {
			return err
		}
		if rs := items[id].Reasons; rk < len(rs) {
			rs[rk].Semantic = append(rs[rk].Semantic, m)
		}
		return nil
	})
}

// matchSpans reads the spans of the tasks' matches in messages first to
// last that start before maxStart: at most limit per task, the first in
// the order of the text. The result is by task, then by message.
func (s *Service) matchSpans(ctx context.Context, ids []string, first, last, maxStart, limit int) (map[string]map[int][][2]int, error) {
	q := `SELECT id, mi, st, en FROM (
		SELECT t.id AS id, json_extract(m.value, '$.messageIndex') AS mi, json_extract(m.value, '$.start') AS st,
			json_extract(m.value, '$.end') AS en,
			ROW_NUMBER() OVER (PARTITION BY t.id ORDER BY json_extract(m.value, '$.messageIndex'), json_extract(m.value, '$.start')) AS n
		FROM reviewapi_tasks t, json_each(t.body, '$.reasons') r, json_each(r.value, '$.matches') m
		WHERE t.id IN (` + inList(5, len(ids)) + `) AND json_extract(m.value, '$.messageIndex') BETWEEN $1 AND $2
			AND json_extract(m.value, '$.start') < $3
	) WHERE n <= $4`
	if s.db.Dialect == sqldb.Postgres {
		q = `SELECT id, mi, st, en FROM (
		SELECT t.id AS id, (m.v ->> 'messageIndex')::int AS mi, (m.v ->> 'start')::int AS st, (m.v ->> 'end')::int AS en,
			ROW_NUMBER() OVER (PARTITION BY t.id ORDER BY (m.v ->> 'messageIndex')::int, (m.v ->> 'start')::int) AS n
		FROM reviewapi_tasks t CROSS JOIN LATERAL jsonb_array_elements(t.body::jsonb -> 'reasons') AS r(v)
		CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(r.v -> 'matches') = 'array' THEN r.v -> 'matches' ELSE '[]'::jsonb END) AS m(v)
		WHERE t.id IN (` + inList(5, len(ids)) + `) AND (m.v ->> 'messageIndex')::int BETWEEN $1 AND $2
			AND (m.v ->> 'start')::int < $3
		) x WHERE n <= $4`
	}
	args := []any{first, last, maxStart, limit}
	for _, id := range ids {
		args = append(args, id)
	}
	out := map[string]map[int][][2]int{}
	err := s.scanRows(ctx, q, args, func(rows *sql.Rows) error {
		var id string
		var mi, st, en int
		if err := rows.Scan(&id, &mi, &st, &en); err != nil {
			return err
		}
		if out[id] == nil {
			out[id] = map[int][][2]int{}
		}
		out[id][mi] = append(out[id][mi], [2]int{st, en})
		return nil
	})
	return out, err
}

// clipSpans returns the spans that meet [from, from+n), clipped to it and
// made relative to from.
func clipSpans(spans [][2]int, from, n int) [][2]int {
	var out [][2]int
	for _, sp := range spans {
		a, b := max(sp[0], from)-from, min(sp[1], from+n)-from
		if a < b {
			out = append(out, [2]int{a, b})
		}
	}
	return out
}

// scanRows runs query and calls scan for each row.
func (s *Service) scanRows(ctx context.Context, query string, args []any, scan func(*sql.Rows) error) error {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// TextQuery selects a window of a task's text: Chars characters of the
// messages First to Last of its request (or of its redacted copy), the first
// from character From.
type TextQuery struct {
	Redacted    bool
	First, Last int
	From        int
	// Chars is 1 to MaxTextChars.
	Chars int
}

// MessageSizes returns the length, in code points, of the content of each
// message of the task's request (of its redacted copy when redacted; none
// when it has none). An unknown task is ErrTaskNotFound.
func (s *Service) MessageSizes(ctx context.Context, orgID, id string, redacted bool) ([]int, error) {
	if err := s.taskExists(ctx, orgID, id); err != nil {
		return nil, err
	}
	q := `SELECT CAST(m.key AS INTEGER), length(COALESCE(json_extract(m.value, '$.content'), ''))
		FROM reviewapi_tasks t, json_each(t.body, CASE WHEN $3 = 1 THEN '$.redactedRequest.messages' ELSE '$.request.messages' END) m
		WHERE t.id = $1 AND t.org_id = $2 ORDER BY 1`
	if s.db.Dialect == sqldb.Postgres {
		q = `SELECT (m.i - 1)::int, length(COALESCE(m.v ->> 'content', ''))
		FROM reviewapi_tasks t CROSS JOIN LATERAL (SELECT CASE WHEN $3 = 1 THEN t.body::jsonb #> '{redactedRequest,messages}'
			ELSE t.body::jsonb #> '{request,messages}' END AS msgs) c
		CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(c.msgs) = 'array' THEN c.msgs ELSE '[]'::jsonb END) WITH ORDINALITY AS m(v, i)
		WHERE t.id = $1 AND t.org_id = $2 ORDER BY 1`
	}
	var sizes []int
	err := s.scanRows(ctx, q, []any{id, orgID, boolInt(redacted)}, func(rows *sql.Rows) error {
		var i, n int
		if err := rows.Scan(&i, &n); err != nil {
			return err
		}
		sizes = append(sizes, n)
		return nil
	})
	return sizes, err
}

// TaskText returns a window of the task's text (see [TextQuery]), with the
// spans of the reasons' matches within it for the request. An unknown task
// is ErrTaskNotFound.
func (s *Service) TaskText(ctx context.Context, orgID, id string, q TextQuery) ([]Excerpt, error) {
	if q.Chars < 1 || q.Chars > MaxTextChars || q.First < 0 || q.Last < q.First || q.From < 0 {
		return nil, fmt.Errorf("text window %+v: out of range: %w", q, spec.ErrInvalid)
	}
	if err := s.taskExists(ctx, orgID, id); err != nil {
		return nil, err
	}
	query := `SELECT CAST(m.key AS INTEGER), substr(COALESCE(json_extract(m.value, '$.role'), ''), 1, 100),
		substr(COALESCE(json_extract(m.value, '$.content'), ''), CASE WHEN m.key = $4 THEN $6 + 1 ELSE 1 END, $7),
		length(COALESCE(json_extract(m.value, '$.content'), ''))
		FROM reviewapi_tasks t, json_each(t.body, CASE WHEN $3 = 1 THEN '$.redactedRequest.messages' ELSE '$.request.messages' END) m
		WHERE t.id = $1 AND t.org_id = $2 AND m.key BETWEEN $4 AND $5 ORDER BY 1`
	if s.db.Dialect == sqldb.Postgres {
		query = `SELECT (m.i - 1)::int, left(COALESCE(m.v ->> 'role', ''), 100),
		substr(COALESCE(m.v ->> 'content', ''), CASE WHEN m.i - 1 = $4 THEN $6::int + 1 ELSE 1 END, $7::int),
		length(COALESCE(m.v ->> 'content', ''))
		FROM reviewapi_tasks t CROSS JOIN LATERAL (SELECT CASE WHEN $3 = 1 THEN t.body::jsonb #> '{redactedRequest,messages}'
			ELSE t.body::jsonb #> '{request,messages}' END AS msgs) c
		CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(c.msgs) = 'array' THEN c.msgs ELSE '[]'::jsonb END) WITH ORDINALITY AS m(v, i)
		WHERE t.id = $1 AND t.org_id = $2 AND m.i - 1 BETWEEN $4 AND $5 ORDER BY 1`
	}
	var out []Excerpt
	left := q.Chars
	err := s.scanRows(ctx, query, []any{id, orgID, boolInt(q.Redacted), q.First, q.Last, q.From, q.Chars}, func(rows *sql.Rows) error {
		var e Excerpt
		if err := rows.Scan(&e.Index, &e.Role, &e.Text, &e.Chars); err != nil {
			return err
		}
		if left <= 0 {
			return nil
		}
		if e.Index == q.First {
			e.Start = min(q.From, e.Chars)
		}
		if r := []rune(e.Text); len(r) > left {
			e.Text = string(r[:left])
		}
		left -= utf8Len(e.Text)
		out = append(out, e)
		return nil
	})
	if err != nil || q.Redacted || len(out) == 0 {
		return out, err
	}
	spans, err := s.matchSpans(ctx, []string{id}, q.First, q.Last, q.From+q.Chars, maxMatchesRead)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Spans = clipSpans(spans[id][out[i].Index], out[i].Start, utf8Len(out[i].Text))
	}
	return out, nil
}

// maxMatchesRead bounds the match spans TaskText reads: the policy records
// at most policy.DefaultMaxMatches (10,000) per task, all reasons together.
const maxMatchesRead = 10_000

// HasTask returns nil when the organisation has the task, whatever its
// state, else ErrTaskNotFound, without reading the task.
func (s *Service) HasTask(ctx context.Context, orgID, id string) error {
	return s.taskExists(ctx, orgID, id)
}

func (s *Service) taskExists(ctx context.Context, orgID, id string) error {
	var one int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM reviewapi_tasks WHERE id = $1 AND org_id = $2`, id, orgID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("task %s: %w", id, ErrTaskNotFound)
	}
	return err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
