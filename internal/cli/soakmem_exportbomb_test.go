package cli

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// The export bomb soak: a compression bomb in a scheduled export, read by
// "aiusage consumer sync --transport export" and by an export source of
// "aiusage service serve" (inside its --export-root). Before the reader
// bounded what it decompresses, both passed 6 GB on such a file. Opt-in
// (AIUSAGE_SOAK=1), like TestSoak.
const (
	// bombPlainBytes is what the bomb decompresses to: 4 GiB of spaces and a
	// newline, one line, as its manifest says.
	bombPlainBytes = 4 << 30
	// bombPeakRSS bounds the peak resident memory (VmHWM) of each process.
	bombPeakRSS = 256 << 20
	// bombRSSKill is the safety stop: a process past it is killed at once
	// and the test fails.
	bombRSSKill = 3 << 30
	// bombPauseWait bounds the wait for the service to pause the source.
	bombPauseWait = 3 * time.Minute
)

// writeBombExport writes an export of one full set into dir whose
// conversations file is a gzip of bombPlainBytes of spaces (a multi-member
// gzip file of some 4 MB: one member of 64 MiB of spaces repeated, then a
// newline), with a manifest and an index that match it: a file that passes
// every check of its bytes. It returns the file's compressed size.
func writeBombExport(t *testing.T, dir string) int64 {
	t.Helper()
	var member bytes.Buffer
	zw, err := gzip.NewWriterLevel(&member, gzip.BestCompression)
	require.NoError(t, err)
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	for range 64 {
		_, err := zw.Write(chunk)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	var tail bytes.Buffer
	zw = gzip.NewWriter(&tail)
	_, err = zw.Write([]byte("\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())

	id := "000000000001-20260101T000000000Z"
	require.NoError(t, os.MkdirAll(filepath.Join(dir, id), 0o755))
	f, err := os.Create(filepath.Join(dir, id, "conversations.ndjson.gz"))
	require.NoError(t, err)
	sum := sha256.New()
	var size int64
	for range bombPlainBytes / (64 << 20) {
		n, err := f.Write(member.Bytes())
		require.NoError(t, err)
		sum.Write(member.Bytes())
		size += int64(n)
	}
	n, err := f.Write(tail.Bytes())
	require.NoError(t, err)
	sum.Write(tail.Bytes())
	size += int64(n)
	require.NoError(t, f.Close())

	created := spec.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := spec.ExportManifest{Format: spec.ExportFormat, ID: id, Sequence: 1, Kind: spec.ExportFull, CreatedAt: created, To: created,
		Tenant: "acme", Files: []spec.ExportFile{{Resource: "conversations", Path: "conversations.ndjson.gz", Records: 1,
			Bytes: size, SHA256: hex.EncodeToString(sum.Sum(nil))}}}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, id, spec.ExportManifestName), b, 0o644))
	idx := spec.ExportIndex{Format: spec.ExportFormat, UpdatedAt: created,
		Sets: []spec.ExportIndexSet{{ID: id, Sequence: 1, Kind: spec.ExportFull, Manifest: id + "/" + spec.ExportManifestName}}}
	b, err = json.Marshal(idx)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, spec.ExportIndexName), b, 0o644))
	return size
}

// watchRSS samples pid's memory (startRSSSampler) and kills it past
// bombRSSKill. stop returns its peak (VmHWM while it runs, else the largest
// sample) and whether it was killed.
func watchRSS(t *testing.T, p *os.Process) (stop func() (peak uint64, killed bool)) {
	t.Helper()
	s := startRSSSampler(t, p.Pid)
	var killed atomic.Bool
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, _, err := procStatus(p.Pid); err == nil && rss > bombRSSKill && !killed.Swap(true) {
				_ = p.Kill()
			}
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() (uint64, bool) {
		close(quit)
		<-done
		return s.stop(), killed.Load()
	}
}

