package keyring_test

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestTableResealResumes: rows of an older key are resealed in batches; a
// row that does not open stops the run with an error naming it, the rows
// before it stay resealed, and a run after the row is mended resumes with
// the rest. A row without a key id, sealed by no key, is corrupt: it is
// neither resealed nor counted nor checked.
func TestTableResealResumes(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		_, err := db.ExecContext(ctx, `CREATE TABLE things (id TEXT PRIMARY KEY, key_id TEXT, a TEXT NOT NULL, b TEXT)`)
		require.NoError(t, err)
		tbl := keyring.Table{Name: "things", ID: "id", KeyID: "key_id", Columns: []string{"a", "b"}}
		oldKey, newKey := keyring.NewKey(), keyring.NewKey()
		oldRing, err := keyring.New(oldKey)
		require.NoError(t, err)
		const n = 250 // more than one batch
		for i := range n {
			id := fmt.Sprintf("row%03d", i)
			kid, a, err := oldRing.Seal("secret-"+id, tbl.Binding("a", id))
			require.NoError(t, err)
			b := sql.NullString{}
			if i%2 == 1 {
				_, b.String, err = oldRing.Seal("other-"+id, tbl.Binding("b", id))
				require.NoError(t, err)
				b.Valid = true
			}
			_, err = db.ExecContext(ctx, `INSERT INTO things (id, key_id, a, b) VALUES ($1, $2, $3, $4)`, id, kid, a, b)
			require.NoError(t, err)
		}
		// A corrupt row: no key id.
		const corrupt = "zzz"
		_, err = db.ExecContext(ctx, `INSERT INTO things (id, key_id, a, b) VALUES ($1, NULL, 'secret-zzz', NULL)`, corrupt)
		require.NoError(t, err)
		done, err := tbl.Reseal(ctx, db.DB, oldRing)
		require.NoError(t, err)
		require.Zero(t, done, "every row is under the current key already")
		ids, err := tbl.KeyIDs(ctx, db.DB)
		require.NoError(t, err)
		require.Equal(t, map[string]int{oldKey.ID: n}, ids)
		require.NoError(t, tbl.Check(ctx, db.DB, oldRing))

		// Row 180 corrupted: the run stops there.
		var saved string
		require.NoError(t, db.QueryRowContext(ctx, `SELECT a FROM things WHERE id = 'row180'`).Scan(&saved))
		_, err = db.ExecContext(ctx, `UPDATE things SET a = (SELECT a FROM things WHERE id = 'row181') WHERE id = 'row180'`)
		require.NoError(t, err)
		both, err := keyring.New(newKey, oldKey)
		require.NoError(t, err)
		done, err = tbl.Reseal(ctx, db.DB, both)
		require.ErrorIs(t, err, keyring.ErrAuth)
		require.ErrorContains(t, err, "things.a of row row180")
		require.Equal(t, 180, done)
		ids, err = tbl.KeyIDs(ctx, db.DB)
		require.NoError(t, err)
		require.Equal(t, map[string]int{newKey.ID: 180, oldKey.ID: n - 180}, ids)

		_, err = db.ExecContext(ctx, `UPDATE things SET a = $1 WHERE id = 'row180'`, saved)
		require.NoError(t, err)
		done, err = tbl.Reseal(ctx, db.DB, both)
		require.NoError(t, err)
		require.Equal(t, n-180, done)
		newOnly, err := keyring.New(newKey)
		require.NoError(t, err)
		require.NoError(t, tbl.Check(ctx, db.DB, newOnly))
		rows, err := db.QueryContext(ctx, `SELECT id, key_id, a, b FROM things WHERE key_id IS NOT NULL ORDER BY id`)
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var id, kid, a string
			var b *string
			require.NoError(t, rows.Scan(&id, &kid, &a, &b))
			got, err := newOnly.Open(kid, a, tbl.Binding("a", id))
			require.NoError(t, err)
			require.Equal(t, "secret-"+id, got)
			if b != nil {
				got, err = newOnly.Open(kid, *b, tbl.Binding("b", id))
				require.NoError(t, err)
				require.Equal(t, "other-"+id, got)
			}
		}
		require.NoError(t, rows.Err())
		var kid sql.NullString
		var a string
		require.NoError(t, db.QueryRowContext(ctx, `SELECT key_id, a FROM things WHERE id = $1`, corrupt).Scan(&kid, &a))
		require.False(t, kid.Valid, "the corrupt row is left as it is")
		require.Equal(t, "secret-zzz", a)
		ids, err = tbl.KeyIDs(ctx, db.DB)
		require.NoError(t, err)
		require.Equal(t, map[string]int{newKey.ID: n}, ids)
		require.ErrorIs(t, tbl.Check(ctx, db.DB, oldRing), keyring.ErrUnknownKey)
	})
}
