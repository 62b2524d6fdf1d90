package vendortest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// serve answers one request: a redirect, a bad key, a queued fault, or the
// endpoint's answer.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), At: time.Now()})
	redirect, revoked := s.redirect, s.revoked
	var f *fail
	if len(s.fails) > 0 {
		f = &s.fails[0]
		s.fails = s.fails[1:]
	}
	s.mu.Unlock()
	if redirect != "" {
		http.Redirect(w, r, strings.TrimRight(redirect, "/")+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		return
	}
	if msg := s.authError(r, revoked); msg != "" {
		s.writeError(w, http.StatusUnauthorized, "authentication_error", msg)
		return
	}
	if f != nil {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		s.writeError(w, f.status, "api_error", fmt.Sprintf("injected failure %d", f.status))
		return
	}
	if r.Method != http.MethodGet {
		s.writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method not allowed")
		return
	}
	var ans any
	var err error
	switch r.URL.Path {
	case s.path("usage"):
		ans, err = s.usageAnswer(r.URL.Query())
	case s.path("costs"):
		ans, err = s.costsAnswer(r.URL.Query())
	case s.path("users"):
		ans, err = s.usersAnswer(r.URL.Query())
	default:
		s.writeError(w, http.StatusNotFound, "not_found_error", "no endpoint "+r.URL.Path)
		return
	}
	if err != nil {
		s.writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	b, err := json.Marshal(ans)
	if err != nil {
		s.writeError(w, http.StatusInternalServerError, "api_error", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (s *Server) path(what string) string {
	if s.vendor == "openai" {
		return map[string]string{"usage": "/v1/organization/usage/completions", "costs": "/v1/organization/costs",
			"users": "/v1/organization/users"}[what]
	}
	return map[string]string{"usage": "/v1/organizations/usage_report/messages", "costs": "/v1/organizations/cost_report",
		"users": "/v1/organizations/users"}[what]
}

// authError returns the vendor's message for a request without the key,
// or "".
func (s *Server) authError(r *http.Request, revoked string) string {
	if s.vendor == "openai" {
		if r.Header.Get("Authorization") != "Bearer "+s.Key {
			return "You didn't provide a valid Admin API key."
		}
	} else {
		if r.Header.Get("X-Api-Key") != s.Key {
			return "invalid x-api-key"
		}
		if r.Header.Get("Anthropic-Version") == "" {
			return "anthropic-version header is required"
		}
	}
	return revoked
}

// writeError writes the vendor's error body.
func (s *Server) writeError(w http.ResponseWriter, status int, typ, msg string) {
	var body any
	if s.vendor == "openai" {
		body = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}}
	} else {
		body = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// window is a request's buckets: their width, the first and the end, the
// page size, and the first bucket of this page.
type window struct {
	width      time.Duration
	start, end time.Time
	limit      int
	page       time.Time
	groupBy    []string
}

var widths = map[string]struct {
	d            time.Duration
	def, max     int
	costMax      int
	anthropicMax int
}{
	"1m": {time.Minute, 60, 1440, 0, 0},
	"1h": {time.Hour, 24, 168, 0, 0},
	"1d": {24 * time.Hour, 7, 31, 180, 31},
}

// parseWindow reads the parameters of a usage or cost request.
func (s *Server) parseWindow(q url.Values, costs bool, groups []string) (window, error) {
	var w window
	bw := q.Get("bucket_width")
	if bw == "" {
		bw = "1d"
	}
	spec, ok := widths[bw]
	if !ok || (costs && bw != "1d") {
		return w, fmt.Errorf("invalid bucket_width %q", bw)
	}
	w.width = spec.d
	maxLimit := spec.max
	if costs {
		maxLimit = spec.costMax
		if s.vendor == "anthropic" {
			maxLimit = spec.anthropicMax
		}
	}
	w.limit = spec.def
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return w, fmt.Errorf("limit %q must be between 1 and %d for bucket_width %s", v, maxLimit, bw)
		}
		w.limit = n
	}
	startName, endName := "start_time", "end_time"
	if s.vendor == "anthropic" {
		startName, endName = "starting_at", "ending_at"
	}
	start, err := s.parseTime(q, startName)
	if err != nil {
		return w, err
	}
	if start.IsZero() {
		return w, fmt.Errorf("%s is required", startName)
	}
	end, err := s.parseTime(q, endName)
	if err != nil {
		return w, err
	}
	w.start = start.Truncate(w.width)
	w.end = end
	if end.IsZero() {
		w.end = s.now().UTC()
	}
	w.page = w.start
	if p := q.Get("page"); p != "" {
		b, err := base64.StdEncoding.DecodeString(p)
		n, err2 := strconv.ParseInt(string(b), 10, 64)
		if err != nil || err2 != nil || n < w.start.Unix() {
			return w, fmt.Errorf("invalid page %q", p)
		}
		w.page = time.Unix(n, 0).UTC()
	}
	for _, g := range q["group_by[]"] {
		if !slices.Contains(groups, g) {
			return w, fmt.Errorf("invalid group_by %q", g)
		}
		w.groupBy = append(w.groupBy, g)
	}
	return w, nil
}

func (s *Server) parseTime(q url.Values, name string) (time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	if s.vendor == "openai" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return time.Time{}, fmt.Errorf("invalid %s %q", name, v)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid %s %q", name, v)
	}
	return t.UTC(), nil
}

// buckets returns the starts of this page's buckets, whether more follow,
// and the next page's token.
func (w window) buckets() (starts []time.Time, more bool, next string) {
	for t := w.page; t.Before(w.end); t = t.Add(w.width) {
		if len(starts) == w.limit {
			return starts, true, base64.StdEncoding.EncodeToString([]byte(strconv.FormatInt(t.Unix(), 10)))
		}
		starts = append(starts, t)
	}
	return starts, false, ""
}

// envelope is the paging envelope of both vendors' reports.
func (s *Server) envelope(data []any, more bool, next string) map[string]any {
	var np any
	if more {
		np = next
	}
	m := map[string]any{"data": data, "has_more": more, "next_page": np}
	if s.vendor == "openai" {
		m["object"] = "page"
	}
	return m
}

func (s *Server) bucketTimes(m map[string]any, start, end time.Time) {
	if s.vendor == "openai" {
		m["object"], m["start_time"], m["end_time"] = "bucket", start.Unix(), end.Unix()
		return
	}
	m["starting_at"], m["ending_at"] = start.Format(time.RFC3339), end.Format(time.RFC3339)
}

// amount writes an exact decimal.
func amount(r *big.Rat) string {
	return strings.TrimRight(strings.TrimRight(r.FloatString(12), "0"), ".")
}

// jsonNumber is a decimal written as a JSON number.
type jsonNumber string

func (n jsonNumber) MarshalJSON() ([]byte, error) { return []byte(n), nil }
