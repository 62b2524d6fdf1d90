package sqldb_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSQLiteFileMode: a new database file, and the -wal and -shm files
// SQLite makes beside it, are for their owner only, whatever the umask
// lets through; an existing file keeps its mode.
func TestSQLiteFileMode(t *testing.T) {
	// Not parallel: it sets the process's umask.
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "new.db")
	db := openURL(t, "sqlite:"+path)
	require.Equal(t, path, db.SQLitePath())
	roundTrip(t, db)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		info, err := os.Stat(p)
		require.NoError(t, err, p)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), p)
	}

	existing := filepath.Join(dir, "existing.db")
	require.NoError(t, os.WriteFile(existing, nil, 0o640))
	require.NoError(t, os.Chmod(existing, 0o640))
	roundTrip(t, openURL(t, "sqlite:"+existing))
	info, err := os.Stat(existing)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), info.Mode().Perm())

	require.Empty(t, openURL(t, "sqlite::memory:").SQLitePath())
}
