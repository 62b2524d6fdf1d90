package org_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// newKeyStore returns a store on db with the clock clk, an organisation and
// an API key and an Ingestion key of it.
func newKeyStore(t *testing.T, db *sqldb.DB, clk *clock) (s *org.Store, orgID string, api, ing org.CreatedKey) {
	t.Helper()
	ctx := t.Context()
	s, err := org.NewStore(ctx, db, org.WithNow(clk.now))
	require.NoError(t, err)
	admin := org.Actor{Type: org.ActorAdmin, Name: "test"}
	o, err := s.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Acme"}, admin)
	require.NoError(t, err)
	api, err = s.CreateKey(ctx, org.KeyCreate{OrganisationID: o.ID, Name: "ci", Type: org.KeyTypeAPI}, admin)
	require.NoError(t, err)
	ing, err = s.CreateKey(ctx, org.KeyCreate{OrganisationID: o.ID, Name: "laptops", Type: org.KeyTypeIngestion}, admin)
	require.NoError(t, err)
	return s, o.ID, api, ing
}

func TestKeysLastUsedBurst(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		clk := &clock{t: start}
		s, orgID, api, ing := newKeyStore(t, db, clk)

		used, err := s.KeysLastUsed(ctx, orgID)
		require.NoError(t, err)
		require.Empty(t, used, "never used")

		// A burst of 100 requests, 50 of them at once, over 50 seconds:
		// one write.
		var wg sync.WaitGroup
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.AuthenticateFor(ctx, api.Secret, org.UseReviewAPI)
				require.NoError(t, err)
			}()
		}
		wg.Wait()
		for range 50 {
			clk.add(time.Second)
			_, err := s.Authenticate(ctx, api.Secret)
			require.NoError(t, err)
		}
		statements, rows := org.UseWrites(s)
		require.Equal(t, [2]int64{1, 1}, [2]int64{statements, rows})
		used, err = s.KeysLastUsed(ctx, orgID)
		require.NoError(t, err)
		require.Equal(t, map[string]org.LastUse{api.ID: {At: start, API: org.UseReviewAPI}}, used)

		// A minute after the write, the next request writes again.
		clk.add(10 * time.Second)
		_, err = s.Authenticate(ctx, api.Secret)
		require.NoError(t, err)
		_, err = s.AuthenticateIngestion(ctx, ing.Secret)
		require.NoError(t, err)
		// Refusals are no use: an Ingestion key on the organisation API.
		_, err = s.AuthenticateFor(ctx, ing.Secret, org.UseMCP)
		require.Error(t, err)
		used, err = s.KeysLastUsed(ctx, orgID)
		require.NoError(t, err)
		require.Equal(t, map[string]org.LastUse{
			api.ID: {At: start.Add(time.Minute), API: org.UseOrganisationAPI},
			ing.ID: {At: start.Add(time.Minute), API: org.UseTelemetry},
		}, used)
		require.Equal(t, "organisation API", used[api.ID].API.String())
	})
}

// TestKeysLastUsedAcrossStores: two stores with their own pools on one
// database, as two service processes: between them one write a minute.
func TestKeysLastUsedAcrossStores(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			u := sqldbtest.URL(t, d)
			open := func() *sqldb.DB {
				db, err := sqldb.Open(ctx, u)
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, db.Close()) })
				return db
			}
			start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			clk := &clock{t: start}
			a, orgID, api, _ := newKeyStore(t, open(), clk)
			b, err := org.NewStore(ctx, open(), org.WithNow(clk.now))
			require.NoError(t, err)

			// Every 5 seconds for three minutes, each store authenticates the
			// key, b 2 seconds after a.
			for i := range 36 {
				_, err := a.AuthenticateFor(ctx, api.Secret, org.UseMCP)
				require.NoError(t, err, i)
				clk.add(2 * time.Second)
				_, err = b.Authenticate(ctx, api.Secret)
				require.NoError(t, err, i)
				clk.add(3 * time.Second)
			}
			_, rowsA := org.UseWrites(a)
			_, rowsB := org.UseWrites(b)
			require.Equal(t, int64(3), rowsA+rowsB, "one write a minute between the two stores")
			statementsA, _ := org.UseWrites(a)
			statementsB, _ := org.UseWrites(b)
			require.LessOrEqual(t, statementsA+statementsB, int64(6), "at most one UPDATE a minute per store")
			used, err := a.KeysLastUsed(ctx, orgID)
			require.NoError(t, err)
			require.Equal(t, map[string]org.LastUse{api.ID: {At: start.Add(2 * time.Minute), API: org.UseMCP}}, used)
		})
	}
}
