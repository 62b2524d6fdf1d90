package sources

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/spec"
	"github.com/aiusage/kit/spec/webhook"
)

// The push transport (docs/push.md): a source of transport TransportPush
// receives the records its provider pushes at POST /push/{sourceId}, signed
// with the secret generated when the source was added. The records are
// written through the consumer store, as a poller writes its pages, so the
// collected views cannot tell the transports apart. A push source that also
// has a REST address (URL and token) is walked by the poller on its
// schedule, which reconciles what pushes missed.

// Limits of the push receiver.
const (
	// MaxPushBody is the largest push body accepted; a larger one is 413.
	MaxPushBody = 5 << 20
	// PushTolerance is how far a push's webhook-timestamp may be from the
	// service's clock.
	PushTolerance = 5 * time.Minute
	// pushMessageTTL is how long an accepted webhook-id is remembered:
	// beyond the tolerance on either side, after which a replay fails the
	// timestamp check anyway.
	pushMessageTTL = 2*PushTolerance + time.Minute
	// DefaultReconcileEvery is the interval of a push source's
	// reconciliation walk when none is given.
	DefaultReconcileEvery = time.Hour
	// pushRetryAfter is the Retry-After of a push that found a sync of the
	// same resource in progress.
	pushRetryAfter = "5"
)

// validatePush checks the fields of a push source: the REST address of the
// reconciliation walk is optional, but a URL needs a token and a token a URL.
func validatePush(n *SourceCreate) error {
	switch {
	case n.URL == "" && n.Token != "":
		return fmt.Errorf("token given without url: a push source's url and token are the REST address of its reconciliation walk, both or neither: %w", spec.ErrInvalid)
	case n.URL != "" && n.Token == "":
		return fmt.Errorf("url given without token: a push source's url and token are the REST address of its reconciliation walk, both or neither: %w", spec.ErrInvalid)
	case n.URL != "":
		u, err := url.Parse(n.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("url must be an absolute http or https URL, got %q: %w", n.URL, spec.ErrInvalid)
		}
	}
	if n.Every == 0 {
		n.Every = DefaultReconcileEvery
	}
	return nil
}

// PushPath returns the path, below the service's base URL, at which source
// id receives pushes.
func PushPath(id string) string { return "/push/" + id }

// PushRoutes adds the push receiver's route to r: POST /push/{sourceId}. It
// needs no API key; the signature authenticates the sender.
func (s *Service) PushRoutes(r chi.Router) {
	r.Post("/push/{sourceId}", httpx.Adapt(s.pushHandler, s.writePushError))
}

