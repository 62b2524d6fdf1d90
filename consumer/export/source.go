package export

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/infra/httpclient"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// ErrCorrupt is a file that does not match its manifest, or a manifest or
// index that is not what the format says. The error wrapping it names the
// file.
var ErrCorrupt = errors.New("corrupt export")

// ErrTooLarge is a file past one of the reader's bounds: the index or a
// manifest larger than [MaxMetaBytes], a file whose manifest names more than
// [Config.MaxFileBytes] bytes, a line that decompresses past
// [Config.MaxLineBytes], or a file that decompresses past
// [Config.MaxPlainBytes] (or past what its manifest's record count allows).
// Nothing past the bound is read or kept, and the read is not retried: the
// same export fails the same way until its provider fixes it. The error
// wrapping it names the file and the bound.
var ErrTooLarge = errors.New("export file too large")

// ErrOutsideRoot is a directory export outside [Config.Root].
var ErrOutsideRoot = errors.New("outside the directory exports may be read from")

// Bounds of the reader: see [Config].
const (
	// MaxMetaBytes bounds index.json and each manifest.json: 16 MiB.
	MaxMetaBytes = 16 << 20
	// DefaultMaxFileBytes is the default of Config.MaxFileBytes: 256 MiB.
	DefaultMaxFileBytes = 256 << 20
	// DefaultMaxPlainBytes is the default of Config.MaxPlainBytes: 256 MiB.
	DefaultMaxPlainBytes = 256 << 20
	// DefaultMaxLineBytes is the default of Config.MaxLineBytes: 8 MiB,
	// the page cap of the kit's provider (provider.DefaultMaxPageBytes).
	DefaultMaxLineBytes = 8 << 20
)

