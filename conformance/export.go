package conformance

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aiusage/kit/spec"
)

// ExportCatalogue is every check of a scheduled export (docs/export.md),
// which [RunExport] runs: the format of the index, the manifests and the
// files, the records, and the chain of sets. Ids, levels and titles are
// stable; they are documented in docs/conformance.md with the checks of
// the REST interface.
var ExportCatalogue = []Check{
	{
		ID: "EXP-01", Level: LevelMust, Title: "the index is present and valid",
		Sends:    `Reads index.json at the root of the export.`,
		Requires: `index.json exists, validates against the export-index schema, lists the sets in strictly ascending sequence with their manifests at ID/manifest.json, and holds at least one full set.`,
		Rule:     `Kit decision: an export publishes index.json, rewritten atomically after each set, so that a reader over HTTP finds the sets without listing directories; a reader starts from a full set.`,
	},
	{
		ID: "EXP-02", Level: LevelMust, Title: "every listed manifest is present and valid",
		Sends:    `Reads the manifest of every set the index lists.`,
		Requires: `Each manifest exists, validates against the export-manifest schema, and agrees with the index on id, sequence and kind; it names one file per resource, RESOURCE.ndjson.gz, the usage file with its window. A set listed before the latest full set whose manifest is gone (pruned while the index was read) is a SKIP.`,
		Rule:     `Kit decision: a set exists once its manifest does; the manifest names each file with its record count and SHA-256.`,
	},
	{
		ID: "EXP-03", Level: LevelMust, Title: "files match their size and SHA-256",
		Sends:    `Reads every file every manifest names.`,
		Requires: `Each file exists, and its size and the SHA-256 of its bytes (compressed) are those of the manifest; the manifest names at most 256 MiB (ExportConfig.MaxFileBytes), and no byte past its size is read.`,
		Rule:     `Kit decision: a reader verifies every file against its manifest before it applies any of its records, so that a corrupt or partial file is never applied.`,
	},
	{
		ID: "EXP-04", Level: LevelMust, Title: "files are gzip NDJSON with the announced count",
		Sends:    `Decompresses every file that passed EXP-03.`,
		Requires: `The file is gzip; each line is one JSON object and ends with a newline, no line is blank, and the number of lines is the manifest's records. A reader bounds what it decompresses: a line of at most 8 MiB, a file of at most 256 MiB (ExportConfig.MaxFileBytes) and of at most its records times 8 MiB and a newline; decompression stops past them, so a compression bomb fails here.`,
		Rule:     `Kit decision: one file per resource per set, gzip-compressed NDJSON, one record a line.`,
	},
	{
		ID: "EXP-05", Level: LevelMust, Title: "every record matches its resource schema",
		Sends:    `Validates every line of every file that passed EXP-04.`,
		Requires: `Each record validates against its record schema (conversation, assistant, event or usage bucket), as a list item of the REST interface does. A finding is reported once per file with the first record that fails.`,
		Rule:     `"The resource shapes below are the normative part." Kit decision: a line of an export is exactly the JSON the REST interface serves for the record.`,
	},
	{
		ID: "EXP-06", Level: LevelMust, Title: "records are unique within a file",
		Sends:    `Reads the ids of every file that passed EXP-04.`,
		Requires: `No id appears twice in one file of conversations, assistants or events, and no two usage buckets of one file share their startAt and dimensions.`,
		Rule:     `Kit decision: a set holds each record once; a reader upserts by id across sets.`,
	},
	{
		ID: "EXP-07", Level: LevelMust, Title: "deleted conversations are tombstones",
		Sends:    `Reads the conversations that carry deletedAt in every file that passed EXP-04.`,
		Requires: `A conversation with deletedAt carries none of messages, systemPrompt, tools, attachments, parameters and metadata, and its updatedAt is not before its deletedAt. SKIP when no set holds a deleted conversation.`,
		Rule:     `"A conversation is deleted when deletedAt is present." Kit decision: deletions travel as the tombstones the REST interface lists, content dropped and updatedAt moved to the deletion, so that an incremental reader sees them.`,
	},
	{
		ID: "EXP-08", Level: LevelMust, Title: "records lie within their set's window",
		Sends:    `Compares the time of every record of every file that passed EXP-04 with its manifest's from and to, and every usage bucket with its file's usage window.`,
		Requires: `No conversation or assistant has an updatedAt (startedAt, createdAt without it), and no event an occurredAt, later than to; in an increment, conversations and assistants have updatedAt >= from and events occurredAt > from. Each usage bucket starts within [startAt, endAt) of its window, on a boundary of the window's granularity, with exactly the dimensions of its groupBy.`,
		Rule:     `Kit decision: a set covers a window; a reader skips the sets whose window ends before its watermark, which is sound only when no record lies outside its set's window.`,
	},
	{
		ID: "EXP-09", Level: LevelMust, Title: "increments follow the latest full set without a gap",
		Sends:    `Follows the sets from the latest full set to the last one.`,
		Requires: `Each set after the latest full set is an increment whose sequence is one more than the set before and whose previous names it, and whose from is not later than the creation of the set before (the windows overlap, leaving no time uncovered).`,
		Rule:     `Kit decision: each set names the one before it, so that a reader sees the chain; a reader stops at a gap and waits for the next full set, so a gap after the latest full set holds the reader back.`,
	},
}

