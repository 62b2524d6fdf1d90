package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// testSecretKey is the key of the stored secrets of every run of the tests,
// in-process (testGetenv) and in the processes they start (the
// environment, set by TestMain), unless a test sets AIUSAGE_SECRET_KEY
// itself ("" to see what happens without it): PostgreSQL needs one, the
// same in every process of a database.
var testSecretKey = keyring.NewKey().String()

func TestMain(m *testing.M) {
	if err := os.Setenv(envSecretKey, testSecretKey); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// testGetenv is the getenv of an in-process run: environ, and
// testSecretKey for AIUSAGE_SECRET_KEY unless environ holds it.
func testGetenv(environ map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := environ[k]; ok {
			return v
		}
		if k == envSecretKey {
			return testSecretKey
		}
		return ""
	}
}

// noKey is the environment of a run without AIUSAGE_SECRET_KEY.
var noKey = map[string]string{envSecretKey: ""}

// rawTokens returns every stored token and push secret with the key id of
// its row, read from the database directly.
func rawTokens(t *testing.T, dbURL string) (values, keyIDs []string) {
	t.Helper()
	db, err := sqldb.Open(t.Context(), dbURL)
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), `SELECT token, COALESCE(push_secret, ''), COALESCE(secret_key_id, '') FROM sources`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var token, push, id string
		require.NoError(t, rows.Scan(&token, &push, &id))
		values = append(values, token, push)
		keyIDs = append(keyIDs, id)
	}
	require.NoError(t, rows.Err())
	return values, keyIDs
}

// TestSecretKeyFileBesideSQLite: without AIUSAGE_SECRET_KEY, the admin
// commands on a SQLite file make the key file beside it with mode 0600,
// store the source's token encrypted under it, and read it back; the
// database file itself is 0600.
func TestSecretKeyFileBesideSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "svc.db")
	dbURL := "sqlite:" + path
	r := admin(t, dbURL, noKey, "org", "create", "--name", "Acme")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var org struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &org))
	const token = "vendor-token-plain-0123456789"
	r = admin(t, dbURL, noKey, "source", "add", "--org", org.ID, "--name", "v", "--url", "https://vendor.example", "--token", token, "--allow-private-sources")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var push struct{ Secret string }
	r = admin(t, dbURL, noKey, "source", "add", "--org", org.ID, "--name", "p", "--transport", "push")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &push))

	for _, p := range []string{path, path + ".key"} {
		info, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), p)
	}
	ring, err := keyring.ReadKeyFile(path + ".key")
	require.NoError(t, err)
	values, ids := rawTokens(t, dbURL)
	require.Equal(t, []string{ring.Current(), ring.Current()}, ids)
	for _, v := range values {
		require.NotContains(t, v, token)
		require.NotContains(t, v, push.Secret)
	}
	r = admin(t, dbURL, noKey, "source", "list", "--org", org.ID)
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `"token":"****6789"`, "decrypted to show its last four characters")

	// Another key: refused, naming the key it lacks; never an empty token.
	r = admin(t, dbURL, nil, "source", "list", "--org", org.ID)
	require.Equal(t, ExitFailure, r.code, r.stdout)
	require.Contains(t, r.stderr, ring.Current())
	require.Contains(t, r.stderr, "does not hold")
	require.Empty(t, r.stdout)
	// A malformed key, and two keys at once: usage errors naming them.
	r = admin(t, dbURL, map[string]string{envSecretKey: "not-a-key"}, "source", "list", "--org", org.ID)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "$AIUSAGE_SECRET_KEY")
	r = admin(t, dbURL, nil, "source", "list", "--org", org.ID, "--secret-key-file", path+".key")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "not both")
	// The key file given explicitly works as the default one did.
	r = admin(t, dbURL, noKey, "source", "list", "--org", org.ID, "--secret-key-file", path+".key")
	require.Equal(t, ExitOK, r.code, r.stderr)
	// A key file others can read is refused.
	require.NoError(t, os.Chmod(path+".key", 0o644))
	r = admin(t, dbURL, noKey, "source", "list", "--org", org.ID)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "chmod 600")
}

