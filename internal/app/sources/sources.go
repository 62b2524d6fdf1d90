// Package sources keeps the sources of the oversight service: the providers
// of the AI usage data interface whose data the service collects for an
// organisation. It stores them (table sources, component "sources"),
// schedules their syncs on the service's River job queue, runs the consumer
// (package consumer) into the consumer's store (consumer/sqlstore, in the same
// database, under the source id as consumer source name), and serves what
// was collected, read with the organisation's API keys:
//
//	GET /organisations/{organisationId}/sources                 the sources with their sync status
//	/organisations/{organisationId}/sources/{sourceId}/...      the provider interface over one source's data
//	/organisations/{organisationId}/sources/{sourceId}/mcp      the same over MCP
//	GET /organisations/{organisationId}/conversations           the lists of the provider interface over the
//	GET /organisations/{organisationId}/assistants              union of the organisation's sources, each
//	GET /organisations/{organisationId}/events                  record with the sourceId of its source
//	GET /organisations/{organisationId}/usage                   (sqlstore.Merged); usage summed over them
//	/organisations/{organisationId}/mcp                         the same MCP tools over the union
//
// The organisation's view has the filters, limit, envelope and sealed
// cursors of the provider interface (it is served by provider.NewHandler);
// lists are ordered by (updatedAt, id, sourceId) (occurredAt for events),
// so records of different sources that share an id and a time keep one
// order across pages. It has no single records: an id is unique only
// within its source, so /organisations/{id}/conversations/{conversationId}
// and /assistants/{assistantId} answer 404, and a record is read from its
// source's view. groupBy takes the interface's four dimensions only;
// usage by source is [Service.OrgUsage] (or each source's /usage).
//
// For dashboards, [Service.OrgUsage] and [Service.UsageSeries] give usage
// series by day or hour per source, model or user, and
// [Service.SearchConversations] finds an organisation's conversations by
// user, assistant and time range.
package sources

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/netguard"
	"github.com/aiusage/kit/internal/infra/ops"
	"github.com/aiusage/kit/internal/infra/riverjobs"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
	"github.com/aiusage/kit/spec/webhook"
)

// Component is the name under which the migrations of this package are
// recorded in schema_migrations.
const Component = "sources"

// Limits and defaults of a source.
const (
	MaxNameLength   = 200
	MinEvery        = 10 * time.Second
	DefaultEvery    = 5 * time.Minute
	TransportREST   = "rest"
	TransportMCP    = "mcp"
	TransportExport = "export" // see export.go
	TransportPush   = "push"   // see push.go
	// TransportTelemetry is an Ingestion key of the organisation: the
	// telemetry endpoint creates it on the key's first accepted request
	// ([Service.EnsureTelemetry]); it is never synced, added nor removed here.
	TransportTelemetry = "telemetry"
	// TransportOpenAI and TransportAnthropic read an organisation's usage
	// and costs from the vendor's administration API with its Admin key
	// (see vendor.go).
	TransportOpenAI    = "openai"
	TransportAnthropic = "anthropic"
	DefaultTransport   = TransportREST
	// DefaultVendorEvery is the interval between syncs of TransportOpenAI
	// and TransportAnthropic sources: the vendors count usage in hourly
	// buckets and revise them for hours.
	DefaultVendorEvery = time.Hour
)

//go:embed migrations
var migrationFS embed.FS

// Migrations returns the embedded migrations of this package.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err)
	}
	return sub
}

