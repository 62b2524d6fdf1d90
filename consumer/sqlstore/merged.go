package sqlstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqlpage"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// SourcesOf returns the names of the sources a tenant of a [Merged] view
// merges. An unknown tenant has none (an empty list, not an error).
type SourcesOf func(ctx context.Context, tenant string) ([]string, error)

// Merged is the collected view of several sources at once: a
// [provider.DataSource] and [provider.RawSource] whose tenant names a set
// of sources, resolved on every call by the [SourcesOf] given to
// [Store.Merged]. The oversight service serves it as the view of an
// organisation, whose sources hold the organisation's data.
//
// Lists are the union of the sources' lists, each record served as the
// collected view of its source serves it (see the package documentation)
// with one member added: "sourceId", the name of its source (a record that
// arrived with a top-level sourceId member of its own is served with that
// member replaced). Records of different sources may share an id; the
// order is (updatedAt, id, source) (occurredAt for events), every part
// compared byte by byte, so the interface's order (updatedAt, id) holds
// and ties between sources are broken by the source's name: no record is
// skipped or repeated across pages. A page reads, for each source, at most
// limit+1 rows of one range of the index (source, resource, pos_ms, id),
// and merges them: its cost depends on the number of sources and the
// limit, never on the depth of the page. With a byte budget (the query's
// MaxBytes) it reads only bodies that fit (see the package documentation). The filters are those of
// [Store.ListConversations], [Store.ListAssistants] and [Store.ListEvents].
//
// Usage adds up the buckets of all the sources (see [Store.Usage]);
// activeUsers counts a userId once across sources.
//
// Ids are unique only within a source, so Merged serves no single records:
// GetConversation and GetAssistant are [provider.ErrNotFound] for every id
// (read one from its source, whose name the listed record carries).
//
// Keys: a [provider.Key] of a listed record names the source too, so only
// the RawSource methods, which a [provider.Handler] uses, give keys that
// continue a list; the typed methods return the same records, decoded
// (spec types have no sourceId).
type Merged struct {
	s       *Store
	sources SourcesOf
}

var (
	_ provider.DataSource = (*Merged)(nil)
	_ provider.RawSource  = (*Merged)(nil)
)

// Merged returns the merged view of the sources that sources names for
// each tenant.
func (s *Store) Merged(sources SourcesOf) *Merged { return &Merged{s: s, sources: sources} }

// sourcesOf returns the tenant's sources, sorted byte by byte, without
// repeats.
func (m *Merged) sourcesOf(ctx context.Context, tenant string) ([]string, error) {
	list, err := m.sources(ctx, tenant)
	if err != nil {
		return nil, err
	}
	list = slices.Clone(list)
	slices.Sort(list)
	return slices.Compact(list), nil
}

// mergedKeyID is the Key.ID of a merged list's record: the length of the
// source's name, a colon, the name, then the record's id, so that the
// position names the source and decodes without ambiguity.
func mergedKeyID(source, id string) string {
	return strconv.Itoa(len(source)) + ":" + source + id
}

// mergedPosition is a position of a merged list.
type mergedPosition struct {
	key    provider.Key // the record's position within its source
	source string
}

// parseMergedKey decodes a key of a merged list.
func parseMergedKey(k *provider.Key) (*mergedPosition, error) {
	if k == nil {
		return nil, nil
	}
	n, rest, ok := strings.Cut(k.ID, ":")
	l, err := strconv.Atoi(n)
	if !ok || err != nil || l < 0 || l > len(rest) || strconv.Itoa(l) != n {
		return nil, provider.Invalid("cursor", "does not continue a list of several sources")
	}
	return &mergedPosition{key: provider.Key{Time: k.Time, ID: rest[l:]}, source: rest[:l]}, nil
}

// listRaw reads a page of the union of the sources' lists: one keyset
// query per source, each starting at the position (after it for the
// sources up to the position's, which have listed the position's ties),
// merged by one query in (pos_ms, id, source) order.
func (m *Merged) listRaw(ctx context.Context, op, tenant string, k keyset) (provider.Page[provider.RawRecord], error) {
	if err := sqlpage.CheckLimit(k.limit); err != nil {
		return provider.Page[provider.RawRecord]{}, err
	}
	pos, err := parseMergedKey(k.after)
	if err != nil {
		return provider.Page[provider.RawRecord]{}, err
	}
	sources, err := m.sourcesOf(ctx, tenant)
	if err != nil {
		return provider.Page[provider.RawRecord]{}, fmt.Errorf("sqlstore: %s: sources of %q: %w", op, tenant, err)
	}
	if len(sources) == 0 {
		return provider.Page[provider.RawRecord]{Items: []provider.RawRecord{}}, nil
	}
	return sqlpage.Read(k.maxBytes, func(mode sqlpage.Mode) (provider.Page[provider.RawRecord], error) {
		return m.queryPage(ctx, op, &k, pos, sources, mode)
	})
}

