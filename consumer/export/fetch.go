package export

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Fetch: the pages of a walk over the chain of sets, and the cursors that
// carry a walk from one page to the next.

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
