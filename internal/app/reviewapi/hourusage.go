package reviewapi

import (
	"context"
	"time"
)

// HourUsage is how much of its hourly limit an organisation has used on the
// review-task API.
type HourUsage struct {
	// Used is the requests counted in the past hour, all keys together, as
	// the rate limit counts them (whole one-minute buckets while their last
	// request is in the hour, so a request up to a minute older than the
	// hour may still count).
	Used int
	// Limit is the organisation's hourly limit (org.Organisation.RateLimit).
	Limit int
	// Reset is how long until the oldest request counted leaves the window;
	// zero when none is counted.
	Reset time.Duration
}

// HourUsage returns the organisation's use of its hourly limit now, read
// from the database as the rate limit reads it (one indexed read of at most
// 61 rows); it counts nothing.
func (s *Service) HourUsage(ctx context.Context, orgID string) (HourUsage, error) {
	o, err := s.orgs.Organisation(ctx, orgID)
	if err != nil {
		return HourUsage{}, err
	}
	now := s.now()
	buckets, err := readRateBuckets(ctx, s.db, o.ID, now)
	if err != nil {
		return HourUsage{}, err
	}
	st := rateState{now: now, limit: o.RateLimit(), buckets: buckets}
	used := st.used()
	return HourUsage{Used: used, Limit: st.limit, Reset: st.waitFor(0)}, nil
}
