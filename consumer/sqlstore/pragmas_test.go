package sqlstore_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer/sqlstore"
)

// TestOpenSQLitePragmas checks the page cache, checkpoint interval and
// temporary store Open sets on a SQLite file, and that a URL's own values
// win.
func TestOpenSQLitePragmas(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		query                       string
		cache, autoCheck, tempStore int
	}{
		{"", -65536, 16384, 2},
		{"?_pragma=cache_size(-1000)", -1000, 16384, 2},
		{"?_pragma=wal_autocheckpoint(500)&_pragma=cache_size(-2000)&_pragma=temp_store(FILE)", -2000, 500, 1},
	} {
		s, err := sqlstore.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "c.db")+tt.query)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		var cache, autoCheck, tempStore int
		db := sqlstore.DBOf(s)
		require.NoError(t, db.QueryRowContext(t.Context(), `PRAGMA cache_size`).Scan(&cache))
		require.NoError(t, db.QueryRowContext(t.Context(), `PRAGMA wal_autocheckpoint`).Scan(&autoCheck))
		require.NoError(t, db.QueryRowContext(t.Context(), `PRAGMA temp_store`).Scan(&tempStore))
		require.Equal(t, tt.cache, cache, tt.query)
		require.Equal(t, tt.tempStore, tempStore, tt.query)
		require.Equal(t, tt.autoCheck, autoCheck, tt.query)
	}
}
