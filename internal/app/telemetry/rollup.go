package telemetry

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/telemetry/tools"
	"github.com/aiusage/kit/internal/infra/riverjobs"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// RollupQueue is the job queue of the rollups.
const RollupQueue = "telemetry"

// rollupWorkers is how many rollups run at once in one process.
const rollupWorkers = 2

// RollupArgs is the job that computes again the usage buckets of the hours
// of one telemetry source that changed.
type RollupArgs struct {
	SourceID string `json:"sourceId"`
	// Reprice is set, to the time of a change of prices (Unix ms), by
	// [Service.Reprice]: its job is not one with the rollups of ingestion,
	// so it is queued even while one of them runs (see InsertOpts).
	Reprice int64 `json:"reprice,omitempty"`
}

// Kind implements river.JobArgs.
func (RollupArgs) Kind() string { return "aiusage_telemetry_rollup" }

// InsertOpts makes one job per source while one is queued or running. A
// change that arrives while its source's rollup runs is left to the next
// rollup of the source, or to the sweep ([Service.Jobs]). A change of
// prices is not: its job (Reprice set) is queued beside a running one, so
// that the hours a rollup finished just before the change are computed
// again at once, not at the next sweep.
func (RollupArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: RollupQueue, MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled,
	}}}
}

type rollupWorker struct {
	river.WorkerDefaults[RollupArgs]
	s *Service
}

func (w *rollupWorker) Work(ctx context.Context, job *river.Job[RollupArgs]) error {
	return w.s.Rollup(ctx, job.Args.SourceID)
}

// sweepArgs is the periodic job that queues a rollup of every source with
// hours left to compute.
type sweepArgs struct{}

func (sweepArgs) Kind() string { return "aiusage_telemetry_sweep" }

func (sweepArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 1} }

type sweepWorker struct {
	river.WorkerDefaults[sweepArgs]
	s *Service
}

func (w *sweepWorker) Work(ctx context.Context, _ *river.Job[sweepArgs]) error {
	ids, err := w.s.dirtySources(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := w.s.cfg.Jobs.Enqueue(ctx, RollupArgs{SourceID: id}, nil); err != nil {
			return fmt.Errorf("telemetry: queue rollup of %s: %w", id, err)
		}
	}
	return nil
}

// Jobs registers the endpoint's background work on the service's job
// queue: the rollup worker and its queue (RollupQueue), and the sweep, a
// periodic job that every RollupInterval queues a rollup of each source
// with hours left to compute.
func (s *Service) Jobs(j *riverjobs.Jobs) {
	river.AddWorker(j.Workers, &rollupWorker{s: s})
	river.AddWorker(j.Workers, &sweepWorker{s: s})
	j.AddQueue(RollupQueue, rollupWorkers)
	j.AddPeriodic(river.NewPeriodicJob(river.PeriodicInterval(s.cfg.RollupInterval),
		func() (river.JobArgs, *river.InsertOpts) { return sweepArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true}))
}

// queueRollup queues the rollup of source sid; a failure is logged, and the
// sweep queues it later.
func (s *Service) queueRollup(ctx context.Context, sid string) {
	s.enqueue(ctx, RollupArgs{SourceID: sid})
}

// enqueue queues the rollup args; a failure is logged, and the sweep queues
// it later.
func (s *Service) enqueue(ctx context.Context, args RollupArgs) {
	if s.cfg.Jobs == nil {
		return
	}
	if err := s.cfg.Jobs.Enqueue(ctx, args, nil); err != nil {
		s.log.WarnContext(ctx, "telemetry: rollup not queued; the sweep queues it", "source", args.SourceID, "error", err)
	}
}