// TestSoakMemExportBomb feeds the bomb to both readers and checks that each
// stays within bombPeakRSS, that the consumer's sync fails naming the
// bound, and that the service pauses the source (shown on the list of
// sources) and does not sync it again after a restart.
func TestSoakMemExportBomb(t *testing.T) {
	if os.Getenv(envSoak) != "1" {
		t.Skipf("soak test: set %s=1 to run it", envSoak)
	}
	bin := buildBinary(t)
	root := t.TempDir()
	dir := filepath.Join(root, "acme")
	size := writeBombExport(t, dir)
	t.Logf("bomb: %d bytes of gzip, %d bytes decompressed", size, int64(bombPlainBytes)+1)

	t.Run("consumer sync", func(t *testing.T) {
		cmd := exec.Command(bin, "consumer", "sync", "--database-url", "sqlite:"+filepath.Join(t.TempDir(), "c.db"),
			"--source", "bomb", "--transport", "export", "--url", dir)
		var stderr syncBuffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		stop := watchRSS(t, cmd.Process)
		err := cmd.Wait()
		peak, killed := stop()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = max(peak, uint64(ru.Maxrss)<<10) // the child's own peak, in KiB
		}
		t.Logf("consumer sync: peak RSS %d MiB (bound %d MiB), exit %v", peak>>20, bombPeakRSS>>20, err)
		require.False(t, killed, "killed past the safety stop of %d MiB", bombRSSKill>>20)
		require.Error(t, err, "the sync of a bomb fails")
		require.Contains(t, stderr.String(), "too large", stderr.String())
		require.LessOrEqual(t, peak, uint64(bombPeakRSS), "peak RSS")
	})

	for _, d := range sqldbtest.Dialects() {
		t.Run("service "+string(d), func(t *testing.T) {
			var dbURL string
			if d == sqldb.SQLite {
				dbURL = "sqlite:" + filepath.Join(t.TempDir(), "bomb.db")
			} else {
				dbURL = sqldbtest.URL(t, d)
			}
			key := make([]byte, 32)
			_, _ = rand.Read(key)
			env := append(os.Environ(), "AIUSAGE_SECRET_KEY="+base64.StdEncoding.EncodeToString(key), "AIUSAGE_EXPORT_ROOT="+root)
			adm := func(v any, args ...string) {
				t.Helper()
				cmd := exec.Command(bin, append(append([]string{"admin"}, args...), "--actor", "soak", "--database-url", dbURL)...)
				cmd.Env = env
				out, err := cmd.Output()
				require.NoError(t, err, "%v", args)
				require.NoError(t, json.Unmarshal(out, v), "%s", out)
			}
			var org, apiKey, src struct {
				ID     string `json:"id"`
				Secret string `json:"secret"`
			}
			adm(&org, "org", "create", "--name", "Bomb tenant")
			adm(&apiKey, "key", "create", "--org", org.ID, "--name", "read", "--type", "API")
			// Added before the service starts: its first sync runs at start.
			adm(&src, "source", "add", "--org", org.ID, "--name", "bomb", "--transport", "export", "--url", "file://"+dir)

			type listed struct {
				ID                string     `json:"id"`
				LastSyncStartedAt *time.Time `json:"lastSyncStartedAt"`
				PausedAt          *time.Time `json:"pausedAt"`
				PausedReason      string     `json:"pausedReason"`
			}
			status := func(base string) (listed, error) {
				req, err := http.NewRequest(http.MethodGet, base+"/organisations/"+org.ID+"/sources", nil)
				if err != nil {
					return listed{}, err
				}
				req.Header.Set("Authorization", "Bearer "+apiKey.Secret)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return listed{}, err
				}
				defer resp.Body.Close()
				var l []listed
				if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || len(l) != 1 {
					return listed{}, fmt.Errorf("the list of sources: %v %v", l, err)
				}
				return l[0], nil
			}

			svc := startSoakService(t, bin, dbURL, env)
			stop := watchRSS(t, svc.cmd.Process)
			base := strings.TrimSuffix(svc.url, "/")
			var got listed
			var serr error
			deadline := time.Now().Add(bombPauseWait)
			for time.Now().Before(deadline) {
				if got, serr = status(base); serr != nil || got.PausedAt != nil {
					break // an error: the process died, or was killed
				}
				time.Sleep(200 * time.Millisecond)
			}
			peak, killed := stop()
			t.Logf("service serve (%s): peak RSS %d MiB (bound %d MiB); paused: %q", d, peak>>20, bombPeakRSS>>20, got.PausedReason)
			require.False(t, killed, "killed past the safety stop of %d MiB: %s", bombRSSKill>>20, svc.tail(20))
			require.NoError(t, serr, svc.tail(20))
			require.NotNil(t, got.PausedAt, "the source is paused: %s", svc.tail(20))
			require.Contains(t, got.PausedReason, "larger than this service reads")
			require.LessOrEqual(t, peak, uint64(bombPeakRSS), "peak RSS")
			require.Contains(t, svc.tail(400), "source sync failed")
			svc.stop(t)

			// A restart does not sync it again: its last start stays, over
			// more than one interval of the scheduler.
			svc = startSoakService(t, bin, dbURL, env)
			base = strings.TrimSuffix(svc.url, "/")
			time.Sleep(15 * time.Second)
			after, err := status(base)
			require.NoError(t, err)
			require.NotNil(t, after.PausedAt)
			require.Equal(t, fmt.Sprint(got.LastSyncStartedAt), fmt.Sprint(after.LastSyncStartedAt), "a paused source was synced after a restart")
		})
	}
}
