package reviewapi

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// The plans' hourly limits are counted per organisation, across all its keys
// and all the processes of the service, in a sliding window of an hour kept
// as one-minute buckets (reviewapi_rate_buckets: org_id, bucket_start,
// count, last_at), each with the time of the last request it counted.
//
// A request at time t is admitted when the buckets whose last request lies
// in the window (t-3600 s, t] hold fewer requests than the limit; a bucket
// is counted whole until its last request leaves the window. The bound is
// therefore conservative: every request admitted in the hour before t lies
// in a bucket whose last request is no older, so it is counted, no
// 3600-second window ever holds more admitted requests than the limit, and a
// client cannot burst twice its plan across an hour boundary, as it could
// with clock-hour windows. It pays for this with at most a minute's worth of
// requests refused early (those of the bucket that are older than its
// last). In exchange a refusal's wait is exact and never longer than the
// window: one more request is admitted the instant enough of the oldest
// buckets' last requests are an hour old, at most an hour after now. Minute
// buckets keep the state small (at most 61 rows an organisation) where a log
// of every request would hold up to the limit, and unlike a token bucket the
// count is exactly what a client can reconstruct from its own requests.
//
// Only admitted requests are counted: a refused request does not extend the
// lock-out. The check and the increment run in one transaction that holds
// the organisation's lock (on PostgreSQL a transaction-level advisory lock on
// the organisation's id; on SQLite the write lock every transaction takes at
// its start), so processes racing at the limit admit exactly the limit.
const (
	rateWindow = time.Hour
	rateBucket = time.Minute
	// rateKeep is how long the sweep keeps a bucket after its start: past
	// the window and the bucket's minute, with a margin for processes whose
	// clocks lag.
	rateKeep = 2 * time.Hour
)

// rateMemoTTL is how long a process reuses an organisation's rate state it
// read or counted, for the answers that do not count (a refusal for too many
// requests in flight: its headers) and, while
// the state says the limit is reached, to refuse without the database (see
// rateMemo).
const rateMemoTTL = 5 * time.Second

// rateLockPrefix namespaces the advisory locks of the rate limit, as
// sqldb.Migrate namespaces its own.
const rateLockPrefix = "github.com/aiusage/kit/internal/app/reviewapi.rateLimit:"

// rateBucketCount is the count of one bucket.
type rateBucketCount struct {
	start int64 // Unix milliseconds of the minute's start
	count int
	last  int64 // Unix milliseconds of the last request counted
}

// counted tells whether the bucket is counted at now: while its last
// request lies in the window (now-rateWindow, now].
func (b rateBucketCount) counted(now time.Time) bool {
	return b.last > sqldb.Millis(now.Add(-rateWindow))
}

// rateState is an organisation's count at one instant.
type rateState struct {
	now     time.Time
	limit   int
	buckets []rateBucketCount // those overlapping the window, oldest first
	// admitted tells whether the request was admitted (and so counted in
	// buckets); false for a refused request or one not counted at all.
	admitted bool
}

// used is the number of requests counted in the window.
func (st rateState) used() int {
	n := 0
	for _, b := range st.buckets {
		n += b.count
	}
	return n
}

// remaining is how many more requests the window admits now.
func (st rateState) remaining() int { return max(0, st.limit-st.used()) }

// waitFor returns how long until the window's count falls to at most target
// with no more requests: until enough of the oldest buckets have left it.
// It is zero when the count is already at most target.
func (st rateState) waitFor(target int) time.Duration {
	n := st.used()
	at := st.now
	for _, b := range st.buckets {
		if n <= target {
			break
		}
		n -= b.count
		// The bucket stops being counted once its last request is
		// rateWindow old.
		at = time.UnixMilli(b.last).Add(rateWindow)
	}
	// At most the window: only a bucket of a process whose clock runs
	// ahead of this one's could ask for longer.
	return min(rateWindow, max(0, at.Sub(st.now)))
}

// retryAfter is how long until one more request is admitted.
func (st rateState) retryAfter() time.Duration { return st.waitFor(st.limit - 1) }