// ExportConfig says which export [RunExport] checks. Only Location is
// required.
type ExportConfig struct {
	// Location is the export's root: an absolute directory, a file:// URL,
	// or an http or https base address. Required.
	Location string
	// Token, when set, is sent as "Authorization: Bearer TOKEN" over HTTP.
	Token string
	// RequestTimeout bounds each request. Default 30 s.
	RequestTimeout time.Duration
	// Client sends the requests; the default is a client with
	// RequestTimeout that follows no redirect. A client given here is used
	// through a copy that never follows a redirect to another origin or
	// from https to http, so the token stays with the export's server.
	Client *http.Client
	// Baseline, Only and Skip are as in [Config], with the ids of
	// [ExportCatalogue].
	Baseline, Only, Skip []string
	// Progress, when set, receives a line per set checked.
	Progress io.Writer
	// MaxFileBytes bounds what one file of the export may hold, compressed
	// and decompressed, as the kit's reader bounds it: a file past it fails
	// EXP-03 or EXP-04 and is read no further. Default
	// DefaultExportMaxFileBytes (256 MiB, the reader's default).
	MaxFileBytes int64
}

// The bounds within which the checks read an export: those of the kit's
// reader (consumer/export), so that what passes here is what a consumer
// reads. index.json and each manifest are at most ExportMaxMetaBytes, a
// line (a record) decompressed at most ExportMaxLineBytes.
const (
	ExportMaxMetaBytes        = 16 << 20
	ExportMaxLineBytes        = 8 << 20
	DefaultExportMaxFileBytes = 256 << 20
)

// ErrExportUnreadable is returned by RunExport when the export's root
// cannot be read at all (no such directory, the server not answering).
var ErrExportUnreadable = errors.New("conformance: export unreadable")

// RunExport checks the scheduled export of cfg and returns the report. The
// error is non-nil only when the configuration is wrong or the export
// cannot be read at all; failed checks are in the report.
func RunExport(ctx context.Context, cfg ExportConfig) (*Report, error) {
	x, err := newExportRun(cfg)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := x.run(ctx); err != nil {
		return nil, err
	}
	return x.report(start), nil
}

type exportRun struct {
	cfg      ExportConfig
	dir      string   // the root, when a directory
	base     *url.URL // the root, when over HTTP
	requests int
	results  []*Result
	index    map[string]*Result // by id + endpoint
}