// pushSecret returns the signing secret of push source id, and
// spec.ErrNotFound for an unknown id or a source of another transport.
func (s *Service) pushSecret(ctx context.Context, id string) (string, string, error) {
	sid, ok := ident.CanonicalUUID(id)
	if !ok {
		return "", "", fmt.Errorf("source %q: %w", id, spec.ErrNotFound)
	}
	var secret, keyID sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT push_secret, secret_key_id FROM sources WHERE id = $1 AND transport = $2`, sid, TransportPush).Scan(&secret, &keyID)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !secret.Valid {
		return "", "", fmt.Errorf("source %s: %w", sid, spec.ErrNotFound)
	}
	if err != nil {
		return "", "", fmt.Errorf("sources: push secret: %w", err)
	}
	plain, err := s.openSecret(keyID, "push_secret", sid, secret.String)
	return sid, plain, err
}

// pushAnswer is the body of a push's 200.
type pushAnswer struct {
	Saved       int  `json:"saved"`
	Quarantined int  `json:"quarantined"`
	Duplicate   bool `json:"duplicate,omitempty"`
}

// detailPushDown is the detail of a push the service failed to receive.
const detailPushDown = "The service cannot receive pushes now; retry shortly."

// writePushError writes err as the push receiver's problem details answer:
// a 401 challenges for a webhook signature, and a 503 carries Retry-After
// only when the handler set it.
func (s *Service) writePushError(w http.ResponseWriter, r *http.Request, err error) {
	httpx.WriteError(w, r, err, &httpx.ErrorStyle{
		Logger:    s.log,
		Challenge: `Webhook realm="aiusage"`,
		Internal:  "An unexpected error occurred. Quote the request id to the service's operators.",
	})
}

// pushHandler receives one push delivery. It answers 2xx only after the
// records are committed (or when the webhook-id was already accepted); a
// refused delivery writes nothing.
func (s *Service) pushHandler(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	sid, secret, err := s.pushSecret(ctx, chi.URLParam(r, "sourceId"))
	if errors.Is(err, spec.ErrNotFound) {
		return spec.Errorf(spec.ErrNotFound, "No push source with this id.")
	}
	if err != nil {
		return &spec.Error{Kind: spec.ErrUnavailable, Detail: detailPushDown, Err: err}
	}
	now := s.cfg.Now()
	// What can be checked before the body arrives is checked first, so a
	// request that cannot be authentic holds nothing while its body comes.
	if err := webhook.CheckHeaders(r.Header, now, PushTolerance); err != nil {
		httpx.CloseUnread(w, r)
		return &spec.Error{Kind: spec.ErrUnauthorized, Detail: "The delivery is not authentic: " + err.Error() + "."}
	}
	// Until the signature is checked the sender is anyone: the bodies
	// being read (up to MaxPushBody each) are bounded per client address,
	// not per source, so that clients who know only the source's id cannot
	// take the places of its provider's deliveries.
	from := ident.AddressKey(httpx.ClientAddr(r))
	reading, err := s.cfg.Concurrency.Acquire("push-from:"+from, "push-from:"+from)
	if err != nil {
		httpx.CloseUnread(w, r)
		w.Header().Set("Retry-After", httpx.RetryAfterConcurrent)
		return spec.Errorf(spec.ErrRateLimited, "Too many deliveries from this address are in flight; retry when one has finished.")
	}
	defer reading()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxPushBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return spec.Errorf(spec.ErrTooLarge, "The body is larger than %d bytes; send fewer records per delivery.", MaxPushBody)
	case err != nil:
		return &spec.Error{Kind: spec.ErrInvalid, Detail: "The body could not be read: " + httpx.BodyError(err).Fields[0].Message + "."}
	}
	if err := webhook.Verify(secret, r.Header, body, now, PushTolerance); err != nil {
		// The error names the header at fault, never the expected value.
		return &spec.Error{Kind: spec.ErrUnauthorized, Detail: "The delivery is not authentic: " + err.Error() + "."}
	}
	reading()
	// The source's secret is its sender's key: at most so many of its
	// authentic deliveries are written at once.
	release, err := s.cfg.Concurrency.Acquire("push:"+sid, "push:"+sid)
	if err != nil {
		w.Header().Set("Retry-After", httpx.RetryAfterConcurrent)
		return spec.Errorf(spec.ErrRateLimited, "Too many deliveries to this source are in flight; retry when one has finished.")
	}
	defer release()
	d, err := spec.DecodePushDelivery(body)
	if err != nil {
		return &spec.Error{Kind: spec.ErrInvalid, Detail: strings.TrimSuffix(err.Error(), ": "+spec.ErrInvalid.Error()) + "."}
	}
	msgID := r.Header.Get(webhook.HeaderID)
	seen, err := s.pushSeen(ctx, sid, msgID, now)
	if err != nil {
		return &spec.Error{Kind: spec.ErrUnavailable, Detail: detailPushDown, Err: err}
	}
	if seen {
		_ = httpx.WriteJSON(w, http.StatusOK, pushAnswer{Duplicate: true})
		return nil
	}
	records, versions, err := s.freshUsage(ctx, sid, d)
	if err != nil {
		return &spec.Error{Kind: spec.ErrUnavailable, Detail: detailPushDown, Err: fmt.Errorf("source %s: %w", sid, err)}
	}
	res := consumer.PushedResult{}
	if len(records) > 0 {
		res, err = consumer.SavePushed(ctx, s.store, consumer.PushedRecords{Source: sid, Resource: consumer.Resource(d.Resource),
			Records: records, Now: now.UTC().Truncate(time.Millisecond)})
	}
	if errors.Is(err, consumer.ErrBusy) {
		w.Header().Set("Retry-After", pushRetryAfter)
		return &spec.Error{Kind: spec.ErrUnavailable, Detail: "A sync of this source's " + d.Resource + " is in progress; retry shortly."}
	}
	if err != nil {
		return &spec.Error{Kind: spec.ErrUnavailable, Detail: detailPushDown, Err: fmt.Errorf("source %s: %w", sid, err)}
	}
	if err := s.saveUsageVersions(ctx, sid, versions, d.AsOf.Time); err != nil {
		s.log.WarnContext(ctx, "sources: push: the versions of the usage buckets are not kept", "source", sid, "error", err)
	}
	// Remembered after the commit: a crash in between makes the retry
	// write the same records again, which changes nothing.
	if err := s.rememberPush(ctx, sid, msgID, now); err != nil {
		s.log.WarnContext(ctx, "sources: push: the webhook-id is not remembered", "source", sid, "error", err)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "push received", slog.String("source", sid), slog.String("resource", d.Resource),
		slog.Int("records", res.Saved), slog.Int("quarantined", res.Quarantined))
	_ = httpx.WriteJSON(w, http.StatusOK, pushAnswer{Saved: res.Saved, Quarantined: res.Quarantined})
	return nil
}

// pushSeen reports whether webhook-id msgID of source sid was accepted and
// is still remembered.
func (s *Service) pushSeen(ctx context.Context, sid, msgID string, now time.Time) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sources_push_messages WHERE source_id = $1 AND msg_id = $2 AND expires_at_ms > $3`,
		sid, msgID, now.UnixMilli()).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("sources: push messages: %w", err)
	}
	return n > 0, nil
}

