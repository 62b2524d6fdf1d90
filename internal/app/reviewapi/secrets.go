package reviewapi

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/aiusage/kit/internal/infra/keyring"
)

// A webhook's signing secret is stored encrypted under Config.Secrets,
// bound to its row; secret_key_id names the key that sealed it. A row whose
// secret_key_id is NULL was sealed by no key: it is corrupt, and reading it
// is an error naming the webhook, never its stored value.

// secretTable describes the encrypted column of reviewapi_webhooks.
var secretTable = keyring.Table{Name: "reviewapi_webhooks", ID: "id", KeyID: "secret_key_id", Columns: []string{"secret"}}

// openSecret decrypts the secret stored for webhook id under keyID. A value
// that does not open, or has no key id, is an error naming the webhook (and
// the key), never an empty secret.
func (s *Service) openSecret(keyID sql.NullString, id, stored string) (string, error) {
	if !keyID.Valid {
		return "", fmt.Errorf("reviewapi: webhook secret of %s: not encrypted", id)
	}
	plain, err := s.cfg.Secrets.Open(keyID.String, stored, secretTable.Binding("secret", id))
	if err != nil {
		return "", fmt.Errorf("reviewapi: webhook secret: %w", err)
	}
	return plain, nil
}

// ResealSecrets encrypts under the current key of Config.Secrets every
// webhook secret sealed under an older key, and
// returns how many it changed. See [keyring.Table.Reseal]: each row
// changes on its own, so an interrupted run is resumed by running it again.
func (s *Service) ResealSecrets(ctx context.Context) (int, error) {
	return secretTable.Reseal(ctx, s.db.DB, s.cfg.Secrets)
}

// SecretKeyIDs counts the webhooks (deleted ones included) by the id of the
// key that sealed their secrets; a corrupt row without a key id is not
// counted.
func (s *Service) SecretKeyIDs(ctx context.Context) (map[string]int, error) {
	return secretTable.KeyIDs(ctx, s.db.DB)
}
