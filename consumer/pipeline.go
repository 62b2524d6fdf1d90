package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/aiusage/kit/provider"
)

// pipelineDepth is how many pages may wait between two stages.
const pipelineDepth = 4

// item is a page on its way through a walk's pipeline.
type item struct {
	page   Page
	parsed []parsed
	// more reports that another page follows; page.NextCursor fetches it.
	more bool
	// restarted reports that the walk started over (the provider rejected
	// a cursor) before this page.
	restarted bool
	err       error
	// firstPage reports that the failed request asked for a walk's first
	// page (no cursor).
	firstPage bool
}

// pipeline walks pages in three stages so that the network, the checks
// and the store work at once: a fetcher follows the cursors, a parser
// checks each page's records on every core, and the caller commits the
// pages in order from the returned channel. At most a few pages are in
// flight, so memory does not grow with the collection. The channel closes
// after the last page or after an item carrying an error; cancelling ctx
// stops both stages.
//
// When the provider rejects a cursor (400, or 404/410 as some answer for an
// expired one), the fetcher starts the walk over from the first page with
// the same filters, up to MaxRestarts times.
func (s *run) pipeline(ctx context.Context, query func(cursor string) Query, cursor string, parse func(json.RawMessage) parsed) <-chan item {
	fetched := make(chan item, pipelineDepth)
	out := make(chan item, pipelineDepth)
	send := func(ch chan<- item, it item) bool {
		select {
		case ch <- it:
			return true
		case <-ctx.Done():
			return false
		}
	}
	go func() {
		defer close(fetched)
		seen := map[string]bool{}
		restarts := 0
		restarted := false
		defaultLimit := false // the provider refused our page size
		next := func(cursor string) Query {
			q := query(cursor)
			if defaultLimit {
				q.Limit = 0
			}
			return q
		}
		q := next(cursor)
		for {
			page, err := s.p.src.Fetch(ctx, s.r, q)
			var pe *provider.Error
			if err != nil && q.Limit != 0 && errors.As(err, &pe) && pe.Kind == provider.ErrInvalid && pe.Field == "limit" {
				// A provider with a smaller maximum page size that
				// answers 400 rather than clamping: use its default.
				defaultLimit = true
				q.Limit = 0
				continue
			}
			if err != nil {
				cursorRefused := q.Cursor != "" && (errors.Is(err, provider.ErrInvalid) || errors.Is(err, provider.ErrNotFound))
				if cursorRefused && restarts < s.p.cfg.MaxRestarts && ctx.Err() == nil {
					// A rotated cursor key, an expired cursor, a cursor of
					// another deployment: start over with the same
					// filters. Committed records stay; the run number
					// stays, so a full walk still sweeps right.
					restarts++
					restarted = true
					s.p.cfg.Logger.Debug("cursor rejected, walk restarts", "source", s.p.cfg.Source, "resource", s.r, "err", err)
					clear(seen)
					q = next("")
					continue
				}
				if cursorRefused {
					// Not "the resource is not offered": its first page
					// was served. Report it without the error kind.
					err = fmt.Errorf("the provider keeps refusing the cursors of this walk: %v", err)
				}
				send(fetched, item{err: err, firstPage: q.Cursor == ""})
				return
			}
			it := item{page: page, restarted: restarted, more: page.HasMore && page.Paginated}
			restarted = false
			if page.HasMore && page.NextCursor == "" {
				send(fetched, item{err: errors.New("the provider answered hasMore without a nextCursor")})
				return
			}
			if it.more {
				if seen[page.NextCursor] {
					send(fetched, item{err: fmt.Errorf("the provider returned cursor %.40q twice in one walk: its pagination loops", page.NextCursor)})
					return
				}
				seen[page.NextCursor] = true
			}
			if !send(fetched, it) || !it.more {
				return
			}
			q = next(page.NextCursor)
		}
	}()
	go func() {
		defer close(out)
		workers := max(runtime.GOMAXPROCS(0), 1)
		for it := range fetched {
			if it.err == nil {
				it.parsed = parseAll(it.page.Records, parse, workers)
			}
			if !send(out, it) {
				return
			}
		}
	}()
	return out
}

// parseAll parses records on up to workers goroutines, keeping their order.
func parseAll(records []json.RawMessage, parse func(json.RawMessage) parsed, workers int) []parsed {
	out := make([]parsed, len(records))
	if workers < 2 || len(records) < 16 {
		for i, raw := range records {
			out[i] = parse(raw)
		}
		return out
	}
	var wg sync.WaitGroup
	chunk := (len(records) + workers - 1) / workers
	for lo := 0; lo < len(records); lo += chunk {
		hi := min(lo+chunk, len(records))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				out[i] = parse(records[i])
			}
		}()
	}
	wg.Wait()
	return out
}
