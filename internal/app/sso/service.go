package sso

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/netguard"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// providerTTL is how long a provider's discovery document (and its key
// set) is kept before the next sign-in fetches it again.
const providerTTL = 5 * time.Minute

// Service signs the people of organisations in through their identity
// providers. It is safe for concurrent use, also by several processes
// sharing one database.
type Service struct {
	cfg    Config
	db     *sqldb.DB
	client *http.Client

	mu        sync.Mutex
	providers map[string]cachedProvider // by issuer
}

// cachedProvider is a provider's discovery, fetched at.
type cachedProvider struct {
	p  *oidc.Provider
	at time.Time
}

// New checks c, applies the package's migrations to c.DB and returns the
// service. c.People must be on the same database (its migrations applied):
// the sessions of single sign-on refer to its sessions.
func New(ctx context.Context, c Config) (*Service, error) {
	switch {
	case c.DB == nil:
		return nil, errors.New("sso: Config.DB is required")
	case c.Orgs == nil:
		return nil, errors.New("sso: Config.Orgs is required")
	case c.People == nil:
		return nil, errors.New("sso: Config.People is required")
	case c.Secrets == nil:
		return nil, errors.New("sso: Config.Secrets is required")
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ClockSkew == 0 {
		c.ClockSkew = DefaultClockSkew
	}
	if c.StateTTL == 0 {
		c.StateTTL = DefaultStateTTL
	}
	if c.RecheckEvery == 0 {
		c.RecheckEvery = DefaultRecheckEvery
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.Timeout < 0, c.StateTTL < time.Second, c.RecheckEvery < 0:
		return nil, fmt.Errorf("sso: Config.Timeout (%s) and RecheckEvery (%s) must not be negative, StateTTL (%s) at least 1s", c.Timeout, c.RecheckEvery, c.StateTTL)
	case c.ClockSkew < 0, c.ClockSkew > MaxClockSkew:
		return nil, fmt.Errorf("sso: Config.ClockSkew (%s) must be 0 to %s", c.ClockSkew, MaxClockSkew)
	}
	client := c.HTTPClient
	if client == nil {
		client = &http.Client{Transport: netguard.NewTransport(netguard.Policy{AllowPrivate: c.AllowPrivate}, c.Timeout), Timeout: c.Timeout}
	}
	if err := c.DB.Migrate(ctx, Component, Migrations()); err != nil {
		return nil, fmt.Errorf("sso: migrate: %w", err)
	}
	// A key removed from the ring too early shows now, not at the next
	// sign-in: every key in use must open a row it sealed.
	for _, t := range []keyring.Table{settingsTable, sessionsTable} {
		if err := t.Check(ctx, c.DB.DB, c.Secrets); err != nil {
			return nil, fmt.Errorf("sso: %w", err)
		}
	}
	return &Service{cfg: c, db: c.DB, client: client, providers: map[string]cachedProvider{}}, nil
}

// now returns the clock reading in UTC at millisecond precision, the
// precision stored.
func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// inTx runs fn in a transaction, again when it failed only because of
// concurrent ones; still failing so is spec.ErrUnavailable.
func (s *Service) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	err := s.db.InTxRetry(ctx, fn)
	if sqldb.IsRetryable(err) {
		return &spec.Error{Kind: spec.ErrUnavailable, Detail: "The service is busy with concurrent changes; retry the request."}
	}
	return err
}

// forUpdate locks the rows selected on PostgreSQL; SQLite's write
// transactions hold the database lock.
func (s *Service) forUpdate() string {
	if s.db.Dialect == sqldb.Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// clientContext returns ctx carrying the client every request to an
// identity provider goes through (go-oidc and oauth2 both read it).
func (s *Service) clientContext(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, s.client)
}

// provider returns the discovery of issuer, fetched within providerTTL or
// now. A failed fetch is not kept.
func (s *Service) provider(ctx context.Context, issuer string) (*oidc.Provider, error) {
	now := s.cfg.Now()
	s.mu.Lock()
	c, ok := s.providers[issuer]
	s.mu.Unlock()
	if ok && now.Sub(c.at) < providerTTL && !now.Before(c.at) {
		return c.p, nil
	}
	return s.fetchProvider(ctx, issuer)
}

// fetchProvider fetches the discovery of issuer and keeps it.
func (s *Service) fetchProvider(ctx context.Context, issuer string) (*oidc.Provider, error) {
	if s.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
	}
	p, err := oidc.NewProvider(s.clientContext(ctx), issuer)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.providers[issuer] = cachedProvider{p: p, at: s.cfg.Now()}
	return p, nil
}

// randomToken returns 32 random bytes, base64url without padding.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// digest is what is stored of a state.
func digest(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}
