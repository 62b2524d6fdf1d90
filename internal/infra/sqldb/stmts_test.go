package sqldb_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

func TestStmtsPrepareOnce(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.SQLite)
	var c sqldb.Stmts
	ctx := t.Context()
	first, err := c.Prepare(ctx, db.DB, `SELECT 1`)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			st, err := c.Prepare(ctx, db.DB, `SELECT 1`)
			require.NoError(t, err)
			require.Same(t, first, st)
		})
	}
	wg.Wait()
	_, err = c.Prepare(ctx, db.DB, `SELECT nope FROM nowhere`)
	require.Error(t, err)
	require.NoError(t, c.Close())
	var n int
	require.Error(t, first.QueryRowContext(ctx).Scan(&n), "closed by Close")
	again, err := c.Prepare(ctx, db.DB, `SELECT 1`)
	require.NoError(t, err)
	require.NotSame(t, first, again)
}

func TestArgs(t *testing.T) {
	t.Parallel()
	args := sqldb.Args{"tenant"}
	require.Equal(t, "$2", args.Add(5))
	require.Equal(t, "$3", args.Add("x"))
	require.Equal(t, sqldb.Args{"tenant", 5, "x"}, args)
}
