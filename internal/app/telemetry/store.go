package telemetry

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aiusage/kit/internal/app/telemetry/tools"
	"github.com/aiusage/kit/internal/infra/sqldb"
)

// storeUsage stores us for source sid in one transaction and returns how
// many rows it added: each usage under its key, once (a key stored already
// changes nothing); a cumulative point as the delta it adds to its run
// (see [tools.Accumulator], whose rules it applies durably), or not at all
// when it adds nothing; and the hours that changed marked for the rollup.
//
// The runs of cumulative series are serialised: on PostgreSQL by an
// advisory lock per run, taken in one order by every transaction; on
// SQLite by its single writer.
func (s *Service) storeUsage(ctx context.Context, sid string, us []tools.Usage) (int, error) {
	if len(us) == 0 {
		return 0, nil
	}
	// Sorted by key through pointers, stably: a Usage is some 300 bytes,
	// too large to move around.
	sorted := make([]*tools.Usage, len(us))
	for i := range us {
		sorted[i] = &us[i]
	}
	slices.SortStableFunc(sorted, func(a, b *tools.Usage) int { return cmp.Compare(a.Key, b.Key) })
	var added int
	err := s.db.InTxRetry(ctx, func(tx *sql.Tx) error {
		added = 0
		if err := s.lockRuns(ctx, tx, sid, sorted); err != nil {
			return err
		}
		rows, err := usageRows(ctx, tx, sid, sorted)
		if err != nil {
			return err
		}
		// On SQLite, whose transaction holds the write lock from its start
		// (BEGIN IMMEDIATE, see sqldb.Open) so that no other writer
		// commits meanwhile, even in another process, the hours a session
		// had before this request are read before its rows are added: for
		// a new session that reads nothing. On PostgreSQL
		// they are read after, to see what other processes committed
		// meanwhile.
		hours := map[int64]bool{}
		before := s.db.Dialect != sqldb.Postgres
		var sessionHoursOf map[toolSession]map[int64]bool
		if before {
			if sessionHoursOf, err = readSessionHours(ctx, tx, sid, sessionsOf(rows)); err != nil {
				return err
			}
		}
		fresh, err := insertUsages(ctx, tx, s.db.Dialect, sid, rows)
		if err != nil {
			return err
		}
		sessions := map[toolSession]bool{}
		for _, u := range fresh {
			added++
			hours[hourOf(u.Time)] = true
			if u.Origin.PerRequest() && u.SessionID != "" {
				sessions[toolSession{u.Tool, u.SessionID}] = true
			}
		}
		if !before {
			if sessionHoursOf, err = readSessionHours(ctx, tx, sid, sessions); err != nil {
				return err
			}
		}
		// An event or span can outrank the metrics or spans of its session
		// in other hours: those hours are computed again too.
		for ts := range sessions {
			for h := range sessionHoursOf[ts] {
				hours[h] = true
			}
		}
		for _, h := range slices.Sorted(maps.Keys(hours)) {
			if _, err := tx.ExecContext(ctx, `INSERT INTO telemetry_dirty (source_id, hour_ms, mark) VALUES ($1, $2, 1)
				ON CONFLICT (source_id, hour_ms) DO UPDATE SET mark = telemetry_dirty.mark + 1`, sid, h); err != nil {
				return fmt.Errorf("telemetry: mark hour: %w", err)
			}
		}
		return nil
	})
	return added, err
}

// usageRows returns the rows us, sorted by key, would add to
// telemetry_usage: each cumulative point replaced by its delta (recorded in
// telemetry_series) or dropped when it adds nothing, and of rows sharing a
// key only the first. It changes none of us.
func usageRows(ctx context.Context, tx *sql.Tx, sid string, us []*tools.Usage) ([]*tools.Usage, error) {
	rows := make([]*tools.Usage, 0, len(us))
	for _, u := range us {
		if u.Cumulative {
			d, ok, err := delta(ctx, tx, sid, *u)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			u = &d
		}
		if len(rows) > 0 && rows[len(rows)-1].Key == u.Key {
			continue // sorted by key: the same key follows
		}
		rows = append(rows, u)
	}
	return rows, nil
}

// sessionsOf returns the sessions of the events and spans among rows, the
// scopes of the one-source rule.
func sessionsOf(rows []*tools.Usage) map[toolSession]bool {
	sessions := map[toolSession]bool{}
	for _, u := range rows {
		if u.Origin.PerRequest() && u.SessionID != "" {
			sessions[toolSession{u.Tool, u.SessionID}] = true
		}
	}
	return sessions
}

