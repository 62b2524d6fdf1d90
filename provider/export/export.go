package export

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Kind chooses what [Exporter.Write] writes.
type Kind int

const (
	// Auto writes a full set when there is none yet or the latest is older
	// than [Config.FullEvery], an increment otherwise.
	Auto Kind = iota
	// Full writes every record.
	Full
	// Increment writes what changed since the previous set, or a full set
	// when there is no previous set.
	Increment
)

// Resources lists the resources of a set, in the order they are written.
var Resources = []string{"conversations", "assistants", "events", "usage"}

// Config configures an [Exporter]. Dir and Tenant are required; every other
// field has the default its comment names.
type Config struct {
	// Dir is the export's root directory; it is created when missing.
	Dir string
	// Tenant is the tenant whose data is exported.
	Tenant string
	// Overlap is how far before the creation of the previous set an
	// increment starts, so that a record committed late (with an updatedAt
	// or occurredAt before the moment it became visible) is not missed.
	// Default 5m.
	Overlap time.Duration
	// FullEvery is how old the latest full set may be before [Auto] writes a
	// full set again. Default 24h.
	FullEvery time.Duration
	// UsageBackfill is how far back the usage of a full set reaches.
	// Default 30 days.
	UsageBackfill time.Duration
	// UsageTrailing is how far back the usage of an increment reaches at
	// least, because recent buckets still change. Default 48h.
	UsageTrailing time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Exporter writes sets of a provider.DataSource to a directory.
type Exporter struct {
	ds  provider.DataSource
	raw provider.RawSource // nil when ds has no raw capability
	cfg Config
}

// New returns an Exporter of ds, or an error naming the bad field of cfg.
func New(ds provider.DataSource, cfg Config) (*Exporter, error) {
	if ds == nil {
		return nil, errors.New("export: nil DataSource")
	}
	if strings.TrimSpace(cfg.Dir) == "" {
		return nil, errors.New("export: Config.Dir is required")
	}
	if cfg.Tenant == "" {
		return nil, errors.New("export: Config.Tenant is required")
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"Overlap", &cfg.Overlap, 5 * time.Minute},
		{"FullEvery", &cfg.FullEvery, 24 * time.Hour},
		{"UsageBackfill", &cfg.UsageBackfill, 30 * 24 * time.Hour},
		{"UsageTrailing", &cfg.UsageTrailing, 48 * time.Hour},
	} {
		if *d.v < 0 {
			return nil, fmt.Errorf("export: Config.%s must not be negative, got %s", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	x := &Exporter{ds: ds, cfg: cfg}
	x.raw, _ = ds.(provider.RawSource)
	return x, nil
}

// Sets returns the manifests of the sets published in dir, in ascending
// sequence. A set directory without a manifest is not a set; a manifest
// that cannot be read or does not match its directory is an error naming
// it.
func Sets(dir string) ([]spec.ExportManifest, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("export: read %s: %w", dir, err)
	}
	var out []spec.ExportManifest
	for _, e := range entries {
		if !e.IsDir() || spec.CheckExportSetID(e.Name()) != nil {
			continue
		}
		name := filepath.Join(dir, e.Name(), spec.ExportManifestName)
		b, err := os.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) {
			continue // not published (yet): a write in progress or interrupted
		}
		if err != nil {
			return nil, fmt.Errorf("export: read %s: %w", name, err)
		}
		var m spec.ExportManifest
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("export: manifest %s: %w", name, err)
		}
		if m.ID != e.Name() {
			return nil, fmt.Errorf("export: manifest %s names set %q, not its directory", name, m.ID)
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b spec.ExportManifest) int { return int(a.Sequence - b.Sequence) })
	return out, nil
}

