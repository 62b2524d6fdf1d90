package reviewapi

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/keyring"
)

// TestOpenSecretWithoutKeyID: a webhook row whose secret_key_id is NULL is
// corrupt; reading its secret is an error naming the webhook, never the
// stored value nor an empty secret.
func TestOpenSecretWithoutKeyID(t *testing.T) {
	t.Parallel()
	ring := keyring.Ephemeral()
	s := &Service{cfg: &Config{Secrets: ring}}
	const id = "0b9c7a52-9f51-4c55-8d7a-5e3a8f4c0001"
	for name, stored := range map[string]string{"as plaintext": "whsec_stored", "empty": ""} {
		t.Run(name, func(t *testing.T) {
			got, err := s.openSecret(sql.NullString{}, id, stored)
			require.Error(t, err)
			require.ErrorContains(t, err, id)
			require.Empty(t, got)
		})
	}
	// The same row sealed under a key opens.
	keyID, sealed, err := ring.Seal("whsec_stored", secretTable.Binding("secret", id))
	require.NoError(t, err)
	got, err := s.openSecret(sql.NullString{String: keyID, Valid: true}, id, sealed)
	require.NoError(t, err)
	require.Equal(t, "whsec_stored", got)
}
