package org_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// TestTelemetrySettings: prompt text is off by default; a change is read
// at once (also by another store on the database) and audited once;
// setting the value it has records nothing.
func TestTelemetrySettings(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s, err := org.NewStore(ctx, db)
		require.NoError(t, err)
		other, err := org.NewStore(ctx, db)
		require.NoError(t, err)
		admin := org.Actor{Type: org.ActorAdmin, Name: "test"}
		o, err := s.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Acme"}, admin)
		require.NoError(t, err)
		st, err := s.TelemetrySettings(ctx, o.ID)
		require.NoError(t, err)
		require.Equal(t, org.TelemetrySettings{}, st, "off by default")

		on, err := s.SetStorePrompts(ctx, o.ID, true, admin)
		require.NoError(t, err)
		require.True(t, on.StorePrompts)
		require.False(t, on.UpdatedAt.IsZero())
		st, err = other.TelemetrySettings(ctx, o.ID)
		require.NoError(t, err)
		require.Equal(t, on, st, "another process reads the change at once")
		_, err = s.SetStorePrompts(ctx, o.ID, true, admin)
		require.NoError(t, err)
		_, err = other.SetStorePrompts(ctx, o.ID, false, admin)
		require.NoError(t, err)
		st, err = s.TelemetrySettings(ctx, o.ID)
		require.NoError(t, err)
		require.False(t, st.StorePrompts)

		_, err = s.SetStorePrompts(ctx, "8f5c6a1e-0000-4000-8000-000000000000", true, admin)
		require.ErrorIs(t, err, spec.ErrNotFound)

		recs, err := s.Audit(ctx, o.ID, 0, 0)
		require.NoError(t, err)
		require.Len(t, recs, 3)
		require.Equal(t, org.AuditTelemetrySettingsSet, recs[1].Action)
		require.JSONEq(t, `{"storePrompts":false}`, string(recs[1].Before))
		require.Contains(t, string(recs[1].After), `"storePrompts":true`)
		require.Equal(t, org.AuditTelemetrySettingsSet, recs[2].Action)
		require.Contains(t, string(recs[2].Before), `"storePrompts":true`)
	})
}
