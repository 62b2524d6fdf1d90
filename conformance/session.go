package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aiusage/kit/internal/infra/httpclient"
)

// session is the state of one run: the HTTP client and its rate limit,
// every exchange made, memoised walks and the results so far.
type session struct {
	cfg Config

	mu        sync.Mutex
	next      time.Time // earliest time of the next request (rate limit)
	exchanges []*exchange
	offered   map[string]bool // resource -> the provider serves it
	probed    map[string]int  // resource -> the status of its first request

	walks   map[string]*walk
	decoded map[[32]byte]decodedRecord // records decoded so far, by content

	results []*Result
	index   map[resultKey]*resultAgg
}

type resultKey struct{ id, endpoint string }

type resultAgg struct {
	res      *Result
	failures int
	passes   int
}

func newSession(cfg Config) *session {
	return &session{cfg: cfg, offered: map[string]bool{}, probed: map[string]int{}, walks: map[string]*walk{}, decoded: map[[32]byte]decodedRecord{}, index: map[resultKey]*resultAgg{}}
}

// --- requests

// exchange is one request and its answer.
type exchange struct {
	Method  string
	URL     string
	Header  http.Header // of the request
	Status  int
	RespHdr http.Header
	Body    []byte
	Err     error // transport error: no answer

	parsed parsed // what checks have read of Body
}

// reqOpt changes a request.
type reqOpt func(*http.Request)

// bearer, apiKey and noAuth choose the credential; the default is the
// configured token as a bearer token.
func bearer(token string) reqOpt {
	return func(r *http.Request) {
		r.Header.Del("X-API-Key")
		r.Header.Set("Authorization", "Bearer "+token)
	}
}

func apiKey(token string) reqOpt {
	return func(r *http.Request) {
		r.Header.Del("Authorization")
		r.Header.Set("X-API-Key", token)
	}
}

func noAuth() reqOpt {
	return func(r *http.Request) {
		r.Header.Del("Authorization")
		r.Header.Del("X-API-Key")
	}
}

func header(k, v string) reqOpt { return func(r *http.Request) { r.Header.Set(k, v) } }

func method(m string) reqOpt { return func(r *http.Request) { r.Method = m } }

// maxBody bounds what the suite reads of one answer.
const maxBody = 64 << 20

// rateLimitAttempts is how often a request answered 429 is sent before the
// suite gives up on it.
const rateLimitAttempts = 8

// do sends GET base+path?rawQuery (after opts), honouring the rate limit and
// 429 with Retry-After: the wait applies to every request of the run. A
// request still answered 429 after rateLimitAttempts is returned as having
// no answer (Status 0), so that checks report ERROR rather than judging a
// 429 as the provider's answer. It never returns nil.
func (s *session) do(ctx context.Context, path, rawQuery string, opts ...reqOpt) *exchange {
	u := s.cfg.BaseURL + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	for attempt := 1; ; attempt++ {
		ex := s.once(ctx, u, opts)
		if ex.Status != http.StatusTooManyRequests {
			return ex
		}
		if attempt == rateLimitAttempts {
			return &exchange{Method: ex.Method, URL: ex.URL, Header: ex.Header,
				Err: fmt.Errorf("still rate limited (429) after %d attempts: lower --rate", attempt)}
		}
		wait := retryAfter(ex.RespHdr.Get("Retry-After"))
		s.mu.Lock()
		if at := time.Now().Add(wait); at.After(s.next) {
			s.next = at
		}
		s.mu.Unlock()
		if ctx.Err() != nil {
			return ex
		}
	}
}

// get is do with query parameters.
func (s *session) get(ctx context.Context, path string, q url.Values, opts ...reqOpt) *exchange {
	return s.do(ctx, path, q.Encode(), opts...)
}

// retryAfter is the wait a 429's Retry-After asks for, at most a minute;
// a second when it names none.
func retryAfter(v string) time.Duration {
	if d, ok := httpclient.RetryAfter(v, time.Now()); ok {
		return min(d, time.Minute)
	}
	return time.Second
}