// dirtySources returns the sources with hours left to compute.
func (s *Service) dirtySources(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT source_id FROM telemetry_dirty ORDER BY source_id`)
	if err != nil {
		return nil, fmt.Errorf("telemetry: dirty sources: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// Reprice marks every hour already rolled up of the telemetry sources of
// organisation orgID (those of its Ingestion keys, revoked ones too) to be
// computed again, and queues their rollups: what a change of the
// organisation's prices calls, so that the change applies to the hours
// rolled up before it too.
func (s *Service) Reprice(ctx context.Context, orgID string) error {
	keys, err := s.cfg.Orgs.Keys(ctx, orgID)
	if err != nil {
		return fmt.Errorf("telemetry: reprice: %w", err)
	}
	for _, k := range keys {
		if k.Type != org.KeyTypeIngestion {
			continue
		}
		sid := SourceID(k.ID)
		if _, err := s.db.ExecContext(ctx, `INSERT INTO telemetry_dirty (source_id, hour_ms, mark)
			SELECT source_id, hour_ms, 1 FROM telemetry_hours WHERE source_id = $1
			ON CONFLICT (source_id, hour_ms) DO UPDATE SET mark = telemetry_dirty.mark + 1`, sid); err != nil {
			return fmt.Errorf("telemetry: reprice: %w", err)
		}
		s.enqueue(ctx, RollupArgs{SourceID: sid, Reprice: s.now().UnixMilli()})
	}
	return nil
}

// RollupAll computes the usage buckets of every source with hours left to
// compute, in this process (tests, and what the sweep's jobs do).
func (s *Service) RollupAll(ctx context.Context) error {
	ids, err := s.dirtySources(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.Rollup(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// rollupBatch bounds the hours one pass of a rollup computes.
const rollupBatch = 100

// rollupPasses bounds the passes of one rollup: a source that keeps
// changing is taken up again by its next job.
const rollupPasses = 10

// Rollup computes again the usage buckets of the hours of source sid that
// changed, and writes them into its collected view. Two rollups of one
// source never interleave: in one process a mutex, across processes sharing
// a PostgreSQL database an advisory lock per hour, held until the hour is
// written.
func (s *Service) Rollup(ctx context.Context, sid string) error {
	defer s.rollups.lock(sid)()
	for range rollupPasses {
		rows, err := s.db.QueryContext(ctx, `SELECT hour_ms FROM telemetry_dirty WHERE source_id = $1 ORDER BY hour_ms LIMIT $2`, sid, rollupBatch)
		if err != nil {
			return fmt.Errorf("telemetry: dirty hours: %w", err)
		}
		var hours []int64
		for rows.Next() {
			var h int64
			if err := rows.Scan(&h); err != nil {
				rows.Close()
				return err
			}
			hours = append(hours, h)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(hours) == 0 {
			return nil
		}
		if err := s.rollupHours(ctx, sid, hours); err != nil {
			return err
		}
	}
	return nil
}

// queryer is what rollupHours reads with: the database, or on PostgreSQL the
// transaction holding the hours' locks.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// hourState is what a rollup read of one hour.
type hourState struct {
	hour    int64
	mark    int64
	written []dimensions // the sets written last time
	now     []dimensions // the sets written this time
}

// rollupHours computes and writes the buckets of hours of source sid.
func (s *Service) rollupHours(ctx context.Context, sid string, hours []int64) error {
	var q queryer = s.db
	var tx *sql.Tx
	if s.db.Dialect == sqldb.Postgres {
		var err error
		if tx, err = s.db.BeginTx(ctx, nil); err != nil {
			return fmt.Errorf("telemetry: rollup: %w", err)
		}
		defer func() { _ = tx.Rollback() }()
		locks := make([]int64, len(hours))
		for i, h := range hours {
			locks[i] = lockNumber("hour", sid, fmt.Sprint(h))
		}
		if err := advisoryLocks(ctx, tx, locks); err != nil {
			return err
		}
		q = tx
	}
	prices, err := s.sourcePrices(ctx, sid)
	if err != nil {
		return err
	}
	var states []*hourState
	var records []json.RawMessage
	for _, h := range hours {
		st := &hourState{hour: h}
		err := q.QueryRowContext(ctx, `SELECT mark FROM telemetry_dirty WHERE source_id = $1 AND hour_ms = $2`, sid, h).Scan(&st.mark)
		if errors.Is(err, sql.ErrNoRows) {
			continue // computed meanwhile by another process
		}
		if err != nil {
			return fmt.Errorf("telemetry: rollup: %w", err)
		}
		var prev string
		err = q.QueryRowContext(ctx, `SELECT dimensions FROM telemetry_hours WHERE source_id = $1 AND hour_ms = $2`, sid, h).Scan(&prev)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("telemetry: rollup: %w", err)
		}
		if prev != "" {
			if err := json.Unmarshal([]byte(prev), &st.written); err != nil {
				return fmt.Errorf("telemetry: rollup: hour %d: %w", h, err)
			}
		}
		us, err := hourUsage(ctx, q, sid, h)
		if err != nil {
			return err
		}
		if us, err = withSessionOrigins(ctx, q, sid, h, us); err != nil {
			return err
		}
		bs, err := buckets(time.UnixMilli(h).UTC(), us, st, prices)
		if err != nil {
			return err
		}
		records = append(records, bs...)
		states = append(states, st)
	}
	if err := s.savePushed(ctx, sid, consumer.Usage, records, s.now().Truncate(time.Millisecond)); err != nil {
		return err
	}
	done := func(tx *sql.Tx) error {
		for _, st := range states {
			dims, err := json.Marshal(st.now)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO telemetry_hours (source_id, hour_ms, dimensions) VALUES ($1, $2, $3)
				ON CONFLICT (source_id, hour_ms) DO UPDATE SET dimensions = excluded.dimensions`, sid, st.hour, string(dims)); err != nil {
				return fmt.Errorf("telemetry: rollup: %w", err)
			}
			// Forgotten only when nothing changed the hour meanwhile.
			if _, err := tx.ExecContext(ctx, `DELETE FROM telemetry_dirty WHERE source_id = $1 AND hour_ms = $2 AND mark = $3`,
				sid, st.hour, st.mark); err != nil {
				return fmt.Errorf("telemetry: rollup: %w", err)
			}
		}
		return nil
	}
	if tx != nil {
		if err := done(tx); err != nil {
			return err
		}
		return tx.Commit()
	}
	return s.db.InTxRetry(ctx, done)
}

