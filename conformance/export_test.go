package conformance_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/conformance"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/export"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// exportFixture writes a full set and an increment of a demo dataset.
type exportFixture struct {
	dir  string
	sets []spec.ExportManifest
}

func newExportFixture(t *testing.T) *exportFixture {
	t.Helper()
	ctx := context.Background()
	now := demodata.DefaultEnd.Add(time.Hour)
	src := memsource.New(memsource.WithNow(func() time.Time { return now }))
	require.NoError(t, demodata.Fill(ctx, demodata.Config{Seed: 2, Conversations: 120, Tenant: "acme"}, "acme", src))
	f := &exportFixture{dir: t.TempDir()}
	x, err := export.New(src, export.Config{Dir: f.dir, Tenant: "acme", Now: func() time.Time { return now }})
	require.NoError(t, err)
	m, err := x.Write(ctx, export.Full)
	require.NoError(t, err)
	f.sets = append(f.sets, m)
	now = now.Add(time.Hour)
	page, err := src.ListConversations(ctx, provider.ConversationQuery{Tenant: "acme", Limit: 1})
	require.NoError(t, err)
	require.NoError(t, src.DeleteConversation(ctx, "acme", page.Items[0].ID, now)) // a tombstone in the increment
	m, err = x.Write(ctx, export.Increment)
	require.NoError(t, err)
	f.sets = append(f.sets, m)
	return f
}

func runExport(t *testing.T, loc string) *conformance.Report {
	t.Helper()
	rep, err := conformance.RunExport(context.Background(), conformance.ExportConfig{Location: loc})
	require.NoError(t, err)
	return rep
}

// statuses returns the status of each check: the worst over its results.
func statuses(rep *conformance.Report) map[string]conformance.Status {
	rank := map[conformance.Status]int{conformance.StatusPass: 0, conformance.StatusSkip: 1, conformance.StatusWarn: 2, conformance.StatusError: 3, conformance.StatusFail: 4}
	out := map[string]conformance.Status{}
	for _, r := range rep.Results {
		if s, ok := out[r.ID]; !ok || rank[r.Status] > rank[s] {
			out[r.ID] = r.Status
		}
	}
	return out
}