// Write writes one set of kind k and publishes it, and returns its
// manifest. Set directories left without a manifest by an interrupted
// write are removed first.
func (x *Exporter) Write(ctx context.Context, k Kind) (spec.ExportManifest, error) {
	if err := os.MkdirAll(x.cfg.Dir, 0o755); err != nil {
		return spec.ExportManifest{}, fmt.Errorf("export: %w", err)
	}
	sets, err := Sets(x.cfg.Dir)
	if err != nil {
		return spec.ExportManifest{}, err
	}
	if err := x.removeUnpublished(sets); err != nil {
		return spec.ExportManifest{}, err
	}
	now := x.cfg.Now().UTC().Truncate(time.Millisecond)
	var prev *spec.ExportManifest
	if len(sets) > 0 {
		prev = &sets[len(sets)-1]
	}
	full := prev == nil || k == Full
	if k == Auto && prev != nil {
		last := latestFull(sets)
		full = last == nil || now.Sub(last.CreatedAt.Time) >= x.cfg.FullEvery
	}
	m := spec.ExportManifest{Format: spec.ExportFormat, Sequence: 1, Kind: spec.ExportFull, CreatedAt: spec.NewTime(now), Tenant: x.cfg.Tenant}
	if prev != nil {
		m.Sequence = prev.Sequence + 1
		m.Previous = prev.ID
		if !now.After(prev.CreatedAt.Time) {
			return m, fmt.Errorf("export: the clock (%s) is not past the creation of the previous set %s", spec.NewTime(now), prev.ID)
		}
	}
	if !full {
		m.Kind = spec.ExportIncrement
		m.From = spec.NewTime(prev.CreatedAt.Add(-x.cfg.Overlap))
	}
	m.ID = spec.ExportSetID(m.Sequence, now)
	setDir := filepath.Join(x.cfg.Dir, m.ID)
	if err := os.Mkdir(setDir, 0o755); err != nil {
		return m, fmt.Errorf("export: %w", err)
	}
	to := now
	usageFrom := now.Add(-x.cfg.UsageBackfill).Truncate(time.Hour)
	if !full {
		usageFrom = now.Add(-x.cfg.UsageTrailing).Truncate(time.Hour)
		if p := prev.CreatedAt.Truncate(time.Hour); p.Before(usageFrom) {
			usageFrom = p
		}
	}
	usageEnd := now.Truncate(time.Hour).Add(time.Hour)
	for _, r := range Resources {
		f, latest, err := x.writeFile(ctx, setDir, r, m.From.Time, usageFrom, usageEnd)
		if errors.Is(err, provider.ErrUnsupported) {
			continue // the source does not hold r: the set has no file of it
		}
		if err != nil {
			return m, fmt.Errorf("export: set %s: %s: %w", m.ID, r, err)
		}
		if latest.After(to) {
			to = latest
		}
		m.Files = append(m.Files, f)
	}
	m.To = spec.NewTime(to)
	if m.Files == nil {
		m.Files = []spec.ExportFile{}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, fmt.Errorf("export: encode manifest: %w", err)
	}
	if err := syncDir(setDir); err != nil {
		return m, err
	}
	if err := writeAtomic(setDir, spec.ExportManifestName, b); err != nil {
		return m, err
	}
	if err := x.writeIndex(); err != nil {
		return m, err
	}
	return m, nil
}

// latestFull returns the latest full set of sets, or nil.
func latestFull(sets []spec.ExportManifest) *spec.ExportManifest {
	for i := len(sets) - 1; i >= 0; i-- {
		if sets[i].Kind == spec.ExportFull {
			return &sets[i]
		}
	}
	return nil
}

// removeUnpublished removes the set directories that have no manifest and
// the temporary index files: what an interrupted write left.
func (x *Exporter) removeUnpublished(sets []spec.ExportManifest) error {
	entries, err := os.ReadDir(x.cfg.Dir)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	published := map[string]bool{}
	for _, m := range sets {
		published[m.ID] = true
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasPrefix(e.Name(), "."+spec.ExportIndexName+".") && strings.HasSuffix(e.Name(), ".tmp") {
			// A temporary index left by a crash before its rename.
			if err := os.Remove(filepath.Join(x.cfg.Dir, e.Name())); err != nil {
				return fmt.Errorf("export: remove %s: %w", e.Name(), err)
			}
			continue
		}
		if !e.IsDir() || spec.CheckExportSetID(e.Name()) != nil || published[e.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(x.cfg.Dir, e.Name())); err != nil {
			return fmt.Errorf("export: remove the unpublished set %s: %w", e.Name(), err)
		}
	}
	return nil
}

// writeIndex rewrites index.json from the manifests on disk.
func (x *Exporter) writeIndex() error {
	sets, err := Sets(x.cfg.Dir)
	if err != nil {
		return err
	}
	idx := spec.ExportIndex{Format: spec.ExportFormat, UpdatedAt: spec.NewTime(x.cfg.Now()), Sets: []spec.ExportIndexSet{}}
	for _, m := range sets {
		idx.Sets = append(idx.Sets, spec.ExportIndexSet{ID: m.ID, Sequence: m.Sequence, Kind: m.Kind, Manifest: m.ID + "/" + spec.ExportManifestName})
	}
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return fmt.Errorf("export: encode index: %w", err)
	}
	return writeAtomic(x.cfg.Dir, spec.ExportIndexName, b)
}

