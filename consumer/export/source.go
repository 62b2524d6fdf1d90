package export

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
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

var _ consumer.Source = (*Source)(nil)