// SourceCreate is what an administrator gives to add a source.
type SourceCreate struct {
	// Name is 1 to MaxNameLength characters, unique within the organisation.
	Name string
	// URL is the provider's base address (absolute http or https); with
	// TransportMCP its MCP endpoint (the base address followed by /mcp);
	// with TransportOpenAI or TransportAnthropic the vendor's API address,
	// "" for the vendor's own ([VendorURL]);
	// with TransportExport where its scheduled export is (see export.go);
	// with TransportPush the REST address of the reconciliation walk, or ""
	// for a push-only source.
	URL string
	// Token is the provider's credential, sent as a bearer token; optional
	// with TransportExport, "" for a push-only source; with TransportOpenAI
	// or TransportAnthropic the organisation's Admin key, sent as the
	// vendor asks.
	Token string
	// Transport is TransportREST (default), TransportMCP, TransportExport,
	// TransportPush, TransportOpenAI or TransportAnthropic.
	Transport string
	// Every is the interval between syncs, at least MinEvery; 0 means
	// DefaultEvery (DefaultVendorEvery for TransportOpenAI and
	// TransportAnthropic).
	Every time.Duration
}

// Source is a source as stored. Its JSON never carries the token, only
// TokenHint.
type Source struct {
	ID             string        `json:"id"`
	OrganisationID string        `json:"organisationId"`
	Name           string        `json:"name"`
	URL            string        `json:"url"`
	Token          string        `json:"-"`
	Transport      string        `json:"transport"`
	Every          time.Duration `json:"-"`
	CreatedAt      time.Time     `json:"createdAt"`
	// NextSyncAt is when the scheduler next queues a sync.
	NextSyncAt time.Time `json:"nextSyncAt"`
	// LastSyncStartedAt is when a sync last started; nil before the first.
	LastSyncStartedAt *time.Time `json:"lastSyncStartedAt"`
	// PushSecret signs the pushes of a TransportPush source: set only in
	// what Add returns, the one time it is shown.
	PushSecret string `json:"-"`
	// PausedAt is when the source was paused (see [Service.Resume]); nil
	// while it is synced on its schedule.
	PausedAt *time.Time `json:"pausedAt"`
	// PausedReason says why it is paused, in the classified words of
	// [SyncError]; "" when it is not.
	PausedReason string `json:"pausedReason,omitempty"`
	// LastReceivedAt is when a TransportTelemetry source last received an
	// accepted telemetry request (see [Service.TelemetryReceived]); nil
	// before the first, and always for the other transports.
	LastReceivedAt *time.Time `json:"lastReceivedAt"`
}

// TokenHint is the token masked: its last four characters at most.
func (s Source) TokenHint() string {
	if len(s.Token) < 12 {
		return "****"
	}
	return "****" + s.Token[len(s.Token)-4:]
}