// writeAtomic writes b to dir/name through a temporary file that is synced
// and renamed into place, then syncs dir.
func writeAtomic(dir, name string, b []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename: nothing left to remove
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("export: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("export: sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("export: close %s: %w", tmp.Name(), err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("export: publish %s: %w", name, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("export: sync %s: %w", dir, err)
	}
	return nil
}

// fileWriter is one gzip-compressed NDJSON file being written, counted and
// hashed.
type fileWriter struct {
	f       *os.File
	sum     hash.Hash
	n       int64 // compressed bytes
	gz      *gzip.Writer
	records int64
	line    bytes.Buffer
}

func (w *fileWriter) Write(p []byte) (int, error) {
	w.sum.Write(p)
	w.n += int64(len(p))
	return w.f.Write(p)
}

// add writes one record as one line; JSON that spans lines is compacted.
func (w *fileWriter) add(b []byte) error {
	if bytes.IndexByte(b, '\n') >= 0 || bytes.IndexByte(b, '\r') >= 0 {
		w.line.Reset()
		if err := json.Compact(&w.line, b); err != nil {
			return fmt.Errorf("record is not JSON: %w", err)
		}
		b = w.line.Bytes()
	}
	if len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("record is not a JSON object: %.40q", b)
	}
	if _, err := w.gz.Write(b); err != nil {
		return err
	}
	w.records++
	_, err := w.gz.Write([]byte{'\n'})
	return err
}

// writeFile writes the file of resource r into setDir and returns its
// entry and the latest record time it holds.
func (x *Exporter) writeFile(ctx context.Context, setDir, r string, since, usageFrom, usageEnd time.Time) (spec.ExportFile, time.Time, error) {
	ef := spec.ExportFile{Resource: r, Path: r + ".ndjson.gz"}
	name := filepath.Join(setDir, ef.Path)
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return ef, time.Time{}, err
	}
	defer f.Close()
	w := &fileWriter{f: f, sum: sha256.New()}
	w.gz = gzip.NewWriter(w)
	var latest time.Time
	switch r {
	case "conversations", "assistants", "events":
		latest, err = x.writeList(ctx, r, since, w)
	case "usage":
		ef.Usage = &spec.ExportUsageWindow{StartAt: spec.NewTime(usageFrom), EndAt: spec.NewTime(usageEnd),
			Granularity: spec.GranularityHour, GroupBy: slices.Clone(spec.Dimensions)}
		err = x.writeUsage(ctx, usageFrom, usageEnd, w)
	}
	if err != nil {
		f.Close()
		os.Remove(name)
		return ef, latest, err
	}
	if err := w.gz.Close(); err != nil {
		return ef, latest, err
	}
	if err := f.Sync(); err != nil {
		return ef, latest, err
	}
	if err := f.Close(); err != nil {
		return ef, latest, err
	}
	ef.Records, ef.Bytes, ef.SHA256 = w.records, w.n, hex.EncodeToString(w.sum.Sum(nil))
	return ef, latest, nil
}

// writeList writes every record of a list resource that since selects
// (none: all of them), walking the source's keyset pages.
func (x *Exporter) writeList(ctx context.Context, r string, since time.Time, w *fileWriter) (time.Time, error) {
	var latest time.Time
	var after *provider.Key
	for {
		var (
			recs    []provider.RawRecord
			hasMore bool
			err     error
		)
		switch r {
		case "conversations":
			q := provider.ConversationQuery{Tenant: x.cfg.Tenant, After: after, UpdatedSince: since, Limit: provider.MaxLimit}
			if x.raw != nil {
				var p provider.Page[provider.RawRecord]
				p, err = x.raw.ListConversationsRaw(ctx, q)
				recs, hasMore = p.Items, p.HasMore
			} else {
				var p provider.Page[spec.Conversation]
				p, err = x.ds.ListConversations(ctx, q)
				recs, hasMore = encode(p, provider.ConversationKey), p.HasMore
			}
		case "assistants":
			q := provider.AssistantQuery{Tenant: x.cfg.Tenant, After: after, UpdatedSince: since, Limit: provider.MaxLimit}
			if x.raw != nil {
				var p provider.Page[provider.RawRecord]
				p, err = x.raw.ListAssistantsRaw(ctx, q)
				recs, hasMore = p.Items, p.HasMore
			} else {
				var p provider.Page[spec.Assistant]
				p, err = x.ds.ListAssistants(ctx, q)
				recs, hasMore = encode(p, provider.AssistantKey), p.HasMore
			}
		case "events":
			q := provider.EventQuery{Tenant: x.cfg.Tenant, After: after, OccurredAfter: since, Limit: provider.MaxLimit}
			if x.raw != nil {
				var p provider.Page[provider.RawRecord]
				p, err = x.raw.ListEventsRaw(ctx, q)
				recs, hasMore = p.Items, p.HasMore
			} else {
				var p provider.Page[spec.Event]
				p, err = x.ds.ListEvents(ctx, q)
				recs, hasMore = encode(p, provider.EventKey), p.HasMore
			}
		}
		if err != nil {
			return latest, err
		}
		for _, rec := range recs {
			if rec.JSON == nil {
				return latest, fmt.Errorf("encode record %q: %w", rec.Key.ID, errEncode)
			}
			if err := w.add(rec.JSON); err != nil {
				return latest, fmt.Errorf("record %q: %w", rec.Key.ID, err)
			}
			if rec.Key.Time.After(latest) {
				latest = rec.Key.Time
			}
		}
		if !hasMore {
			return latest, nil
		}
		if len(recs) == 0 {
			return latest, errors.New("the data source returned an empty page with HasMore set")
		}
		k := recs[len(recs)-1].Key
		after = &k
	}
}