// rememberPush records webhook-id msgID of source sid as accepted, and
// forgets the ids of the source that expired.
func (s *Service) rememberPush(ctx context.Context, sid, msgID string, now time.Time) error {
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM sources_push_messages WHERE source_id = $1 AND expires_at_ms <= $2`, sid, now.UnixMilli()); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO sources_push_messages (source_id, msg_id, expires_at_ms) VALUES ($1, $2, $3)
			ON CONFLICT (source_id, msg_id) DO UPDATE SET expires_at_ms = excluded.expires_at_ms`,
			sid, msgID, now.Add(pushMessageTTL).UnixMilli())
		return err
	})
}

// usageTrailing is how far back a reconciliation walk re-pulls usage (the
// consumer's default trailing window): buckets that recent are newer in the
// store than any delivery read before the walk started.
const usageTrailing = 48 * time.Hour

// bucketVersion is the key of a pushed usage bucket and its start.
type bucketVersion struct {
	key   string
	start time.Time
}

// freshUsage returns the records of d to write and, for usage deliveries
// with an asOf, the buckets they version. A usage bucket is left out when
// the store holds a version pushed with a later asOf, or when the last
// reconciliation walk of the source's usage started after asOf and re-pulled
// the bucket's hour: a late delivery then cannot overwrite a newer count.
// Other resources carry their own versions (updatedAt) or never change
// (events), and are returned as they are.
func (s *Service) freshUsage(ctx context.Context, sid string, d spec.PushDelivery) ([]json.RawMessage, []bucketVersion, error) {
	if d.Resource != string(consumer.Usage) || d.AsOf.IsZero() {
		return d.Records, nil, nil
	}
	asOf := d.AsOf.UnixMilli()
	var reconciled int64
	err := s.db.QueryRowContext(ctx, `SELECT started_ms FROM sources_push_reconciled WHERE source_id = $1`, sid).Scan(&reconciled)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, nil, fmt.Errorf("sources: push reconciliation: %w", err)
	}
	var keep []json.RawMessage
	var versions []bucketVersion
	for _, raw := range d.Records {
		var b struct {
			StartAt    spec.Time       `json:"startAt"`
			Dimensions json.RawMessage `json:"dimensions"`
		}
		if json.Unmarshal(raw, &b) != nil || b.StartAt.IsZero() {
			keep = append(keep, raw) // SavePushed quarantines it with the reason
			continue
		}
		key := b.StartAt.String() + " " + string(b.Dimensions)
		if reconciled > asOf && b.StartAt.UnixMilli() >= reconciled-usageTrailing.Milliseconds() {
			continue
		}
		var stored int64
		err := s.db.QueryRowContext(ctx, `SELECT as_of_ms FROM sources_push_usage_versions WHERE source_id = $1 AND bucket_key = $2`,
			sid, key).Scan(&stored)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return nil, nil, fmt.Errorf("sources: push usage versions: %w", err)
		case stored > asOf:
			continue
		}
		keep = append(keep, raw)
		versions = append(versions, bucketVersion{key: key, start: b.StartAt.Time})
	}
	return keep, versions, nil
}

// saveUsageVersions records asOf as the version of the buckets written, and
// forgets the versions of buckets older than any delivery still sends.
func (s *Service) saveUsageVersions(ctx context.Context, sid string, versions []bucketVersion, asOf time.Time) error {
	if len(versions) == 0 {
		return nil
	}
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		for _, v := range versions {
			if _, err := tx.ExecContext(ctx, `INSERT INTO sources_push_usage_versions (source_id, bucket_key, start_ms, as_of_ms) VALUES ($1, $2, $3, $4)
				ON CONFLICT (source_id, bucket_key) DO UPDATE SET as_of_ms = excluded.as_of_ms
				WHERE sources_push_usage_versions.as_of_ms < excluded.as_of_ms`, sid, v.key, v.start.UnixMilli(), asOf.UnixMilli()); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM sources_push_usage_versions WHERE source_id = $1 AND start_ms < $2`,
			sid, asOf.Add(-pushUsageVersionsKept).UnixMilli())
		return err
	})
}

// pushUsageVersionsKept is how long the version of a pushed bucket is kept:
// a pusher re-sends only the last hours, and a delivery older than this is
// refused by its timestamp anyway.
const pushUsageVersionsKept = 7 * 24 * time.Hour

// markReconciled records that a reconciliation walk of source sid's usage,
// started at started, succeeded.
func (s *Service) markReconciled(ctx context.Context, sid string, started time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO sources_push_reconciled (source_id, started_ms) VALUES ($1, $2)
		ON CONFLICT (source_id) DO UPDATE SET started_ms = excluded.started_ms`, sid, started.UnixMilli())
	return err
}
