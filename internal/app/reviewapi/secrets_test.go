package reviewapi_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/webhooktest"
)

// rawWebhook reads a webhook's row as stored.
func rawWebhook(t *testing.T, db *sqldb.DB, id string) (secret string, keyID sql.NullString) {
	t.Helper()
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT secret, secret_key_id FROM reviewapi_webhooks WHERE id = $1`, id).Scan(&secret, &keyID))
	return secret, keyID
}

// TestWebhookSecretsAtRest: a webhook's signing secret is not stored in
// plaintext, deliveries are signed with it all the same; a rotation
// reseals it under the new key, after which the old key is no longer
// needed; a keyring without the key is refused at start.
func TestWebhookSecretsAtRest(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		oldKey, newKey := keyring.NewKey(), keyring.NewKey()
		oldRing, err := keyring.New(oldKey)
		require.NoError(t, err)
		h := startHarness(t, db, func(c *reviewapi.Config) { c.Secrets = oldRing })
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		hook := tn.register(t, rcv, "task.completed")

		stored, keyID := rawWebhook(t, db, hook.ID)
		require.NotContains(t, stored, hook.Secret)
		require.NotContains(t, stored, hook.Secret[len("whsec_"):])
		require.Equal(t, oldKey.ID, keyID.String)
		tn.submit(t, "hello")
		require.NoError(t, waitAcks(t, rcv, 1)[0].Err, "signed with the decrypted secret")

		// Rotation: the new key current, the old one kept to read.
		both, err := keyring.New(newKey, oldKey)
		require.NoError(t, err)
		h.stopService()
		h.cfg.Secrets = both
		h.startService()
		n, err := h.service().ResealSecrets(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		ids, err := h.service().SecretKeyIDs(t.Context())
		require.NoError(t, err)
		require.Equal(t, map[string]int{newKey.ID: 1}, ids)

		newOnly, err := keyring.New(newKey)
		require.NoError(t, err)
		h.stopService()
		h.cfg.Secrets = newOnly
		h.startService()
		tn.submit(t, "after the rotation")
		acks := waitAcks(t, rcv, 2)
		require.NoError(t, acks[1].Err, "signed with the secret opened by the new key alone")

		// The old key alone is refused at start, naming the key it lacks.
		cfg := h.cfg
		cfg.Secrets = oldRing
		_, err = server.New(t.Context(), h.serverConfig(cfg))
		require.ErrorIs(t, err, keyring.ErrUnknownKey)
		require.ErrorContains(t, err, newKey.ID)

		// A row without a key id is corrupt: the service starts all the same
		// and leaves the row as it is (reading it is an error, see
		// TestOpenSecretWithoutKeyID); a rotation neither reseals nor counts
		// it.
		_, err = db.ExecContext(t.Context(), `UPDATE reviewapi_webhooks SET secret = $1, secret_key_id = NULL WHERE id = $2`, hook.Secret, hook.ID)
		require.NoError(t, err)
		h.stopService()
		h.startService()
		stored, keyID = rawWebhook(t, db, hook.ID)
		require.Equal(t, hook.Secret, stored)
		require.False(t, keyID.Valid)
		n, err = h.service().ResealSecrets(t.Context())
		require.NoError(t, err)
		require.Zero(t, n)
		ids, err = h.service().SecretKeyIDs(t.Context())
		require.NoError(t, err)
		require.Empty(t, ids)
		_, keyID = rawWebhook(t, db, hook.ID)
		require.False(t, keyID.Valid)
	})
}