var errEncode = errors.New("the record does not encode as JSON")

// encode turns a typed page into records as the REST interface writes them
// (encoding/json, HTML characters escaped); a record that does not encode
// has nil JSON.
func encode[T any](p provider.Page[T], key func(*T) provider.Key) []provider.RawRecord {
	out := make([]provider.RawRecord, len(p.Items))
	for i := range p.Items {
		b, err := json.Marshal(&p.Items[i])
		if err != nil {
			b = nil
		}
		out[i] = provider.RawRecord{Key: key(&p.Items[i]), JSON: b}
	}
	return out
}

// writeUsage writes the hourly buckets of [from, end), grouped by every
// dimension.
func (x *Exporter) writeUsage(ctx context.Context, from, end time.Time, w *fileWriter) error {
	q := provider.UsageQuery{Tenant: x.cfg.Tenant, Start: from, End: end, Granularity: spec.GranularityHour,
		GroupBy: slices.Clone(spec.Dimensions), Limit: provider.MaxLimit}
	for {
		p, err := x.ds.Usage(ctx, q)
		if err != nil {
			return err
		}
		for i := range p.Items {
			b, err := json.Marshal(&p.Items[i])
			if err != nil {
				return fmt.Errorf("bucket %s: %w", p.Items[i].StartAt, err)
			}
			if err := w.add(b); err != nil {
				return err
			}
		}
		if !p.HasMore {
			return nil
		}
		if len(p.Items) == 0 {
			return errors.New("the data source returned an empty page with HasMore set")
		}
		k := provider.BucketKey(&p.Items[len(p.Items)-1])
		q.After = &k
	}
}

// Prune removes the sets created longer than keep ago, except the latest
// full set and every set after it, and returns the ids removed. The
// manifests go first (the sets stop existing), then the index is rewritten
// without them, then their files go: a reader holding the old index finds a
// pruned set's manifest missing, never a manifest without its files.
func (x *Exporter) Prune(keep time.Duration) ([]string, error) {
	if keep <= 0 {
		return nil, fmt.Errorf("export: the retention must be positive, got %s", keep)
	}
	sets, err := Sets(x.cfg.Dir)
	if err != nil {
		return nil, err
	}
	last := latestFull(sets)
	if last == nil {
		return nil, nil
	}
	cutoff := x.cfg.Now().Add(-keep)
	var gone []string
	for _, m := range sets {
		if m.Sequence < last.Sequence && m.CreatedAt.Before(cutoff) {
			gone = append(gone, m.ID)
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	for _, id := range gone {
		if err := os.Remove(filepath.Join(x.cfg.Dir, id, spec.ExportManifestName)); err != nil {
			return nil, fmt.Errorf("export: prune %s: %w", id, err)
		}
	}
	if err := x.writeIndex(); err != nil {
		return nil, err
	}
	for _, id := range gone {
		if err := os.RemoveAll(filepath.Join(x.cfg.Dir, id)); err != nil {
			return nil, fmt.Errorf("export: prune %s: %w", id, err)
		}
	}
	return gone, nil
}

// Run writes a set (of kind [Auto]) every interval until ctx ends, pruning
// after each when keep is positive, and then returns nil. A failed write is
// reported through onSet and retried at the next tick; Run itself fails
// only for a non-positive interval.
func (x *Exporter) Run(ctx context.Context, every, keep time.Duration, onSet func(spec.ExportManifest, []string, error)) error {
	if every <= 0 {
		return errors.New("export: Run: the interval must be positive")
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		m, err := x.Write(ctx, Auto)
		var pruned []string
		if err == nil && keep > 0 {
			pruned, err = x.Prune(keep)
		}
		if ctx.Err() != nil {
			return nil
		}
		if onSet != nil {
			onSet(m, pruned, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