// reset is how long until the remaining count grows: until the oldest
// requests counted leave the window (on a refusal, the same as retryAfter);
// zero when nothing is counted.
func (st rateState) reset() time.Duration { return st.waitFor(min(st.used(), st.limit) - 1) }

// seconds rounds d up to whole seconds: waiting that long is always enough.
func seconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

// setRateHeaders writes the RateLimit-Policy and RateLimit headers of the
// organisation's state.
func setRateHeaders(h http.Header, plan org.Plan, st rateState) {
	h.Set("RateLimit-Policy", fmt.Sprintf(`"%s";q=%d;w=%d`, plan, st.limit, int(rateWindow/time.Second)))
	h.Set("RateLimit", fmt.Sprintf(`"%s";r=%d;t=%d`, plan, st.remaining(), seconds(st.reset())))
}

// at returns the state at now, a later instant with no more requests: the
// buckets that have left the window by then are dropped.
func (st rateState) at(now time.Time) rateState {
	out := rateState{now: now, limit: st.limit}
	for _, b := range st.buckets {
		if b.counted(now) {
			out.buckets = append(out.buckets, b)
		}
	}
	return out
}

// rateMemo keeps the last rate state of each organisation this process read
// or counted, for rateMemoTTL. A state whose count has reached the limit
// refuses the organisation's requests without the database until one more
// could be admitted (retryAfter) or the memo expires, whichever is first:
// other processes only add to the count meanwhile, so such a refusal is the
// one the database would give. The memo holds at most maxRateMemo
// organisations; when full it is emptied. It is safe for concurrent use.
type rateMemo struct {
	mu sync.Mutex
	m  map[string]rateState
}

// maxRateMemo bounds the organisations of a rateMemo.
const maxRateMemo = 10_000

// get returns the organisation's state at now, if one was kept less than
// rateMemoTTL before.
func (m *rateMemo) get(org string, now time.Time) (rateState, bool) {
	m.mu.Lock()
	st, ok := m.m[org]
	m.mu.Unlock()
	if !ok || now.Before(st.now) || now.Sub(st.now) >= rateMemoTTL {
		return rateState{}, false
	}
	return st.at(now), true
}

// put keeps st, unless a newer state of the organisation is kept.
func (m *rateMemo) put(org string, st rateState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= maxRateMemo {
		m.m = map[string]rateState{}
	}
	if old, ok := m.m[org]; ok && old.now.After(st.now) {
		return
	}
	st.buckets = slices.Clone(st.buckets)
	m.m[org] = st
}

// refusing returns the organisation's state at now when it was kept at the
// limit and no request could be admitted yet.
func (m *rateMemo) refusing(org string, now time.Time) (rateState, bool) {
	st, ok := m.get(org, now)
	if !ok || st.used() < st.limit {
		return rateState{}, false
	}
	return st, true
}

