package org

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// KeyUse names the API through which a key was used, as the store records
// it for [Store.KeysLastUsed].
type KeyUse string

// The APIs a key is used through.
const (
	// UseOrganisationAPI is the organisation API (instructions, agents) and
	// its collected view of the organisation's data over REST.
	UseOrganisationAPI KeyUse = "org"
	// UseReviewAPI is the review-task API.
	UseReviewAPI KeyUse = "review"
	// UseMCP is the MCP binding of a source's collected view.
	UseMCP KeyUse = "mcp"
	// UseTelemetry is the telemetry (OTLP) endpoint, over HTTP or gRPC.
	UseTelemetry KeyUse = "telemetry"
)

// String returns the API's name in words: "organisation API",
// "review-task API", "MCP" or "telemetry"; an unknown value as it is.
func (u KeyUse) String() string {
	switch u {
	case UseOrganisationAPI:
		return "organisation API"
	case UseReviewAPI:
		return "review-task API"
	case UseMCP:
		return "MCP"
	case UseTelemetry:
		return "telemetry"
	}
	return string(u)
}

// LastUseInterval is how often at most the store writes a key's last use:
// a key used many times a minute costs one write a minute, however many
// processes share the database.
const LastUseInterval = time.Minute

// LastUse is when a key was last used (within [LastUseInterval]) and
// through which API.
type LastUse struct {
	At  time.Time
	API KeyUse
}

// useTracker remembers, per key id, when this process last wrote (or tried
// to write) the key's last use, in Unix milliseconds, so that most requests
// cost no write at all. It is safe for concurrent use.
type useTracker struct {
	mu   sync.Mutex
	last map[string]int64
	// statements counts the UPDATEs issued, rows the rows they changed
	// (both for tests).
	statements, rows atomic.Int64
}

// claim reports whether this process should write the use of key id at
// nowMs, and if so marks it written: no more than once per
// LastUseInterval, so concurrent requests with one key write once.
func (t *useTracker) claim(id string, nowMs int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if last, ok := t.last[id]; ok && nowMs >= last && nowMs-last < LastUseInterval.Milliseconds() {
		return false
	}
	if t.last == nil || len(t.last) >= maxCached {
		t.last = map[string]int64{}
	}
	t.last[id] = nowMs
	return true
}

// noteUse records that key id was used through use at now: at most once per
// LastUseInterval per key, in this process by the tracker, and across
// processes by the UPDATE's condition, which leaves a row written less than
// LastUseInterval before now as it is. A write that fails is not retried
// before the interval is over, and does not fail the request: the last use
// is a hint for administrators, not a record of every request.
func (s *Store) noteUse(ctx context.Context, id string, use KeyUse, now time.Time) {
	nowMs := now.UnixMilli()
	if !s.uses.claim(id, nowMs) {
		return
	}
	s.uses.statements.Add(1)
	res, err := s.db.ExecContext(ctx, `UPDATE orgapi_api_keys SET last_used_at = $1, last_used_api = $2
		WHERE id = $3 AND (last_used_at IS NULL OR last_used_at <= $4)`,
		nowMs, string(use), id, nowMs-LastUseInterval.Milliseconds())
	if err != nil {
		return
	}
	if n, err := res.RowsAffected(); err == nil {
		s.uses.rows.Add(n)
	}
}

// KeysLastUsed returns, by key id, when each of the organisation's keys was
// last used and through which API, as [Store.AuthenticateFor] and
// [Store.AuthenticateIngestion] record it: at most [LastUseInterval] late.
// A key never used is not in the map.
func (s *Store) KeysLastUsed(ctx context.Context, orgID string) (map[string]LastUse, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, last_used_at, COALESCE(last_used_api, '') FROM orgapi_api_keys
		WHERE org_id = $1 AND last_used_at IS NOT NULL`, strings.ToLower(orgID))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]LastUse{}
	for rows.Next() {
		var id, api string
		var at int64
		if err := rows.Scan(&id, &at, &api); err != nil {
			return nil, err
		}
		out[id] = LastUse{At: fromMillis(at), API: KeyUse(api)}
	}
	return out, rows.Err()
}
