package sso_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/sso"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestNewChecksTheKeys: a service started without the key that sealed a
// stored client secret stops at once, naming the table and the key, rather
// than at the organisation's next sign-in.
func TestNewChecksTheKeys(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		e.configure(nil)
		other := keyring.Ephemeral()
		_, err := sso.New(t.Context(), sso.Config{DB: db, Orgs: e.orgs, People: e.people, Secrets: other, AllowPrivate: true})
		require.ErrorIs(t, err, keyring.ErrUnknownKey)
		require.ErrorContains(t, err, "sso_settings")
		require.ErrorContains(t, err, e.ring.Current())
		both, err := keyring.New(append(other.Keys(), e.ring.Keys()...)...)
		require.NoError(t, err)
		_, err = sso.New(t.Context(), sso.Config{DB: db, Orgs: e.orgs, People: e.people, Secrets: both, AllowPrivate: true})
		require.NoError(t, err, "a ring holding the key starts")
	})
}