func newExportRun(cfg ExportConfig) (*exportRun, error) {
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = DefaultExportMaxFileBytes
	}
	x := &exportRun{cfg: cfg, index: map[string]*Result{}}
	loc := cfg.Location
	switch {
	case loc == "":
		return nil, errors.New("conformance: the export's location is required")
	case filepath.IsAbs(loc):
		x.dir = loc
	default:
		u, err := url.Parse(loc)
		if err != nil {
			return nil, fmt.Errorf("conformance: export location %q: %v", loc, err)
		}
		switch u.Scheme {
		case "file":
			if u.Host != "" && u.Host != "localhost" || !strings.HasPrefix(u.Path, "/") {
				return nil, fmt.Errorf("conformance: export location %q: want file:///ABSOLUTE/PATH", loc)
			}
			x.dir = filepath.FromSlash(u.Path)
		case "http", "https":
			if u.Host == "" {
				return nil, fmt.Errorf("conformance: export location %q has no host", loc)
			}
			x.base = u
		default:
			return nil, fmt.Errorf("conformance: export location %q: want an absolute directory, a file:// URL or an http(s) base address", loc)
		}
	}
	for _, id := range slices.Concat(cfg.Only, cfg.Skip, cfg.Baseline) {
		if !slices.ContainsFunc(ExportCatalogue, func(c Check) bool { return c.ID == id || strings.HasPrefix(c.ID, id+"-") }) {
			return nil, fmt.Errorf("conformance: unknown export check id %q", id)
		}
	}
	if x.cfg.RequestTimeout <= 0 {
		x.cfg.RequestTimeout = 30 * time.Second
	}
	if x.cfg.Client == nil {
		x.cfg.Client = &http.Client{Timeout: x.cfg.RequestTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	} else {
		x.cfg.Client = sameOriginOnly(x.cfg.Client)
	}
	return x, nil
}

func (x *exportRun) root() string {
	if x.dir != "" {
		return x.dir
	}
	return x.base.Redacted()
}

// errAbsent is a file the export does not have.
var errAbsent = errors.New("not found")

// get reads the file at rel, a slash-separated path below the root: at
// most max bytes, more is an error.
func (x *exportRun) get(ctx context.Context, rel string, max int64) ([]byte, error) {
	if !fs.ValidPath(rel) {
		return nil, fmt.Errorf("%q is not a path below the export's root", rel)
	}
	x.requests++
	if x.dir != "" {
		f, err := os.Open(filepath.Join(x.dir, filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errAbsent
		}
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readAtMost(f, max)
	}
	u := *x.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + rel
	u.RawPath = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if x.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+x.cfg.Token)
	}
	req.Header.Set("Accept-Encoding", "identity") // the checksums are of the stored bytes
	res, err := x.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode == http.StatusOK:
	case spec.KindOf(res.StatusCode) == spec.ErrNotFound: // 404 or 410
		return nil, errAbsent
	default:
		return nil, fmt.Errorf("HTTP %d", res.StatusCode)
	}
	return readAtMost(res.Body, max)
}

// readAtMost reads r to its end, or fails past max bytes.
func readAtMost(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w %d bytes, the most read", errLarger, max)
	}
	return b, nil
}

// errLarger is a file past the bound of readAtMost.
var errLarger = errors.New("larger than")

func (x *exportRun) enabled(id string) bool {
	if len(x.cfg.Only) > 0 && !matchID(x.cfg.Only, id) {
		return false
	}
	return !matchID(x.cfg.Skip, id)
}

// result returns the result of check id at endpoint, creating it as a
// PASS.
func (x *exportRun) result(id, endpoint string) *Result {
	if r, ok := x.index[id+" "+endpoint]; ok {
		return r
	}
	var c Check
	for _, e := range ExportCatalogue {
		if e.ID == id {
			c = e
		}
	}
	r := &Result{ID: id, Level: c.Level, Status: StatusPass, Endpoint: endpoint, Title: c.Title, Rule: c.Rule}
	x.index[id+" "+endpoint] = r
	if x.enabled(id) {
		x.results = append(x.results, r)
	}
	return r
}

// fail marks check id at endpoint failed (a warning below MUST), keeping
// the first message.
func (x *exportRun) fail(id, endpoint, format string, a ...any) {
	r := x.result(id, endpoint)
	if r.Status == StatusFail || r.Status == StatusWarn {
		return
	}
	r.Status = StatusFail
	if r.Level != LevelMust {
		r.Status = StatusWarn
	}
	r.Message = fmt.Sprintf(format, a...)
	r.Evidence = &Evidence{Request: "GET " + x.root() + "/" + strings.TrimPrefix(endpoint, "/")}
}

func (x *exportRun) skip(id, endpoint, format string, a ...any) {
	r := x.result(id, endpoint)
	r.Status, r.Message = StatusSkip, fmt.Sprintf(format, a...)
}

func (x *exportRun) pass(id, endpoint, format string, a ...any) {
	r := x.result(id, endpoint)
	if r.Status == StatusPass && r.Message == "" {
		r.Message = fmt.Sprintf(format, a...)
	}
}

