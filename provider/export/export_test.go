package export_test

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
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/export"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

const (
	tenant = "acme"
	token  = "export-test-token"
)

// world is a provider filled with demo data, its REST interface, and a
// clock the tests move.
type world struct {
	src *memsource.Source
	srv *httptest.Server
	now time.Time
}

func newWorld(t *testing.T, conversations int) *world {
	t.Helper()
	w := &world{now: demodata.DefaultEnd.Add(time.Hour)}
	w.src = memsource.New(memsource.WithNow(func() time.Time { return w.now }))
	require.NoError(t, demodata.Fill(context.Background(), demodata.Config{Seed: 7, Conversations: conversations, Tenant: tenant}, tenant, w.src))
	h, err := provider.NewHandler(w.src, provider.WithTokens(provider.Token{Secret: token, Tenant: tenant}))
	require.NoError(t, err)
	w.srv = httptest.NewServer(h)
	t.Cleanup(w.srv.Close)
	return w
}

func (w *world) exporter(t *testing.T, dir string) *export.Exporter {
	t.Helper()
	x, err := export.New(w.src, export.Config{Dir: dir, Tenant: tenant, Now: func() time.Time { return w.now }})
	require.NoError(t, err)
	return x
}

// rest walks every page of path (with query) and returns the records as
// the REST interface served them.
func (w *world) rest(t *testing.T, path string, query url.Values) []string {
	t.Helper()
	var out []string
	query.Set("limit", "1000")
	for {
		req, err := http.NewRequest(http.MethodGet, w.srv.URL+path+"?"+query.Encode(), nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s", b)
		var page struct {
			Data       []json.RawMessage `json:"data"`
			NextCursor *string           `json:"nextCursor"`
		}
		require.NoError(t, json.Unmarshal(b, &page))
		for _, r := range page.Data {
			out = append(out, string(r))
		}
		if page.NextCursor == nil {
			return out
		}
		query.Set("cursor", *page.NextCursor)
	}
}

// readFile checks f of the set in dir against its manifest entry and
// returns its lines.
func readFile(t *testing.T, dir string, m spec.ExportManifest, resource string) []string {
	t.Helper()
	for _, f := range m.Files {
		if f.Resource != resource {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, m.ID, f.Path))
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		require.Equal(t, f.SHA256, hex.EncodeToString(sum[:]), "checksum of %s", f.Path)
		require.EqualValues(t, len(b), f.Bytes)
		zr, err := gzip.NewReader(bytes.NewReader(b))
		require.NoError(t, err)
		plain, err := io.ReadAll(zr)
		require.NoError(t, err)
		var lines []string
		if len(plain) > 0 {
			require.Equal(t, byte('\n'), plain[len(plain)-1], "the last line ends with a newline")
			lines = strings.Split(string(plain[:len(plain)-1]), "\n")
		}
		require.Len(t, lines, int(f.Records), "records of %s", f.Path)
		return lines
	}
	t.Fatalf("set %s has no file of %s", m.ID, resource)
	return nil
}