func (s *session) once(ctx context.Context, u string, opts []reqOpt) *exchange {
	s.wait(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	ex := &exchange{Method: http.MethodGet, URL: u}
	if err != nil {
		ex.Err = err
		s.record(ex)
		return ex
	}
	req.Header.Set("Authorization", "Bearer "+s.cfg.Token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "aiusage-conformance")
	for _, o := range opts {
		o(req)
	}
	ex.Method, ex.Header = req.Method, req.Header.Clone()
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		ex.Err = err
		s.record(ex)
		return ex
	}
	defer resp.Body.Close()
	ex.Status, ex.RespHdr = resp.StatusCode, resp.Header
	ex.Body, ex.Err = io.ReadAll(io.LimitReader(resp.Body, maxBody))
	s.record(ex)
	return ex
}

// wait blocks until the rate limit lets the next request go.
func (s *session) wait(ctx context.Context) {
	s.mu.Lock()
	now := time.Now()
	at := s.next
	if at.Before(now) {
		at = now
	}
	s.next = at.Add(time.Duration(float64(time.Second) / s.cfg.MaxRate))
	s.mu.Unlock()
	if d := time.Until(at); d > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
}

// secretParams are query parameters that may carry a credential (AUTH-05
// sends them on purpose); their values never reach a report.
var secretParams = []string{"access_token", "api_key", "apikey", "token", "key"}

// redactURL replaces the values of secretParams in raw by $TOKEN.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return raw
	}
	q := u.Query()
	changed := false
	for _, p := range secretParams {
		if q.Has(p) {
			q.Set(p, "$TOKEN")
			changed = true
		}
	}
	if !changed {
		return raw
	}
	u.RawQuery = strings.ReplaceAll(q.Encode(), "%24TOKEN", "$TOKEN")
	return u.String()
}

// record keeps ex for the run-wide checks, with every credential in its
// URL (and the transport error quoting that URL) masked. Credentials are
// masked where they are sent, in the URL here and in the headers of the
// curl line (curl), never by searching prose for their text: a short token
// would mask every word holding its letters.
func (s *session) record(ex *exchange) {
	if r := redactURL(ex.URL); r != ex.URL {
		if ex.Err != nil {
			ex.Err = errors.New(strings.ReplaceAll(ex.Err.Error(), ex.URL, r))
		}
		ex.URL = r
	}
	s.mu.Lock()
	s.exchanges = append(s.exchanges, ex)
	s.mu.Unlock()
}

func (s *session) requestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.exchanges)
}

// probe makes the first request, and learns which resources the provider
// offers. A provider that cannot be reached is ErrUnreachable.
func (s *session) probe(ctx context.Context) error {
	if err := s.waitReachable(ctx); err != nil {
		return err
	}
	for _, r := range s.cfg.Resources {
		q := url.Values{"limit": {"1"}}
		path := "/" + r
		if r == Usage {
			q = url.Values{}
		}
		ex := s.get(ctx, path, q)
		if ex.Err != nil && ex.Status == 0 {
			return fmt.Errorf("%w: GET %s: %v", ErrUnreachable, ex.URL, ex.Err)
		}
		s.probed[r] = ex.Status
		switch ex.Status {
		case http.StatusUnauthorized:
			return fmt.Errorf("conformance: GET %s answered 401: the token is not accepted", ex.URL)
		case http.StatusNotImplemented, http.StatusNotFound:
			s.offered[r] = false
		default:
			s.offered[r] = true
		}
	}
	return nil
}