func schemaError(name string, b []byte) string {
	findings, err := spec.Validate(name, b, spec.WithMode(spec.Lenient))
	if err != nil {
		return err.Error()
	}
	for _, f := range findings {
		if f.Level == spec.LevelError {
			return f.String()
		}
	}
	return ""
}

func (x *exportRun) run(ctx context.Context) error {
	b, err := x.get(ctx, spec.ExportIndexName, ExportMaxMetaBytes)
	if err != nil && !errors.Is(err, errAbsent) {
		return fmt.Errorf("%w: %s: %v", ErrExportUnreadable, x.root(), err)
	}
	if errors.Is(err, errAbsent) {
		if x.dir != "" {
			if _, serr := os.Stat(x.dir); serr != nil {
				return fmt.Errorf("%w: %v", ErrExportUnreadable, serr)
			}
		}
		x.fail("EXP-01", spec.ExportIndexName, "%s has no %s", x.root(), spec.ExportIndexName)
		x.skipRest("there is no index to follow")
		return nil
	}
	var idx spec.ExportIndex
	if msg := schemaError("export-index", b); msg != "" {
		x.fail("EXP-01", spec.ExportIndexName, "%s", msg)
		x.skipRest("the index is not valid")
		return nil
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		x.fail("EXP-01", spec.ExportIndexName, "%v", err)
		x.skipRest("the index is not valid")
		return nil
	}
	latestFull := -1
	for i, s := range idx.Sets {
		if i > 0 && s.Sequence <= idx.Sets[i-1].Sequence {
			x.fail("EXP-01", spec.ExportIndexName, "/sets/%d: sequence %d does not follow %d", i, s.Sequence, idx.Sets[i-1].Sequence)
		}
		if s.Manifest != s.ID+"/"+spec.ExportManifestName {
			x.fail("EXP-01", spec.ExportIndexName, "/sets/%d: manifest %q is not %s/%s", i, s.Manifest, s.ID, spec.ExportManifestName)
		}
		if s.Kind == spec.ExportFull {
			latestFull = i
		}
	}
	if latestFull < 0 {
		x.fail("EXP-01", spec.ExportIndexName, "the index lists no full set: a reader has nowhere to start")
	}
	x.pass("EXP-01", spec.ExportIndexName, "%d sets", len(idx.Sets))

	var chain []*spec.ExportManifest // from the latest full set on, nil where a manifest failed
	tombstones := 0
	for i, s := range idx.Sets {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		m := x.checkManifest(ctx, s, i < latestFull)
		if i >= latestFull && latestFull >= 0 {
			chain = append(chain, m)
		}
		if m == nil {
			continue
		}
		if x.cfg.Progress != nil {
			fmt.Fprintf(x.cfg.Progress, "set %s (%s): %d files\n", m.ID, m.Kind, len(m.Files))
		}
		for _, f := range m.Files {
			tombstones += x.checkFile(ctx, m, f)
		}
	}
	if tombstones == 0 {
		x.skip("EXP-07", "/", "no set holds a deleted conversation")
	} else {
		x.pass("EXP-07", "/", "%d tombstones checked", tombstones)
	}
	x.checkChain(chain)
	return nil
}

// skipRest marks every check but EXP-01 skipped.
func (x *exportRun) skipRest(why string) {
	for _, c := range ExportCatalogue[1:] {
		x.skip(c.ID, "/", "%s", why)
	}
}

