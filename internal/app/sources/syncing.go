package sources

// The syncs of the sources: which are due, one sync run now, its retries,
// and what a failed one does to its source.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/infra/ops"
	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/spec"
)

// pause pauses source id with the reason shown to its organisation.
func (s *Service) pause(ctx context.Context, id, reason string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE sources SET paused_at_ms = $2, paused_reason = $3 WHERE id = $1 AND paused_at_ms IS NULL`,
		id, s.now().UnixMilli(), reason)
	if err != nil {
		return fmt.Errorf("sources: pause %s: %w", id, err)
	}
	return nil
}

// due returns the sources whose next sync is due at now.
func (s *Service) due(ctx context.Context, now time.Time) ([]Source, error) {
	// A push-only source (no url) has nothing to walk.
	// A paused source waits for an Administrator.
	rows, err := s.db.QueryContext(ctx, `SELECT `+sourceColumns+` FROM sources WHERE next_due_ms <= $1 AND url <> '' AND paused_at_ms IS NULL
		ORDER BY next_due_ms, id`, now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("sources: due: %w", err)
	}
	defer rows.Close()
	var out []Source
	for rows.Next() {
		src, err := s.scanSource(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	return out, rows.Err()
}

// SyncNow syncs source id (of any organisation) once, now, in this process.
// The consumer's leases keep it from syncing a resource another process
// syncs at the same time (that resource is then skipped).
//
// A failed sync's error is a [*SyncError]: its text is the classified one
// the organisation sees (and the checkpoints record), the error it wraps the
// whole detail, which goes to the service's log. A sync that fails for a
// reason repeating it cannot mend ([Pausing]) pauses the source; a paused
// source is not synced ([ErrPaused]) until it is resumed or its URL edited.
func (s *Service) SyncNow(ctx context.Context, id string) (consumer.Result, error) {
	src, err := s.get(ctx, id)
	if err != nil {
		return consumer.Result{}, err
	}
	if src.Transport == TransportTelemetry {
		return consumer.Result{}, fmt.Errorf("source %s receives telemetry only; it has no address to walk: %w", src.ID, spec.ErrInvalid)
	}
	if src.URL == "" {
		return consumer.Result{}, fmt.Errorf("source %s receives pushes only; it has no REST address to walk: %w", src.ID, spec.ErrInvalid)
	}
	if src.PausedAt != nil {
		return consumer.Result{}, &SyncError{Text: "the source is paused: " + src.PausedReason + "; an Administrator resumes it (or edits its URL) to sync it again",
			Err: fmt.Errorf("source %s: %w", src.ID, ErrPaused)}
	}
	now := s.now()
	if _, err := s.db.ExecContext(ctx, `UPDATE sources SET last_sync_started_ms = $2 WHERE id = $1`, src.ID, now.UnixMilli()); err != nil {
		return consumer.Result{}, fmt.Errorf("sources: sync %s: %w", src.ID, err)
	}
	// A transport that cannot even connect fails every resource: record it
	// as each one's last error, as a failed walk would be, so the status
	// shows it.
	describe := describer(src)
	failAll := func(err error) error {
		text := describe(err)
		for _, r := range Resources(src.Transport) {
			if rerr := s.store.RecordFailure(ctx, src.ID, r, now, text); rerr != nil {
				return errors.Join(err, rerr)
			}
		}
		return s.failed(ctx, src, consumer.Result{}, err)
	}
	var transport consumer.Source
	switch src.Transport {
	case TransportMCP:
		ms, err := mcp.NewSource(ctx, src.URL, src.Token, mcp.WithHTTPClient(s.client))
		if err != nil {
			return consumer.Result{}, failAll(fmt.Errorf("sources: sync %s: mcp: %w", src.ID, err))
		}
		defer ms.Close()
		transport = ms
	case TransportExport:
		if transport, err = s.exportSource(src); err != nil {
			return consumer.Result{}, failAll(fmt.Errorf("sources: sync %s: export: %w", src.ID, err))
		}
	case TransportOpenAI, TransportAnthropic:
		if transport, err = s.vendorSource(src); err != nil {
			return consumer.Result{}, failAll(fmt.Errorf("sources: sync %s: %s: %w", src.ID, src.Transport, err))
		}
	default:
		c, err := consumer.NewClient(consumer.ClientConfig{URL: src.URL, Token: src.Token, HTTPClient: s.client,
			MaxRetries: SyncRetries, OnRetry: s.onRetry, UserAgent: "aiusage-service"})
		if err != nil {
			return consumer.Result{}, failAll(fmt.Errorf("sources: sync %s: %w", src.ID, err))
		}
		transport = c
	}
	pcfg := &consumer.Config{Source: src.ID, Logger: s.log, ErrorText: describe}
	if IsVendor(src.Transport) {
		vendorPoller(pcfg)
		pcfg.UsageBackfill, pcfg.UsageTrailing = s.cfg.VendorBackfill, s.cfg.VendorLookback
	}
	p, err := consumer.NewPoller(transport, s.store, pcfg)
	if err != nil {
		return consumer.Result{}, fmt.Errorf("sources: sync %s: %w", src.ID, err)
	}
	res, err := p.SyncOnce(ctx)
	for _, r := range res.Resources {
		outcome := ops.SyncOK
		if r.Err != nil {
			outcome = ops.SyncFailed
		}
		if r.Skipped == "" {
			s.cfg.Metrics.ObserveSync(string(r.Resource), outcome, r.Records)
		}
	}
	if src.Transport == TransportPush {
		for _, r := range res.Resources {
			if r.Resource == consumer.Usage && r.Err == nil && r.Skipped == "" {
				if merr := s.markReconciled(ctx, src.ID, now); merr != nil {
					err = errors.Join(err, merr)
				}
			}
		}
	}
	if err != nil {
		return res, s.failed(ctx, src, res, err)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "source synced", slog.String("source", src.ID),
		slog.String("organisation", src.OrganisationID), slog.Int("records", res.Records()))
	return res, nil
}

// SyncRetries is how often a sync retries one request of a REST or an
// export source that failed transiently (httpclient.Transient: 408, 429, 5xx
// but 501, resets, cut bodies), with the back-off every transport of the
// consumer shares (httpclient's defaults: 250 ms to 30 s with jitter, a
// Retry-After honoured up to 5 minutes). It is lower than the consumer's
// default (httpclient.DefaultMaxRetries), which keeps the sync of a source
// that is down short, and its organisation's sync slot free: the source is
// tried again at its next sync.
const SyncRetries = 3

// onRetry counts a retried request of a sync, whatever its transport.
func (s *Service) onRetry(consumer.Retry) { s.cfg.Metrics.ObserveSyncRetry() }

// failed logs the whole detail of a failed sync, pauses the source when
// the failure is one that repeating the sync cannot mend, and returns the
// classified error.
func (s *Service) failed(ctx context.Context, src Source, res consumer.Result, err error) error {
	se := &SyncError{Err: err}
	describe := describer(src)
	var lines []string
	for _, r := range res.Resources {
		if r.Err != nil {
			lines = append(lines, string(r.Resource)+": "+describe(r.Err))
		}
	}
	if len(lines) == 0 {
		lines = append(lines, describe(err))
	}
	attrs := []slog.Attr{slog.String("source", src.ID), slog.String("organisation", src.OrganisationID),
		slog.Int("records", res.Records()), slog.Any("error", err)}
	if Pausing(err) && ctx.Err() == nil {
		reason := describe(err)
		if perr := s.pause(context.WithoutCancel(ctx), src.ID, reason); perr != nil {
			se.Err = errors.Join(err, perr)
		} else {
			se.Paused = true
			lines = append(lines, "the source is paused until an Administrator resumes it (or edits its URL)")
			attrs = append(attrs, slog.Bool("paused", true))
		}
	}
	se.Text = strings.Join(lines, "\n")
	s.log.LogAttrs(ctx, slog.LevelWarn, "source sync failed", attrs...)
	return se
}

// cursorKey returns the key that seals the collected view's cursors, created
// at random on first use and kept in the database, so that cursors survive
// restarts and work across processes.
func (s *Service) cursorKey(ctx context.Context) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO sources_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`,
		"cursor_key", hex.EncodeToString(fresh)); err != nil {
		return nil, fmt.Errorf("sources: cursor key: %w", err)
	}
	var stored string
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM sources_settings WHERE name = $1`, "cursor_key").Scan(&stored); err != nil {
		return nil, fmt.Errorf("sources: cursor key: %w", err)
	}
	key, err := hex.DecodeString(stored)
	if err != nil || len(key) != 32 {
		return nil, errors.New("sources: cursor key: the stored key is not 64 hex digits")
	}
	return key, nil
}