// TestSecretKeyRequiredOnPostgres: on PostgreSQL a key must be given; the
// error names the variable and the flag.
func TestSecretKeyRequiredOnPostgres(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.Postgres)
	for _, args := range [][]string{
		{"admin", "source", "list", "--org", "0b7e4a4c-5f0e-4d3e-9a51-2f6c1d2b3a4e", "--database-url", dbURL},
		{"admin", "rotate-secret-key", "--database-url", dbURL},
		{"service", "serve", "--addr", "127.0.0.1:0", "--database-url", dbURL},
		{"demo", "--addr", "127.0.0.1:0", "--database-url", dbURL, "--access-log", filepath.Join(t.TempDir(), "a.log")},
	} {
		r := runCLI(t, "", noKey, args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "AIUSAGE_SECRET_KEY", args)
		require.Contains(t, r.stderr, "--secret-key-file", args)
	}
	missing := filepath.Join(t.TempDir(), "none.key")
	r := runCLI(t, "", noKey, "admin", "rotate-secret-key", "--database-url", dbURL, "--secret-key-file", missing)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "does not exist")
	_, err := os.Stat(missing)
	require.ErrorIs(t, err, os.ErrNotExist, "no key is made up for PostgreSQL")
}

type rotateOut struct {
	KeyID       string         `json:"keyId"`
	Resealed    map[string]int `json:"resealed"`
	Remaining   int            `json:"remaining"`
	KeysInUse   map[string]int `json:"keysInUse"`
	UnusedKeys  []string       `json:"unusedKeys"`
	RemovedKeys []string       `json:"removedKeys"`
	KeyFile     string         `json:"keyFile"`
}

func rotate(t *testing.T, dbURL string, environ map[string]string, args ...string) (rotateOut, result) {
	t.Helper()
	r := admin(t, dbURL, environ, append([]string{"rotate-secret-key"}, args...)...)
	var out rotateOut
	if r.code == ExitOK {
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	}
	return out, r
}

// TestRotateSecretKey rotates the key given in the environment, on both
// databases: with the new key first and the old one kept, every row is
// resealed, a second run has nothing to do, and the new key alone then
// reads everything while the old one alone is refused.
func TestRotateSecretKey(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			oldKey, newKey := keyring.NewKey(), keyring.NewKey()
			oldEnv := map[string]string{envSecretKey: oldKey.String()}
			r := admin(t, dbURL, oldEnv, "org", "create", "--name", "Acme")
			require.Equal(t, ExitOK, r.code, r.stderr)
			var org struct{ ID string }
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &org))
			for _, name := range []string{"a", "b"} {
				r = admin(t, dbURL, oldEnv, "source", "add", "--org", org.ID, "--name", name, "--url", "https://vendor.example", "--token", "token-of-"+name+"-0123", "--allow-private-sources")
				require.Equal(t, ExitOK, r.code, r.stderr)
			}

			bothEnv := map[string]string{envSecretKey: newKey.String() + "," + oldKey.String()}
			out, r := rotate(t, dbURL, bothEnv)
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.Equal(t, newKey.ID, out.KeyID)
			require.Equal(t, 2, out.Resealed["sources"])
			require.Equal(t, 0, out.Resealed["reviewapi_webhooks"])
			require.Zero(t, out.Remaining)
			require.Equal(t, map[string]int{newKey.ID: 2}, out.KeysInUse)
			require.Equal(t, []string{oldKey.ID}, out.UnusedKeys)
			require.Empty(t, out.KeyFile)
			_, ids := rawTokens(t, dbURL)
			require.Equal(t, []string{newKey.ID, newKey.ID}, ids)

			out, r = rotate(t, dbURL, bothEnv)
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.Zero(t, out.Resealed["sources"], "resumed: nothing left")

			newEnv := map[string]string{envSecretKey: newKey.String()}
			r = admin(t, dbURL, newEnv, "source", "list", "--org", org.ID)
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.Contains(t, r.stdout, `"token":"****0123"`)
			r = admin(t, dbURL, oldEnv, "source", "list", "--org", org.ID)
			require.Equal(t, ExitFailure, r.code, r.stdout)
			require.Contains(t, r.stderr, newKey.ID)
			_, r = rotate(t, dbURL, oldEnv)
			require.Equal(t, ExitFailure, r.code)
			require.Contains(t, r.stderr, "run it again")
		})
	}
}

