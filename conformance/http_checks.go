package conformance

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// families run in order; each records results for its checks.
var families = []func(context.Context, *session){
	checkEnvelopes,
	checkTimestamps,
	checkPaging,
	checkFilters,
	checkUsage,
	checkRecords,
	checkAuth,
	checkMethods,
}

// checkNo5xx is HTTP-01 and HTTP-03 over every exchange of the run.
func (s *session) checkNo5xx() {
	s.mu.Lock()
	exs := append([]*exchange(nil), s.exchanges...)
	s.mu.Unlock()
	bad, limited := 0, 0
	var first, firstLimited *exchange
	for _, ex := range exs {
		if ex.Status >= 500 && ex.Status != http.StatusNotImplemented {
			bad++
			if first == nil {
				first = ex
			}
		}
		if ex.Status == http.StatusTooManyRequests && ex.RespHdr.Get("Retry-After") == "" {
			limited++
			if firstLimited == nil {
				firstLimited = ex
			}
		}
	}
	if bad > 0 {
		s.fail("HTTP-01", "*", fmt.Sprintf("%d of %d requests answered with a 5xx, first %s %s: %d", bad, len(exs), first.Method, first.URL, first.Status), first.evidence(""))
	} else {
		s.pass("HTTP-01", "*", fmt.Sprintf("no 5xx in %d requests", len(exs)))
	}
	if limited > 0 {
		s.fail("HTTP-03", "*", fmt.Sprintf("%d answers were 429 without Retry-After", limited), firstLimited.evidence(""))
	} else {
		s.pass("HTTP-03", "*", "every 429, if any, carried Retry-After")
	}
}

// checkServed is HTTP-04: every resource appears in the report, checked,
// not offered (501, a warning) or missing (404, a failure), each with the
// number of checks not run for it.
func (s *session) checkServed() {
	const id = "HTTP-04"
	if !s.enabled(id) {
		return
	}
	for _, r := range AllResources {
		ep := endpoint(r)
		if !slices.Contains(s.cfg.Resources, r) {
			s.skip(id, ep, "not selected (--resources)")
			continue
		}
		notRun := 0
		for _, c := range checksAt[r] {
			if s.enabled(c) {
				notRun++
			}
		}
		switch status := s.probed[r]; {
		case s.offered[r]:
			s.pass(id, ep, fmt.Sprintf("served (GET %s answered %d): checked", ep, status))
		case status == http.StatusNotImplemented:
			s.warn(id, ep, fmt.Sprintf("not offered (501): %d checks not run at %s", notRun, ep), s.probeEvidence(ep))
		default:
			s.fail(id, ep, fmt.Sprintf("GET %s answered %d: a resource of the specification is served, or answered 501 "+
				"when the provider does not offer it; %d checks not run at %s", ep, status, notRun, ep), s.probeEvidence(ep))
		}
	}
}

// probeEvidence returns the evidence of the run's first request to ep.
func (s *session) probeEvidence(ep string) *Evidence {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ex := range s.exchanges {
		if r, single := s.route(ex.URL); !single && "/"+r == ep {
			return ex.evidence("")
		}
	}
	return nil
}

// checkMethods is HTTP-02: other methods than GET are refused.
func checkMethods(ctx context.Context, s *session) {
	if !s.enabled("HTTP-02") {
		return
	}
	for _, r := range s.resources() {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			ex := s.do(ctx, endpoint(r), "", method(m), header("Content-Type", "application/json"))
			switch {
			case ex.Status >= 200 && ex.Status < 300:
				s.fail("HTTP-02", endpoint(r), fmt.Sprintf("%s answered %d: the interface must be read-only", m, ex.Status), ex.evidence(""))
			case ex.Status == http.StatusMethodNotAllowed && !strings.Contains(ex.RespHdr.Get("Allow"), "GET"):
				s.fail("HTTP-02", endpoint(r), fmt.Sprintf("%s answered 405 without an Allow header naming GET", m), ex.evidence(""))
			case ex.Status == http.StatusMethodNotAllowed || ex.Status == http.StatusUnauthorized || ex.Status == http.StatusNotFound:
				s.pass("HTTP-02", endpoint(r), "other methods are refused")
			default:
				s.fail("HTTP-02", endpoint(r), fmt.Sprintf("%s answered %s; want 405 with Allow", m, ex.describe()), ex.evidence(""))
			}
		}
	}
}
