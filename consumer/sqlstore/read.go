package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/aiusage/kit/consumer"
)

const (
	checkpointColumns = `run, cursor_token, in_progress, full_repull, since_ms, until_ms, watermark_ms, needs_full,
	needs_full_reason, pages, records, last_success_ms, last_error, last_error_at_ms, started_ms,
	needs_full_since_ms, last_full_ms`
	checkpointSQL = `SELECT ` + checkpointColumns + ` FROM consumer_checkpoints WHERE source = $1 AND resource = $2`
	// statusSQL lists the checkpoints in source order, then in the order of
	// consumer.Resources, with the counts of their records: each count reads
	// one range of an index (of the records, the small partial index of the
	// Missing ones, the quarantine's primary key), never the records of
	// other sources and resources nor the records' rows.
	statusSQL = `SELECT c.source, c.resource,
	(SELECT count(*) FROM consumer_records r WHERE r.source = c.source AND r.resource = c.resource),
	(SELECT count(*) FROM consumer_records r WHERE r.source = c.source AND r.resource = c.resource
		AND r.missing_at IS NOT NULL),
	(SELECT count(*) FROM consumer_quarantine q WHERE q.source = c.source AND q.resource = c.resource),
	c.run, c.cursor_token, c.in_progress, c.full_repull, c.since_ms, c.until_ms, c.watermark_ms, c.needs_full,
	c.needs_full_reason, c.pages, c.records, c.last_success_ms, c.last_error, c.last_error_at_ms, c.started_ms,
	c.needs_full_since_ms, c.last_full_ms
FROM consumer_checkpoints c
ORDER BY c.source, CASE c.resource WHEN 'conversations' THEN 0 WHEN 'assistants' THEN 1 WHEN 'events' THEN 2
	WHEN 'usage' THEN 3 ELSE 4 END, c.resource`
	sourcesSQL     = `SELECT DISTINCT source FROM consumer_checkpoints ORDER BY source`
	quarantinedSQL = `SELECT source, resource, id, reason, at_ms, body FROM consumer_quarantine`
)

// checkpointDest returns the scan destinations of the checkpoint columns,
// and a function that fills c from them once scanned.
func checkpointDest(c *consumer.Checkpoint) ([]any, func()) {
	var since, until, watermark, success, errAt, started, needsFullSince, lastFull sql.NullInt64
	dest := []any{&c.Run, &c.Cursor, &c.InProgress, &c.Full, &since, &until, &watermark, &c.NeedsFull,
		&c.NeedsFullReason, &c.Pages, &c.Records, &success, &c.LastError, &errAt, &started, &needsFullSince, &lastFull}
	return dest, func() {
		c.Since, c.Until, c.Watermark, c.Started = fromNullMS(since), fromNullMS(until), fromNullMS(watermark), fromNullMS(started)
		c.LastSuccess, c.LastErrorAt = fromNullMS(success), fromNullMS(errAt)
		c.NeedsFullSince, c.LastFull = fromNullMS(needsFullSince), fromNullMS(lastFull)
	}
}

// Checkpoint returns the checkpoint of (source, r); the zero Checkpoint when
// none was ever saved. Times come back in UTC at millisecond precision. It
// implements [consumer.Store].
func (s *Store) Checkpoint(ctx context.Context, source string, r consumer.Resource) (consumer.Checkpoint, error) {
	if err := checkResource("checkpoint", r); err != nil {
		return consumer.Checkpoint{}, err
	}
	st, err := s.prepared(ctx, checkpointSQL)
	if err != nil {
		return consumer.Checkpoint{}, dbError(ctx, "checkpoint", err)
	}
	var c consumer.Checkpoint
	dest, fill := checkpointDest(&c)
	err = st.QueryRowContext(ctx, source, string(r)).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return consumer.Checkpoint{}, nil
	}
	if err != nil {
		return consumer.Checkpoint{}, dbError(ctx, "checkpoint", err)
	}
	fill()
	return c, nil
}