// TestRotateSecretKeyGenerate rotates the key file beside a SQLite
// database: a new key, every row resealed, the old key dropped from the
// file, which keeps mode 0600; --generate without a key file is refused.
func TestRotateSecretKeyGenerate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "svc.db")
	dbURL := "sqlite:" + path
	r := admin(t, dbURL, noKey, "org", "create", "--name", "Acme")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var org struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &org))
	r = admin(t, dbURL, noKey, "source", "add", "--org", org.ID, "--name", "p", "--transport", "push")
	require.Equal(t, ExitOK, r.code, r.stderr)
	before, err := keyring.ReadKeyFile(path + ".key")
	require.NoError(t, err)

	out, r := rotate(t, dbURL, noKey, "--generate")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.NotEqual(t, before.Current(), out.KeyID)
	require.Equal(t, 1, out.Resealed["sources"])
	require.Equal(t, []string{before.Current()}, out.RemovedKeys)
	require.Empty(t, out.UnusedKeys)
	require.Equal(t, path+".key", out.KeyFile)
	after, err := keyring.ReadKeyFile(path + ".key")
	require.NoError(t, err)
	require.Equal(t, out.KeyID, after.Current())
	require.Len(t, after.Keys(), 1)
	info, err := os.Stat(path + ".key")
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	r = admin(t, dbURL, noKey, "source", "list", "--org", org.ID)
	require.Equal(t, ExitOK, r.code, r.stderr)

	_, r = rotate(t, dbURL, nil, "--generate")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "AIUSAGE_SECRET_KEY")
}

// TestDemoSecretsEncrypted: the secrets the demo keeps to show again are
// stored encrypted in demo_secrets, the other values in demo_state, and
// both read back.
func TestDemoSecretsEncrypted(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, err := sqldb.Open(ctx, sqldbtest.URL(t, d))
			require.NoError(t, err)
			defer db.Close()
			ring := keyring.Ephemeral()
			ds := &demoStore{db: db, ring: ring}
			require.NoError(t, ds.init(ctx))
			require.NoError(t, ds.set(ctx, "api_key", "aiu_plainkey"))
			require.NoError(t, ds.set(ctx, "org", "org-id"))
			require.NoError(t, ds.set(ctx, "admin_password", "correct horse"))
			require.NoError(t, ds.init(ctx), "a second start")

			var n int
			require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM demo_state WHERE value LIKE '%aiu_plainkey%' OR value LIKE '%correct horse%'`).Scan(&n))
			require.Zero(t, n)
			require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM demo_secrets WHERE value LIKE '%aiu_plainkey%' OR value LIKE '%correct horse%'`).Scan(&n))
			require.Zero(t, n)
			for name, want := range map[string]string{"api_key": "aiu_plainkey", "admin_password": "correct horse", "org": "org-id", "absent": ""} {
				got, err := ds.get(ctx, name)
				require.NoError(t, err)
				require.Equal(t, want, got, name)
			}
			other := &demoStore{db: db, ring: keyring.Ephemeral()}
			require.ErrorIs(t, other.init(ctx), keyring.ErrUnknownKey)
			_, err = other.get(ctx, "api_key")
			require.ErrorIs(t, err, keyring.ErrUnknownKey)
		})
	}
}

// TestSecretsHelp: the commands that open the service's database say where
// the key comes from.
func TestSecretsHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"service", "serve"}, {"admin", "rotate-secret-key"}} {
		r := runCLI(t, "", nil, append(args, "--help")...)
		require.Equal(t, ExitOK, r.code)
		out := r.stdout + r.stderr
		require.Contains(t, out, "AIUSAGE_SECRET_KEY", args)
		require.Contains(t, strings.ReplaceAll(out, "\n", " "), "mode 0600", args)
	}
}

// TestServiceServeWarnsOfFileModes: a key file made on this start, and a
// database file others may read (one made by an older release), are
// logged as warnings; the file's mode is left as it is.
func TestServiceServeWarnsOfFileModes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "old.db")
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	require.NoError(t, os.Chmod(path, 0o644))
	_, logs, stop := startServiceEnv(t, noKey, serviceURLText, "--database-url", "sqlite:"+path)
	require.Equal(t, ExitOK, stop())
	require.Contains(t, logs.String(), "created the key file of the stored secrets")
	require.Contains(t, logs.String(), "key_file="+path+".key")
	require.Contains(t, logs.String(), "the database file is readable by other users")
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), info.Mode().Perm())
}