// sourcePrices returns the price table of the organisation of source sid,
// by model; none without Config.Prices or when the source is not known.
func (s *Service) sourcePrices(ctx context.Context, sid string) (map[string]org.Price, error) {
	if s.cfg.Prices == nil {
		return nil, nil
	}
	ps, err := s.cfg.Prices.SourcePrices(ctx, sid)
	if errors.Is(err, spec.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: rollup: prices: %w", err)
	}
	return ps, nil
}

// hourUsage reads the usage stored for hour h of source sid.
func hourUsage(ctx context.Context, q queryer, sid string, h int64) ([]tools.Usage, error) {
	rows, err := q.QueryContext(ctx, `SELECT key, time_ms, tool, tool_version, model, email, device, session_id, department, origin,
			input, cache_read, cache_write, output, cost_estimate
		FROM telemetry_usage WHERE source_id = $1 AND hour_ms = $2 ORDER BY key`, sid, h)
	if err != nil {
		return nil, fmt.Errorf("telemetry: rollup: %w", err)
	}
	defer rows.Close()
	var us []tools.Usage
	for rows.Next() {
		var u tools.Usage
		var at int64
		var origin string
		var cost sql.NullFloat64
		if err := rows.Scan(&u.Key, &at, &u.Tool, &u.ToolVersion, &u.Model, &u.Email, &u.Device, &u.SessionID, &u.Department, &origin,
			&u.Tokens.Input, &u.Tokens.CacheRead, &u.Tokens.CacheWrite, &u.Tokens.Output, &cost); err != nil {
			return nil, fmt.Errorf("telemetry: rollup: %w", err)
		}
		u.Time, u.Origin = time.UnixMilli(at).UTC(), tools.Origin(origin)
		if cost.Valid {
			u.CostEstimate = &cost.Float64
		}
		us = append(us, u)
	}
	return us, rows.Err()
}