func TestExportConformanceOfTheKitsExport(t *testing.T) {
	t.Parallel()
	f := newExportFixture(t)
	rep := runExport(t, f.dir)
	require.False(t, rep.Failed(true))
	got := statuses(rep)
	for _, c := range conformance.ExportCatalogue {
		require.Equal(t, conformance.StatusPass, got[c.ID], "%s", c.ID)
	}
	// Every file of every set has its results.
	require.Contains(t, endpoints(rep, "EXP-03"), f.sets[1].ID+"/usage.ndjson.gz")

	// The same over HTTP, with a token.
	files := http.FileServer(http.Dir(f.dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rep, err := conformance.RunExport(context.Background(), conformance.ExportConfig{Location: srv.URL + "/", Token: "tok"})
	require.NoError(t, err)
	require.False(t, rep.Failed(true))
	_, err = conformance.RunExport(context.Background(), conformance.ExportConfig{Location: srv.URL})
	require.ErrorIs(t, err, conformance.ErrExportUnreadable, "a refused token")
}

func endpoints(rep *conformance.Report, id string) []string {
	var out []string
	for _, r := range rep.Results {
		if r.ID == id {
			out = append(out, r.Endpoint)
		}
	}
	return out
}

// rewrite replaces the lines of a file of set m and, when fix, updates the
// manifest's count and checksum so that only the content is wrong.
func (f *exportFixture) rewrite(t *testing.T, m spec.ExportManifest, resource string, fix bool, edit func([]string) []string) {
	t.Helper()
	setDir := filepath.Join(f.dir, m.ID)
	name := filepath.Join(setDir, resource+".ndjson.gz")
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	lines := edit(strings.Split(strings.TrimSuffix(string(plain), "\n"), "\n"))
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err = zw.Write([]byte(strings.Join(lines, "\n") + "\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(name, buf.Bytes(), 0o644))
	if !fix {
		return
	}
	sum := sha256.Sum256(buf.Bytes())
	for i := range m.Files {
		if m.Files[i].Resource == resource {
			m.Files[i].Records, m.Files[i].Bytes, m.Files[i].SHA256 = int64(len(lines)), int64(buf.Len()), hex.EncodeToString(sum[:])
		}
	}
	writeManifest(t, f.dir, m)
}

func writeManifest(t *testing.T, dir string, m spec.ExportManifest) {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, m.ID, spec.ExportManifestName), b, 0o644))
}

func TestExportConformanceFindsDefects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		breakIt func(t *testing.T, f *exportFixture)
		fails   string
		msg     string
	}{
		{"no index", func(t *testing.T, f *exportFixture) {
			require.NoError(t, os.Remove(filepath.Join(f.dir, spec.ExportIndexName)))
		}, "EXP-01", "has no index.json"},
		{"manifest missing", func(t *testing.T, f *exportFixture) {
			require.NoError(t, os.Remove(filepath.Join(f.dir, f.sets[1].ID, spec.ExportManifestName)))
		}, "EXP-02", "cannot be read"},
		{"manifest disagrees with the index", func(t *testing.T, f *exportFixture) {
			m := f.sets[1]
			m.Kind, m.Previous = spec.ExportFull, ""
			m.From = spec.Time{}
			writeManifest(t, f.dir, m)
		}, "EXP-02", "the manifest says"},
		{"corrupt file", func(t *testing.T, f *exportFixture) {
			// Other lines of the same count: only the checksum tells.
			f.rewrite(t, f.sets[0], "events", false, func(l []string) []string { return append(l[1:], l[0]) })
		}, "EXP-03", "the manifest says"},
		{"count", func(t *testing.T, f *exportFixture) {
			m := f.sets[0]
			f.rewrite(t, m, "assistants", true, func(l []string) []string { return l })
			for i := range m.Files {
				if m.Files[i].Resource == "assistants" {
					m.Files[i].Records++
				}
			}
			writeManifest(t, f.dir, m)
		}, "EXP-04", "records"},
		{"schema", func(t *testing.T, f *exportFixture) {
			f.rewrite(t, f.sets[0], "events", true, func(l []string) []string {
				return append(l, `{"id":"evt-bad","occurredAt":"yesterday"}`)
			})
		}, "EXP-05", "line"},
		{"duplicate", func(t *testing.T, f *exportFixture) {
			f.rewrite(t, f.sets[0], "assistants", true, func(l []string) []string { return append(l, l[0]) })
		}, "EXP-06", "are both"},
		{"tombstone with content", func(t *testing.T, f *exportFixture) {
			f.rewrite(t, f.sets[0], "conversations", true, func(l []string) []string {
				for i, line := range l {
					if strings.Contains(line, `"deletedAt"`) {
						l[i] = strings.TrimSuffix(line, "}") + `,"systemPrompt":"kept by mistake"}`
						break
					}
				}
				return l
			})
		}, "EXP-07", "carries systemPrompt"},
		{"outside the window", func(t *testing.T, f *exportFixture) {
			f.rewrite(t, f.sets[0], "events", true, func(l []string) []string {
				return append(l, `{"id":"evt-future","occurredAt":"2099-01-01T00:00:00.000Z"}`)
			})
		}, "EXP-08", "later than the set's to"},
		{"gap", func(t *testing.T, f *exportFixture) {
			m := f.sets[1]
			m.Previous = "000000000009-20260101T000000000Z"
			writeManifest(t, f.dir, m)
		}, "EXP-09", "names"},
		{"uncovered time", func(t *testing.T, f *exportFixture) {
			m := f.sets[1]
			m.From = spec.NewTime(f.sets[0].CreatedAt.Add(time.Minute))
			writeManifest(t, f.dir, m)
		}, "EXP-09", "changes in between are in no set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newExportFixture(t)
			tc.breakIt(t, f)
			rep := runExport(t, f.dir)
			require.True(t, rep.Failed(false), "the defect fails the run")
			var msgs []string
			for _, r := range rep.Results {
				if r.ID == tc.fails && r.Status == conformance.StatusFail {
					msgs = append(msgs, r.Message)
				}
			}
			require.NotEmpty(t, msgs, "%s fails", tc.fails)
			require.Contains(t, strings.Join(msgs, "\n"), tc.msg)

			// The baseline turns the failure into an expected one.
			rep, err := conformance.RunExport(context.Background(), conformance.ExportConfig{Location: f.dir, Baseline: []string{tc.fails}})
			require.NoError(t, err)
			if !rep.Failed(false) {
				require.Empty(t, rep.Stale)
			}
		})
	}
}

func TestExportConformanceConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  conformance.ExportConfig
		want string
	}{
		{conformance.ExportConfig{}, "location is required"},
		{conformance.ExportConfig{Location: "relative/dir"}, "want an absolute directory"},
		{conformance.ExportConfig{Location: "file://nas/x"}, "file:///ABSOLUTE/PATH"},
		{conformance.ExportConfig{Location: "/tmp", Only: []string{"PAGE-01"}}, "unknown export check id"},
	} {
		_, err := conformance.RunExport(context.Background(), tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}
	_, err := conformance.RunExport(context.Background(), conformance.ExportConfig{Location: filepath.Join(t.TempDir(), "nope")})
	require.ErrorIs(t, err, conformance.ErrExportUnreadable)

	// Only runs the checks named.
	f := newExportFixture(t)
	rep, err := conformance.RunExport(context.Background(), conformance.ExportConfig{Location: f.dir, Only: []string{"EXP-03"}})
	require.NoError(t, err)
	require.NotEmpty(t, rep.Results)
	for _, r := range rep.Results {
		require.Equal(t, "EXP-03", r.ID)
	}
}

// TestExportCompressionBomb: a file whose bytes match its manifest but that
// decompresses past what a reader reads (64 MiB of spaces on one line)
// fails EXP-04, read no further than the bound; so does a manifest naming a
// file larger than MaxFileBytes (EXP-03), and an index past 16 MiB cannot
// be read.
func TestExportCompressionBomb(t *testing.T) {
	t.Parallel()
	f := newExportFixture(t)
	m := f.sets[0]
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	for range 64 {
		_, err := zw.Write(chunk)
		require.NoError(t, err)
	}
	_, err = zw.Write([]byte("\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	rel := m.ID + "/events.ndjson.gz"
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, filepath.FromSlash(rel)), buf.Bytes(), 0o644))
	sum := sha256.Sum256(buf.Bytes())
	for i := range m.Files {
		if m.Files[i].Resource == "events" {
			m.Files[i].Bytes, m.Files[i].SHA256, m.Files[i].Records = int64(buf.Len()), hex.EncodeToString(sum[:]), 1
		}
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, m.ID, spec.ExportManifestName), b, 0o644))

	rep := runExport(t, f.dir)
	var msg string
	for _, r := range rep.Results {
		if r.ID == "EXP-04" && r.Endpoint == rel && r.Status == conformance.StatusFail {
			msg = r.Message
		}
	}
	require.Contains(t, msg, "decompresses past 8388609 bytes")

	rep, err = conformance.RunExport(context.Background(), conformance.ExportConfig{Location: f.dir, MaxFileBytes: 1024})
	require.NoError(t, err)
	require.Equal(t, conformance.StatusFail, statuses(rep)["EXP-03"])

	require.NoError(t, os.WriteFile(filepath.Join(f.dir, spec.ExportIndexName), bytes.Repeat([]byte(" "), conformance.ExportMaxMetaBytes+1), 0o644))
	_, err = conformance.RunExport(context.Background(), conformance.ExportConfig{Location: f.dir})
	require.ErrorContains(t, err, "larger than")
}
