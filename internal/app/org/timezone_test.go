package org_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// TestTimeZone: an organisation's zone is UTC by default; a change is read
// at once by another store, audited once, and a name that is no IANA zone
// is refused naming timeZone, changing nothing.
func TestTimeZone(t *testing.T) {
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
		st, err := s.OrgSettings(ctx, o.ID)
		require.NoError(t, err)
		require.Equal(t, "UTC", st.TimeZone)
		require.True(t, st.UpdatedAt.IsZero())

		for _, bad := range []string{"", "Local", "Mars/Olympus", "../etc/passwd", "Europe/Berlin ", strings.Repeat("A", 65)} {
			_, err := s.SetTimeZone(ctx, o.ID, bad, admin)
			var e *spec.Error
			require.ErrorAs(t, err, &e, "%q", bad)
			require.ErrorIs(t, err, spec.ErrInvalid)
			require.Equal(t, "timeZone", e.Field)
		}

		set, err := s.SetTimeZone(ctx, o.ID, "Europe/Berlin", admin)
		require.NoError(t, err)
		require.Equal(t, "Europe/Berlin", set.TimeZone)
		st, err = other.OrgSettings(ctx, o.ID)
		require.NoError(t, err)
		require.Equal(t, set, st, "another process reads the change at once")
		require.Equal(t, "Europe/Berlin", st.Location().String())
		_, err = other.SetTimeZone(ctx, o.ID, "Europe/Berlin", admin)
		require.NoError(t, err)
		_, err = s.SetTimeZone(ctx, "8f5c6a1e-0000-4000-8000-000000000000", "UTC", admin)
		require.ErrorIs(t, err, spec.ErrNotFound)

		recs, err := s.Audit(ctx, o.ID, 0, 0)
		require.NoError(t, err)
		require.Len(t, recs, 2, "the creation and one change; the refused and unchanged ones record nothing")
		require.Equal(t, org.AuditTimeZoneSet, recs[1].Action)
		require.Contains(t, string(recs[1].Before), `"timeZone":"UTC"`)
		require.Contains(t, string(recs[1].After), `"timeZone":"Europe/Berlin"`)
	})
}