func TestFullSetHoldsWhatRESTServes(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 60)
	ctx := context.Background()
	dir := t.TempDir()
	m, err := w.exporter(t, dir).Write(ctx, export.Full)
	require.NoError(t, err)

	require.Equal(t, spec.ExportFull, m.Kind)
	require.EqualValues(t, 1, m.Sequence)
	require.Empty(t, m.Previous)
	require.True(t, m.From.IsZero())
	require.Len(t, m.Files, 4)
	b, err := os.ReadFile(filepath.Join(dir, m.ID, spec.ExportManifestName))
	require.NoError(t, err)
	findings, err := spec.Validate("export-manifest", b)
	require.NoError(t, err)
	require.Empty(t, findings)

	tombstones := 0
	for _, r := range []string{"conversations", "assistants", "events"} {
		got := readFile(t, dir, m, r)
		want := w.rest(t, "/"+r, url.Values{})
		require.NotEmpty(t, want)
		require.Equal(t, want, got, "%s: the file holds exactly what REST serves", r)
		if r == "conversations" {
			for _, line := range got {
				if strings.Contains(line, `"deletedAt"`) {
					tombstones++
				}
			}
		}
	}
	require.Positive(t, tombstones, "deleted conversations travel as tombstones")

	uw := m.Files[3].Usage
	require.NotNil(t, uw)
	require.Equal(t, w.now.Add(-30*24*time.Hour).Truncate(time.Hour), uw.StartAt.Time)
	require.Equal(t, w.now.Truncate(time.Hour).Add(time.Hour), uw.EndAt.Time)
	q := url.Values{"startAt": {uw.StartAt.String()}, "endAt": {uw.EndAt.String()}, "granularity": {"hour"},
		"groupBy": {strings.Join(spec.Dimensions, ",")}}
	wantUsage := w.rest(t, "/usage", q)
	require.NotEmpty(t, wantUsage)
	require.Equal(t, wantUsage, readFile(t, dir, m, "usage"))

	idx, err := os.ReadFile(filepath.Join(dir, spec.ExportIndexName))
	require.NoError(t, err)
	findings, err = spec.Validate("export-index", idx)
	require.NoError(t, err)
	require.Empty(t, findings)
	var index spec.ExportIndex
	require.NoError(t, json.Unmarshal(idx, &index))
	require.Len(t, index.Sets, 1)
	require.Equal(t, m.ID+"/manifest.json", index.Sets[0].Manifest)
}

func TestIncrementHoldsWhatChanged(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 40)
	ctx := context.Background()
	dir := t.TempDir()
	x := w.exporter(t, dir)
	full, err := x.Write(ctx, export.Full)
	require.NoError(t, err)

	// Changes after the full set: one conversation deleted, one event
	// appended, one assistant updated.
	w.now = w.now.Add(time.Hour)
	convs := w.rest(t, "/conversations", url.Values{})
	var c spec.Conversation
	require.NoError(t, json.Unmarshal([]byte(convs[len(convs)-1]), &c))
	if c.Deleted() {
		require.NoError(t, json.Unmarshal([]byte(convs[0]), &c))
	}
	require.NoError(t, w.src.DeleteConversation(ctx, tenant, c.ID, w.now))
	ev := spec.Event{ID: "evt-after-full", OccurredAt: spec.NewTime(w.now.Add(-time.Minute)), Category: spec.CategoryAccess, Action: "login"}
	require.NoError(t, w.src.AppendEvent(ctx, tenant, ev))
	asst, err := w.src.ListAssistants(ctx, provider.AssistantQuery{Tenant: tenant, Limit: 1})
	require.NoError(t, err)
	a := asst.Items[0]
	a.Name += " (renamed)"
	a.UpdatedAt = spec.NewTime(w.now)
	require.NoError(t, w.src.UpsertAssistant(ctx, tenant, a))

	w.now = w.now.Add(time.Minute)
	inc, err := x.Write(ctx, export.Auto)
	require.NoError(t, err)
	require.Equal(t, spec.ExportIncrement, inc.Kind)
	require.EqualValues(t, 2, inc.Sequence)
	require.Equal(t, full.ID, inc.Previous)
	require.Equal(t, full.CreatedAt.Add(-5*time.Minute), inc.From.Time)

	since := inc.From.String()
	for r, q := range map[string]url.Values{
		"conversations": {"updatedSince": {since}},
		"assistants":    {"updatedSince": {since}},
		"events":        {"occurredAfter": {since}},
	} {
		want := w.rest(t, "/"+r, q)
		require.Len(t, want, 1, "%s changed once", r)
		require.Equal(t, want, readFile(t, dir, inc, r), "%s", r)
	}
	require.Contains(t, readFile(t, dir, inc, "conversations")[0], `"deletedAt"`)
	// The increment's usage reaches back over the trailing window.
	require.Equal(t, w.now.Add(-48*time.Hour).Truncate(time.Hour), inc.Files[3].Usage.StartAt.Time)

	sets, err := export.Sets(dir)
	require.NoError(t, err)
	require.Len(t, sets, 2)
	require.Equal(t, []string{full.ID, inc.ID}, []string{sets[0].ID, sets[1].ID})
}