// Config configures a [Source]. Only URL is required.
type Config struct {
	// URL is where the export is: an absolute directory, a file:// URL, an
	// https:// base address, or an http:// one on a loopback address (see
	// [ParseURL]).
	URL string
	// Token is sent as "Authorization: Bearer TOKEN" over HTTP; optional.
	Token string
	// HTTPClient sends the requests. Default: a client of its own whose
	// requests time out after 5 minutes. Either way, redirects are followed
	// only within the origin of URL (see [consumer.SameOriginRedirects]).
	HTTPClient *http.Client
	// MaxRetries bounds the retries of one download after a 408, a 429, a
	// 5xx other than 501, a network error or a cut body, and, again, of a
	// file failing its checksum: the budget of the REST transport
	// ([consumer.ClientConfig]). Default 8; negative means none.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff with full
	// jitter between retries. Defaults 250ms and 30s. A server's Retry-After
	// is honoured up to MaxRetryAfter.
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter caps a server's Retry-After. Default 5m.
	MaxRetryAfter time.Duration
	// OnRetry, when set, is called before each retry over HTTP with what
	// failed.
	OnRetry func(consumer.Retry)
	// Now is the clock against which a Retry-After date is read. Default
	// time.Now.
	Now func() time.Time
	// Root, when set, confines a directory export: its URL must name Root
	// or a directory below it ([ErrOutsideRoot] otherwise), and every file is
	// opened through os.OpenRoot(Root), so that neither a symbolic link nor
	// ".." leads out of it. Default "": the export's directory is the root
	// (a link inside it still cannot lead out), and any directory may be
	// named. The oversight service sets it to its --export-root.
	Root string
	// MaxFileBytes bounds the compressed size of a file: one whose manifest
	// names more bytes is [ErrTooLarge] before it is read, and no more bytes
	// than its manifest names are ever read of it. Default
	// DefaultMaxFileBytes (256 MiB).
	MaxFileBytes int64
	// MaxPlainBytes bounds what one file decompresses to: past it, the file
	// is [ErrTooLarge] and decompression stops. A file's own bound is the
	// smaller of MaxPlainBytes and what its manifest's record count allows
	// (records × (MaxLineBytes + 1)). Default DefaultMaxPlainBytes (256 MiB).
	// The manifest names no decompressed size: these bounds stand for it.
	MaxPlainBytes int64
	// MaxLineBytes bounds one line (one record) decompressed: past it, the
	// file is [ErrTooLarge] and decompression stops. Default
	// DefaultMaxLineBytes (8 MiB).
	MaxLineBytes int64
	// CacheBytes bounds the verified, decompressed files kept in memory.
	// Default 256 MiB. The file being read is kept even when larger (it is
	// at most MaxPlainBytes).
	CacheBytes int64
	// Logger receives a warning when the chain of sets has a gap. Default:
	// nothing is logged.
	Logger *slog.Logger
	// Sleep waits between retries. Default: a timer that ends early when
	// ctx ends. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Source reads a scheduled export; it implements [consumer.Source] and is
// safe for concurrent use.
type Source struct {
	loc      location
	log      *slog.Logger
	maxRaw   int64
	maxPlain int64
	maxLine  int64

	mu        sync.Mutex
	manifests map[string]*spec.ExportManifest // by set id: a published manifest never changes
	cache     []*cached                       // most recently used last
	cacheMax  int64
}

type cached struct {
	key   string // set id + "/" + path
	lines *lines
	size  int64
}

// New returns a Source for cfg, or an error saying what is wrong with it.
func New(cfg Config) (*Source, error) {
	dir, base, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = httpclient.DefaultMaxRetries
	}
	if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = httpclient.DefaultMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = httpclient.DefaultMaxBackoff
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = httpclient.DefaultMaxRetryAfter
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		return nil, fmt.Errorf("export: MaxBackoff %s is below MinBackoff %s", cfg.MaxBackoff, cfg.MinBackoff)
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.MaxPlainBytes <= 0 {
		cfg.MaxPlainBytes = DefaultMaxPlainBytes
	}
	if cfg.MaxLineBytes <= 0 {
		cfg.MaxLineBytes = DefaultMaxLineBytes
	}
	if cfg.CacheBytes <= 0 {
		cfg.CacheBytes = 256 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Sleep == nil {
		cfg.Sleep = httpclient.Sleep
	}
	s := &Source{log: cfg.Logger, maxRaw: cfg.MaxFileBytes, maxPlain: cfg.MaxPlainBytes, maxLine: cfg.MaxLineBytes,
		manifests: map[string]*spec.ExportManifest{}, cacheMax: cfg.CacheBytes}
	if base != nil {
		client := cfg.HTTPClient
		if client == nil {
			client = &http.Client{Timeout: 5 * time.Minute}
		}
		// The token goes to the export's origin only.
		client = consumer.SameOriginRedirects(client)
		s.loc = &httpLocation{base: base, token: cfg.Token, client: client, tries: cfg.MaxRetries,
			backoff: httpclient.NewBackoff(cfg.MinBackoff, cfg.MaxBackoff, cfg.MaxRetryAfter, 0),
			sleep:   cfg.Sleep, now: cfg.Now, onRetry: cfg.OnRetry}
	} else {
		if cfg.Token != "" {
			return nil, errors.New("export: a token is sent over HTTP only; a directory takes none")
		}
		loc := dirLocation{root: dir, sub: ".", shown: dir}
		if cfg.Root != "" {
			sub, err := InRoot(cfg.Root, dir)
			if err != nil {
				return nil, fmt.Errorf("export: %w", err)
			}
			loc.root, loc.sub = filepath.Clean(cfg.Root), sub
		}
		s.loc = loc
	}
	return s, nil
}

// InRoot returns the path of directory dir relative to root, or an error
// wrapping [ErrOutsideRoot] that names dir when dir is not root nor below
// it. Both must be absolute; they are compared as cleaned paths, without
// reading the file system (the reads themselves go through os.OpenRoot, which
// refuses a symbolic link leading out).
func InRoot(root, dir string) (string, error) {
	if !filepath.IsAbs(root) {
		return "", fmt.Errorf("the root %q is not an absolute directory", root)
	}
	rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(dir))
	if err != nil || !filepath.IsAbs(dir) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is %w", dir, ErrOutsideRoot)
	}
	return rel, nil
}

