package sources_test

import (
	"database/sql"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

const restToken = "rest-token-0123456789-plain"

// secretsEnv is an organisation and a sources service under ring.
func secretsEnv(t *testing.T, db *sqldb.DB, ring *keyring.Keyring) (*org.Store, org.Organisation, *sources.Service) {
	t.Helper()
	orgs, err := org.NewStore(t.Context(), db)
	require.NoError(t, err)
	org, err := orgs.CreateOrganisation(t.Context(), org.OrganisationCreate{Name: "Acme"}, org.Actor{Type: org.ActorAdmin, Name: "t"})
	require.NoError(t, err)
	return orgs, org, newSources(t, db, orgs, ring)
}

func newSources(t *testing.T, db *sqldb.DB, orgs *org.Store, ring *keyring.Keyring) *sources.Service {
	t.Helper()
	src, err := sources.New(t.Context(), sources.Config{DB: db, Orgs: orgs, Secrets: ring, AllowPrivate: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = src.Close() })
	return src
}

type rawSource struct {
	token  string
	push   sql.NullString
	keyID  sql.NullString
	exists bool
}

func readRaw(t *testing.T, db *sqldb.DB, id string) rawSource {
	t.Helper()
	var r rawSource
	err := db.QueryRowContext(t.Context(), `SELECT token, push_secret, secret_key_id FROM sources WHERE id = $1`, id).Scan(&r.token, &r.push, &r.keyID)
	require.NoError(t, err)
	r.exists = true
	return r
}

// TestSecretsNotStoredInPlaintext reads the rows as stored: neither the
// token nor the push secret is there, yet the service reads them back and
// a push signed with the secret is accepted.
func TestSecretsNotStoredInPlaintext(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		ring := keyring.Ephemeral()
		_, org, src := secretsEnv(t, db, ring)
		rest, err := src.Add(ctx, org.ID, sources.SourceCreate{Name: "rest", URL: "https://vendor.example", Token: restToken})
		require.NoError(t, err)
		push, err := src.Add(ctx, org.ID, sources.SourceCreate{Name: "push", Transport: sources.TransportPush})
		require.NoError(t, err)

		// No column of any row holds a secret.
		rows, err := db.QueryContext(ctx, `SELECT id, org_id, name, url, token, transport, COALESCE(push_secret, ''), COALESCE(secret_key_id, '') FROM sources`)
		require.NoError(t, err)
		n := 0
		for rows.Next() {
			var cols [8]string
			require.NoError(t, rows.Scan(&cols[0], &cols[1], &cols[2], &cols[3], &cols[4], &cols[5], &cols[6], &cols[7]))
			for _, c := range cols {
				require.NotContains(t, c, restToken)
				require.NotContains(t, c, push.PushSecret)
			}
			require.Equal(t, ring.Current(), cols[7])
			n++
		}
		require.NoError(t, rows.Err())
		require.Equal(t, 2, n)

		got, err := src.Get(ctx, org.ID, rest.ID)
		require.NoError(t, err)
		require.Equal(t, restToken, got.Token)
		require.Equal(t, "****lain", got.TokenHint())

		// The push receiver verifies with the decrypted secret.
		r := chi.NewRouter()
		src.PushRoutes(r)
		srv := httptest.NewServer(r)
		t.Cleanup(srv.Close)
		body := delivery(t, "conversations")
		code, answer := post(t, srv.URL+sources.PushPath(push.ID), signed(t, push.PushSecret, "msg_1", time.Now(), body), body)
		// Authenticated: only then is the empty delivery looked at.
		require.Equal(t, http.StatusBadRequest, code, answer)
		require.Contains(t, answer, "records is missing")
		code, _ = post(t, srv.URL+sources.PushPath(push.ID), signed(t, "whsec_"+"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "msg_2", time.Now(), body), body)
		require.Equal(t, http.StatusUnauthorized, code)
	})
}

// TestSecretsWithoutKeyID: a source whose secret_key_id is NULL, sealed by
// no key, is corrupt. A start leaves it as it is; reading it is an error
// naming the source, never the stored value nor an empty secret; a push
// signed with the stored value is not accepted; a rotation neither reseals
// nor counts it.
func TestSecretsWithoutKeyID(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		ring := keyring.Ephemeral()
		orgs, org, src := secretsEnv(t, db, ring)
		rest, err := src.Add(ctx, org.ID, sources.SourceCreate{Name: "rest", URL: "https://vendor.example", Token: restToken})
		require.NoError(t, err)
		push, err := src.Add(ctx, org.ID, sources.SourceCreate{Name: "push", Transport: sources.TransportPush})
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `UPDATE sources SET token = $1, secret_key_id = NULL WHERE id = $2`, restToken, rest.ID)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `UPDATE sources SET push_secret = $1, secret_key_id = NULL WHERE id = $2`, push.PushSecret, push.ID)
		require.NoError(t, err)

		again := newSources(t, db, orgs, ring)
		for _, id := range []string{rest.ID, push.ID} {
			require.False(t, readRaw(t, db, id).keyID.Valid, "a start leaves the row as it is")
		}
		require.Equal(t, restToken, readRaw(t, db, rest.ID).token)

		got, err := again.Get(ctx, org.ID, rest.ID)
		require.ErrorContains(t, err, rest.ID)
		require.ErrorContains(t, err, "token")
		require.Empty(t, got.Token)
		_, err = again.List(ctx, org.ID)
		require.Error(t, err)

		r := chi.NewRouter()
		again.PushRoutes(r)
		srv := httptest.NewServer(r)
		t.Cleanup(srv.Close)
		body := delivery(t, "conversations")
		code, answer := post(t, srv.URL+sources.PushPath(push.ID), signed(t, push.PushSecret, "msg_1", time.Now(), body), body)
		require.Equal(t, http.StatusServiceUnavailable, code, answer)

		// A sound row beside them is resealed; they are passed by.
		sound, err := again.Add(ctx, org.ID, sources.SourceCreate{Name: "sound", URL: "https://vendor.example", Token: restToken + "sound"})
		require.NoError(t, err)
		newKey := keyring.NewKey()
		both, err := keyring.New(append([]keyring.Key{newKey}, ring.Keys()...)...)
		require.NoError(t, err)
		rotating := newSources(t, db, orgs, both)
		n, err := rotating.ResealSecrets(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		keys, err := rotating.SecretKeyIDs(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]int{newKey.ID: 1}, keys)
		require.Equal(t, newKey.ID, readRaw(t, db, sound.ID).keyID.String)
		for _, id := range []string{rest.ID, push.ID} {
			require.False(t, readRaw(t, db, id).keyID.Valid, "a rotation leaves the row as it is")
		}
	})
}

