package sources

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/spec"
)

// What an organisation's dashboard draws, over the data of all its sources.

// DefaultDashboardRange is the range [Service.OrgUsage] covers when its
// query gives no start.
const DefaultDashboardRange = 30 * 24 * time.Hour

// OrgUsageQuery selects the usage [Service.OrgUsage] returns.
type OrgUsageQuery struct {
	// From and To bound the time slots: From <= start < To, From rounded
	// down and To up to the granularity (UTC days or hours). A zero To is
	// the end of the current slot; a zero From is DefaultDashboardRange
	// before To (31 days at most for hours, 366 for days).
	From, To time.Time
	// Granularity is spec.GranularityDay (the default) or
	// spec.GranularityHour.
	Granularity string
	// UserIDs, when not empty, keep every series to the usage of these
	// userIds (see sqlstore.UsageSeriesQuery.UserIDs).
	UserIDs []string
}

// OrgUsage is an organisation's usage, summed over its sources, in four
// series of points ordered by time slot and then by the grouped value. A
// slot without activity has no point. Requests, conversations and tokens
// add up across a slot's points; activeUsers does not (see
// sqlstore.UsagePoint), nor does cost when CostComplete is false.
type OrgUsage struct {
	// The range and granularity the series cover, resolved.
	From, To    time.Time
	Granularity string
	// Sources are the organisation's sources, oldest first: the names of
	// the ids in BySource.
	Sources []Source
	// Total has one point per slot.
	Total []sqlstore.UsagePoint
	// BySource has one point per slot and source (Source is the source
	// id).
	BySource []sqlstore.UsagePoint
	// ByModel has one point per slot and model.
	ByModel []sqlstore.UsagePoint
	// ByUser has one point per slot and userId; usage the sources did not
	// attribute to a user is UserID "".
	ByUser []sqlstore.UsagePoint
}

// OrgUsage returns the usage of organisation orgID, summed over its
// sources, per time slot: in total, per source, per model and per user.
// An unknown organisation is spec.ErrNotFound; a bad granularity or range
// spec.ErrInvalid.
func (s *Service) OrgUsage(ctx context.Context, orgID string, q OrgUsageQuery) (OrgUsage, error) {
	org, err := s.organisation(ctx, orgID)
	if err != nil {
		return OrgUsage{}, err
	}
	out := OrgUsage{Granularity: q.Granularity}
	if out.Granularity == "" {
		out.Granularity = spec.GranularityDay
	}
	unit := 24 * time.Hour
	if out.Granularity == spec.GranularityHour {
		unit = time.Hour
	}
	out.To = q.To
	if out.To.IsZero() {
		out.To = s.cfg.Now().UTC().Truncate(unit).Add(unit)
	}
	out.From = q.From
	if out.From.IsZero() {
		out.From = out.To.Add(-DefaultDashboardRange)
	}
	out.From, out.To = out.From.UTC().Truncate(unit), ceilTo(out.To.UTC(), unit)
	if out.Sources, err = s.List(ctx, org); err != nil {
		return OrgUsage{}, err
	}
	ids := make([]string, len(out.Sources))
	for i, src := range out.Sources {
		ids[i] = src.ID
	}
	for _, series := range []struct {
		by  []string
		out *[]sqlstore.UsagePoint
	}{
		{nil, &out.Total},
		{[]string{sqlstore.DimensionSource}, &out.BySource},
		{[]string{spec.DimensionModel}, &out.ByModel},
		{[]string{spec.DimensionUserID}, &out.ByUser},
	} {
		*series.out, err = s.store.UsageSeries(ctx, sqlstore.UsageSeriesQuery{Sources: ids, Start: out.From, End: out.To,
			Granularity: out.Granularity, GroupBy: series.by, UserIDs: q.UserIDs})
		if err != nil {
			return OrgUsage{}, err
		}
	}
	return out, nil
}

// UsageSeries returns the usage of organisation orgID as
// sqlstore.Store.UsageSeries does, grouped as q.GroupBy says (by source
// with sqlstore.DimensionSource, the points' Source then being a source
// id). q.Sources restricts it to some of the organisation's sources (by
// id); empty, it covers them all. An unknown organisation, or a source
// that is not the organisation's, is spec.ErrNotFound.
func (s *Service) UsageSeries(ctx context.Context, orgID string, q sqlstore.UsageSeriesQuery) ([]sqlstore.UsagePoint, error) {
	ids, err := s.sourcesOf(ctx, orgID, q.Sources)
	if err != nil {
		return nil, err
	}
	q.Sources = ids
	return s.store.UsageSeries(ctx, q)
}

// SearchConversations returns a page of the conversations of organisation
// orgID that match q, newest first (see sqlstore.Store.SearchConversations):
// by user, assistant and startedAt range, each with the id of its source
// (FoundConversation.Source, and sourceId in its JSON). q.Sources
// restricts the search to some of the organisation's sources (by id);
// empty, it searches them all. Continue with q.After set to the page's
// Next. An unknown organisation, or a source that is not the
// organisation's, is spec.ErrNotFound; a bad limit or range
// spec.ErrInvalid.
func (s *Service) SearchConversations(ctx context.Context, orgID string, q sqlstore.ConversationSearch) (sqlstore.ConversationPage, error) {
	ids, err := s.sourcesOf(ctx, orgID, q.Sources)
	if err != nil {
		return sqlstore.ConversationPage{}, err
	}
	q.Sources = ids
	return s.store.SearchConversations(ctx, q)
}

// organisation returns the canonical id of organisation orgID, or
// spec.ErrNotFound.
func (s *Service) organisation(ctx context.Context, orgID string) (string, error) {
	org, ok := ident.CanonicalUUID(orgID)
	if !ok {
		return "", fmt.Errorf("organisation %q: %w", orgID, spec.ErrNotFound)
	}
	if _, err := s.orgs.Organisation(ctx, org); err != nil {
		if errors.Is(err, spec.ErrNotFound) {
			return "", fmt.Errorf("organisation %s: %w", org, spec.ErrNotFound)
		}
		return "", err
	}
	return org, nil
}

// sourcesOf returns the ids of the sources of organisation orgID, or of
// those of them named by want.
func (s *Service) sourcesOf(ctx context.Context, orgID string, want []string) ([]string, error) {
	org, err := s.organisation(ctx, orgID)
	if err != nil {
		return nil, err
	}
	ids, err := s.sourceIDs(ctx, org)
	if err != nil {
		return nil, err
	}
	if len(want) == 0 {
		return ids, nil
	}
	out := make([]string, 0, len(want))
	for _, w := range want {
		id, ok := ident.CanonicalUUID(w)
		if !ok || !slices.Contains(ids, id) {
			return nil, fmt.Errorf("source %q: %w", w, spec.ErrNotFound)
		}
		out = append(out, id)
	}
	return out, nil
}

// ceilTo rounds t up to a multiple of unit (UTC hours or days).
func ceilTo(t time.Time, unit time.Duration) time.Time {
	if f := t.Truncate(unit); !f.Equal(t) {
		return f.Add(unit)
	}
	return t
}
