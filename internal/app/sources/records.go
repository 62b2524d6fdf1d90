package sources

import (
	"context"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Single records and lists of an organisation's view for its dashboard:
// what /organisations/{id}/assistants and /events serve, restricted to some
// of its sources, in the interface's order.

// RecordPosition is a record's place in a list of the view: its updatedAt
// (occurredAt for events) and its key within the merged list.
type RecordPosition struct {
	Time time.Time
	ID   string
}

// RecordList selects a page of a list of the view.
type RecordList struct {
	// Sources restricts the list to some of the organisation's sources (by
	// id); empty, it covers them all.
	Sources []string
	// After is the position of the last record of the previous page (a
	// RecordPage's item's Position); nil starts at the oldest.
	After *RecordPosition
	// Since keeps assistants with updatedAt >= Since, or events with
	// occurredAt > Since; zero keeps all.
	Since time.Time
	// Category keeps the events of one category; "" keeps all.
	Category string
	// Limit is the most records returned, 1..provider.MaxLimit.
	Limit int
}

// Record is a record of a list of the view: its JSON, with sourceId, and
// its position.
type Record struct {
	JSON     json.RawMessage
	Position RecordPosition
}

// RecordPage is a page of a list of the view.
type RecordPage struct {
	Items   []Record
	HasMore bool
}

// recordsOf converts a page of the view.
func recordsOf(p provider.Page[provider.RawRecord], err error) (RecordPage, error) {
	if err != nil {
		return RecordPage{}, err
	}
	out := RecordPage{HasMore: p.HasMore, Items: make([]Record, len(p.Items))}
	for i, r := range p.Items {
		out.Items[i] = Record{JSON: r.JSON, Position: RecordPosition{Time: r.Key.Time, ID: r.Key.ID}}
	}
	return out, nil
}

func (q *RecordList) after() *provider.Key {
	if q.After == nil {
		return nil
	}
	return &provider.Key{Time: q.After.Time, ID: q.After.ID}
}

// OrgAssistants returns a page of the assistants of organisation orgID, as
// its view lists them: by (updatedAt, id, source). An unknown organisation,
// or a source that is not the organisation's, is spec.ErrNotFound; a bad
// position or limit spec.ErrInvalid.
func (s *Service) OrgAssistants(ctx context.Context, orgID string, q RecordList) (RecordPage, error) {
	ids, err := s.sourcesOf(ctx, orgID, q.Sources)
	if err != nil {
		return RecordPage{}, err
	}
	return recordsOf(s.merged(ids).ListAssistantsRaw(ctx, provider.AssistantQuery{Tenant: orgTenant(orgID), After: q.after(),
		UpdatedSince: q.Since, Limit: q.Limit}))
}

// OrgEvents returns a page of the events of organisation orgID, as its view
// lists them: by (occurredAt, id, source). Errors as [Service.OrgAssistants].
func (s *Service) OrgEvents(ctx context.Context, orgID string, q RecordList) (RecordPage, error) {
	ids, err := s.sourcesOf(ctx, orgID, q.Sources)
	if err != nil {
		return RecordPage{}, err
	}
	return recordsOf(s.merged(ids).ListEventsRaw(ctx, provider.EventQuery{Tenant: orgTenant(orgID), After: q.after(),
		OccurredAfter: q.Since, Category: q.Category, Limit: q.Limit}))
}

// merged is the view over the sources ids.
func (s *Service) merged(ids []string) provider.RawSource {
	return s.store.Merged(func(context.Context, string) ([]string, error) { return ids, nil })
}

// eventScan bounds the events of one millisecond [Service.OrgEvent] reads.
const eventScan = 300

// OrgEvent returns the JSON of event id of source sourceID of organisation
// orgID, which occurred at at (milliseconds). The interface has no single
// event read, so it reads the source's events of that millisecond, from
// just before id, at most a few hundred. An unknown event, or a source that
// is not the organisation's, is spec.ErrNotFound.
func (s *Service) OrgEvent(ctx context.Context, orgID, sourceID, id string, at time.Time) (json.RawMessage, error) {
	ids, err := s.sourcesOf(ctx, orgID, []string{sourceID})
	if err != nil {
		return nil, err
	}
	at = at.UTC().Truncate(time.Millisecond)
	notFound := spec.Errorf(spec.ErrNotFound, "No event %q at %s in this source.", id, at.Format(time.RFC3339Nano))
	if id == "" {
		return nil, notFound
	}
	// id without its last character sorts before id.
	_, size := utf8.DecodeLastRuneInString(id)
	q := provider.EventQuery{Tenant: ids[0], After: &provider.Key{Time: at, ID: id[:len(id)-size]}, Limit: 100}
	for read := 0; read < eventScan; read += q.Limit {
		page, err := s.store.ListEventsRaw(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, rec := range page.Items {
			switch {
			case rec.Key.Time.After(at):
				return nil, notFound
			case rec.Key.ID == id && rec.Key.Time.Equal(at):
				return rec.JSON, nil
			}
		}
		if !page.HasMore || len(page.Items) == 0 {
			break
		}
		q.After = &page.Items[len(page.Items)-1].Key
	}
	return nil, notFound
}
