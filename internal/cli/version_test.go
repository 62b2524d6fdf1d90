package cli

import (
	"crypto/sha256"
	"debug/elf"
	"debug/pe"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMakeDist runs make dist for two platforms into a temporary directory:
// each binary is there, named by version and platform, static, with the
// version and commit stamped in, and SHA256SUMS holds the checksum of each,
// in the format sha256sum -c reads.
func TestMakeDist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("needs make")
	}
	dist := t.TempDir()
	out, err := exec.Command("make", "-C", "../..", "dist", "DIST="+dist,
		"DIST_PLATFORMS=linux/amd64 windows/arm64", "VERSION=v9.8.7-test", "COMMIT=0123abcd").CombinedOutput()
	require.NoError(t, err, "%s", out)

	linux := "aiusage-v9.8.7-test-linux-amd64"
	windows := "aiusage-v9.8.7-test-windows-arm64.exe"
	entries, err := os.ReadDir(dist)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{linux, windows, "SHA256SUMS"}, names)

	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n")
	require.Len(t, lines, 2, "%s", sums)
	for _, l := range lines {
		sum, name, ok := strings.Cut(l, "  ")
		require.True(t, ok, "a line of SHA256SUMS: %q", l)
		b, err := os.ReadFile(filepath.Join(dist, name))
		require.NoError(t, err)
		h := sha256.Sum256(b)
		require.Equal(t, hex.EncodeToString(h[:]), sum, name)
	}

	// Static: no program interpreter (dynamic loader).
	f, err := elf.Open(filepath.Join(dist, linux))
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, elf.EM_X86_64, f.Machine)
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary")
	}
	w, err := pe.Open(filepath.Join(dist, windows))
	require.NoError(t, err)
	defer w.Close()
	require.Equal(t, uint16(pe.IMAGE_FILE_MACHINE_ARM64), w.Machine)

	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		out, err := exec.Command(filepath.Join(dist, linux), "version").CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, "aiusage v9.8.7-test (commit 0123abcd)\n", string(out))
	}
}
