package orgapi_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

func TestAuditPage(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		store, err := org.NewStore(ctx, db)
		require.NoError(t, err)
		o, err := store.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Acme"}, adminActor)
		require.NoError(t, err)
		other, err := store.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Other"}, adminActor)
		require.NoError(t, err)
		ada := org.Actor{Type: org.ActorUser, ID: "u1", Name: "Ada Lovelace"}
		bot := org.Actor{Type: org.ActorAPIKey, ID: "k1", Name: "ci-bot"}
		// Acme's trail: organisation.created (1), then 10 more, alternating.
		for i := range 10 {
			actor, action := ada, "review_task.decided"
			if i%2 == 1 {
				actor, action = bot, "key.created"
			}
			require.NoError(t, store.RecordAudit(ctx, o.ID, actor, action, "thing", fmt.Sprint(i), nil, map[string]int{"i": i}))
		}
		require.NoError(t, store.RecordAudit(ctx, other.ID, ada, "key.revoked", "thing", "x", nil, nil))

		seqs := func(recs []org.AuditRecord) []int64 {
			out := []int64{}
			for _, r := range recs {
				out = append(out, r.Seq)
			}
			return out
		}
		page := func(q org.AuditQuery) ([]int64, int64) {
			t.Helper()
			recs, next, err := store.AuditPage(ctx, o.ID, q)
			require.NoError(t, err)
			for _, r := range recs {
				require.Equal(t, o.ID, r.OrganisationID)
			}
			return seqs(recs), next
		}

		got, next := page(org.AuditQuery{})
		require.Equal(t, []int64{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, got, "newest first, only the organisation's")
		require.Zero(t, next)

		// Pages of 4 walk the whole trail backwards.
		var all []int64
		q := org.AuditQuery{Limit: 4}
		for {
			got, next := page(q)
			all = append(all, got...)
			if next == 0 {
				break
			}
			require.Equal(t, got[len(got)-1], next)
			q.Before = next
		}
		require.Equal(t, []int64{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, all)
		got, next = page(org.AuditQuery{Limit: 11})
		require.Len(t, got, 11)
		require.Zero(t, next, "an exactly full last page has no next")

		got, _ = page(org.AuditQuery{ActorType: org.ActorAPIKey})
		require.Equal(t, []int64{11, 9, 7, 5, 3}, got)
		got, _ = page(org.AuditQuery{Actor: "lOVE"})
		require.Equal(t, []int64{10, 8, 6, 4, 2}, got, "a case-insensitive substring of the name")
		got, _ = page(org.AuditQuery{Action: "key."})
		require.Equal(t, []int64{11, 9, 7, 5, 3}, got, "a prefix of the action")
		got, _ = page(org.AuditQuery{Action: "review_task.decided", Before: 6})
		require.Equal(t, []int64{4, 2}, got)
		got, _ = page(org.AuditQuery{Action: "review%"})
		require.Empty(t, got, "no wildcards")
		got, _ = page(org.AuditQuery{Action: "organisation.created", ActorType: org.ActorAdmin, Actor: "test"})
		require.Equal(t, []int64{1}, got)
		got, next = page(org.AuditQuery{Actor: "Ada", Limit: 2})
		require.Equal(t, []int64{10, 8}, got)
		require.Equal(t, int64(8), next)

		recs, _, err := store.AuditPage(ctx, o.ID, org.AuditQuery{Limit: 1})
		require.NoError(t, err)
		require.Equal(t, bot, recs[0].Actor)
		require.JSONEq(t, `{"i":9}`, string(recs[0].After))
		require.JSONEq(t, `null`, string(recs[0].Before))

		for _, bad := range []org.AuditQuery{{Limit: -1}, {Limit: org.MaxAuditPage + 1}, {Before: -1}, {ActorType: "robot"}, {Actor: "\xff"}} {
			_, _, err := store.AuditPage(ctx, o.ID, bad)
			require.ErrorIs(t, err, spec.ErrInvalid, "%+v", bad)
		}
	})
}
