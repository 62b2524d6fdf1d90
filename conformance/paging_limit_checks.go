package conformance

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// Paging checks about page sizes (checkPaging runs them): PAGE-09, limit.

// --- PAGE-09

func (p *pagingChecks) pageSize(ctx context.Context, r string, full *walk) {
	s := p.s
	const id = "PAGE-09"
	ep := endpoint(r)
	if !s.enabled(id) {
		return
	}
	bad := 0
	for _, ex := range full.Pages {
		recs, _, problem := decodeListPage(r, ex)
		if problem == "" && len(recs) > 1000 {
			s.fail(id, ep, fmt.Sprintf("limit=1000 answered %d records", len(recs)), ex.evidence("/data"))
			bad++
			break
		}
	}
	for _, l := range []int{1, 7, 0} {
		q := url.Values{}
		want := 1000
		if l > 0 {
			q.Set("limit", strconv.Itoa(l))
			want = l
		}
		ex := s.get(ctx, ep, q)
		recs, _, problem := decodeListPage(r, ex)
		if problem != "" {
			if ex.Status == 0 || ex.Status >= 500 || ex.Status == http.StatusOK {
				continue // HTTP-01's, or a page that is not an envelope: ENV-01's
			}
			s.fail(id, ep, fmt.Sprintf("a page with limit %s failed: %s", q.Get("limit"), problem), ex.evidence(""))
			bad++
			continue
		}
		if len(recs) > want {
			what := fmt.Sprintf("limit=%d answered %d records", l, len(recs))
			if l == 0 {
				what = fmt.Sprintf("the default page answered %d records, more than the maximum of 1000", len(recs))
			}
			s.fail(id, ep, what, ex.evidence("/data"))
			bad++
		}
	}
	for _, v := range []string{"0", "-1", "1001"} {
		ex := s.get(ctx, ep, url.Values{"limit": {v}})
		switch {
		case ex.Status == http.StatusBadRequest:
		case ex.Status == 0:
			s.errored(id, ep, ex, fmt.Sprintf("no answer to limit=%s: %v", v, ex.Err))
			bad++
		case ex.Status == http.StatusOK:
			recs, _, problem := decodeListPage(r, ex)
			if problem == "" && len(recs) > 1000 {
				s.fail(id, ep, fmt.Sprintf("limit=%s answered 200 with %d records; want 400 or a page of at most 1000", v, len(recs)), ex.evidence("/data"))
				bad++
			}
		default:
			s.fail(id, ep, fmt.Sprintf("limit=%s answered %d; want 400 (or a clamped page)", v, ex.Status), ex.evidence(""))
			bad++
		}
	}
	if bad == 0 {
		s.pass(id, ep, "pages hold at most limit records (every page of the run is checked); limit 0, -1 and 1001 are refused or clamped")
	}
}