// ParseIndex decodes and checks index.json: its schema, and sets in
// strictly ascending sequence with manifests at ID/manifest.json.
func ParseIndex(b []byte) (spec.ExportIndex, error) {
	var idx spec.ExportIndex
	if err := checkSchema("export-index", b); err != nil {
		return idx, err
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return idx, err
	}
	for i, s := range idx.Sets {
		if i > 0 && s.Sequence <= idx.Sets[i-1].Sequence {
			return idx, fmt.Errorf("/sets/%d: sequence %d does not follow %d", i, s.Sequence, idx.Sets[i-1].Sequence)
		}
		if s.Manifest != s.ID+"/"+spec.ExportManifestName {
			return idx, fmt.Errorf("/sets/%d: manifest %q is not %s/%s", i, s.Manifest, s.ID, spec.ExportManifestName)
		}
	}
	return idx, nil
}

var fileName = regexp.MustCompile(`^(conversations|assistants|events|usage)\.ndjson\.gz$`)

// ParseManifest decodes and checks a set's manifest: its schema, one file
// per resource named RESOURCE.ndjson.gz, a usage window only on the usage
// file, and from <= to.
func ParseManifest(b []byte) (spec.ExportManifest, error) {
	var m spec.ExportManifest
	if err := checkSchema("export-manifest", b); err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, err
	}
	seen := map[string]bool{}
	for i, f := range m.Files {
		if seen[f.Resource] {
			return m, fmt.Errorf("/files/%d: a second file of %s", i, f.Resource)
		}
		seen[f.Resource] = true
		if f.Path != f.Resource+".ndjson.gz" || !fileName.MatchString(f.Path) {
			return m, fmt.Errorf("/files/%d/path: %q is not %s.ndjson.gz", i, f.Path, f.Resource)
		}
		if (f.Resource == "usage") != (f.Usage != nil) {
			return m, fmt.Errorf("/files/%d/usage: a usage window belongs to the usage file, and only there", i)
		}
		if f.Usage != nil && !f.Usage.StartAt.Before(f.Usage.EndAt.Time) {
			return m, fmt.Errorf("/files/%d/usage: startAt is not before endAt", i)
		}
	}
	if !m.From.IsZero() && m.From.After(m.To.Time) {
		return m, errors.New("/from: later than /to")
	}
	return m, nil
}

func checkSchema(name string, b []byte) error {
	findings, err := spec.Validate(name, b, spec.WithMode(spec.Lenient))
	if err != nil {
		return err
	}
	if !spec.Valid(findings) {
		return errors.New(findings[0].String())
	}
	return nil
}

// chain is the sets a walk reads: the latest full set and the increments
// following it without a gap, in order.
type chain struct {
	sets []*spec.ExportManifest
}

// manifest returns the manifest of set id, read once and kept.
func (s *Source) manifest(ctx context.Context, id string) (*spec.ExportManifest, error) {
	if err := spec.CheckExportSetID(id); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	s.mu.Lock()
	m := s.manifests[id]
	s.mu.Unlock()
	if m != nil {
		return m, nil
	}
	rel := id + "/" + spec.ExportManifestName
	b, err := s.loc.get(ctx, rel, MaxMetaBytes)
	if errors.Is(err, errLarger) {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrTooLarge, rel, MaxMetaBytes)
	}
	if err != nil {
		return nil, err
	}
	parsed, err := ParseManifest(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, rel, err)
	}
	if parsed.ID != id {
		return nil, fmt.Errorf("%w: %s names set %q", ErrCorrupt, rel, parsed.ID)
	}
	s.mu.Lock()
	s.manifests[id] = &parsed
	s.mu.Unlock()
	return &parsed, nil
}

