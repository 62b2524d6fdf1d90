package org_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// TestUpdateOrganisation: a plan change is checked as a creation is, takes
// effect at once in the store that made it (its cache of organisations is
// cleared) and within the cache time in another, and is audited.
func TestUpdateOrganisation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		s, err := org.NewStore(ctx, db, org.WithNow(clk.now))
		require.NoError(t, err)
		other, err := org.NewStore(ctx, db, org.WithNow(clk.now)) // another process
		require.NoError(t, err)
		admin := org.Actor{Type: org.ActorAdmin, Name: "test"}
		o, err := s.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Acme"}, admin)
		require.NoError(t, err)
		for _, st := range []*org.Store{s, other} { // cached by both
			got, err := st.Organisation(ctx, o.ID)
			require.NoError(t, err)
			require.Equal(t, org.StandardHourlyLimit, got.RateLimit())
		}

		ent, limit := org.PlanEnterprise, 3
		_, err = s.UpdateOrganisation(ctx, o.ID, org.OrganisationUpdate{Plan: &ent}, admin)
		require.ErrorIs(t, err, spec.ErrInvalid)
		_, err = s.UpdateOrganisation(ctx, o.ID, org.OrganisationUpdate{}, admin)
		require.ErrorIs(t, err, spec.ErrInvalid)
		_, err = s.UpdateOrganisation(ctx, "5b0e5f7e-0000-4000-8000-000000000000", org.OrganisationUpdate{Plan: &ent, HourlyLimit: &limit}, admin)
		require.ErrorIs(t, err, spec.ErrNotFound)

		up, err := s.UpdateOrganisation(ctx, o.ID, org.OrganisationUpdate{Plan: &ent, HourlyLimit: &limit}, admin)
		require.NoError(t, err)
		require.Equal(t, 3, up.RateLimit())
		got, err := s.Organisation(ctx, o.ID)
		require.NoError(t, err)
		require.Equal(t, up, got, "at once in the store that changed it")
		got, err = other.Organisation(ctx, o.ID)
		require.NoError(t, err)
		require.Equal(t, org.StandardHourlyLimit, got.RateLimit(), "another store's cache holds")
		clk.add(org.DefaultKeyCacheTTL)
		got, err = other.Organisation(ctx, o.ID)
		require.NoError(t, err)
		require.Equal(t, up, got, "...for the cache time")

		recs, err := s.Audit(ctx, o.ID, 0, 10)
		require.NoError(t, err)
		require.Len(t, recs, 2)
		require.Equal(t, org.AuditOrganisationUpdated, recs[1].Action)
		require.JSONEq(t, `{"id":"`+o.ID+`","name":"Acme","plan":"standard","createdAt":"2026-03-01T12:00:00.000Z"}`, string(recs[1].Before))
		require.JSONEq(t, `{"id":"`+o.ID+`","name":"Acme","plan":"enterprise","hourlyLimit":3,"createdAt":"2026-03-01T12:00:00.000Z"}`, string(recs[1].After))
	})
}