// readSessionHours returns, for each of sessions, the hours in which
// source sid has usage of it.
func readSessionHours(ctx context.Context, q queryer, sid string, sessions map[toolSession]bool) (map[toolSession]map[int64]bool, error) {
	out := make(map[toolSession]map[int64]bool, len(sessions))
	for ts := range sessions {
		hours := map[int64]bool{}
		if err := sessionHours(ctx, q, sid, ts, hours); err != nil {
			return nil, err
		}
		out[ts] = hours
	}
	return out, nil
}

// toolSession is a session of a tool, the scope of the one-source rule.
type toolSession struct{ tool, session string }

// sessionHours adds to hours those in which source sid has usage of ts.
// The unary plus keeps SQLite on the session's index: for DISTINCT hour_ms
// it would otherwise walk all of the source's rows in the hour index.
func sessionHours(ctx context.Context, q queryer, sid string, ts toolSession, hours map[int64]bool) error {
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT +hour_ms FROM telemetry_usage WHERE source_id = $1 AND tool = $2 AND session_id = $3`,
		sid, ts.tool, ts.session)
	if err != nil {
		return fmt.Errorf("telemetry: session hours: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h int64
		if err := rows.Scan(&h); err != nil {
			return fmt.Errorf("telemetry: session hours: %w", err)
		}
		hours[h] = true
	}
	return rows.Err()
}

// hourOf returns t's UTC hour in Unix milliseconds.
func hourOf(t time.Time) int64 { return t.UTC().Truncate(time.Hour).UnixMilli() }

// lockRuns takes, on PostgreSQL, the advisory transaction lock of every run
// of a cumulative point of us, in the order of the locks' numbers.
func (s *Service) lockRuns(ctx context.Context, tx *sql.Tx, sid string, us []*tools.Usage) error {
	if s.db.Dialect != sqldb.Postgres {
		return nil
	}
	var locks []int64
	for _, u := range us {
		if u.Cumulative {
			locks = append(locks, lockNumber("run", sid, u.Series, fmt.Sprint(u.Start.UnixNano())))
		}
	}
	return advisoryLocks(ctx, tx, locks)
}

// advisoryLocks takes the PostgreSQL advisory transaction locks, each once,
// in ascending order, so that two transactions never wait for each other in
// a circle.
func advisoryLocks(ctx context.Context, tx *sql.Tx, locks []int64) error {
	slices.Sort(locks)
	for _, l := range slices.Compact(locks) {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, l); err != nil {
			return fmt.Errorf("telemetry: advisory lock: %w", err)
		}
	}
	return nil
}

// lockNumber is the number of an advisory lock named by parts.
func lockNumber(parts ...string) int64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return int64(h.Sum64()) //nolint:gosec // a lock number, any 64 bits do
}

// delta returns what the cumulative point u adds to its run, stored in
// telemetry_series, and records u as the run's last point. The second
// result is false when u adds nothing.
func delta(ctx context.Context, tx *sql.Tx, sid string, u tools.Usage) (tools.Usage, bool, error) {
	var cost float64
	if u.CostEstimate != nil {
		cost = *u.CostEstimate
	}
	start, at := u.Start.UnixNano(), u.Time.UnixNano()
	var last tools.Tokens
	var lastAt int64
	var lastCost float64
	err := tx.QueryRowContext(ctx, `SELECT time_ns, input, cache_read, cache_write, output, cost FROM telemetry_series
		WHERE source_id = $1 AND series = $2 AND start_ns = $3`, sid, u.Series, start).
		Scan(&lastAt, &last.Input, &last.CacheRead, &last.CacheWrite, &last.Output, &lastCost)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return tools.Usage{}, false, fmt.Errorf("telemetry: series: %w", err)
	}
	dTok, dCost := u.Tokens, cost
	switch {
	case !found:
	case at <= lastAt:
		return tools.Usage{}, false, nil // counted already, in this point or a later one
	case lower(u.Tokens, last) || cost < lastCost:
		// A reset: the run counts again from zero.
	default:
		dTok, dCost = u.Tokens.Sub(last), cost-lastCost
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO telemetry_series (source_id, series, start_ns, time_ns, input, cache_read, cache_write, output, cost)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (source_id, series, start_ns) DO UPDATE SET time_ns = excluded.time_ns, input = excluded.input,
			cache_read = excluded.cache_read, cache_write = excluded.cache_write, output = excluded.output, cost = excluded.cost`,
		sid, u.Series, start, at, u.Tokens.Input, u.Tokens.CacheRead, u.Tokens.CacheWrite, u.Tokens.Output, cost); err != nil {
		return tools.Usage{}, false, fmt.Errorf("telemetry: series: %w", err)
	}
	if dTok.IsZero() && dCost == 0 {
		return tools.Usage{}, false, nil
	}
	u.Tokens, u.Cumulative = dTok, false
	if u.CostEstimate != nil {
		u.CostEstimate = &dCost
	}
	return u, true, nil
}