// chain reads the index and builds the chain of the latest full set.
func (s *Source) chain(ctx context.Context) (chain, error) {
	b, err := s.loc.get(ctx, spec.ExportIndexName, MaxMetaBytes)
	if errors.Is(err, errLarger) {
		return chain{}, fmt.Errorf("%w: %s: larger than %d bytes", ErrTooLarge, spec.ExportIndexName, MaxMetaBytes)
	}
	if errors.Is(err, errMissing) {
		return chain{}, fmt.Errorf("%w: %s has no %s (no set published yet?)", provider.ErrUnavailable, s.loc, spec.ExportIndexName)
	}
	if err != nil {
		return chain{}, err
	}
	idx, err := ParseIndex(b)
	if err != nil {
		return chain{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, spec.ExportIndexName, err)
	}
	// The latest full set whose manifest can be read: a listed manifest that
	// is gone was pruned after the index was read.
	start := -1
	var full *spec.ExportManifest
	for i := len(idx.Sets) - 1; i >= 0 && full == nil; i-- {
		if idx.Sets[i].Kind != spec.ExportFull {
			continue
		}
		m, err := s.manifest(ctx, idx.Sets[i].ID)
		if errors.Is(err, errMissing) {
			continue
		}
		if err != nil {
			return chain{}, err
		}
		if m.Kind != spec.ExportFull || m.Sequence != idx.Sets[i].Sequence {
			return chain{}, fmt.Errorf("%w: %s: the index lists it as full set %d", ErrCorrupt, m.ID, idx.Sets[i].Sequence)
		}
		start, full = i, m
	}
	if full == nil {
		return chain{}, fmt.Errorf("%w: %s holds no full set", provider.ErrUnavailable, s.loc)
	}
	c := chain{sets: []*spec.ExportManifest{full}}
	prev := full
	for _, e := range idx.Sets[start+1:] {
		gap := func(why string) {
			s.log.Warn("export chain has a gap: reading up to the set before it", "export", s.loc.String(),
				"after", prev.ID, "set", e.ID, "reason", why)
		}
		if e.Sequence != prev.Sequence+1 {
			gap(fmt.Sprintf("sequence %d is missing", prev.Sequence+1))
			break
		}
		m, err := s.manifest(ctx, e.ID)
		if errors.Is(err, errMissing) {
			gap("its manifest is missing")
			break
		}
		if err != nil {
			return chain{}, err
		}
		if m.Kind != spec.ExportIncrement || m.Previous != prev.ID || m.Sequence != prev.Sequence+1 {
			// A later full set than the one found would have been taken;
			// this is a set that does not continue the chain.
			gap(fmt.Sprintf("it is %s %d after %q, not the increment after %s", m.Kind, m.Sequence, m.Previous, prev.ID))
			break
		}
		c.sets = append(c.sets, m)
		prev = m
	}
	return c, nil
}

// file returns the verified lines of the file of resource r in set m.
func (s *Source) file(ctx context.Context, m *spec.ExportManifest, f *spec.ExportFile) (*lines, error) {
	key := m.ID + "/" + f.Path
	s.mu.Lock()
	for i, c := range s.cache {
		if c.key == key {
			s.cache = append(append(s.cache[:i:i], s.cache[i+1:]...), c)
			s.mu.Unlock()
			return c.lines, nil
		}
	}
	s.mu.Unlock()
	if f.Bytes > s.maxRaw {
		return nil, fmt.Errorf("%w: %s: its manifest names %d bytes, more than the %d this reader reads", ErrTooLarge, key, f.Bytes, s.maxRaw)
	}
	var lines *lines
	var err error
	for attempt := 0; ; attempt++ {
		var b []byte
		// No more bytes than the manifest names are read: one more says
		// the file is longer.
		b, err = s.loc.get(ctx, key, f.Bytes)
		if errors.Is(err, errMissing) {
			return nil, fmt.Errorf("%w: %s: the file the manifest names is missing", ErrCorrupt, key)
		}
		if errors.Is(err, errLarger) {
			err = fmt.Errorf("%w: %s: larger than the %d bytes its manifest names", ErrCorrupt, key, f.Bytes)
		} else if err != nil {
			return nil, err
		} else {
			lines, err = s.verify(b, f)
			if err == nil {
				break
			}
			if errors.Is(err, ErrTooLarge) {
				return nil, fmt.Errorf("%s: %w", key, err) // the same bytes again would be as large
			}
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
		}
		if attempt >= s.loc.retries() || ctx.Err() != nil {
			return nil, err
		}
		if err := s.loc.retry(ctx, attempt, 0, -1, err); err != nil {
			return nil, err
		}
	}
	size := lines.size()
	s.mu.Lock()
	s.cache = append(s.cache, &cached{key: key, lines: lines, size: size})
	total := int64(0)
	for _, c := range s.cache {
		total += c.size
	}
	for len(s.cache) > 1 && total > s.cacheMax {
		total -= s.cache[0].size
		s.cache = s.cache[1:]
	}
	s.mu.Unlock()
	return lines, nil
}