func (x *exportRun) checkManifest(ctx context.Context, s spec.ExportIndexSet, beforeFull bool) *spec.ExportManifest {
	ep := s.ID + "/" + spec.ExportManifestName
	if spec.CheckExportSetID(s.ID) != nil {
		x.fail("EXP-02", ep, "the index lists a set id %q that is not one", s.ID)
		return nil
	}
	b, err := x.get(ctx, ep, ExportMaxMetaBytes)
	switch {
	case errors.Is(err, errAbsent) && beforeFull:
		x.skip("EXP-02", ep, "the manifest is gone: the set was pruned, and a reader starts at the latest full set")
		return nil
	case err != nil:
		x.fail("EXP-02", ep, "the index lists it, but it cannot be read: %v", err)
		return nil
	}
	if msg := schemaError("export-manifest", b); msg != "" {
		x.fail("EXP-02", ep, "%s", msg)
		return nil
	}
	var m spec.ExportManifest
	if err := json.Unmarshal(b, &m); err != nil {
		x.fail("EXP-02", ep, "%v", err)
		return nil
	}
	if m.ID != s.ID || m.Sequence != s.Sequence || m.Kind != s.Kind {
		x.fail("EXP-02", ep, "the manifest says set %s, sequence %d, %s; the index %s, %d, %s", m.ID, m.Sequence, m.Kind, s.ID, s.Sequence, s.Kind)
		return nil
	}
	seen := map[string]bool{}
	for i, f := range m.Files {
		switch {
		case seen[f.Resource]:
			x.fail("EXP-02", ep, "/files/%d: a second file of %s", i, f.Resource)
			return nil
		case f.Path != f.Resource+".ndjson.gz":
			x.fail("EXP-02", ep, "/files/%d/path: %q is not %s.ndjson.gz", i, f.Path, f.Resource)
			return nil
		case (f.Resource == Usage) != (f.Usage != nil):
			x.fail("EXP-02", ep, "/files/%d/usage: a usage window belongs to the usage file, and only there", i)
			return nil
		}
		seen[f.Resource] = true
	}
	x.pass("EXP-02", ep, "%s set %d with %d files", m.Kind, m.Sequence, len(m.Files))
	return &m
}

// checkFile runs EXP-03 to EXP-08 on one file and returns the tombstones
// it checked.
func (x *exportRun) checkFile(ctx context.Context, m *spec.ExportManifest, f spec.ExportFile) int {
	ep := m.ID + "/" + f.Path
	lines, ok := x.readLines(ctx, ep, f)
	if !ok {
		return 0
	}
	return x.checkRecords(ep, m, f, lines)
}

// readLines is EXP-03 and EXP-04: it reads the file at ep, checks it
// against its manifest entry f, and returns its lines; ok is false when a
// check failed.
func (x *exportRun) readLines(ctx context.Context, ep string, f spec.ExportFile) (lines [][]byte, ok bool) {
	if f.Bytes > x.cfg.MaxFileBytes {
		x.fail("EXP-03", ep, "the manifest names %d bytes, more than the %d a reader reads", f.Bytes, x.cfg.MaxFileBytes)
		return nil, false
	}
	b, err := x.get(ctx, ep, max(f.Bytes, 0))
	if errors.Is(err, errLarger) {
		x.fail("EXP-03", ep, "more than %d bytes, the manifest says %d", f.Bytes, f.Bytes)
		return nil, false
	}
	if err != nil {
		x.fail("EXP-03", ep, "the manifest names it, but it cannot be read: %v", err)
		return nil, false
	}
	sum := sha256.Sum256(b)
	if int64(len(b)) != f.Bytes {
		x.fail("EXP-03", ep, "%d bytes, the manifest says %d", len(b), f.Bytes)
		return nil, false
	}
	if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
		x.fail("EXP-03", ep, "SHA-256 %s, the manifest says %s", got, f.SHA256)
		return nil, false
	}
	x.pass("EXP-03", ep, "%d bytes", len(b))
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		x.fail("EXP-04", ep, "not gzip: %v", err)
		return nil, false
	}
	// What the file may decompress to: its records of at most a line's
	// bound each, and at most MaxFileBytes; a compression bomb stops there.
	bound := x.cfg.MaxFileBytes
	if f.Records < bound/(ExportMaxLineBytes+1) {
		bound = max(f.Records, 0) * (ExportMaxLineBytes + 1)
	}
	plain, err := io.ReadAll(io.LimitReader(zr, bound+1))
	if err != nil {
		x.fail("EXP-04", ep, "gzip: %v", err)
		return nil, false
	}
	if int64(len(plain)) > bound {
		x.fail("EXP-04", ep, "it decompresses past %d bytes, the most a reader reads for %d records (lines of at most %d bytes, files of at most %d)",
			bound, f.Records, ExportMaxLineBytes, x.cfg.MaxFileBytes)
		return nil, false
	}
	for n := 1; len(plain) > 0; n++ {
		i := bytes.IndexByte(plain, '\n')
		if i < 0 {
			x.fail("EXP-04", ep, "line %d does not end with a newline", n)
			return nil, false
		}
		line := plain[:i]
		plain = plain[i+1:]
		if len(line) > ExportMaxLineBytes {
			x.fail("EXP-04", ep, "line %d is %d bytes, more than the %d a reader reads", n, len(line), ExportMaxLineBytes)
			return nil, false
		}
		if len(bytes.TrimSpace(line)) == 0 || line[0] != '{' || !json.Valid(line) {
			x.fail("EXP-04", ep, "line %d is not one JSON object", n)
			return nil, false
		}
		lines = append(lines, line)
	}
	if int64(len(lines)) != f.Records {
		x.fail("EXP-04", ep, "%d lines, the manifest says %d records", len(lines), f.Records)
		return nil, false
	}
	x.pass("EXP-04", ep, "%d records", len(lines))
	return lines, true
}

