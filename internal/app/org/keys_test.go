package org_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// clock is a settable clock for the store.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestAuthenticateIngestion(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		s, err := org.NewStore(ctx, db, org.WithNow(clk.now))
		require.NoError(t, err)
		admin := org.Actor{Type: org.ActorAdmin, Name: "test"}
		o, err := s.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Acme"}, admin)
		require.NoError(t, err)
		create := func(name string, typ org.KeyType, expires *time.Time) org.CreatedKey {
			k, err := s.CreateKey(ctx, org.KeyCreate{OrganisationID: o.ID, Name: name, Type: typ, ExpiresAt: expires}, admin)
			require.NoError(t, err)
			return k
		}
		ing := create("laptops", org.KeyTypeIngestion, nil)
		api := create("ci", org.KeyTypeAPI, nil)
		revoked := create("old", org.KeyTypeIngestion, nil)
		soon := clk.now().Add(time.Hour)
		expiring := create("short", org.KeyTypeIngestion, &soon)
		_, err = s.RevokeKey(ctx, o.ID, revoked.ID, admin)
		require.NoError(t, err)

		p, err := s.AuthenticateIngestion(ctx, ing.Secret)
		require.NoError(t, err)
		require.Equal(t, org.Principal{KeyID: ing.ID, KeyName: "laptops", OrganisationID: o.ID, Type: org.KeyTypeIngestion}, p)

		_, err = s.AuthenticateIngestion(ctx, api.Secret)
		require.ErrorIs(t, err, spec.ErrForbidden)
		var se *spec.Error
		require.True(t, errors.As(err, &se))
		require.Equal(t, "API keys cannot send telemetry; use a key of type Ingestion.", se.Detail)
		// The mirror: an Ingestion key is refused by the organisation API.
		_, err = s.Authenticate(ctx, ing.Secret)
		require.ErrorIs(t, err, spec.ErrForbidden)
		_, err = s.Authenticate(ctx, api.Secret)
		require.NoError(t, err)

		clk.add(2 * time.Hour) // past the expiry of "short", and the key cache
		for name, secret := range map[string]string{
			"missing": "", "unknown": org.SecretPrefix + "nope", "revoked": revoked.Secret,
			"expired": expiring.Secret, "too long": string(make([]byte, 300)),
		} {
			_, err := s.AuthenticateIngestion(ctx, secret)
			require.ErrorIs(t, err, spec.ErrUnauthorized, name)
			require.Equal(t, spec.ErrUnauthorized, err, name) // one error for all, nothing to tell them apart
		}

		// Revocation has effect on the next request, cached or not.
		_, err = s.AuthenticateIngestion(ctx, ing.Secret)
		require.NoError(t, err)
		_, err = s.RevokeKey(ctx, o.ID, ing.ID, admin)
		require.NoError(t, err)
		_, err = s.AuthenticateIngestion(ctx, ing.Secret)
		require.ErrorIs(t, err, spec.ErrUnauthorized)
	})
}
