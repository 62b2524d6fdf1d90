package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
)

// demoStore keeps what the demo's first start creates, for later starts:
// ids in the table demo_state, and the secrets it must show again (the API
// key, the provider's token, the people's passwords, the push secret, the
// telemetry's Ingestion key) encrypted under the service's keyring in
// demo_secrets, bound to their name.
type demoStore struct {
	db   *sqldb.DB
	ring *keyring.Keyring
}

// demoSecretNames are the values of demoStore kept encrypted.
var demoSecretNames = map[string]bool{"api_key": true, "provider_token": true, "admin_password": true,
	"reviewer_password": true, "push_secret": true, "ingestion_key": true}

// demoSecretTable describes demo_secrets for the keyring's reseal.
var demoSecretTable = keyring.Table{Name: "demo_secrets", ID: "name", KeyID: "key_id", Columns: []string{"value"}}

// init creates the tables and checks that the keyring opens the secrets
// kept.
func (d *demoStore) init(ctx context.Context) error {
	if _, err := d.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS demo_state (name TEXT PRIMARY KEY, value TEXT NOT NULL)`); err != nil {
		return err
	}
	if _, err := d.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS demo_secrets (name TEXT PRIMARY KEY, key_id TEXT, value TEXT NOT NULL)`); err != nil {
		return err
	}
	return demoSecretTable.Check(ctx, d.db.DB, d.ring)
}

// get returns the value kept as name, "" when none.
func (d *demoStore) get(ctx context.Context, name string) (string, error) {
	if !demoSecretNames[name] {
		var v string
		err := d.db.QueryRowContext(ctx, `SELECT value FROM demo_state WHERE name = $1`, name).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return "", nil
		}
		return v, err
	}
	var keyID sql.NullString
	var sealed string
	err := d.db.QueryRowContext(ctx, `SELECT key_id, value FROM demo_secrets WHERE name = $1`, name).Scan(&keyID, &sealed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", err
	case !keyID.Valid:
		return "", fmt.Errorf("the demo's %s: not encrypted", name)
	}
	return d.ring.Open(keyID.String, sealed, demoSecretTable.Binding("value", name))
}

// set keeps value as name.
func (d *demoStore) set(ctx context.Context, name, value string) error {
	if demoSecretNames[name] {
		return d.setSecret(ctx, d.db.DB, name, value)
	}
	_, err := d.db.ExecContext(ctx, `INSERT INTO demo_state (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`, name, value)
	return err
}

func (d *demoStore) setSecret(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, name, value string) error {
	keyID, sealed, err := d.ring.Seal(value, demoSecretTable.Binding("value", name))
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, `INSERT INTO demo_secrets (name, key_id, value) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET key_id = excluded.key_id, value = excluded.value`, name, keyID, sealed)
	return err
}
