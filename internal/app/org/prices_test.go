package org_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

func f(v float64) *float64 { return &v }

func TestPriceValidate(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		p     org.PriceSet
		field string
	}{
		"empty model":    {org.PriceSet{Model: " ", Input: f(1)}, "model"},
		"long model":     {org.PriceSet{Model: strings.Repeat("m", 201), Input: f(1)}, "model"},
		"control":        {org.PriceSet{Model: "a\nb", Input: f(1)}, "model"},
		"negative":       {org.PriceSet{Model: "m", Input: f(1), Output: f(-1)}, "output"},
		"nan":            {org.PriceSet{Model: "m", CacheRead: f(math.NaN())}, "cacheRead"},
		"inf":            {org.PriceSet{Model: "m", CacheWrite: f(math.Inf(1))}, "cacheWrite"},
		"no price given": {org.PriceSet{Model: "m"}, "input"},
	} {
		err := c.p.Validate()
		require.ErrorIs(t, err, spec.ErrInvalid, name)
		var fe *org.PriceFieldError
		require.ErrorAs(t, err, &fe, name)
		require.Equal(t, c.field, fe.Field, name)
	}
	require.NoError(t, org.PriceSet{Model: strings.Repeat("m", 200), Output: f(0)}.Validate())
}

func TestPrices(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s, err := org.NewStore(ctx, db)
		require.NoError(t, err)
		admin := org.Actor{Type: org.ActorAdmin, Name: "test"}
		o, err := s.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Acme"}, admin)
		require.NoError(t, err)
		ps, err := s.Prices(ctx, o.ID)
		require.NoError(t, err)
		require.Empty(t, ps, "empty by default")

		_, err = s.SetPrice(ctx, o.ID, org.PriceSet{Model: "m"}, admin)
		require.ErrorIs(t, err, spec.ErrInvalid)
		_, err = s.SetPrice(ctx, o.ID, org.PriceSet{Model: "claude-sonnet-4-5", Input: f(3), Output: f(15)}, admin)
		require.NoError(t, err)
		_, err = s.SetPrice(ctx, o.ID, org.PriceSet{Model: "claude-sonnet-4-5", Input: f(3), CacheRead: f(0.3),
			CacheWrite: f(3.75), Output: f(15)}, admin)
		require.NoError(t, err)
		m, err := s.ModelPrices(ctx, o.ID)
		require.NoError(t, err)
		require.Len(t, m, 1)
		p := m["claude-sonnet-4-5"]
		require.Equal(t, 0.3, *p.CacheRead)
		c, ok := p.Cost(1_000_000, 2_000_000, 0, 100_000)
		require.True(t, ok)
		require.InDelta(t, 3+0.6+1.5, c, 1e-12)
		_, ok = org.Price{Input: f(1)}.Cost(1, 0, 0, 1)
		require.False(t, ok, "output tokens without an output price")

		require.NoError(t, s.DeletePrice(ctx, o.ID, "claude-sonnet-4-5", admin))
		require.ErrorIs(t, s.DeletePrice(ctx, o.ID, "claude-sonnet-4-5", admin), spec.ErrNotFound)
		ps, err = s.Prices(ctx, o.ID)
		require.NoError(t, err)
		require.Empty(t, ps)

		recs, err := s.Audit(ctx, o.ID, 0, 0)
		require.NoError(t, err)
		var actions []string
		for _, r := range recs {
			actions = append(actions, r.Action)
		}
		require.Equal(t, []string{org.AuditOrganisationCreated, org.AuditPriceSet, org.AuditPriceSet, org.AuditPriceDeleted}, actions)
	})
}
