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
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/export"
	"github.com/aiusage/kit/provider"
	pexport "github.com/aiusage/kit/provider/export"
	"github.com/aiusage/kit/spec"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, ok := range []struct{ in, dir, base string }{
		{"/var/export/acme", "/var/export/acme", ""},
		{"/var/export/acme/", "/var/export/acme", ""},
		{"file:///var/export/acme", "/var/export/acme", ""},
		{"file://localhost/var/export", "/var/export", ""},
		{"https://vendor.example/exports/acme/", "", "https://vendor.example/exports/acme/"},
		{"http://127.0.0.1:8080/x", "", "http://127.0.0.1:8080/x"},
		{"http://[::1]:8080", "", "http://[::1]:8080"},
		{"http://localhost:9000", "", "http://localhost:9000"},
	} {
		dir, base, err := export.ParseURL(ok.in)
		require.NoError(t, err, ok.in)
		require.Equal(t, ok.dir, dir, ok.in)
		if ok.base != "" {
			require.Equal(t, ok.base, base.String(), ok.in)
		}
	}
	for _, bad := range []struct{ in, want string }{
		{"", "empty"},
		{"export/acme", "relative"},
		{"http://vendor.example/exports", "not a loopback address: use https"},
		{"ftp://vendor.example/x", `scheme "ftp"`},
		{"file://nas/share", "only local files"},
		{"file:relative", "no absolute path"},
		{"https:///nohost", "no host"},
		{"https://vendor.example/x?y=1", "query or fragment"},
		{"https://user:pw@vendor.example/x", "credentials"},
	} {
		_, _, err := export.ParseURL(bad.in)
		require.ErrorContains(t, err, bad.want, bad.in)
	}
	_, err := export.New(export.Config{URL: "/tmp/x", Token: "t"})
	require.ErrorContains(t, err, "a directory takes none")
}

// oneSet writes a full set of a small world and returns its directory and
// manifest.
func oneSet(t *testing.T) (*world, spec.ExportManifest) {
	t.Helper()
	w := newWorld(t, 3, 20)
	return w, w.publish(pexport.Full)
}

func TestChecksumMismatchNamesTheFile(t *testing.T) {
	t.Parallel()
	w, m := oneSet(t)
	// A valid gzip file with as many lines, other content: only the
	// checksum tells.
	name := filepath.Join(w.dir, m.ID, "events.ndjson.gz")
	var f spec.ExportFile
	for _, x := range m.Files {
		if x.Resource == "events" {
			f = x
		}
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for i := range f.Records {
		_, _ = zw.Write([]byte(`{"id":"forged-` + strings.Repeat("x", int(i%3)) + `","occurredAt":"2026-01-01T00:00:00.000Z"}` + "\n"))
	}
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(name, buf.Bytes(), 0o644))
	src, err := export.New(export.Config{URL: w.dir})
	require.NoError(t, err)
	_, err = src.Fetch(context.Background(), consumer.Events, consumer.Query{})
	require.ErrorIs(t, err, export.ErrCorrupt)
	require.Contains(t, err.Error(), m.ID+"/events.ndjson.gz")
	require.True(t, strings.Contains(err.Error(), "SHA-256") || strings.Contains(err.Error(), "bytes"), err.Error())

	// The same bytes with a manifest that agrees: the line count is
	// checked too.
	sum := sha256.Sum256(buf.Bytes())
	b, err := os.ReadFile(filepath.Join(w.dir, m.ID, spec.ExportManifestName))
	require.NoError(t, err)
	var mm spec.ExportManifest
	require.NoError(t, json.Unmarshal(b, &mm))
	for i := range mm.Files {
		if mm.Files[i].Resource == "events" {
			mm.Files[i].SHA256, mm.Files[i].Bytes, mm.Files[i].Records = hex.EncodeToString(sum[:]), int64(buf.Len()), f.Records+1
		}
	}
	b, err = json.Marshal(mm)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, m.ID, spec.ExportManifestName), b, 0o644))
	src, err = export.New(export.Config{URL: w.dir})
	require.NoError(t, err)
	_, err = src.Fetch(context.Background(), consumer.Events, consumer.Query{})
	require.ErrorIs(t, err, export.ErrCorrupt)
	require.Contains(t, err.Error(), "records, the manifest says")
}

func TestFetchErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	empty, err := export.New(export.Config{URL: t.TempDir()})
	require.NoError(t, err)
	_, err = empty.Fetch(ctx, consumer.Conversations, consumer.Query{})
	require.ErrorIs(t, err, provider.ErrUnavailable)
	require.ErrorContains(t, err, "no index.json")

	w, m := oneSet(t)
	src, err := export.New(export.Config{URL: w.dir})
	require.NoError(t, err)
	for _, tc := range []struct {
		r    consumer.Resource
		q    consumer.Query
		want string
	}{
		{consumer.Conversations, consumer.Query{Cursor: "!!"}, "not a cursor of this export"},
		{consumer.Conversations, consumer.Query{Cursor: "eyJyIjoiZXZlbnRzIiwicyI6WyIwMDAwMDAwMDAwMDEtMjAyNjAxMDFUMDAwMDAwMDAwWiJdLCJpIjowLCJvIjowfQ"}, `issued for "events"`},
		{consumer.Usage, consumer.Query{}, "startAt and endAt are required"},
		{consumer.Usage, consumer.Query{StartAt: w.now.Add(-time.Hour), EndAt: w.now, Granularity: "day", GroupBy: spec.Dimensions}, "holds hour buckets, not day"},
		{consumer.Usage, consumer.Query{StartAt: w.now.Add(-time.Hour), EndAt: w.now, Granularity: "hour", GroupBy: []string{"model"}}, "grouped by"},
		{"nope", consumer.Query{}, "unknown resource"},
	} {
		_, err := src.Fetch(ctx, tc.r, tc.q)
		require.ErrorIs(t, err, provider.ErrInvalid, tc.want)
		require.ErrorContains(t, err, tc.want)
	}

	// A cursor naming a set that was pruned since: the walk starts over.
	p, err := src.Fetch(ctx, consumer.Conversations, consumer.Query{Limit: 3})
	require.NoError(t, err)
	require.True(t, p.HasMore)
	require.NoError(t, os.Remove(filepath.Join(w.dir, m.ID, spec.ExportManifestName)))
	fresh, err := export.New(export.Config{URL: w.dir})
	require.NoError(t, err)
	_, err = fresh.Fetch(ctx, consumer.Conversations, consumer.Query{Limit: 3, Cursor: p.NextCursor})
	require.ErrorIs(t, err, provider.ErrInvalid)
	require.ErrorContains(t, err, "no longer published")
}

// TestPagesWalkEveryRecordOnce walks a full set and its increments page by
// page and checks the pages against the files: every line once, the
// filter applied as REST applies it, no empty page.
func TestPagesWalkEveryRecordOnce(t *testing.T) {
	t.Parallel()
	w, _ := oneSet(t)
	w.mutate(30)
	inc := w.publish(pexport.Auto)
	src, err := export.New(export.Config{URL: w.dir})
	require.NoError(t, err)
	walk := func(q consumer.Query) []string {
		var ids []string
		for {
			p, err := src.Fetch(context.Background(), consumer.Conversations, q)
			require.NoError(t, err)
			require.True(t, p.Paginated)
			if p.HasMore {
				require.NotEmpty(t, p.Records, "no empty page before the end")
			}
			for _, r := range p.Records {
				ids = append(ids, keyOf(t, consumer.Conversations, r))
			}
			if !p.HasMore {
				return ids
			}
			q.Cursor = p.NextCursor
		}
	}
	all := walk(consumer.Query{Limit: 7})
	want := w.want(consumer.Conversations)
	seen := map[string]bool{}
	for _, id := range all {
		seen[id] = true
	}
	require.Len(t, seen, len(want), "the full set and the increment hold every conversation")

	since := inc.From.Time
	changed := walk(consumer.Query{Limit: 5, UpdatedSince: since})
	var rest []string
	p, err := w.rest.Fetch(context.Background(), consumer.Conversations, consumer.Query{UpdatedSince: since})
	require.NoError(t, err)
	for _, r := range p.Records {
		rest = append(rest, keyOf(t, consumer.Conversations, r))
	}
	require.False(t, p.HasMore, "REST answers the filter in one page")
	// The full set is older than since: only the increment is read, and
	// it holds exactly what REST answers for the filter.
	require.ElementsMatch(t, rest, changed)
}

// TestHTTPContentEncodingGzip serves the .gz files labelled
// Content-Encoding: gzip, as object stores configured for browsers do: the
// Source still receives, and verifies, the stored bytes.
func TestHTTPContentEncodingGzip(t *testing.T) {
	t.Parallel()
	w, _ := oneSet(t)
	files := http.FileServer(http.Dir(w.dir))
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".gz") {
			rw.Header().Set("Content-Encoding", "gzip")
		}
		files.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	src, err := export.New(export.Config{URL: srv.URL})
	require.NoError(t, err)
	p, err := src.Fetch(context.Background(), consumer.Conversations, consumer.Query{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, p.Records, len(w.want(consumer.Conversations)))
}
