package export_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/export"
	"github.com/aiusage/kit/spec"
)

// gzipOf compresses n bytes of pattern repeated (then tail) in one gzip
// stream, without holding the plain bytes.
func gzipOf(t *testing.T, pattern []byte, n int64, tail string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	chunk := bytes.Repeat(pattern, (1<<20)/len(pattern))
	for n > 0 {
		c := chunk[:min(int64(len(chunk)), n)]
		_, err := zw.Write(c)
		require.NoError(t, err)
		n -= int64(len(c))
	}
	_, err = zw.Write([]byte(tail))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// replaceFile replaces the file of resource r in set m of w with gz, and
// rewrites the manifest to match it, with records lines: a file that passes
// every check of its bytes, whatever it decompresses to.
func replaceFile(t *testing.T, w *world, m spec.ExportManifest, r string, gz []byte, records int64) string {
	t.Helper()
	rel := m.ID + "/" + r + ".ndjson.gz"
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, filepath.FromSlash(rel)), gz, 0o644))
	sum := sha256.Sum256(gz)
	for i := range m.Files {
		if m.Files[i].Resource == r {
			m.Files[i].Bytes, m.Files[i].SHA256, m.Files[i].Records = int64(len(gz)), hex.EncodeToString(sum[:]), records
		}
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, m.ID, spec.ExportManifestName), b, 0o644))
	return rel
}

// TestCompressionBombStops: a file of 64 MiB of spaces (some 64 KB
// compressed) whose manifest matches its bytes is refused as too large once
// its one line passes the line bound, from a directory and over HTTP (where
// it is downloaded once: the same bytes again would be as large), and a
// file of short lines is refused once it passes its decompressed bound.
func TestCompressionBombStops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, m := oneSet(t)
	bomb := gzipOf(t, []byte(" "), 64<<20, "\n")
	// A manifest saying many records: the line bound stops it.
	rel := replaceFile(t, w, m, "events", bomb, 1000)
	src, err := export.New(export.Config{URL: w.dir})
	require.NoError(t, err)
	_, err = src.Fetch(ctx, consumer.Events, consumer.Query{})
	require.ErrorIs(t, err, export.ErrTooLarge)
	require.Contains(t, err.Error(), rel)
	require.Contains(t, err.Error(), "line 1 decompresses past 8388608 bytes")
	// A manifest saying one record: the file's bound (one line) stops it.
	rel = replaceFile(t, w, m, "events", bomb, 1)
	src, err = export.New(export.Config{URL: w.dir})
	require.NoError(t, err)
	_, err = src.Fetch(ctx, consumer.Events, consumer.Query{})
	require.ErrorIs(t, err, export.ErrTooLarge)
	require.Contains(t, err.Error(), rel)
	require.Contains(t, err.Error(), "decompresses past 8388609 bytes (the bound for 1 records)")

	var gets atomic.Int32
	files := http.FileServer(http.Dir(w.dir))
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, rel) {
			gets.Add(1)
		}
		files.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	src, err = export.New(export.Config{URL: srv.URL, Sleep: func(context.Context, time.Duration) error { return nil }})
	require.NoError(t, err)
	_, err = src.Fetch(ctx, consumer.Events, consumer.Query{})
	require.ErrorIs(t, err, export.ErrTooLarge)
	require.Equal(t, int32(1), gets.Load(), "a file past a bound is not downloaded again")

	// Short lines, as many as the manifest says, past the decompressed
	// bound of the file.
	w, m = oneSet(t)
	line := []byte(`{"id":"e","occurredAt":"2026-01-01T00:00:00.000Z"}` + "\n")
	n := int64(2<<20) / int64(len(line))
	rel = replaceFile(t, w, m, "events", gzipOf(t, line, n*int64(len(line)), ""), n)
	src, err = export.New(export.Config{URL: w.dir, MaxPlainBytes: 1 << 20})
	require.NoError(t, err)
	_, err = src.Fetch(ctx, consumer.Events, consumer.Query{})
	require.ErrorIs(t, err, export.ErrTooLarge)
	require.Contains(t, err.Error(), rel)
	require.Contains(t, err.Error(), "decompresses past 1048576 bytes")

	// The manifest's record count bounds the file too: one record of at
	// most 64 bytes, and the file goes on.
	src, err = export.New(export.Config{URL: w.dir, MaxLineBytes: 64})
	require.NoError(t, err)
	rel = replaceFile(t, w, m, "events", gzipOf(t, line, 1<<20, ""), 1)
	_, err = src.Fetch(ctx, consumer.Events, consumer.Query{})
	require.ErrorIs(t, err, export.ErrTooLarge)
	require.Contains(t, err.Error(), rel)
}