// rateLimit counts the request against its organisation's hourly limit and
// writes the RateLimit-Policy and RateLimit headers; a request over the
// limit is answered 429 RATE_LIMIT_EXCEEDED with Retry-After, and not
// counted. While the organisation's last state in this process says the
// limit is reached (rateMemo), the refusal reads nothing from the database,
// nor its body.
func (s *Service) rateLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principal(r)
		o, err := s.orgs.Organisation(r.Context(), p.OrganisationID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		st, refused := s.rates.refusing(o.ID, s.now())
		if !refused {
			if st, err = s.countRequest(r.Context(), o.ID, o.RateLimit()); err != nil {
				s.fail(w, r, err)
				return
			}
			s.rates.put(o.ID, st)
		}
		setRateHeaders(w.Header(), o.Plan, st)
		if !st.admitted {
			httpx.CloseUnread(w, r)
			wait := seconds(st.retryAfter())
			w.Header().Set("Retry-After", strconv.Itoa(wait))
			s.fail(w, r, spec.Errorf(spec.ErrRateLimited, "The organisation has made %d requests, with all its keys, in the past hour; the %s plan allows %d an hour. Retry in %d seconds.",
				st.used(), o.Plan, st.limit, wait))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// reportRate writes the rate-limit headers of the key's organisation without
// counting the request: for the 429 of a request refused for too many in
// flight, which is not counted. (The 401 of a revoked or expired key has no
// such headers: it is the 401 of an unknown key.) The state is this process's last of the organisation
// when it is younger than rateMemoTTL (so that a flood of refusals reads
// nothing), else read. The headers are left out when they cannot be read;
// the answer is the same either way.
func (s *Service) reportRate(w http.ResponseWriter, r *http.Request, p org.Principal) {
	o, err := s.orgs.Organisation(r.Context(), p.OrganisationID)
	if err != nil {
		return
	}
	now := s.now()
	st, ok := s.rates.get(o.ID, now)
	if !ok {
		buckets, err := readRateBuckets(r.Context(), s.db, o.ID, now)
		if err != nil {
			return
		}
		st = rateState{now: now, limit: o.RateLimit(), buckets: buckets}
		s.rates.put(o.ID, st)
	}
	setRateHeaders(w.Header(), o.Plan, st)
}

// countRequest admits the organisation's request when the window holds
// fewer than limit requests, and then counts it in the bucket of the
// current minute. Both run in one transaction holding the organisation's
// lock, so concurrent requests of any process see each other's counts.
func (s *Service) countRequest(ctx context.Context, orgID string, limit int) (rateState, error) {
	var st rateState
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if s.db.Dialect == sqldb.Postgres {
			// SQLite's transaction already holds the database's write lock.
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || coalesce(current_schema(), '') || ':' || $2, 0))`,
				rateLockPrefix, orgID); err != nil {
				return fmt.Errorf("rate limit lock: %w", err)
			}
		}
		// The clock is read under the lock: a request that waited for it
		// is counted at the time it was admitted.
		st = rateState{now: s.now(), limit: limit}
		var err error
		if st.buckets, err = readRateBuckets(ctx, tx, orgID, st.now); err != nil {
			return err
		}
		if st.used() >= limit {
			return nil
		}
		at := sqldb.Millis(st.now)
		start := sqldb.FloorTo(at, rateBucket.Milliseconds())
		if _, err := tx.ExecContext(ctx, `INSERT INTO reviewapi_rate_buckets (org_id, bucket_start, count, last_at) VALUES ($1, $2, 1, $3)
			ON CONFLICT (org_id, bucket_start) DO UPDATE SET count = reviewapi_rate_buckets.count + 1,
			last_at = CASE WHEN reviewapi_rate_buckets.last_at < excluded.last_at THEN excluded.last_at ELSE reviewapi_rate_buckets.last_at END`,
			orgID, start, at); err != nil {
			return err
		}
		st.admitted = true
		st.buckets = addToBucket(st.buckets, start, at)
		return nil
	})
	return st, err
}

// addToBucket adds one request, admitted at at, to the bucket starting at
// start, keeping the buckets in order.
func addToBucket(buckets []rateBucketCount, start, at int64) []rateBucketCount {
	for i, b := range buckets {
		switch {
		case b.start == start:
			buckets[i].count++
			buckets[i].last = max(b.last, at)
			return buckets
		case b.start > start:
			// A bucket of a process whose clock runs ahead.
			out := append(buckets[:i:i], rateBucketCount{start: start, count: 1, last: at})
			return append(out, buckets[i:]...)
		}
	}
	return append(buckets, rateBucketCount{start: start, count: 1, last: at})
}

// readRateBuckets returns the organisation's buckets counted at now (whose
// last request lies in the window ending at now), oldest first. Buckets
// ahead of now (a process whose clock runs ahead) are counted too.
func readRateBuckets(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, orgID string, now time.Time) ([]rateBucketCount, error) {
	rows, err := q.QueryContext(ctx, `SELECT bucket_start, count, last_at FROM reviewapi_rate_buckets
		WHERE org_id = $1 AND last_at > $2 ORDER BY bucket_start`, orgID, sqldb.Millis(now.Add(-rateWindow)))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []rateBucketCount
	for rows.Next() {
		var b rateBucketCount
		if err := rows.Scan(&b.start, &b.count, &b.last); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