// queryPage reads a merged page with the query of mode.
func (m *Merged) queryPage(ctx context.Context, op string, k *keyset, pos *mergedPosition, sources []string, mode sqlpage.Mode) (provider.Page[provider.RawRecord], error) {
	query, args := mergedSQL(m.s.db.Dialect, k, pos, sources, mode)
	// Not prepared: the text depends on the number of sources and on
	// where the position's source falls among them.
	rows, err := m.s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return provider.Page[provider.RawRecord]{}, dbError(ctx, op, err)
	}
	defer rows.Close()
	return readPage(ctx, op, rows, k, mode, true)
}

// mergedSQL returns the query of a merged page of k's resource and filters
// over sources (sorted), after pos (nil: from the start), in mode (see
// [sqlpage.Mode]); the byte lengths of a page with a budget count the
// sourceId member each record is served with.
func mergedSQL(d sqldb.Dialect, k *keyset, pos *mergedPosition, sources []string, mode sqlpage.Mode) (string, []any) {
	var (
		b    strings.Builder
		args sqldb.Args
	)
	columns := viewColumns + ", source"
	switch mode {
	case sqlpage.Guarded:
		args.Add(sqlpage.GuardBytes(k.maxBytes, k.limit))
		columns = guardedColumns + ", source, " + mergedLength
	case sqlpage.Sized:
		columns = fmt.Sprintf(mergedSizedColumns, d.RowAddress())
	}
	merged := func() (string, []any) {
		if mode == sqlpage.Sized {
			return sizedSQL(d, b.String(), args, "pos_ms, id, source", ", s.source", k.limit, k.maxBytes)
		}
		return b.String(), args
	}
	for i, src := range sources {
		sk := *k
		sk.source, sk.after, sk.atOrAfter = src, nil, false
		if pos != nil {
			sk.after = &pos.key
			sk.atOrAfter = src > pos.source
		}
		if len(sources) == 1 {
			sk.write(&b, &args, columns)
			return merged()
		}
		if i > 0 {
			b.WriteString("\nUNION ALL ")
		}
		fmt.Fprintf(&b, "SELECT %s FROM (", columnNames(columns))
		sk.write(&b, &args, columns)
		fmt.Fprintf(&b, ") AS s%d", i)
	}
	fmt.Fprintf(&b, "\nORDER BY pos_ms, id, source LIMIT %s", args.Add(k.limit+1))
	return merged()
}

// mergedLength is the byte length n of a record of a merged page: it
// counts the member "sourceId" each record is served with (14 bytes of
// ,"sourceId":"" and the name).
const mergedLength = "octet_length(body) + octet_length(source) + 14 AS n"

// mergedSizedColumns are sizedColumns for a merged page: n is
// mergedLength, and the source is one more column.
const mergedSizedColumns = "pos_ms, time_ms, id, missing_at, deleted, started_ms, %s AS r, " + mergedLength + ", source"

// columnNames returns the names of a list of columns: of each, what
// follows its last " AS ", or the column itself.
func columnNames(columns string) string {
	parts := strings.Split(columns, ", ")
	for i, c := range parts {
		if j := strings.LastIndex(c, " AS "); j >= 0 {
			parts[i] = c[j+len(" AS "):]
		}
	}
	return strings.Join(parts, ", ")
}

// appendWithSourceID appends to buf the JSON object body with the member
// "sourceId": source: added last, or, when body has a member by that name,
// in its place.
func appendWithSourceID(buf, body []byte, source string) ([]byte, error) {
	val, err := json.Marshal(source)
	if err != nil {
		return nil, err
	}
	// A member named sourceId is spelled so, or with \u escapes of its
	// letters (\u0041 to \u007a); without either, the member is new.
	if bytes.Contains(body, []byte("sourceId")) || bytes.Contains(body, []byte(`\u00`)) {
		b, err := setMember(body, "sourceId", val)
		if err != nil {
			return nil, err
		}
		return append(buf, b...), nil
	}
	end := bytes.LastIndexByte(body, '}')
	open := bytes.IndexByte(body, '{')
	if open < 0 || end < open {
		return nil, errors.New("not a JSON object")
	}
	buf = append(buf, body[:end]...)
	if len(bytes.TrimSpace(body[open+1:end])) > 0 {
		buf = append(buf, ',')
	}
	buf = append(buf, `"sourceId":`...)
	buf = append(buf, val...)
	return append(buf, body[end:]...), nil
}