// Config configures a Service.
type Config struct {
	// DB is the service's database. Required.
	DB *sqldb.DB
	// Orgs checks organisations and authenticates API keys. Required.
	Orgs *org.Store
	// Secrets encrypts the sources' tokens and push secrets in the
	// database (see secrets.go). Required; every process sharing DB must
	// hold the keys of the rows it reads.
	Secrets *keyring.Keyring
	// HTTPClient reaches the providers (REST, MCP and export over HTTP).
	// Default: a client whose every connection passes AllowPrivate's
	// address policy (netguard.NewTransport), checked after name
	// resolution. A client given is used as it is: its transport must do
	// that checking.
	HTTPClient *http.Client
	// AllowPrivate lets sources' URLs be http and point at private,
	// loopback and link-local addresses (aiusage service serve
	// --allow-private-sources). Default false: https to public addresses
	// only, checked when a source is added or moved and again at every
	// connection.
	AllowPrivate bool
	// ExportRoot is the directory of the service's host below which export
	// sources may read (aiusage service serve --export-root); "{organisation}"
	// in it stands for the organisation's id, so that each organisation
	// reads below a directory of its own. Default "": export sources may
	// name no directory, only https addresses.
	ExportRoot string
	// Resolver resolves the host names of sources' URLs when they are
	// added or moved. Default net.DefaultResolver.
	Resolver *net.Resolver
	// ExportMaxFileBytes bounds one file of an export source, compressed
	// and decompressed (export.Config.MaxFileBytes and MaxPlainBytes).
	// Default export.DefaultMaxPlainBytes (256 MiB).
	ExportMaxFileBytes int64
	// VendorRate bounds the requests a second that one sync of a
	// TransportOpenAI or TransportAnthropic source sends to the vendor,
	// retries included (vendorusage.Config.Rate). Default 1.
	VendorRate float64
	// ConformanceRate bounds the requests a second that one conformance
	// check of a source sends to its provider (conformance.Config.MaxRate).
	// Default 20.
	ConformanceRate float64
	// VendorBackfill is how far back the first sync of a TransportOpenAI or
	// TransportAnthropic source reaches (consumer.Config.UsageBackfill).
	// Default 30 days.
	VendorBackfill time.Duration
	// VendorLookback is the window of recent buckets every later sync of
	// such a source reads again, because the vendors revise them
	// (consumer.Config.UsageTrailing). Default 48 h.
	VendorLookback time.Duration
	// ScheduleInterval is how often the scheduler looks for sources due.
	// Default 10 s.
	ScheduleInterval time.Duration
	// SyncWorkers is how many syncs run at once in this process, on the
	// job queue SyncQueue (see Queues). Default 8.
	SyncWorkers int
	// OrgSyncLimit is how many syncs of one organisation run at once in
	// this process; its other syncs wait (snoozed) while the other
	// organisations' run. Default 4.
	OrgSyncLimit int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger logs syncs. Default: nothing.
	Logger *slog.Logger
	// Concurrency bounds the requests in flight per API key and per
	// organisation on the sources' routes; share it with the other APIs of
	// the service. Default: nil, no bound.
	Concurrency *httpx.Limiter
	// MCPOptions configure the MCP endpoints of the collected views (.../mcp)
	// and of the organisation's view (/organisations/{organisationId}/mcp),
	// for example mcp.WithSessions and its bounds. Default: none (stateless).
	MCPOptions []mcp.Option
	// Jobs queues the syncs on the service's job queue, whose River client
	// works them with the workers of [Service.Jobs]. Default: nil, for a
	// process that never schedules (an admin command); Schedule then fails.
	Jobs riverjobs.Enqueuer
	// Metrics counts the syncs and their retries. Default: nil, nothing
	// counted.
	Metrics *ops.Metrics
}

// Service stores the sources, syncs them and serves what was collected.
type Service struct {
	cfg   Config
	db    *sqldb.DB
	orgs  *org.Store
	store *sqlstore.Store
	log   *slog.Logger
	// client reaches the providers (Config.HTTPClient or the guarded one).
	client *http.Client

	// orgSyncs bounds the syncs of one organisation in progress.
	orgSyncs *riverjobs.KeyLimiter

	view    http.Handler // the collected view of one source
	orgView http.Handler // the view of an organisation: its sources merged
}