// TestManifestSizesBound: a manifest naming a file larger than
// MaxFileBytes is refused before the file is read, a file longer than its
// manifest says is read no further than that, and an index past
// MaxMetaBytes is refused.
func TestManifestSizesBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, m := oneSet(t)
	var ev spec.ExportFile
	for _, f := range m.Files {
		if f.Resource == "events" {
			ev = f
		}
	}
	src, err := export.New(export.Config{URL: w.dir, MaxFileBytes: ev.Bytes - 1})
	require.NoError(t, err)
	_, err = src.Fetch(ctx, consumer.Events, consumer.Query{})
	require.ErrorIs(t, err, export.ErrTooLarge)
	require.Contains(t, err.Error(), "its manifest names")

	name := filepath.Join(w.dir, m.ID, "events.ndjson.gz")
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write(make([]byte, 1<<20))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	src, err = export.New(export.Config{URL: w.dir})
	require.NoError(t, err)
	_, err = src.Fetch(ctx, consumer.Events, consumer.Query{})
	require.ErrorIs(t, err, export.ErrCorrupt)
	require.Contains(t, err.Error(), "larger than the")

	huge := filepath.Join(w.dir, spec.ExportIndexName)
	require.NoError(t, os.WriteFile(huge, bytes.Repeat([]byte(" "), export.MaxMetaBytes+1), 0o644))
	_, err = src.Fetch(ctx, consumer.Conversations, consumer.Query{})
	require.ErrorIs(t, err, export.ErrTooLarge)
	require.Contains(t, err.Error(), spec.ExportIndexName)
}

// TestRootConfines: with Root, a directory outside it is refused before
// anything is read, and a symbolic link inside it that leads out is not
// followed; without Root, the export's own directory confines its files.
func TestRootConfines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, _ := oneSet(t) // the export stands for another tenant's, outside the root
	root := t.TempDir()

	_, err := export.New(export.Config{URL: w.dir, Root: root})
	require.ErrorIs(t, err, export.ErrOutsideRoot)
	_, err = export.New(export.Config{URL: "file://" + root + "/../" + filepath.Base(w.dir), Root: root})
	require.ErrorIs(t, err, export.ErrOutsideRoot)

	require.NoError(t, os.Symlink(w.dir, filepath.Join(root, "link")))
	src, err := export.New(export.Config{URL: filepath.Join(root, "link"), Root: root})
	require.NoError(t, err)
	_, err = src.Fetch(ctx, consumer.Conversations, consumer.Query{})
	require.Error(t, err, "a link out of the root is not followed")
	require.NotErrorIs(t, err, export.ErrCorrupt)

	// The export's files linked from inside the root one by one: none is
	// read either.
	inside := filepath.Join(root, "acme")
	require.NoError(t, os.Mkdir(inside, 0o755))
	require.NoError(t, os.Symlink(filepath.Join(w.dir, spec.ExportIndexName), filepath.Join(inside, spec.ExportIndexName)))
	src, err = export.New(export.Config{URL: inside, Root: root})
	require.NoError(t, err)
	_, err = src.Fetch(ctx, consumer.Conversations, consumer.Query{})
	require.Error(t, err)

	// Without Root, the same link from an export directory is not
	// followed either: the export's directory is the root.
	src, err = export.New(export.Config{URL: inside})
	require.NoError(t, err)
	_, err = src.Fetch(ctx, consumer.Conversations, consumer.Query{})
	require.Error(t, err)

	// A real export inside the root reads as before.
	src, err = export.New(export.Config{URL: "file://" + w.dir, Root: filepath.Dir(w.dir)})
	require.NoError(t, err)
	p, err := src.Fetch(ctx, consumer.Conversations, consumer.Query{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, p.Records, len(w.want(consumer.Conversations)))
}