// Status returns a line per (source, resource) that has a checkpoint,
// ordered by source (byte by byte), then resource in the order of
// [consumer.Resources], with the counts of stored (not Missing), Missing and
// quarantined records. It implements [consumer.Store].
func (s *Store) Status(ctx context.Context) ([]consumer.Status, error) {
	rows, err := s.db.QueryContext(ctx, statusSQL)
	if err != nil {
		return nil, dbError(ctx, "status", err)
	}
	defer rows.Close()
	var out []consumer.Status
	for rows.Next() {
		var (
			st       consumer.Status
			resource string
			total    int64
		)
		dest, fill := checkpointDest(&st.Checkpoint)
		dest = append([]any{&st.Source, &resource, &total, &st.Missing, &st.Quarantined}, dest...)
		if err := rows.Scan(dest...); err != nil {
			return nil, dbError(ctx, "status", err)
		}
		fill()
		st.Resource = consumer.Resource(resource)
		st.Records = total - st.Missing
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(ctx, "status", err)
	}
	return out, nil
}

// Sources returns the sources that have a checkpoint (of any resource),
// sorted byte by byte, without duplicates; an empty list when there is
// none. It reads consumer_checkpoints only.
func (s *Store) Sources(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, sourcesSQL)
	if err != nil {
		return nil, dbError(ctx, "sources", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var source string
		if err := rows.Scan(&source); err != nil {
			return nil, dbError(ctx, "sources", err)
		}
		out = append(out, source)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(ctx, "sources", err)
	}
	return out, nil
}

// Export calls fn for each stored record of (source, r), with its JSON
// exactly as received (fn may keep it), in the provider's order: (Time,
// ID) for conversations, assistants and events, the bucket key for usage
// ([provider.UsageKey] order, then the record ID, so that buckets of two
// granularities or groupings starting together keep one order). Records
// marked Missing are left out unless includeMissing. It reads the records
// as fn consumes them, never all at once, and stops at fn's first error,
// which it returns. It implements [consumer.Store].
func (s *Store) Export(ctx context.Context, source string, r consumer.Resource, includeMissing bool, fn func(json.RawMessage) error) error {
	if err := checkResource("export", r); err != nil {
		return err
	}
	var query string
	args := []any{source}
	switch r {
	case consumer.Usage:
		// The literal lets the partial index on usage buckets serve the
		// order.
		query = `SELECT body FROM consumer_records WHERE source = $1 AND resource = 'usage'`
	default:
		query = `SELECT body FROM consumer_records WHERE source = $1 AND resource = $2`
		args = append(args, string(r))
	}
	if !includeMissing {
		query += ` AND missing_at IS NULL`
	}
	switch {
	case r == consumer.Usage:
		query += ` ORDER BY time_ms, model, assistant_id, user_id, department, id`
	case r == consumer.Conversations:
		// A conversation marked Missing, or one that came back since, is
		// listed at a later position (pos_ms) but exported at its own
		// Time: this order is not the index's, so it costs a sort.
		query += ` ORDER BY time_ms, id`
	default:
		// pos_ms is time_ms for assistants and events.
		query += ` ORDER BY pos_ms, id`
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return dbError(ctx, "export", err)
	}
	defer rows.Close()
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return dbError(ctx, "export", err)
		}
		if err := fn(json.RawMessage(body)); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return dbError(ctx, "export", err)
	}
	return nil
}

// Quarantined calls fn for each quarantined record of source (every source
// when ""), oldest first (by At, then source, resource and ID). It stops at
// fn's first error, which it returns. It implements [consumer.Store].
func (s *Store) Quarantined(ctx context.Context, source string, fn func(consumer.Quarantine) error) error {
	query, args := quarantinedSQL, []any(nil)
	if source != "" {
		query += ` WHERE source = $1`
		args = append(args, source)
	}
	query += ` ORDER BY at_ms, source, resource, id`
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return dbError(ctx, "quarantined", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			q        consumer.Quarantine
			resource string
			at       int64
			body     []byte
		)
		if err := rows.Scan(&q.Source, &resource, &q.ID, &q.Reason, &at, &body); err != nil {
			return dbError(ctx, "quarantined", err)
		}
		q.Resource, q.At, q.JSON = consumer.Resource(resource), fromMS(at), json.RawMessage(body)
		if err := fn(q); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return dbError(ctx, "quarantined", err)
	}
	return nil
}
