package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDemoAccessLogFlag(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "", nil, "demo", "--access-log", "", "--database-url", "sqlite::memory:")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Equal(t, "aiusage: demo: --access-log must name a file, or - for standard error\n", r.stderr)
	r = runCLI(t, "", nil, "demo", "--access-log", filepath.Join(t.TempDir(), "no", "such", "dir.log"), "--database-url", "sqlite::memory:")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "aiusage: demo: --access-log: ")
}

// TestDemoServiceLogger checks where the demo's service logs: info lines to
// the access log file only, warnings and errors to standard error too.
func TestDemoServiceLogger(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "access.log")
	f := &demoFlags{serverFlags: serverFlags{logFormat: "text"}, accessLog: path}
	var stderr bytes.Buffer
	log, where, closeLog, err := f.serviceLogger("demo", &stderr)
	require.NoError(t, err)
	require.Equal(t, path, where)
	log = log.With("component", "test")
	log.Info("request", "path", "/x")
	log.Warn("slow")
	log.WithGroup("g").Error("failed", "k", "v")
	require.NoError(t, closeLog())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	file := string(b)
	require.Equal(t, 3, strings.Count(file, "\n"), file)
	require.Contains(t, file, "msg=request component=test path=/x")
	require.Contains(t, file, "msg=failed component=test g.k=v")
	require.NotContains(t, stderr.String(), "request")
	require.Contains(t, stderr.String(), "level=WARN msg=slow component=test")
	require.Contains(t, stderr.String(), "level=ERROR msg=failed component=test g.k=v")

	// - is standard error, everything.
	f.accessLog = "-"
	stderr.Reset()
	log, where, closeLog, err = f.serviceLogger("demo", &stderr)
	require.NoError(t, err)
	require.Equal(t, "standard error", where)
	log.Info("request")
	require.NoError(t, closeLog())
	require.Contains(t, stderr.String(), "msg=request")
}