// TestSecretsRotation: with a new key current and the old one kept, the
// rows sealed under the old key are read, resealed, and then read with the
// new key alone; the old key alone no longer opens them.
func TestSecretsRotation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		oldKey, newKey := keyring.NewKey(), keyring.NewKey()
		oldRing, err := keyring.New(oldKey)
		require.NoError(t, err)
		orgs, org, src := secretsEnv(t, db, oldRing)
		var ids []string
		for _, name := range []string{"a", "b", "c"} {
			s, err := src.Add(ctx, org.ID, sources.SourceCreate{Name: name, URL: "https://vendor.example", Token: restToken + name})
			require.NoError(t, err)
			ids = append(ids, s.ID)
		}

		both, err := keyring.New(newKey, oldKey)
		require.NoError(t, err)
		rotating := newSources(t, db, orgs, both)
		got, err := rotating.Get(ctx, org.ID, ids[0])
		require.NoError(t, err, "old rows are read during the rotation")
		require.Equal(t, restToken+"a", got.Token)
		n, err := rotating.ResealSecrets(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		n, err = rotating.ResealSecrets(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "a second run has nothing left")
		keys, err := rotating.SecretKeyIDs(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]int{newKey.ID: 3}, keys)

		newOnly, err := keyring.New(newKey)
		require.NoError(t, err)
		after := newSources(t, db, orgs, newOnly)
		list, err := after.List(ctx, org.ID)
		require.NoError(t, err)
		require.Len(t, list, 3)
		for _, s := range list {
			require.Equal(t, restToken+s.Name, s.Token)
		}

		// The old key alone: a clear error at start, naming the key.
		_, err = sources.New(ctx, sources.Config{DB: db, Orgs: orgs, Secrets: oldRing})
		require.ErrorIs(t, err, keyring.ErrUnknownKey)
		require.ErrorContains(t, err, newKey.ID)
	})
}

// TestSecretsWrongKey: a keyring whose key has the id of the one that
// sealed the rows but other bytes fails at start, and a value copied from
// another row does not open: errors, never an empty token.
func TestSecretsWrongKey(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		key := keyring.Key{ID: "main", Secret: keyring.NewKey().Secret}
		ring, err := keyring.New(key)
		require.NoError(t, err)
		orgs, org, src := secretsEnv(t, db, ring)
		a, err := src.Add(ctx, org.ID, sources.SourceCreate{Name: "a", URL: "https://vendor.example", Token: restToken})
		require.NoError(t, err)
		b, err := src.Add(ctx, org.ID, sources.SourceCreate{Name: "b", URL: "https://vendor.example", Token: "another-token-0000"})
		require.NoError(t, err)

		wrong, err := keyring.New(keyring.Key{ID: "main", Secret: keyring.NewKey().Secret})
		require.NoError(t, err)
		_, err = sources.New(ctx, sources.Config{DB: db, Orgs: orgs, Secrets: wrong})
		require.ErrorIs(t, err, keyring.ErrAuth)

		// b's row given a's sealed token: it does not open as b's.
		_, err = db.ExecContext(ctx, `UPDATE sources SET token = (SELECT token FROM sources WHERE id = $1) WHERE id = $2`, a.ID, b.ID)
		require.NoError(t, err)
		got, err := src.Get(ctx, org.ID, b.ID)
		require.ErrorIs(t, err, keyring.ErrAuth)
		require.Empty(t, got.Token)
		_, err = src.List(ctx, org.ID)
		require.ErrorIs(t, err, keyring.ErrAuth)
		ok, err := src.Get(ctx, org.ID, a.ID)
		require.NoError(t, err)
		require.Equal(t, restToken, ok.Token)

		_, err = sources.New(ctx, sources.Config{DB: db, Orgs: orgs})
		require.ErrorIs(t, err, keyring.ErrNoKeyring)
	})
}