func TestAutoWritesFullWhenDue(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 5)
	ctx := context.Background()
	x := w.exporter(t, t.TempDir())
	var kinds []string
	for _, step := range []time.Duration{0, time.Hour, 22 * time.Hour, time.Hour, time.Hour} {
		w.now = w.now.Add(step)
		m, err := x.Write(ctx, export.Auto)
		require.NoError(t, err)
		kinds = append(kinds, m.Kind)
	}
	// The first set is full; 24h after it the next is full again.
	require.Equal(t, []string{"full", "increment", "increment", "full", "increment"}, kinds)
}

func TestPruneKeepsTheLatestFullAndAfter(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 5)
	ctx := context.Background()
	dir := t.TempDir()
	x := w.exporter(t, dir)
	var ids []string
	for i, k := range []export.Kind{export.Full, export.Increment, export.Increment, export.Full, export.Increment} {
		if i > 0 {
			w.now = w.now.Add(10 * time.Hour)
		}
		m, err := x.Write(ctx, k)
		require.NoError(t, err)
		ids = append(ids, m.ID)
	}
	// Everything is older than an hour, but the latest full set (the
	// fourth) and the increment after it stay.
	gone, err := x.Prune(time.Hour)
	require.NoError(t, err)
	require.Equal(t, ids[:3], gone)
	sets, err := export.Sets(dir)
	require.NoError(t, err)
	require.Len(t, sets, 2)
	require.Equal(t, ids[3:], []string{sets[0].ID, sets[1].ID})
	for _, id := range gone {
		_, err := os.Stat(filepath.Join(dir, id))
		require.ErrorIs(t, err, os.ErrNotExist, "%s removed", id)
	}
	var index spec.ExportIndex
	b, err := os.ReadFile(filepath.Join(dir, spec.ExportIndexName))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &index))
	require.Len(t, index.Sets, 2)
	require.Equal(t, ids[3], index.Sets[0].ID)

	// A retention longer than the sets' age removes nothing.
	gone, err = x.Prune(1000 * time.Hour)
	require.NoError(t, err)
	require.Empty(t, gone)
	_, err = x.Prune(0)
	require.ErrorContains(t, err, "retention must be positive")
}

func TestInterruptedWriteIsNoSet(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 5)
	ctx := context.Background()
	dir := t.TempDir()
	x := w.exporter(t, dir)
	first, err := x.Write(ctx, export.Full)
	require.NoError(t, err)

	// A crash after the files, before the manifest's rename: a set
	// directory holding files and a temporary manifest.
	partial := spec.ExportSetID(2, w.now.Add(time.Minute))
	require.NoError(t, os.Mkdir(filepath.Join(dir, partial), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, partial, "conversations.ndjson.gz"), []byte("partial"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, partial, ".manifest.json.123.tmp"), []byte("{"), 0o644))
	// A crash before the index's rename leaves its temporary file.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".index.json.456.tmp"), []byte("{"), 0o644))
	sets, err := export.Sets(dir)
	require.NoError(t, err)
	require.Len(t, sets, 1, "a directory without manifest is not a set")

	w.now = w.now.Add(2 * time.Minute)
	next, err := x.Write(ctx, export.Auto)
	require.NoError(t, err)
	require.EqualValues(t, 2, next.Sequence)
	require.Equal(t, first.ID, next.Previous)
	_, err = os.Stat(filepath.Join(dir, partial))
	require.ErrorIs(t, err, os.ErrNotExist, "the interrupted write's directory is removed")
	_, err = os.Stat(filepath.Join(dir, ".index.json.456.tmp"))
	require.ErrorIs(t, err, os.ErrNotExist, "the temporary index is removed")
}

func TestBadManifestIsAnErrorNamingIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	dir := t.TempDir()
	m, err := w.exporter(t, dir).Write(context.Background(), export.Full)
	require.NoError(t, err)
	name := filepath.Join(dir, m.ID, spec.ExportManifestName)
	require.NoError(t, os.WriteFile(name, []byte(`{"id":`), 0o644))
	_, err = export.Sets(dir)
	require.ErrorContains(t, err, name)
	require.NoError(t, os.WriteFile(name, []byte(`{"id":"000000000009-20260101T000000000Z"}`), 0o644))
	_, err = export.Sets(dir)
	require.ErrorContains(t, err, "not its directory")
}

func TestClockMustMoveForward(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	x := w.exporter(t, t.TempDir())
	_, err := x.Write(context.Background(), export.Full)
	require.NoError(t, err)
	_, err = x.Write(context.Background(), export.Increment)
	require.ErrorContains(t, err, "not past the creation of the previous set")
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	src := memsource.New()
	for _, tc := range []struct {
		cfg  export.Config
		want string
	}{
		{export.Config{Tenant: "t"}, "Dir is required"},
		{export.Config{Dir: "d"}, "Tenant is required"},
		{export.Config{Dir: "d", Tenant: "t", Overlap: -time.Second}, "Overlap must not be negative"},
		{export.Config{Dir: "d", Tenant: "t", UsageTrailing: -time.Second}, "UsageTrailing must not be negative"},
	} {
		_, err := export.New(src, tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}
	_, err := export.New(nil, export.Config{Dir: "d", Tenant: "t"})
	require.ErrorContains(t, err, "nil DataSource")
}

// unsupported is a source that holds conversations only.
type unsupported struct{ provider.DataSource }

func (unsupported) ListAssistants(context.Context, provider.AssistantQuery) (provider.Page[spec.Assistant], error) {
	return provider.Page[spec.Assistant]{}, provider.ErrUnsupported
}

func (unsupported) ListEvents(context.Context, provider.EventQuery) (provider.Page[spec.Event], error) {
	return provider.Page[spec.Event]{}, provider.ErrUnsupported
}

func (unsupported) Usage(context.Context, provider.UsageQuery) (provider.Page[spec.UsageBucket], error) {
	return provider.Page[spec.UsageBucket]{}, provider.ErrUnsupported
}

func TestResourceNotHeldHasNoFile(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	dir := t.TempDir()
	// Wrapped, the source loses its raw capability: records are encoded
	// from the typed pages, as the REST interface does.
	x, err := export.New(unsupported{w.src}, export.Config{Dir: dir, Tenant: tenant, Now: func() time.Time { return w.now }})
	require.NoError(t, err)
	m, err := x.Write(context.Background(), export.Full)
	require.NoError(t, err)
	require.Len(t, m.Files, 1)
	require.Equal(t, "conversations", m.Files[0].Resource)
	require.Equal(t, w.rest(t, "/conversations", url.Values{}), readFile(t, dir, m, "conversations"))
}

func TestRunWritesUntilCancelled(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	dir := t.TempDir()
	var mu sync.Mutex
	now := w.now
	x, err := export.New(w.src, export.Config{Dir: dir, Tenant: tenant, FullEvery: 3 * time.Hour, Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(30 * time.Minute) // every reading of the clock moves it on
		return now
	}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var kinds []string
	var prunedAny bool
	err = x.Run(ctx, time.Millisecond, time.Hour, func(m spec.ExportManifest, pruned []string, err error) {
		require.NoError(t, err)
		kinds = append(kinds, m.Kind)
		prunedAny = prunedAny || len(pruned) > 0
		if len(kinds) == 6 {
			cancel()
		}
	})
	require.NoError(t, err, "Run ends without error when its context does")
	require.Len(t, kinds, 6)
	require.Equal(t, "full", kinds[0])
	require.Contains(t, kinds[1:], "full", "a full set again once the latest is FullEvery old")
	require.True(t, prunedAny, "sets older than keep before the latest full set are pruned")
	sets, err := export.Sets(dir)
	require.NoError(t, err)
	require.Equal(t, spec.ExportFull, sets[0].Kind, "what remains starts with a full set")
	require.ErrorContains(t, x.Run(context.Background(), 0, 0, nil), "interval must be positive")
}