// ListConversationsRaw returns a page of the conversations of the sources
// of q.Tenant, with their sourceId, in (updatedAt, id, source) order, with
// the filters and tombstones of [Store.ListConversations]. It implements
// [provider.RawSource].
func (m *Merged) ListConversationsRaw(ctx context.Context, q provider.ConversationQuery) (provider.Page[provider.RawRecord], error) {
	return m.listRaw(ctx, "list conversations", q.Tenant, keyset{
		resource: "conversations", after: q.After, since: q.UpdatedSince, inclusive: true, startedAfter: q.StartedAfter, limit: q.Limit,
		maxBytes: q.MaxBytes,
	})
}

// ListAssistantsRaw returns a page of the assistants of the sources of
// q.Tenant, with their sourceId, in (updatedAt, id, source) order. It
// implements [provider.RawSource].
func (m *Merged) ListAssistantsRaw(ctx context.Context, q provider.AssistantQuery) (provider.Page[provider.RawRecord], error) {
	return m.listRaw(ctx, "list assistants", q.Tenant, keyset{
		resource: "assistants", after: q.After, since: q.UpdatedSince, inclusive: true, limit: q.Limit, maxBytes: q.MaxBytes,
	})
}

// ListEventsRaw returns a page of the events of the sources of q.Tenant,
// with their sourceId, in (occurredAt, id, source) order. It implements
// [provider.RawSource].
func (m *Merged) ListEventsRaw(ctx context.Context, q provider.EventQuery) (provider.Page[provider.RawRecord], error) {
	return m.listRaw(ctx, "list events", q.Tenant, keyset{
		resource: "events", after: q.After, since: q.OccurredAfter, category: q.Category, limit: q.Limit, maxBytes: q.MaxBytes,
	})
}

// ListConversations is [Merged.ListConversationsRaw], decoded. It
// implements [provider.DataSource].
func (m *Merged) ListConversations(ctx context.Context, q provider.ConversationQuery) (provider.Page[spec.Conversation], error) {
	p, err := m.ListConversationsRaw(ctx, q)
	return sqlpage.Decode[spec.Conversation]("sqlstore: list conversations", p, err)
}

// ListAssistants is [Merged.ListAssistantsRaw], decoded. It implements
// [provider.DataSource].
func (m *Merged) ListAssistants(ctx context.Context, q provider.AssistantQuery) (provider.Page[spec.Assistant], error) {
	p, err := m.ListAssistantsRaw(ctx, q)
	return sqlpage.Decode[spec.Assistant]("sqlstore: list assistants", p, err)
}

// ListEvents is [Merged.ListEventsRaw], decoded. It implements
// [provider.DataSource].
func (m *Merged) ListEvents(ctx context.Context, q provider.EventQuery) (provider.Page[spec.Event], error) {
	p, err := m.ListEventsRaw(ctx, q)
	return sqlpage.Decode[spec.Event]("sqlstore: list events", p, err)
}

// errNoSingleRecords is the answer of the merged view's single records.
func errNoSingleRecords(what, id string) error {
	return &provider.Error{Kind: provider.ErrNotFound, Detail: fmt.Sprintf(
		"No single %s here: ids are unique only within a source, so read %q from the source named by its sourceId.", what, id)}
}

// GetConversation is [provider.ErrNotFound]: see [Merged]. It implements
// [provider.DataSource].
func (m *Merged) GetConversation(_ context.Context, _, id string) (spec.Conversation, error) {
	return spec.Conversation{}, errNoSingleRecords("conversation", id)
}

// GetAssistant is [provider.ErrNotFound]: see [Merged]. It implements
// [provider.DataSource].
func (m *Merged) GetAssistant(_ context.Context, _, id string) (spec.Assistant, error) {
	return spec.Assistant{}, errNoSingleRecords("assistant", id)
}

// Usage returns a page of usage buckets aggregated from the buckets of all
// the sources of q.Tenant, as [Store.Usage] aggregates those of one. It
// implements [provider.DataSource].
func (m *Merged) Usage(ctx context.Context, q provider.UsageQuery) (provider.Page[spec.UsageBucket], error) {
	p, err := planUsage(&q)
	if err != nil {
		return provider.Page[spec.UsageBucket]{}, err
	}
	if p.sources, err = m.sourcesOf(ctx, q.Tenant); err != nil {
		return provider.Page[spec.UsageBucket]{}, fmt.Errorf("sqlstore: usage: sources of %q: %w", q.Tenant, err)
	}
	if len(p.sources) == 0 {
		return provider.Page[spec.UsageBucket]{Items: []spec.UsageBucket{}}, nil
	}
	return m.s.usage(ctx, p)
}