// New returns a Service over cfg.DB, applying its migrations and those of
// the consumer's store.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.DB == nil || cfg.Orgs == nil {
		return nil, errors.New("sources: Config.DB and Config.Orgs are required")
	}
	if cfg.Secrets == nil {
		return nil, fmt.Errorf("sources: Config.Secrets is required: %w", keyring.ErrNoKeyring)
	}
	if cfg.VendorBackfill < 0 || cfg.VendorLookback < 0 || cfg.VendorRate < 0 || cfg.ConformanceRate < 0 {
		return nil, errors.New("sources: Config.VendorRate, VendorBackfill, VendorLookback and ConformanceRate must not be negative")
	}
	if cfg.ConformanceRate == 0 {
		cfg.ConformanceRate = defaultConformanceRate
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ScheduleInterval <= 0 {
		cfg.ScheduleInterval = 10 * time.Second
	}
	if cfg.SyncWorkers <= 0 {
		cfg.SyncWorkers = 8
	}
	if cfg.OrgSyncLimit <= 0 {
		cfg.OrgSyncLimit = 4
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.DB.Migrate(ctx, Component, Migrations()); err != nil {
		return nil, fmt.Errorf("sources: migrate: %w", err)
	}
	if err := secretTable.Check(ctx, cfg.DB.DB, cfg.Secrets); err != nil {
		return nil, fmt.Errorf("sources: the key of the stored secrets: %w", err)
	}
	store, err := sqlstore.New(ctx, cfg.DB.DB, sqlstore.Dialect(cfg.DB.Dialect))
	if err != nil {
		return nil, fmt.Errorf("sources: consumer store: %w", err)
	}
	s := &Service{cfg: cfg, db: cfg.DB, orgs: cfg.Orgs, store: store, log: log, client: cfg.HTTPClient,
		orgSyncs: riverjobs.NewKeyLimiter(cfg.OrgSyncLimit)}
	if s.client == nil {
		s.client = &http.Client{Transport: netguard.NewTransport(s.policy(), 30*time.Second)}
	}
	if err := s.buildView(ctx); err != nil {
		_ = store.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the consumer store's statements (not the database).
func (s *Service) Close() error { return s.store.Close() }

// Store returns the consumer store the sources are synced into; its consumer
// source names are the source ids.
func (s *Service) Store() *sqlstore.Store { return s.store }

func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// Add validates n and adds it as a source of organisation orgID. The first
// sync is due at once.
func (s *Service) Add(ctx context.Context, orgID string, n SourceCreate) (Source, error) {
	org, ok := ident.CanonicalUUID(orgID)
	if !ok {
		return Source{}, fmt.Errorf("organisation %q: %w", orgID, spec.ErrNotFound)
	}
	if err := s.validate(ctx, org, &n); err != nil {
		return Source{}, err
	}
	if _, err := s.orgs.Organisation(ctx, org); err != nil {
		if errors.Is(err, spec.ErrNotFound) {
			return Source{}, fmt.Errorf("organisation %s: %w", org, spec.ErrNotFound)
		}
		return Source{}, err
	}
	now := s.now()
	src := Source{ID: uuid.NewString(), OrganisationID: org, Name: n.Name, URL: n.URL, Token: n.Token,
		Transport: n.Transport, Every: n.Every, CreatedAt: now, NextSyncAt: now}
	if src.Transport == TransportPush {
		src.PushSecret = webhook.NewSecret()
	}
	keyID, token, secret, err := s.sealSecrets(src)
	if err != nil {
		return Source{}, err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO sources (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, push_secret, secret_key_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		src.ID, org, src.Name, src.URL, token, src.Transport, src.Every.Milliseconds(), now.UnixMilli(), now.UnixMilli(), secret, keyID)
	if sqldb.IsUniqueViolation(err) {
		return Source{}, fmt.Errorf("organisation %s already has a source named %q: %w", org, n.Name, spec.ErrConflict)
	}
	if err != nil {
		return Source{}, fmt.Errorf("sources: add: %w", err)
	}
	return src, nil
}

func (s *Service) validate(ctx context.Context, org string, n *SourceCreate) error {
	switch l := utf8.RuneCountInString(n.Name); {
	case !utf8.ValidString(n.Name):
		return fmt.Errorf("name must be UTF-8: %w", spec.ErrInvalid)
	case strings.TrimSpace(n.Name) == "":
		return fmt.Errorf("name is required: %w", spec.ErrInvalid)
	case l > MaxNameLength:
		return fmt.Errorf("name is %d characters, at most %d: %w", l, MaxNameLength, spec.ErrInvalid)
	}
	if n.Transport == "" {
		n.Transport = DefaultTransport
	}
	switch n.Transport {
	case TransportREST, TransportMCP, TransportExport, TransportPush:
	case TransportOpenAI, TransportAnthropic:
		defaultVendor(n)
	case TransportTelemetry:
		return fmt.Errorf("transport telemetry cannot be added: a telemetry source is an Ingestion key, created with the key's first telemetry; create an Ingestion key instead: %w", spec.ErrInvalid)
	default:
		return fmt.Errorf("transport must be rest, mcp, export, push, openai or anthropic, got %q: %w", n.Transport, spec.ErrInvalid)
	}
	switch n.Transport {
	case TransportExport:
		if err := s.checkExportURL(ctx, org, n.URL, n.Token); err != nil {
			return err
		}
	case TransportPush:
		if err := validatePush(n); err != nil {
			return err
		}
		if n.URL != "" {
			if err := s.checkURL(ctx, n.URL); err != nil {
				return err
			}
		}
	default:
		if err := s.checkURL(ctx, n.URL); err != nil {
			return err
		}
		if n.Token == "" && IsVendor(n.Transport) {
			return fmt.Errorf("token is required: the %s Admin key: %w", vendorTitle(n.Transport), spec.ErrInvalid)
		}
		if n.Token == "" {
			return fmt.Errorf("token is required: %w", spec.ErrInvalid)
		}
	}
	if n.Every == 0 {
		n.Every = DefaultEvery
	}
	if n.Every < MinEvery {
		return fmt.Errorf("every must be at least %s, got %s: %w", MinEvery, n.Every, spec.ErrInvalid)
	}
	return nil
}

const sourceColumns = `id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, last_sync_started_ms, secret_key_id, paused_at_ms, paused_reason, last_received_ms`

// scanSource scans a row of sourceColumns, decrypting its token.
func (s *Service) scanSource(row interface{ Scan(...any) error }) (Source, error) {
	var src Source
	var every, created, next int64
	var last, paused, received sql.NullInt64
	var keyID, reason sql.NullString
	if err := row.Scan(&src.ID, &src.OrganisationID, &src.Name, &src.URL, &src.Token, &src.Transport, &every, &created, &next, &last, &keyID,
		&paused, &reason, &received); err != nil {
		return Source{}, err
	}
	if paused.Valid {
		t := time.UnixMilli(paused.Int64).UTC()
		src.PausedAt, src.PausedReason = &t, reason.String
	}
	var err error
	if src.Token, err = s.openSecret(keyID, "token", src.ID, src.Token); err != nil {
		return Source{}, err
	}
	src.Every = time.Duration(every) * time.Millisecond
	src.CreatedAt = time.UnixMilli(created).UTC()
	src.NextSyncAt = time.UnixMilli(next).UTC()
	if last.Valid {
		t := time.UnixMilli(last.Int64).UTC()
		src.LastSyncStartedAt = &t
	}
	if received.Valid {
		t := time.UnixMilli(received.Int64).UTC()
		src.LastReceivedAt = &t
	}
	return src, nil
}

// List returns the sources of organisation orgID, oldest first. An unknown
// organisation has none.
func (s *Service) List(ctx context.Context, orgID string) ([]Source, error) {
	org, ok := ident.CanonicalUUID(orgID)
	if !ok {
		return []Source{}, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+sourceColumns+` FROM sources WHERE org_id = $1 ORDER BY created_at_ms, id`, org)
	if err != nil {
		return nil, fmt.Errorf("sources: list: %w", err)
	}
	defer rows.Close()
	out := []Source{}
	for rows.Next() {
		src, err := s.scanSource(rows)
		if err != nil {
			return nil, fmt.Errorf("sources: list: %w", err)
		}
		out = append(out, src)
	}
	return out, rows.Err()
}

// sourceIDs returns the ids of the sources of organisation orgID (a
// canonical UUID); an unknown organisation has none.
func (s *Service) sourceIDs(ctx context.Context, orgID string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM sources WHERE org_id = $1`, orgID)
	if err != nil {
		return nil, fmt.Errorf("sources: list: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sources: list: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// Get returns source id of organisation orgID; a source of another
// organisation, an unknown or malformed id is spec.ErrNotFound.
func (s *Service) Get(ctx context.Context, orgID, id string) (Source, error) {
	src, err := s.get(ctx, id)
	if err != nil {
		return Source{}, err
	}
	if org, _ := ident.CanonicalUUID(orgID); org != src.OrganisationID {
		return Source{}, fmt.Errorf("source %s: %w", id, spec.ErrNotFound)
	}
	return src, nil
}

// OrganisationOf returns the id of the organisation of source id; an
// unknown or malformed id is spec.ErrNotFound.
func (s *Service) OrganisationOf(ctx context.Context, id string) (string, error) {
	src, err := s.get(ctx, id)
	if err != nil {
		return "", err
	}
	return src.OrganisationID, nil
}

// get returns source id of any organisation.
func (s *Service) get(ctx context.Context, id string) (Source, error) {
	sid, ok := ident.CanonicalUUID(id)
	if !ok {
		return Source{}, fmt.Errorf("source %q: %w", id, spec.ErrNotFound)
	}
	src, err := s.scanSource(s.db.QueryRowContext(ctx, `SELECT `+sourceColumns+` FROM sources WHERE id = $1`, sid))
	if errors.Is(err, sql.ErrNoRows) {
		return Source{}, fmt.Errorf("source %s: %w", sid, spec.ErrNotFound)
	}
	if err != nil {
		return Source{}, fmt.Errorf("sources: get: %w", err)
	}
	return src, nil
}

// Remove removes source id of organisation orgID and returns it; it is no
// longer synced nor served. The records collected stay in the consumer store.
func (s *Service) Remove(ctx context.Context, orgID, id string) (Source, error) {
	src, err := s.Get(ctx, orgID, id)
	if err != nil {
		return Source{}, err
	}
	if src.Transport == TransportTelemetry {
		return Source{}, errTelemetrySource(src.ID)
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM sources WHERE id = $1 AND org_id = $2`, src.ID, src.OrganisationID)
	if err != nil {
		return Source{}, fmt.Errorf("sources: remove: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Source{}, fmt.Errorf("source %s: %w", src.ID, spec.ErrNotFound)
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM source_conformance_runs WHERE source_id = $1`, src.ID); err != nil {
		return Source{}, fmt.Errorf("sources: remove %s: its conformance reports: %w", src.ID, err)
	}
	return src, nil
}

// SetURL points one source of the organisation at another URL (a provider
// that moved), with the checks of Add; its collected data and checkpoints
// stay. A paused source is resumed: its next sync is due at once.
func (s *Service) SetURL(ctx context.Context, orgID, id, rawURL string) error {
	src, err := s.Get(ctx, orgID, id)
	if err != nil {
		return err
	}
	if src.Transport == TransportTelemetry {
		return errTelemetrySource(src.ID)
	}
	if IsVendor(src.Transport) && rawURL == "" {
		rawURL = VendorURL(src.Transport)
	}
	if src.Transport == TransportExport {
		if err := s.checkExportURL(ctx, src.OrganisationID, rawURL, src.Token); err != nil {
			return err
		}
	} else if err := s.checkURL(ctx, rawURL); err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `UPDATE sources SET url = $1, paused_at_ms = NULL, paused_reason = NULL,
		next_due_ms = CASE WHEN paused_at_ms IS NULL THEN next_due_ms ELSE $4 END WHERE id = $2 AND org_id = $3`,
		rawURL, src.ID, src.OrganisationID, s.now().UnixMilli())
	return err
}

// Resume resumes a paused source of the organisation: its next sync is due
// at once. A source that is not paused is left as it is.
func (s *Service) Resume(ctx context.Context, orgID, id string) (Source, error) {
	src, err := s.Get(ctx, orgID, id)
	if err != nil {
		return Source{}, err
	}
	if src.PausedAt == nil {
		return src, nil
	}
	now := s.now()
	if _, err := s.db.ExecContext(ctx, `UPDATE sources SET paused_at_ms = NULL, paused_reason = NULL, next_due_ms = $2 WHERE id = $1`,
		src.ID, now.UnixMilli()); err != nil {
		return Source{}, fmt.Errorf("sources: resume %s: %w", src.ID, err)
	}
	src.PausedAt, src.PausedReason, src.NextSyncAt = nil, "", now
	return src, nil
}

var _ provider.DataSource = (*sqlstore.Store)(nil)
