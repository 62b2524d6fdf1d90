package sources

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/aiusage/kit/internal/infra/keyring"
)

// The secrets of a source, its token and its push secret, are stored
// encrypted under Config.Secrets, each bound to its column and row;
// secret_key_id names the key that sealed them. A row whose secret_key_id is
// NULL was sealed by no key: it is corrupt, and reading it is an error
// naming the source, never its stored value.

// secretTable describes the encrypted columns of the table sources.
var secretTable = keyring.Table{Name: "sources", ID: "id", KeyID: "secret_key_id", Columns: []string{"token", "push_secret"}}

// sealSecrets returns what the row of src stores: the key id, the sealed
// token and the sealed push secret (NULL when src has none).
func (s *Service) sealSecrets(src Source) (keyID, token string, push sql.NullString, err error) {
	keyID, token, err = s.cfg.Secrets.Seal(src.Token, secretTable.Binding("token", src.ID))
	if err != nil {
		return "", "", push, fmt.Errorf("sources: %w", err)
	}
	if src.PushSecret != "" {
		if _, push.String, err = s.cfg.Secrets.Seal(src.PushSecret, secretTable.Binding("push_secret", src.ID)); err != nil {
			return "", "", push, fmt.Errorf("sources: %w", err)
		}
		push.Valid = true
	}
	return keyID, token, push, nil
}

// openSecret decrypts the value stored in column of row id under keyID. A
// value that does not open, or has no key id, is an error naming the row
// (and the key), never an empty secret.
func (s *Service) openSecret(keyID sql.NullString, column, id, stored string) (string, error) {
	if !keyID.Valid {
		return "", fmt.Errorf("sources: %s of source %s: not encrypted", column, id)
	}
	plain, err := s.cfg.Secrets.Open(keyID.String, stored, secretTable.Binding(column, id))
	if err != nil {
		return "", fmt.Errorf("sources: %w", err)
	}
	return plain, nil
}

// ResealSecrets encrypts under the current key of Config.Secrets every
// source's secrets sealed under an older key, and
// returns how many rows it changed. See [keyring.Table.Reseal]: each row
// changes on its own, so an interrupted run is resumed by running it again.
func (s *Service) ResealSecrets(ctx context.Context) (int, error) {
	return secretTable.Reseal(ctx, s.db.DB, s.cfg.Secrets)
}

// SecretKeyIDs counts the sources by the id of the key that sealed their
// secrets; a corrupt row without a key id is not counted.
func (s *Service) SecretKeyIDs(ctx context.Context) (map[string]int, error) {
	return secretTable.KeyIDs(ctx, s.db.DB)
}
