package keyring_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestTableResealResumes: plaintext rows and rows of an older key are
// resealed in batches; a row that does not open stops the run with an error
// naming it, the rows before it stay resealed, and a run after the row is
// mended resumes with the rest.
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
			if i%2 == 0 { // plaintext, as an older release wrote it
				_, err = db.ExecContext(ctx, `INSERT INTO things (id, a, b) VALUES ($1, $2, NULL)`, id, "secret-"+id)
			} else {
				kid, a, serr := oldRing.Seal("secret-"+id, tbl.Binding("a", id))
				require.NoError(t, serr)
				_, b, serr := oldRing.Seal("other-"+id, tbl.Binding("b", id))
				require.NoError(t, serr)
				_, err = db.ExecContext(ctx, `INSERT INTO things (id, key_id, a, b) VALUES ($1, $2, $3, $4)`, id, kid, a, b)
			}
			require.NoError(t, err)
		}
		// Plaintext only: the odd rows keep their key.
		done, err := tbl.Reseal(ctx, db.DB, oldRing, true)
		require.NoError(t, err)
		require.Equal(t, n/2, done)
		ids, err := tbl.KeyIDs(ctx, db.DB)
		require.NoError(t, err)
		require.Equal(t, map[string]int{oldKey.ID: n}, ids)

		// Row 180 corrupted: the run stops there.
		var saved string
		require.NoError(t, db.QueryRowContext(ctx, `SELECT a FROM things WHERE id = 'row180'`).Scan(&saved))
		_, err = db.ExecContext(ctx, `UPDATE things SET a = (SELECT a FROM things WHERE id = 'row181') WHERE id = 'row180'`)
		require.NoError(t, err)
		both, err := keyring.New(newKey, oldKey)
		require.NoError(t, err)
		done, err = tbl.Reseal(ctx, db.DB, both, false)
		require.ErrorIs(t, err, keyring.ErrAuth)
		require.ErrorContains(t, err, "things.a of row row180")
		require.Equal(t, 180, done)
		ids, err = tbl.KeyIDs(ctx, db.DB)
		require.NoError(t, err)
		require.Equal(t, map[string]int{newKey.ID: 180, oldKey.ID: n - 180}, ids)

		_, err = db.ExecContext(ctx, `UPDATE things SET a = $1 WHERE id = 'row180'`, saved)
		require.NoError(t, err)
		done, err = tbl.Reseal(ctx, db.DB, both, false)
		require.NoError(t, err)
		require.Equal(t, n-180, done)
		newOnly, err := keyring.New(newKey)
		require.NoError(t, err)
		require.NoError(t, tbl.Check(ctx, db.DB, newOnly))
		rows, err := db.QueryContext(ctx, `SELECT id, key_id, a, b FROM things ORDER BY id`)
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
		require.ErrorIs(t, tbl.Check(ctx, db.DB, oldRing), keyring.ErrUnknownKey)
	})
}
