package conformance

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Paging checks about whole walks (checkPaging runs them): PAGE-01, a walk
// ends; PAGE-04, two walks agree; PAGE-11, empty pages with hasMore true.

// lastPagesStalled reports whether a walk stopped at the page cap made no
// progress in its last pages: they were empty or repeated records already
// seen.
func lastPagesStalled(resource string, w *walk) bool {
	if len(w.Pages) < 3 {
		return false
	}
	seen := map[string]bool{}
	tail := w.Pages[len(w.Pages)-3:]
	n := 0
	for _, ex := range w.Pages[:len(w.Pages)-3] {
		recs, _, _ := decodeListPage(resource, ex)
		for _, r := range recs {
			seen[r.ID] = true
		}
	}
	for _, ex := range tail {
		recs, _, problem := decodeListPage(resource, ex)
		if problem != "" {
			return false
		}
		for _, r := range recs {
			if !seen[r.ID] {
				return false
			}
			n++
		}
	}
	return true
}

// --- PAGE-01

func (p *pagingChecks) walkEnds(ctx context.Context, r string, full *walk) {
	s := p.s
	const id = "PAGE-01"
	ep := endpoint(r)
	switch {
	case full.Complete():
	case strings.HasPrefix(full.Problem, "a cursor came back"):
		s.fail(id, ep, fmt.Sprintf("after %d pages, nextCursor repeated a cursor already followed: the walk would never end", len(full.Pages)), full.Ex.evidence("/nextCursor"))
		return
	case strings.HasPrefix(full.Problem, "hasMore is true but nextCursor"):
		s.skip(id, ep, "the walk stopped at a page with hasMore true and no nextCursor (ENV-03)")
		return
	case strings.HasPrefix(full.Problem, "stopped after the page cap"):
		if lastPagesStalled(r, full) {
			last := full.Pages[len(full.Pages)-1]
			s.fail(id, ep, fmt.Sprintf("the walk did not end within %d pages and its last pages brought no new record: it would never end", len(full.Pages)), last.evidence(""))
		} else {
			s.skip(id, ep, fmt.Sprintf("the walk %s and was still bringing new records: raise the page cap", full.Problem))
		}
		return
	default:
		s.skip(id, ep, "the walk stopped early: "+full.Problem)
		return
	}
	msg := fmt.Sprintf("the walk ended after %d pages and %d records without repeating a cursor", len(full.Pages), len(full.Records))
	// A walk of one or two pages has had little chance to loop: walk again
	// with a small page, for a bounded number of pages.
	if len(full.Pages) < 3 && len(full.Records) > 7 && s.enabled(id) {
		const limit, maxPages = 7, 20
		pw := s.walkPages(ctx, r, nil, limit, maxPages, nil)
		switch {
		case strings.HasPrefix(pw.Problem, "a cursor came back"):
			s.fail(id, ep, fmt.Sprintf("with limit=%d, page %d's nextCursor repeated a cursor already followed: the walk would never end", limit, len(pw.Pages)), pw.Ex.evidence("/nextCursor"))
			return
		case pw.Problem == "" && !pw.More:
			msg += fmt.Sprintf("; so did a walk with limit=%d (%d pages)", limit, len(pw.Pages))
		case pw.Problem == "":
			msg += fmt.Sprintf("; a walk with limit=%d repeated no cursor in %d pages", limit, len(pw.Pages))
		}
	}
	// A page that ends exactly on the last record is where a provider that
	// sets hasMore from "the page is full" goes wrong: walk with the number
	// of records as the page size, for a few pages.
	if n := len(full.Records); n > 0 && n <= 1000 && s.enabled(id) {
		pw := s.walkPages(ctx, r, nil, n, 4, nil)
		if strings.HasPrefix(pw.Problem, "a cursor came back") {
			s.fail(id, ep, fmt.Sprintf("with limit=%d (the number of records), page %d's nextCursor repeated a cursor already followed: the walk would never end", n, len(pw.Pages)), pw.Ex.evidence("/nextCursor"))
			return
		}
	}
	s.pass(id, ep, msg)
}

// --- PAGE-04

func (p *pagingChecks) deterministic(ctx context.Context, r string, full *walk, unsafe bool) *walk {
	s := p.s
	const id = "PAGE-04"
	ep := endpoint(r)
	if !s.enabled(id) {
		return nil
	}
	if unsafe {
		s.skip(id, ep, "cursors are not retry-safe (PAGE-05): walks cannot be compared")
		return nil
	}
	if !full.Complete() {
		s.skip(id, ep, "the full walk did not complete: "+full.Problem)
		return nil
	}
	prev := full
	for attempt := 0; attempt < 2; attempt++ {
		// An option makes walkList walk afresh instead of memoising.
		w := s.walkList(ctx, r, url.Values{}, 1000, bearer(s.cfg.Token))
		if !w.Complete() {
			s.skip(id, ep, "the second walk did not complete: "+w.Problem)
			return w
		}
		a, b := recordIDs(prev.Records), recordIDs(w.Records)
		if slices.Equal(a, b) {
			msg := fmt.Sprintf("two walks gave the same sequence of %d ids", len(b))
			if attempt == 1 {
				msg += " (a first comparison differed; the data may have changed between the walks)"
			}
			s.pass(id, ep, msg)
			return w
		}
		if attempt == 1 {
			i := 0
			for i < len(a) && i < len(b) && a[i] == b[i] {
				i++
			}
			detail := fmt.Sprintf("one walk has %d records, the other %d", len(a), len(b))
			if i < len(a) && i < len(b) {
				detail = fmt.Sprintf("record %d is %q in one walk and %q in the other", i, truncateID(a[i]), truncateID(b[i]))
			}
			s.fail(id, ep, "three walks in a row gave different id sequences: "+detail, recordEvidence(r, w.Pages, min(i, max(len(b)-1, 0)), "id"))
			return w
		}
		prev = w
	}
	return nil
}

// --- PAGE-11

func (p *pagingChecks) emptyMore(r string, walks ...*walk) {
	s := p.s
	const id = "PAGE-11"
	ep := endpoint(r)
	n, pages := 0, 0
	for _, w := range walks {
		if w != nil {
			n += w.EmptyMore
			pages += len(w.Pages)
		}
	}
	if n == 0 {
		s.pass(id, ep, fmt.Sprintf("no empty page with hasMore true in %d pages", pages))
		return
	}
	s.pass(id, ep, fmt.Sprintf("%d of %d pages were empty with hasMore true (allowed; the walks still ended)", n, pages))
}
