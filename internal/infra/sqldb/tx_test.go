package sqldb_test

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

func migrated(t *testing.T, db *sqldb.DB) {
	t.Helper()
	require.NoError(t, db.Migrate(t.Context(), "widgets", migrationSet(t, "ok")))
}

func countWidgets(t *testing.T, db *sqldb.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM widgets`).Scan(&n))
	return n
}

func TestConstraintViolations(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		migrated(t, db) // widgets has row w0 "seed"

		_, err := db.ExecContext(ctx, `INSERT INTO widgets (id, name) VALUES ($1, $2)`, "w0", "other name")
		require.Error(t, err)
		require.True(t, sqldb.IsUniqueViolation(err), "primary key: %v", err)
		require.False(t, sqldb.IsForeignKeyViolation(err))

		_, err = db.ExecContext(ctx, `INSERT INTO widgets (id, name) VALUES ($1, $2)`, "w9", "seed")
		require.True(t, sqldb.IsUniqueViolation(err), "unique column: %v", err)
		require.True(t, sqldb.IsUniqueViolation(fmt.Errorf("store: %w", err)), "wrapped")

		_, err = db.ExecContext(ctx, `INSERT INTO gadgets (id, widget_id) VALUES ($1, $2)`, "g1", "nope")
		require.Error(t, err)
		require.True(t, sqldb.IsForeignKeyViolation(err), "foreign key: %v", err)
		require.False(t, sqldb.IsUniqueViolation(err))

		_, err = db.ExecContext(ctx, `INSERT INTO widgets (id, name) VALUES ($1, NULL)`, "w8")
		require.Error(t, err)
		require.False(t, sqldb.IsUniqueViolation(err), "not null is neither")
		require.False(t, sqldb.IsForeignKeyViolation(err))

		_, err = db.ExecContext(ctx, `INSERT INTO gadgets (id, widget_id) VALUES ($1, $2)`, "g1", "w0")
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `DELETE FROM widgets WHERE id = $1`, "w0")
		require.True(t, sqldb.IsForeignKeyViolation(err), "delete referenced row: %v", err)
	})
	for _, err := range []error{nil, errors.New("x"), sql.ErrNoRows} {
		require.False(t, sqldb.IsUniqueViolation(err))
		require.False(t, sqldb.IsForeignKeyViolation(err))
	}
}

func TestInTx(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		migrated(t, db)
		insert := func(tx *sql.Tx, id string) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO widgets (id, name) VALUES ($1, $1)`, id)
			return err
		}

		require.NoError(t, db.InTx(ctx, func(tx *sql.Tx) error { return insert(tx, "commit") }))
		require.Equal(t, 2, countWidgets(t, db))

		boom := errors.New("boom")
		err := db.InTx(ctx, func(tx *sql.Tx) error {
			require.NoError(t, insert(tx, "rolled-back"))
			return boom
		})
		require.ErrorIs(t, err, boom)
		require.Equal(t, 2, countWidgets(t, db))

		// A constraint error comes back unchanged for the helpers.
		err = db.InTx(ctx, func(tx *sql.Tx) error { return insert(tx, "commit") })
		require.True(t, sqldb.IsUniqueViolation(err))

		require.PanicsWithValue(t, "kaboom", func() {
			_ = db.InTx(ctx, func(tx *sql.Tx) error {
				require.NoError(t, insert(tx, "panicked"))
				panic("kaboom")
			})
		})
		require.Equal(t, 2, countWidgets(t, db))

		// fn must not end the transaction itself; if it does, InTx says so.
		err = db.InTx(ctx, func(tx *sql.Tx) error { return tx.Rollback() })
		require.ErrorIs(t, err, sql.ErrTxDone)

		// The pool is not left with a busy connection: the write lock
		// (SQLite) or row locks are free.
		require.NoError(t, db.InTx(ctx, func(tx *sql.Tx) error { return insert(tx, "after") }))
		require.Equal(t, 3, countWidgets(t, db))
	})
}

func TestInTxRetry(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.SQLite)
	deadlock := &pgconn.PgError{Code: "40P01"}

	calls := 0
	err := db.InTxRetry(t.Context(), func(*sql.Tx) error {
		if calls++; calls < 3 {
			return deadlock
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 3, calls, "retried while the transaction lost to concurrent ones")

	calls = 0
	err = db.InTxRetry(t.Context(), func(*sql.Tx) error { calls++; return fmt.Errorf("step: %w", deadlock) })
	require.True(t, sqldb.IsRetryable(err), "the last error stays retryable: %v", err)
	require.Equal(t, sqldb.TxAttempts, calls)

	calls = 0
	other := errors.New("constraint")
	err = db.InTxRetry(t.Context(), func(*sql.Tx) error { calls++; return other })
	require.ErrorIs(t, err, other)
	require.Equal(t, 1, calls, "other errors are not retried")
}