// phantomKey starts the key of the stand-ins of [withSessionOrigins]; no
// stored key starts with it.
const phantomKey = "\x00session-origin:"

// withSessionOrigins returns us with, for each tool and session of hour h,
// a stand-in of no tokens for each origin the session has in any hour of
// source sid, so that the one-source rule applied to the hour sees the
// session whole: metrics exported in the hour after the session's last
// request are not counted beside its events. [buckets] leaves the
// stand-ins out.
func withSessionOrigins(ctx context.Context, q queryer, sid string, h int64, us []tools.Usage) ([]tools.Usage, error) {
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT u.tool, u.session_id, u.origin FROM telemetry_usage u
		WHERE u.source_id = $1 AND u.session_id <> '' AND u.hour_ms <> $2 AND EXISTS (SELECT 1 FROM telemetry_usage o
			WHERE o.source_id = $1 AND o.hour_ms = $2 AND o.tool = u.tool AND o.session_id = u.session_id)`, sid, h)
	if err != nil {
		return nil, fmt.Errorf("telemetry: rollup: session origins: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u tools.Usage
		var origin string
		if err := rows.Scan(&u.Tool, &u.SessionID, &origin); err != nil {
			return nil, fmt.Errorf("telemetry: rollup: session origins: %w", err)
		}
		u.Origin, u.Key = tools.Origin(origin), phantomKey+origin
		us = append(us, u)
	}
	return us, rows.Err()
}

// dimensions are the values of a bucket's dimensions, in the order of
// spec.Dimensions: model, assistantId, userId, department.
type dimensions [4]string

// userOf is the userId of a usage: its email, else "device:" and its
// device, else "".
func userOf(u tools.Usage) string {
	switch {
	case u.Email != "":
		return u.Email
	case u.Device != "":
		return "device:" + u.Device
	}
	return ""
}

// bucketMetrics are a usage bucket's metrics: those of the usage data
// interface, and the three kinds of input tokens kept apart.
type bucketMetrics struct {
	Requests            int64   `json:"requests"`
	Conversations       int64   `json:"conversations"`
	ActiveUsers         int64   `json:"activeUsers"`
	InputTokens         int64   `json:"inputTokens"`
	OutputTokens        int64   `json:"outputTokens"`
	Cost                float64 `json:"cost"`
	UncachedInputTokens int64   `json:"uncachedInputTokens"`
	CacheReadTokens     int64   `json:"cacheReadTokens"`
	CacheWriteTokens    int64   `json:"cacheWriteTokens"`
	// CostSource says what Cost is: CostPrices, CostEstimate or CostNone.
	CostSource string `json:"costSource"`
	// EstimatedCost is the part of Cost that is the tools' estimate: all
	// of it with CostEstimate, none (left out) otherwise. Unlike
	// CostSource it adds up when the organisation's view sums buckets.
	EstimatedCost float64 `json:"estimatedCost,omitempty"`
}

// What the cost of a bucket is ([bucketMetrics.CostSource]).
const (
	// CostPrices is a cost computed from the bucket's tokens with its
	// organisation's price for the bucket's model.
	CostPrices = "prices"
	// CostEstimate is the sum of the estimates the tools reported.
	CostEstimate = "estimate"
	// CostNone is no cost known: no price, and no estimate reported.
	CostNone = "none"
)

// roundCost rounds a computed cost to 12 significant digits, as the
// usage data interface's stores round sums (provider.RoundCost).
func roundCost(x float64) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64)
	if err != nil {
		return x
	}
	return v
}

// bucket is a usage bucket of the usage data interface.
type bucket struct {
	StartAt     spec.Time            `json:"startAt"`
	EndAt       spec.Time            `json:"endAt"`
	Granularity string               `json:"granularity"`
	Dimensions  spec.UsageDimensions `json:"dimensions"`
	Metrics     bucketMetrics        `json:"metrics"`
}

// buckets returns the usage buckets of the hour starting at start: the
// one-source rule ([tools.Dedup]) applied to us, grouped by every
// dimension, and a zero bucket for each set of st.written without usage
// now. The cost of a bucket is computed from its tokens where prices has
// a price for its model that prices every kind of token it has, else it
// is the tools' estimates. It sets st.now.
func buckets(start time.Time, us []tools.Usage, st *hourState, prices map[string]org.Price) ([]json.RawMessage, error) {
	type agg struct {
		requests  int64
		tok       tools.Tokens
		cost      float64
		estimated bool
		sessions  map[string]bool
	}
	groups := map[dimensions]*agg{}
	for _, u := range tools.Dedup(us) {
		if strings.HasPrefix(u.Key, phantomKey) {
			continue
		}
		d := dimensions{u.Model, u.Tool, userOf(u), u.Department}
		a := groups[d]
		if a == nil {
			a = &agg{sessions: map[string]bool{}}
			groups[d] = a
		}
		a.requests += requestsOf(u.Origin)
		a.tok = a.tok.Add(u.Tokens)
		if u.CostEstimate != nil {
			a.cost += *u.CostEstimate
			a.estimated = true
		}
		if u.SessionID != "" {
			a.sessions[u.SessionID] = true
		}
	}
	for _, d := range st.written {
		if groups[d] == nil {
			groups[d] = &agg{}
		}
	}
	st.now = nil
	var out []json.RawMessage
	for _, d := range slices.SortedFunc(maps.Keys(groups), func(a, b dimensions) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]), cmp.Compare(a[2], b[2]), cmp.Compare(a[3], b[3]))
	}) {
		a := groups[d]
		// A metric series may move tokens between kinds across an hour's
		// edge (Gemini CLI's cache point): a kind never counts below zero.
		tok := tools.Tokens{Input: max(a.tok.Input, 0), CacheRead: max(a.tok.CacheRead, 0),
			CacheWrite: max(a.tok.CacheWrite, 0), Output: max(a.tok.Output, 0)}
		m := bucketMetrics{Requests: a.requests, Conversations: int64(len(a.sessions)),
			InputTokens: tok.Input + tok.CacheRead + tok.CacheWrite, OutputTokens: tok.Output, Cost: max(a.cost, 0),
			UncachedInputTokens: tok.Input, CacheReadTokens: tok.CacheRead, CacheWriteTokens: tok.CacheWrite}
		if d[2] != "" && (m.Requests > 0 || m.InputTokens > 0 || m.OutputTokens > 0) {
			m.ActiveUsers = 1
		}
		if m != (bucketMetrics{}) {
			st.now = append(st.now, d)
		}
		m.CostSource = CostNone
		if a.estimated {
			m.CostSource, m.EstimatedCost = CostEstimate, m.Cost
		}
		if p, ok := prices[d[0]]; ok {
			if c, ok := p.Cost(tok.Input, tok.CacheRead, tok.CacheWrite, tok.Output); ok {
				m.Cost, m.CostSource, m.EstimatedCost = roundCost(c), CostPrices, 0
			}
		}
		b := bucket{StartAt: spec.NewTime(start), EndAt: spec.NewTime(start.Add(time.Hour)), Granularity: spec.GranularityHour,
			Dimensions: spec.UsageDimensions{Model: &d[0], AssistantID: &d[1], UserID: &d[2], Department: &d[3]}, Metrics: m}
		raw, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
	return out, nil
}