// checkRecords is EXP-05, EXP-06 and EXP-08 on the lines of the file at ep
// of set m; it returns the tombstones it checked.
func (x *exportRun) checkRecords(ep string, m *spec.ExportManifest, f spec.ExportFile, lines [][]byte) int {
	schema := map[string]string{Conversations: "conversation", Assistants: "assistant", Events: "event", Usage: "usage-bucket"}[f.Resource]
	seen := map[string]int{}
	tombstones := 0
	for n, line := range lines {
		if msg := schemaError(schema, line); msg != "" {
			x.fail("EXP-05", ep, "line %d: %s", n+1, msg)
		}
		var rec struct {
			ID         string            `json:"id"`
			UpdatedAt  string            `json:"updatedAt"`
			StartedAt  string            `json:"startedAt"`
			CreatedAt  string            `json:"createdAt"`
			OccurredAt string            `json:"occurredAt"`
			DeletedAt  string            `json:"deletedAt"`
			StartAt    string            `json:"startAt"`
			Dimensions map[string]string `json:"dimensions"`
		}
		if json.Unmarshal(line, &rec) != nil {
			continue // EXP-05 reported it
		}
		key := rec.ID
		if f.Resource == Usage {
			d, _ := json.Marshal(rec.Dimensions)
			key = rec.StartAt + " " + string(d)
		}
		if first, dup := seen[key]; dup {
			x.fail("EXP-06", ep, "lines %d and %d are both %q", first, n+1, key)
		}
		seen[key] = n + 1
		if f.Resource == Usage {
			x.checkBucket(ep, f.Usage, n+1, line)
			continue
		}
		field := rec.UpdatedAt
		switch {
		case f.Resource == Events:
			field = rec.OccurredAt
		case field == "" && f.Resource == Conversations:
			field = rec.StartedAt
		case field == "":
			field = rec.CreatedAt
		}
		t, err := spec.ParseTime(field)
		if err != nil {
			continue // EXP-05 reported it
		}
		if t.After(m.To.Time) {
			x.fail("EXP-08", ep, "line %d (%s): %s is later than the set's to, %s", n+1, rec.ID, field, m.To)
		}
		if m.Kind == spec.ExportIncrement && (t.Before(m.From.Time) || f.Resource == Events && t.Equal(m.From.Time)) {
			x.fail("EXP-08", ep, "line %d (%s): %s is outside the increment, which starts at %s", n+1, rec.ID, field, m.From)
		}
		if f.Resource == Conversations && rec.DeletedAt != "" {
			tombstones++
			x.checkTombstone(ep, n+1, line)
		}
	}
	x.pass("EXP-05", ep, "%d records valid", len(lines))
	x.pass("EXP-06", ep, "%d distinct records", len(seen))
	x.pass("EXP-08", ep, "every record within the window")
	return tombstones
}

func (x *exportRun) checkTombstone(ep string, n int, line []byte) {
	var c map[string]json.RawMessage
	if json.Unmarshal(line, &c) != nil {
		return
	}
	for _, field := range []string{"messages", "systemPrompt", "tools", "attachments", "parameters", "metadata"} {
		if _, ok := c[field]; ok {
			x.fail("EXP-07", "/", "%s line %d: a deleted conversation carries %s", ep, n, field)
		}
	}
	var ts struct {
		UpdatedAt, DeletedAt string
	}
	if json.Unmarshal(line, &ts) != nil {
		return
	}
	u, errU := spec.ParseTime(ts.UpdatedAt)
	d, errD := spec.ParseTime(ts.DeletedAt)
	if errD == nil && (errU != nil || u.Before(d)) {
		x.fail("EXP-07", "/", "%s line %d: updatedAt %q is before deletedAt %s: an incremental reader would miss the deletion", ep, n, ts.UpdatedAt, ts.DeletedAt)
	}
}