// fileOf returns the file of resource r in m, or nil.
func fileOf(m *spec.ExportManifest, r consumer.Resource) *spec.ExportFile {
	for i := range m.Files {
		if m.Files[i].Resource == string(r) {
			return &m.Files[i]
		}
	}
	return nil
}

// cursor is the position of a walk.
type cursor struct {
	Resource string   `json:"r"`
	Sets     []string `json:"s"`
	Set      int      `json:"i"`           // index in Sets of the set being read
	Line     int      `json:"o"`           // lines of that set's file already read (lists) or of the answer (usage)
	Start    string   `json:"a,omitempty"` // usage: the window asked for
	End      string   `json:"b,omitempty"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor opens a cursor of resource r, or returns provider.ErrInvalid.
func decodeCursor(text string, r consumer.Resource) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err == nil {
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		err = d.Decode(&c)
	}
	switch {
	case err != nil:
		return c, provider.Invalid("cursor", "is not a cursor of this export")
	case c.Resource != string(r):
		return c, provider.Invalid("cursor", "was issued for %q, not %q", c.Resource, r)
	case len(c.Sets) == 0 || c.Set < 0 || c.Set >= len(c.Sets) || c.Line < 0:
		return c, provider.Invalid("cursor", "points outside its walk")
	}
	for _, id := range c.Sets {
		if spec.CheckExportSetID(id) != nil {
			return c, provider.Invalid("cursor", "names a set id that is not one")
		}
	}
	return c, nil
}

// Fetch returns the page of r that q selects; see the package doc for how
// the export's sets map onto pages.
func (s *Source) Fetch(ctx context.Context, r consumer.Resource, q consumer.Query) (consumer.Page, error) {
	if _, err := consumer.ParseResource(string(r)); err != nil {
		return consumer.Page{}, provider.Invalid("resource", "%v", err)
	}
	ctx = context.WithValue(ctx, resourceKey{}, r)
	limit := q.Limit
	if limit <= 0 || limit > provider.MaxLimit {
		limit = provider.MaxLimit
	}
	var sets []*spec.ExportManifest
	var pos cursor
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor, r)
		if err != nil {
			return consumer.Page{}, err
		}
		for _, id := range c.Sets {
			m, err := s.manifest(ctx, id)
			if errors.Is(err, errMissing) {
				return consumer.Page{}, provider.Invalid("cursor", "names set %s, which is no longer published", id)
			}
			if err != nil {
				return consumer.Page{}, err
			}
			sets = append(sets, m)
		}
		pos = c
	} else {
		ch, err := s.chain(ctx)
		if err != nil {
			return consumer.Page{}, err
		}
		if fileOf(ch.sets[0], r) == nil {
			return consumer.Page{}, fmt.Errorf("%w: the export's full set %s has no file of %s", provider.ErrUnsupported, ch.sets[0].ID, r)
		}
		sets = ch.sets
		pos = cursor{Resource: string(r)}
		for _, m := range sets {
			pos.Sets = append(pos.Sets, m.ID)
		}
	}
	var page consumer.Page
	var err error
	if r == consumer.Usage {
		page, err = s.usage(ctx, sets, pos, q, limit)
	} else {
		page, err = s.list(ctx, sets, pos, r, q, limit)
	}
	if q.Cursor != "" && (errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTooLarge)) {
		err = s.superseded(ctx, sets[0], err)
	}
	return page, err
}

// superseded returns err, the failure of a walk's set, unless the provider
// has since written a full set after the walk's first one, full: then the
// walk's cursor is refused (provider.ErrInvalid), so that the poller starts
// its walk over from the new chain instead of failing on the old one for
// ever.
func (s *Source) superseded(ctx context.Context, full *spec.ExportManifest, err error) error {
	ch, cerr := s.chain(ctx)
	if cerr != nil || ch.sets[0].Sequence <= full.Sequence {
		return err
	}
	return provider.Invalid("cursor", "its walk began at full set %s and failed (%v); full set %s replaces that chain", full.ID, err, ch.sets[0].ID)
}

// list reads a page of conversations, assistants or events.
func (s *Source) list(ctx context.Context, sets []*spec.ExportManifest, pos cursor, r consumer.Resource, q consumer.Query, limit int) (consumer.Page, error) {
	since := q.UpdatedSince
	if r == consumer.Events {
		since = q.OccurredAfter
	}
	page := consumer.Page{Paginated: true}
	for pos.Set < len(sets) && len(page.Records) < limit {
		m := sets[pos.Set]
		f := fileOf(m, r)
		// A set whose window ends before the filter holds nothing it keeps.
		if f == nil || (!since.IsZero() && (m.To.Before(since) || (r == consumer.Events && m.To.Equal(since)))) {
			pos.Set, pos.Line = pos.Set+1, 0
			continue
		}
		lines, err := s.file(ctx, m, f)
		if err != nil {
			return consumer.Page{}, err
		}
		if pos.Line > lines.len() {
			return consumer.Page{}, provider.Invalid("cursor", "points past the end of %s/%s", m.ID, f.Path)
		}
		off := lines.offset(pos.Line)
		for pos.Line < lines.len() && len(page.Records) < limit {
			var line []byte
			line, off = lines.next(off)
			pos.Line++
			if !since.IsZero() && !keep(r, line, since) {
				continue
			}
			page.Records = append(page.Records, json.RawMessage(line))
		}
		if pos.Line == lines.len() {
			pos.Set, pos.Line = pos.Set+1, 0
			// A page never spans two sets: a record changed after the
			// full set is in both, and a page holds each id once.
			if len(page.Records) > 0 {
				break
			}
		}
	}
	// Skip the sets left that have nothing for the filter, so that the last
	// page says so and no empty page follows.
	for pos.Set < len(sets) && pos.Line == 0 {
		m := sets[pos.Set]
		if fileOf(m, r) != nil && (since.IsZero() || !m.To.Before(since)) {
			break
		}
		pos.Set++
	}
	if pos.Set < len(sets) {
		page.HasMore = true
		page.NextCursor = pos.encode()
	}
	return page, nil
}

// keep reports whether a record passes the incremental filter: updatedAt
// (startedAt, createdAt without it) >= since for conversations and
// assistants, occurredAt > since for events. A record whose time cannot be
// read is kept, for the poller to quarantine.
func keep(r consumer.Resource, line []byte, since time.Time) bool {
	var v struct {
		UpdatedAt  string `json:"updatedAt"`
		StartedAt  string `json:"startedAt"`
		CreatedAt  string `json:"createdAt"`
		OccurredAt string `json:"occurredAt"`
	}
	if json.Unmarshal(line, &v) != nil {
		return true
	}
	field := v.UpdatedAt
	switch {
	case r == consumer.Events:
		field = v.OccurredAt
	case field == "" && r == consumer.Conversations:
		field = v.StartedAt
	case field == "":
		field = v.CreatedAt
	}
	t, err := spec.ParseTime(field)
	if err != nil {
		return true
	}
	if r == consumer.Events {
		return t.After(since)
	}
	return !t.Before(since)
}

// usage answers a page of the buckets of [q.StartAt, q.EndAt), each hour
// from the newest set of the chain covering it.
func (s *Source) usage(ctx context.Context, sets []*spec.ExportManifest, pos cursor, q consumer.Query, limit int) (consumer.Page, error) {
	start, end := q.StartAt.UTC(), q.EndAt.UTC()
	if pos.Start != "" {
		// The range the walk began with; one sent with the cursor must agree.
		a, errA := spec.ParseTime(pos.Start)
		b, errB := spec.ParseTime(pos.End)
		if errA != nil || errB != nil {
			return consumer.Page{}, provider.Invalid("cursor", "carries no usable range")
		}
		if !q.StartAt.IsZero() && !q.StartAt.Equal(a) || !q.EndAt.IsZero() && !q.EndAt.Equal(b) {
			return consumer.Page{}, provider.Invalid("cursor", "was issued for another startAt/endAt range")
		}
		start, end = a, b
	}
	if start.IsZero() || end.IsZero() || !start.Before(end) {
		return consumer.Page{}, provider.Invalid("startAt", "an export answers usage for a range: startAt and endAt are required, startAt before endAt")
	}
	var window *spec.ExportUsageWindow
	for _, m := range sets {
		if f := fileOf(m, consumer.Usage); f != nil {
			window = f.Usage
		}
	}
	if window == nil {
		return consumer.Page{}, fmt.Errorf("%w: the export has no usage", provider.ErrUnsupported)
	}
	g := q.Granularity
	if g == "" {
		g = spec.GranularityHour
	}
	if g != window.Granularity {
		return consumer.Page{}, provider.Invalid("granularity", "the export holds %s buckets, not %s", window.Granularity, g)
	}
	groupBy := q.GroupBy
	if groupBy == nil {
		groupBy = []string{}
	}
	if !sameSet(groupBy, window.GroupBy) {
		return consumer.Page{}, provider.Invalid("groupBy", "the export holds usage grouped by %v, not %v", window.GroupBy, groupBy)
	}
	type bucket struct {
		key  provider.UsageKey
		line []byte
	}
	var all []bucket
	var covered [][2]time.Time
	in := func(t time.Time) bool {
		for _, c := range covered {
			if !t.Before(c[0]) && t.Before(c[1]) {
				return true
			}
		}
		return false
	}
	for i := len(sets) - 1; i >= 0; i-- {
		m := sets[i]
		f := fileOf(m, consumer.Usage)
		if f == nil {
			continue
		}
		ws, we := f.Usage.StartAt.Time, f.Usage.EndAt.Time
		if !ws.Before(end) || !we.After(start) {
			continue
		}
		if f.Usage.Granularity != window.Granularity || !sameSet(f.Usage.GroupBy, window.GroupBy) {
			return consumer.Page{}, fmt.Errorf("%w: %s/%s: its buckets are not those of the other sets", ErrCorrupt, m.ID, f.Path)
		}
		lines, err := s.file(ctx, m, f)
		if err != nil {
			return consumer.Page{}, err
		}
		for i, off := 0, 0; i < lines.len(); i++ {
			var line []byte
			line, off = lines.next(off)
			var b spec.UsageBucket
			if err := json.Unmarshal(line, &b); err != nil {
				return consumer.Page{}, fmt.Errorf("%w: %s/%s: a line is not a usage bucket: %v", ErrCorrupt, m.ID, f.Path, err)
			}
			t := b.StartAt.UTC()
			if t.Before(start) || !t.Before(end) || t.Before(ws) || !t.Before(we) || in(t) {
				continue
			}
			all = append(all, bucket{key: provider.BucketKey(&b), line: line})
		}
		covered = append(covered, [2]time.Time{ws, we})
	}
	slices.SortFunc(all, func(a, b bucket) int {
		switch {
		case a.key.Less(b.key):
			return -1
		case b.key.Less(a.key):
			return 1
		}
		return 0
	})
	if pos.Line > len(all) {
		return consumer.Page{}, provider.Invalid("cursor", "points past the end of the answer")
	}
	page := consumer.Page{Paginated: true}
	n := min(len(all)-pos.Line, limit)
	for _, b := range all[pos.Line : pos.Line+n] {
		page.Records = append(page.Records, json.RawMessage(b.line))
	}
	if pos.Line+n < len(all) {
		pos.Line += n
		pos.Start, pos.End = spec.NewTime(start).String(), spec.NewTime(end).String()
		if !spec.NewTime(start).Equal(start) || !spec.NewTime(end).Equal(end) {
			return consumer.Page{}, provider.Invalid("startAt", "must be whole milliseconds")
		}
		page.HasMore = true
		page.NextCursor = pos.encode()
	}
	return page, nil
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

var _ consumer.Source = (*Source)(nil)