// lower reports whether any count of t is smaller in size than that of
// last (the rule of [tools.Accumulator]: one series keeps one sign).
func lower(t, last tools.Tokens) bool {
	return abs(t.Input) < abs(last.Input) || abs(t.CacheRead) < abs(last.CacheRead) ||
		abs(t.CacheWrite) < abs(last.CacheWrite) || abs(t.Output) < abs(last.Output)
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// requestsOf is how many API requests u stands for: one for an event or a
// span, none for a metric point (which counts tokens, not requests) or a
// cost estimate of its own.
func requestsOf(o tools.Origin) int64 {
	if o.PerRequest() {
		return 1
	}
	return 0
}

// usageColumns are the columns of telemetry_usage a row sets, and
// insertBatch how many rows one INSERT adds at most on SQLite (18
// parameters a row, well within its 32,766). The statement of a full batch
// is prepared once a request; parsing its parameters costs time in
// proportion to their number, so a batch stays small.
const (
	usageColumns = 18
	insertBatch  = 100
)

// insertUsageSQL returns the SQLite statement that stores n usages, each
// under its key unless it is there, and returns the keys it stored. Its
// parameters are anonymous (?): SQLite looks a numbered parameter up among
// those before it, in time quadratic in their count.
func insertUsageSQL(n int) string {
	var b strings.Builder
	b.Grow(300 + n*usageColumns*6)
	b.WriteString(`INSERT INTO telemetry_usage (source_id, key, time_ms, hour_ms, tool, tool_version, model, email, device,
		session_id, department, origin, input, cache_read, cache_write, output, cost_estimate, requests) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c := range usageColumns {
			if c > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('?')
		}
		b.WriteByte(')')
	}
	b.WriteString(` ON CONFLICT (source_id, key) DO NOTHING RETURNING key`)
	return b.String()
}

// fullBatchSQL is [insertUsageSQL] of [insertBatch] rows for SQLite,
// built once.
var fullBatchSQL = sync.OnceValue(func() string { return insertUsageSQL(insertBatch) })

// insertUsages stores rows, sorted by their keys, which differ, in source
// sid and returns those that were new: on SQLite with multi-row INSERTs, on
// PostgreSQL with [insertUsageArraysSQL].
func insertUsages(ctx context.Context, tx *sql.Tx, d sqldb.Dialect, sid string, rows []*tools.Usage) ([]*tools.Usage, error) {
	if d == sqldb.Postgres {
		return insertUsageArrays(ctx, tx, sid, rows)
	}
	fresh := make([]*tools.Usage, 0, len(rows))
	args := make([]any, 0, min(len(rows), insertBatch)*usageColumns)
	var full *sql.Stmt
	if len(rows) >= insertBatch {
		var err error
		if full, err = tx.PrepareContext(ctx, fullBatchSQL()); err != nil {
			return nil, fmt.Errorf("telemetry: usage: %w", err)
		}
		defer full.Close()
	}
	for chunk := range slices.Chunk(rows, insertBatch) {
		args = args[:0]
		for _, u := range chunk {
			var cost sql.NullFloat64
			if u.CostEstimate != nil {
				cost = sql.NullFloat64{Float64: *u.CostEstimate, Valid: true}
			}
			args = append(args, sid, u.Key, u.Time.UnixMilli(), hourOf(u.Time), u.Tool, u.ToolVersion, u.Model, u.Email, u.Device,
				u.SessionID, u.Department, string(u.Origin), u.Tokens.Input, u.Tokens.CacheRead, u.Tokens.CacheWrite, u.Tokens.Output,
				cost, requestsOf(u.Origin))
		}
		var res *sql.Rows
		var err error
		if len(chunk) == insertBatch {
			res, err = full.QueryContext(ctx, args...)
		} else {
			res, err = tx.QueryContext(ctx, insertUsageSQL(len(chunk)), args...)
		}
		keys, err := insertedKeys(res, err)
		if err != nil {
			return nil, err
		}
		if fresh, err = appendStored(fresh, chunk, keys); err != nil {
			return nil, err
		}
	}
	return fresh, nil
}

// appendStored appends to fresh the rows of chunk, sorted by key, whose
// keys an INSERT returned.
func appendStored(fresh, chunk []*tools.Usage, keys []string) ([]*tools.Usage, error) {
	for _, k := range keys {
		i, ok := slices.BinarySearchFunc(chunk, k, func(u *tools.Usage, k string) int { return cmp.Compare(u.Key, k) })
		if !ok {
			return nil, fmt.Errorf("telemetry: usage: stored unknown key %q", k)
		}
		fresh = append(fresh, chunk[i])
	}
	return fresh, nil
}

// insertUsageArraysSQL stores, on PostgreSQL, the usages whose columns are
// passed as arrays ($2...) in source $1, each under its key unless it is
// there, and returns the keys it stored: one statement, planned once, for
// any number of rows, whose 18 parameters cost far less to bind than the
// 18 of each row of a multi-row INSERT.
const insertUsageArraysSQL = `INSERT INTO telemetry_usage (source_id, key, time_ms, hour_ms, tool, tool_version, model, email, device,
		session_id, department, origin, input, cache_read, cache_write, output, cost_estimate, requests)
	SELECT $1, u.key, u.time_ms, u.hour_ms, u.tool, u.tool_version, u.model, u.email, u.device, u.session_id, u.department,
		u.origin, u.input, u.cache_read, u.cache_write, u.output, CASE WHEN u.has_cost THEN u.cost END, u.requests
	FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
		$10::text[], $11::text[], $12::text[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[],
		$17::double precision[], $18::boolean[], $19::bigint[])
		AS u(key, time_ms, hour_ms, tool, tool_version, model, email, device, session_id, department, origin,
			input, cache_read, cache_write, output, cost, has_cost, requests)
	ON CONFLICT (source_id, key) DO NOTHING RETURNING key`

// arrayBatch is how many rows one [insertUsageArraysSQL] stores at most,
// so that its arrays stay small beside the request.
const arrayBatch = 1000

// insertUsageArrays is [insertUsages] on PostgreSQL.
func insertUsageArrays(ctx context.Context, tx *sql.Tx, sid string, rows []*tools.Usage) ([]*tools.Usage, error) {
	fresh := make([]*tools.Usage, 0, len(rows))
	for chunk := range slices.Chunk(rows, arrayBatch) {
		n := len(chunk)
		var (
			keys, toolNames, versions, models, emails = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			devices, sessions, depts, origins         = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			times, hours, reqs                        = make([]int64, n), make([]int64, n), make([]int64, n)
			ins, crs, cws, outs                       = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
			costs, hasCost                            = make([]float64, n), make([]bool, n)
		)
		for i, u := range chunk {
			keys[i], times[i], hours[i], toolNames[i], versions[i] = u.Key, u.Time.UnixMilli(), hourOf(u.Time), u.Tool, u.ToolVersion
			models[i], emails[i], devices[i], sessions[i], depts[i] = u.Model, u.Email, u.Device, u.SessionID, u.Department
			origins[i], reqs[i] = string(u.Origin), requestsOf(u.Origin)
			ins[i], crs[i], cws[i], outs[i] = u.Tokens.Input, u.Tokens.CacheRead, u.Tokens.CacheWrite, u.Tokens.Output
			if u.CostEstimate != nil {
				costs[i], hasCost[i] = *u.CostEstimate, true
			}
		}
		stored, err := insertedKeys(tx.QueryContext(ctx, insertUsageArraysSQL, sid, keys, times, hours, toolNames, versions, models,
			emails, devices, sessions, depts, origins, ins, crs, cws, outs, costs, hasCost, reqs))
		if err != nil {
			return nil, err
		}
		if fresh, err = appendStored(fresh, chunk, stored); err != nil {
			return nil, err
		}
	}
	return fresh, nil
}

// insertedKeys returns the keys in res, the rows of an INSERT that
// returns the keys it stored, or err.
func insertedKeys(res *sql.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, fmt.Errorf("telemetry: usage: %w", err)
	}
	defer res.Close()
	var keys []string
	for res.Next() {
		var k string
		if err := res.Scan(&k); err != nil {
			return nil, fmt.Errorf("telemetry: usage: %w", err)
		}
		keys = append(keys, k)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("telemetry: usage: %w", err)
	}
	return keys, nil
}