func (x *exportRun) checkBucket(ep string, w *spec.ExportUsageWindow, n int, line []byte) {
	var b spec.UsageBucket
	if w == nil || json.Unmarshal(line, &b) != nil {
		return
	}
	g := time.Hour
	if w.Granularity == spec.GranularityDay {
		g = 24 * time.Hour
	}
	t := b.StartAt.UTC()
	switch {
	case t.Before(w.StartAt.Time) || !t.Before(w.EndAt.Time):
		x.fail("EXP-08", ep, "line %d: the bucket at %s lies outside the file's usage window [%s, %s)", n, b.StartAt, w.StartAt, w.EndAt)
	case !t.Truncate(g).Equal(t):
		x.fail("EXP-08", ep, "line %d: the bucket at %s is not on a UTC %s boundary", n, b.StartAt, w.Granularity)
	}
	var dims map[string]json.RawMessage
	var raw struct {
		Dimensions map[string]json.RawMessage `json:"dimensions"`
	}
	if json.Unmarshal(line, &raw) == nil {
		dims = raw.Dimensions
	}
	for _, d := range w.GroupBy {
		if _, ok := dims[d]; !ok {
			x.fail("EXP-08", ep, "line %d: the bucket lacks dimension %s of groupBy", n, d)
		}
	}
	for d := range dims {
		if !slices.Contains(w.GroupBy, d) {
			x.fail("EXP-08", ep, "line %d: the bucket has dimension %s, which is not in groupBy", n, d)
		}
	}
}

// checkChain runs EXP-09 over the sets from the latest full set on.
func (x *exportRun) checkChain(chain []*spec.ExportManifest) {
	const ep = "/"
	if len(chain) == 0 {
		x.skip("EXP-09", ep, "there is no full set to start from")
		return
	}
	if chain[0] == nil {
		x.skip("EXP-09", ep, "the latest full set's manifest failed EXP-02")
		return
	}
	for i := 1; i < len(chain); i++ {
		prev, m := chain[i-1], chain[i]
		if m == nil || prev == nil {
			x.fail("EXP-09", ep, "set %d after the latest full set failed EXP-02: a reader stops before it", i)
			return
		}
		switch {
		case m.Kind != spec.ExportIncrement:
			x.fail("EXP-09", ep, "%s is %s, after the latest full set", m.ID, m.Kind)
		case m.Sequence != prev.Sequence+1:
			x.fail("EXP-09", ep, "%s has sequence %d after %d: a gap", m.ID, m.Sequence, prev.Sequence)
		case m.Previous != prev.ID:
			x.fail("EXP-09", ep, "%s names %q as previous, not %s", m.ID, m.Previous, prev.ID)
		case m.From.After(prev.CreatedAt.Time):
			x.fail("EXP-09", ep, "%s starts at %s, after %s was created (%s): changes in between are in no set", m.ID, m.From, prev.ID, prev.CreatedAt)
		}
	}
	x.pass("EXP-09", ep, "a full set and %d increments", len(chain)-1)
}

func (x *exportRun) report(start time.Time) *Report {
	order := map[string]int{}
	for i, c := range ExportCatalogue {
		order[c.ID] = i
	}
	for _, r := range x.results {
		if matchID(x.cfg.Baseline, r.ID) && (r.Status == StatusFail || r.Status == StatusWarn || r.Status == StatusError) {
			r.Baselined = true
		}
	}
	slices.SortStableFunc(x.results, func(a, b *Result) int { return order[a.ID] - order[b.ID] })
	rep := &Report{URL: x.root(), Started: start, Duration: time.Since(start), Requests: x.requests}
	for _, r := range x.results {
		rep.Results = append(rep.Results, *r)
	}
	for _, id := range x.cfg.Baseline {
		ran, failed := false, false
		for _, r := range x.results {
			if r.ID == id || strings.HasPrefix(r.ID, id+"-") {
				ran = ran || r.Status != StatusSkip
				failed = failed || r.Baselined
			}
		}
		if ran && !failed {
			rep.Stale = append(rep.Stale, id)
		}
	}
	return rep
}