// waitReachable waits, for at most cfg.Wait, until the provider answers
// anything at all to GET of its first resource. The attempts made while it
// cannot be reached are not part of the run.
func (s *session) waitReachable(ctx context.Context) error {
	if s.cfg.Wait <= 0 {
		return nil
	}
	deadline := time.Now().Add(s.cfg.Wait)
	u := s.cfg.BaseURL + "/" + s.cfg.Resources[0]
	said := false
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return fmt.Errorf("%w: GET %s: %v", ErrUnreachable, redactURL(u), err)
		}
		req.Header.Set("User-Agent", "aiusage-conformance")
		resp, err := s.cfg.Client.Do(req)
		if err == nil {
			resp.Body.Close()
			if said {
				s.progress("the provider answers")
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: GET %s: %v (waited %v)", ErrUnreachable, redactURL(u), err, s.cfg.Wait)
		}
		if !said {
			s.progress("waiting up to %v for %s to answer", s.cfg.Wait, s.cfg.BaseURL)
			said = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// resources returns the configured resources the provider offers.
func (s *session) resources() []string {
	var out []string
	for _, r := range s.cfg.Resources {
		if s.offered[r] {
			out = append(out, r)
		}
	}
	return out
}

// listResources returns the offered resources that are keyset lists.
func (s *session) listResources() []string {
	var out []string
	for _, r := range s.resources() {
		if r != Usage {
			out = append(out, r)
		}
	}
	return out
}

// --- evidence

// curl returns a command reproducing ex, with credentials masked.
func (ex *exchange) curl() string {
	var b strings.Builder
	b.WriteString("curl -sS -i")
	if ex.Method != http.MethodGet {
		b.WriteString(" -X " + ex.Method)
	}
	keys := make([]string, 0, len(ex.Header))
	for k := range ex.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "User-Agent" || k == "Accept" {
			continue
		}
		for _, v := range ex.Header[k] {
			switch k {
			case "Authorization":
				if scheme, _, ok := strings.Cut(v, " "); ok {
					v = scheme + " $TOKEN"
				} else {
					v = "$TOKEN"
				}
			case "X-Api-Key":
				v = "$TOKEN"
			}
			b.WriteString(" -H " + shellQuote(k+": "+v))
		}
	}
	b.WriteString(" " + shellQuote(ex.URL))
	return b.String()
}

func shellQuote(s string) string {
	if strings.ContainsAny(s, `$`) && !strings.ContainsAny(s, `"\`+"`") {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// evidence returns the evidence of ex, with pointer when a schema finding
// is to blame.
func (ex *exchange) evidence(pointer string) *Evidence {
	e := &Evidence{Curl: ex.curl(), Request: ex.Method + " " + ex.URL, Pointer: pointer}
	switch {
	case ex.Status == 0 && ex.Err != nil:
		e.Response = "no answer: " + ex.Err.Error()
	default:
		body := string(ex.Body)
		const max = 600
		if len(body) > max {
			body = body[:max] + fmt.Sprintf("... (%d bytes)", len(ex.Body))
		}
		e.Response = fmt.Sprintf("%d %s %s", ex.Status, ex.RespHdr.Get("Content-Type"), body)
	}
	return e
}

// reqRef names the request of ex in a message: GET, the path below the
// base URL and the query, with a long cursor shortened (the evidence holds
// it whole).
func (s *session) reqRef(ex *exchange) string {
	u, err := url.Parse(ex.URL)
	if err != nil {
		return ex.Method + " " + ex.URL
	}
	path := strings.TrimPrefix(ex.URL, s.cfg.BaseURL)
	path, _, _ = strings.Cut(path, "?")
	q := u.Query()
	if c := q.Get("cursor"); len(c) > 16 {
		q.Set("cursor", truncateText(c, 12))
	}
	ref := ex.Method + " " + path
	if len(q) > 0 {
		ref += "?" + describeQuery(q)
	}
	return ref
}

// describe says in a few words what ex answered.
func (ex *exchange) describe() string {
	if ex.Status == 0 {
		return fmt.Sprintf("no answer (%v)", ex.Err)
	}
	return strconv.Itoa(ex.Status)
}

// jsonBody decodes the body into v.
func (ex *exchange) jsonBody(v any) error {
	if ex.Status == 0 {
		return fmt.Errorf("no answer: %v", ex.Err)
	}
	return json.Unmarshal(ex.Body, v)
}

// --- results

// enabled reports whether check id is selected by Only and Skip.
func (s *session) enabled(id string) bool {
	if len(s.cfg.Only) > 0 && !matchID(s.cfg.Only, id) {
		return false
	}
	return !matchID(s.cfg.Skip, id)
}

// matchID reports whether list names id, exactly or by a prefix such as
// "PAGE".
func matchID(list []string, id string) bool {
	return slices.ContainsFunc(list, func(p string) bool { return id == p || strings.HasPrefix(id, p+"-") })
}

func (s *session) agg(id, endpoint string) *resultAgg {
	k := resultKey{id, endpoint}
	if a, ok := s.index[k]; ok {
		return a
	}
	c, ok := checkByID(id)
	if !ok {
		panic("conformance: check " + id + " is not in the catalogue")
	}
	r := &Result{ID: id, Level: c.Level, Endpoint: endpoint, Title: c.Title, Rule: c.Rule}
	a := &resultAgg{res: r}
	s.index[k] = a
	s.results = append(s.results, r)
	return a
}

// pass records that check id held at endpoint.
func (s *session) pass(id, endpoint, msg string) {
	if !s.enabled(id) {
		return
	}
	a := s.agg(id, endpoint)
	a.passes++
	if a.failures == 0 && a.res.Status != StatusSkip && a.res.Status != StatusError {
		a.res.Status, a.res.Message = StatusPass, msg
	}
}

// fail records that check id failed at endpoint: FAIL for a MUST, WARN
// otherwise. The first failure keeps its evidence; later ones are counted.
func (s *session) fail(id, endpoint, msg string, ev *Evidence) {
	if !s.enabled(id) {
		return
	}
	a := s.agg(id, endpoint)
	a.failures++
	if a.failures == 1 {
		a.res.Status = StatusWarn
		if a.res.Level == LevelMust {
			a.res.Status = StatusFail
		}
		a.res.Message, a.res.Evidence = msg, ev
		return
	}
	a.res.Message = strings.TrimSuffix(a.res.Message, fmt.Sprintf(" (and %d more)", a.failures-2))
	a.res.Message += fmt.Sprintf(" (and %d more)", a.failures-1)
}

// warn records a warning of check id at endpoint, whatever its level: a
// state of the provider the report must show, that fails no run.
func (s *session) warn(id, endpoint, msg string, ev *Evidence) {
	if !s.enabled(id) {
		return
	}
	a := s.agg(id, endpoint)
	if a.failures == 0 {
		a.res.Status, a.res.Message, a.res.Evidence = StatusWarn, msg, ev
	}
}

// skip records that check id could not apply at endpoint, unless it already
// has an outcome there.
func (s *session) skip(id, endpoint, reason string) {
	if !s.enabled(id) {
		return
	}
	a := s.agg(id, endpoint)
	if a.failures == 0 && a.passes == 0 && a.res.Status == "" {
		a.res.Status, a.res.Message = StatusSkip, reason
	}
}

// errored records that check id could not run at endpoint.
func (s *session) errored(id, endpoint string, ex *exchange, msg string) {
	if !s.enabled(id) {
		return
	}
	a := s.agg(id, endpoint)
	if a.failures == 0 {
		a.res.Status, a.res.Message = StatusError, msg
		if ex != nil {
			a.res.Evidence = ex.evidence("")
		}
	}
}

// finish runs the checks over the whole run, applies the baseline and puts
// the results in catalogue order.
func (s *session) finish() {
	s.checkNo5xx()
	s.checkServed()
	s.checkContentTypes()
	s.checkBodies()
	if s.enabled("TIME-01") || s.enabled("TIME-02") {
		s.checkTimestampValues()
	}
	for _, r := range s.results {
		if r.Status == "" {
			r.Status = StatusPass
		}
		if matchID(s.cfg.Baseline, r.ID) && (r.Status == StatusFail || r.Status == StatusWarn || r.Status == StatusError) {
			r.Baselined = true
		}
	}
	order := map[string]int{}
	for i, c := range Catalogue {
		order[c.ID] = i
	}
	ep := func(e string) int {
		if i := slices.Index(AllResources, strings.TrimPrefix(e, "/")); i >= 0 {
			return i
		}
		return len(AllResources)
	}
	sort.SliceStable(s.results, func(i, j int) bool {
		a, b := s.results[i], s.results[j]
		if order[a.ID] != order[b.ID] {
			return order[a.ID] < order[b.ID]
		}
		return ep(a.Endpoint) < ep(b.Endpoint)
	})
}

// stale lists baseline entries whose checks ran and did not fail.
func (s *session) stale() []string {
	var out []string
	for _, id := range s.cfg.Baseline {
		ran, failed := false, false
		for _, r := range s.results {
			if r.ID == id || strings.HasPrefix(r.ID, id+"-") {
				ran = ran || r.Status != StatusSkip
				failed = failed || r.Baselined
			}
		}
		if ran && !failed {
			out = append(out, id)
		}
	}
	return out
}

// Results returns a copy of the results, for the report.
func (s *session) resultValues() []Result {
	out := make([]Result, len(s.results))
	for i, r := range s.results {
		out[i] = *r
	}
	return out
}

// progress writes a progress line, when configured.
func (s *session) progress(format string, a ...any) {
	if s.cfg.Progress != nil {
		fmt.Fprintf(s.cfg.Progress, format+"\n", a...)
	}
}
