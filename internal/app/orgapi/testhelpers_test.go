package orgapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/orgapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// t0 is the time the test clock starts at.
var t0 = time.Date(2026, 3, 2, 9, 14, 3, 120_000_000, time.UTC)

// testClock is a clock the tests move by hand, passed to the store with
// org.WithNow. It is safe for concurrent use.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock(t time.Time) *testClock { return &testClock{now: t} }

// Now returns the clock's reading.
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// adminActor makes the changes that tests set up through the store.
var adminActor = org.Actor{Type: org.ActorAdmin, Name: "test-admin"}

// tenant is an organisation with its agents and an API key.
type tenant struct {
	Org    org.Organisation
	Agents []spec.Agent
	Key    org.CreatedKey
}

// testEnv is one test's service: a store over a fresh database, its handler
// behind an httptest server, a test clock and the main tenant (organisation
// "Acme", three agents, an API key named "ci-bot").
type testEnv struct {
	t      *testing.T
	db     *sqldb.DB
	store  *org.Store
	clock  *testClock
	srv    *httptest.Server
	URL    string
	client *http.Client
	tenant
}

// newTestEnv starts the service over db.
func newTestEnv(t *testing.T, db *sqldb.DB) *testEnv {
	t.Helper()
	clock := newTestClock(t0)
	store, err := org.NewStore(t.Context(), db, org.WithNow(clock.Now))
	require.NoError(t, err)
	// 5xx errors are logged to the test's log, with their cause.
	logger := slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelError}))
	h, err := orgapi.NewHandler(store, orgapi.WithLogger(logger))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // runs before the database is closed
	e := &testEnv{t: t, db: db, store: store, clock: clock, srv: srv, URL: srv.URL, client: srv.Client()}
	e.tenant = e.newTenant("Acme", 3, "ci-bot")
	return e
}

// testLogWriter writes to a test's log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Logf("service log: %s", bytes.TrimSpace(p))
	return len(p), nil
}

// withT returns the environment reporting to t, for subtests.
func (e *testEnv) withT(t *testing.T) *testEnv {
	c := *e
	c.t = t
	return &c
}

func (e *testEnv) ctx() context.Context { return e.t.Context() }

// newTenant creates an organisation with agents agents and an API key named
// keyName (no key when keyName is empty).
func (e *testEnv) newTenant(name string, agents int, keyName string) tenant {
	e.t.Helper()
	o, err := e.store.CreateOrganisation(e.ctx(), org.OrganisationCreate{Name: name}, adminActor)
	require.NoError(e.t, err)
	tn := tenant{Org: o}
	for i := range agents {
		a, err := e.store.CreateAgent(e.ctx(), o.ID, fmt.Sprintf("%s agent %d", name, i+1), adminActor)
		require.NoError(e.t, err)
		tn.Agents = append(tn.Agents, a)
	}
	if keyName != "" {
		tn.Key = e.newKey(o.ID, keyName, org.KeyTypeAPI, nil)
	}
	return tn
}

// newKey creates a key of the organisation.
func (e *testEnv) newKey(orgID, name string, typ org.KeyType, expires *time.Time) org.CreatedKey {
	e.t.Helper()
	k, err := e.store.CreateKey(e.ctx(), org.KeyCreate{OrganisationID: orgID, Name: name, Type: typ, ExpiresAt: expires}, adminActor)
	require.NoError(e.t, err)
	return k
}

// response is what the server answered.
type response struct {
	Method, Path string
	Status       int
	Header       http.Header
	Body         []byte
}

func (r response) String() string {
	return fmt.Sprintf("%s %s: %d %s", r.Method, r.Path, r.Status, r.Body)
}

// hdr holds request headers to set; an empty value removes a header the
// client would otherwise send (X-API-Key, Content-Type).
type hdr map[string]string

// do sends a request with the main tenant's key as X-API-Key. A nil body
// sends none; a string or []byte is sent as is; anything else is encoded as
// JSON. A body is sent with Content-Type: application/json unless h says
// otherwise. It is safe to call from several goroutines: a 5xx answer or a
// transport error fails the test (without stopping it).
func (e *testEnv) do(method, path string, body any, h hdr) response {
	return e.doKey(e.Key.Secret, method, path, body, h)
}

// doKey is do with another key's secret.
func (e *testEnv) doKey(secret, method, path string, body any, h hdr) response {
	var rd io.Reader
	if body != nil {
		var b []byte
		switch v := body.(type) {
		case string:
			b = []byte(v)
		case []byte:
			b = v
		case json.RawMessage:
			b = v
		default:
			var err error
			if b, err = json.Marshal(v); err != nil {
				e.t.Errorf("encode body of %s %s: %v", method, path, err)
				return response{Method: method, Path: path}
			}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, e.URL+path, rd)
	if err != nil {
		e.t.Errorf("%s %s: %v", method, path, err)
		return response{Method: method, Path: path}
	}
	if secret != "" {
		req.Header.Set("X-API-Key", secret)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range h {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := e.client.Do(req)
	if err != nil {
		e.t.Errorf("%s %s: %v", method, path, err)
		return response{Method: method, Path: path}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Errorf("%s %s: read body: %v", method, path, err)
	}
	r := response{Method: method, Path: path, Status: res.StatusCode, Header: res.Header, Body: b}
	if r.Status >= 500 {
		e.t.Errorf("server error: %s", r)
	}
	return r
}

// --- paths

func (tn tenant) orgPath() string           { return "/organisations/" + tn.Org.ID }
func (tn tenant) listPath() string          { return tn.orgPath() + "/instructions" }
func (tn tenant) itemPath(id string) string { return tn.listPath() + "/" + id }
func (tn tenant) agentsPath() string        { return tn.orgPath() + "/agents" }

// --- bodies

// jsonObj is a JSON object under construction.
type jsonObj = map[string]any

func regexBody(title string) jsonObj {
	return jsonObj{
		"agentType":   "DataProtection",
		"title":       title,
		"trigger":     jsonObj{"type": "Regex", "pattern": `\bDE[0-9]{20}\b`},
		"action":      "Block",
		"criticality": "Low",
	}
}

func semanticBody(title, text string) jsonObj {
	return jsonObj{
		"agentType":   "DataProtection",
		"title":       title,
		"trigger":     jsonObj{"type": "Semantic", "text": text},
		"action":      "Block",
		"criticality": "High",
	}
}

func stringMatchBody(title string, values ...string) jsonObj {
	return jsonObj{
		"agentType":   "DataProtection",
		"title":       title,
		"trigger":     jsonObj{"type": "StringMatch", "values": values},
		"action":      "Allow",
		"criticality": "Low",
	}
}

// --- answers

// mediaType returns the media type of the response's Content-Type.
func mediaType(t *testing.T, r response) string {
	t.Helper()
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	require.NoError(t, err, "Content-Type of %s", r)
	return mt
}

// decodeJSON asserts an application/json answer and decodes it.
func decodeJSON[T any](t *testing.T, r response) T {
	t.Helper()
	require.Equal(t, "application/json", mediaType(t, r), "%s", r)
	var v T
	require.NoError(t, json.Unmarshal(r.Body, &v), "%s", r)
	return v
}

// problem asserts that r is an RFC 9457 problem body, served as
// application/problem+json with the answer's status, and decodes it.
func problem(t *testing.T, r response) spec.Problem {
	t.Helper()
	require.Equal(t, spec.ProblemContentType, mediaType(t, r), "%s", r)
	var p spec.Problem
	require.NoError(t, json.Unmarshal(r.Body, &p), "%s", r)
	require.Equal(t, r.Status, p.Status, "status member of %s", r)
	require.NotEmpty(t, p.Type, "type member of %s", r)
	require.NotEmpty(t, p.Title, "title member of %s", r)
	return p
}

// fieldsOf returns the fields a problem blames.
func fieldsOf(p spec.Problem) []string {
	var out []string
	for _, f := range p.Errors {
		out = append(out, f.Field)
	}
	return out
}

// requireProblem asserts a problem answer of status that blames every field
// of fields.
func requireProblem(t *testing.T, r response, status int, fields ...string) spec.Problem {
	t.Helper()
	require.Equal(t, status, r.Status, "%s", r)
	p := problem(t, r)
	for _, f := range fields {
		require.Contains(t, fieldsOf(p), f, "fields blamed by %s", r)
	}
	return p
}

// --- operations

// create creates an instruction over HTTP and requires 201.
func (e *testEnv) create(body any) spec.Instruction {
	e.t.Helper()
	r := e.do(http.MethodPost, e.listPath(), body, nil)
	require.Equal(e.t, http.StatusCreated, r.Status, "%s", r)
	return decodeJSON[spec.Instruction](e.t, r)
}

// get reads an instruction over HTTP and requires 200.
func (e *testEnv) get(id string) spec.Instruction {
	e.t.Helper()
	r := e.do(http.MethodGet, e.itemPath(id), nil, nil)
	require.Equal(e.t, http.StatusOK, r.Status, "%s", r)
	return decodeJSON[spec.Instruction](e.t, r)
}

// getRaw reads an instruction's JSON over HTTP and requires 200.
func (e *testEnv) getRaw(id string) string {
	e.t.Helper()
	r := e.do(http.MethodGet, e.itemPath(id), nil, nil)
	require.Equal(e.t, http.StatusOK, r.Status, "%s", r)
	return string(r.Body)
}

// list lists instructions with the raw query and requires 200.
func (e *testEnv) list(rawQuery string) spec.InstructionList {
	e.t.Helper()
	path := e.listPath()
	if rawQuery != "" {
		path += "?" + rawQuery
	}
	r := e.do(http.MethodGet, path, nil, nil)
	require.Equal(e.t, http.StatusOK, r.Status, "%s", r)
	return decodeJSON[spec.InstructionList](e.t, r)
}

// total is the totalCount of the instruction list with the raw query.
func (e *testEnv) total(rawQuery string) int {
	e.t.Helper()
	return e.list(rawQuery).TotalCount
}

// ids returns the ids of instructions.
func ids(ins []spec.Instruction) []string {
	out := make([]string, 0, len(ins))
	for _, in := range ins {
		out = append(out, in.ID)
	}
	return out
}

// counts returns every agent's instructionCount from the agents endpoint.
func (e *testEnv) counts() map[string]int {
	e.t.Helper()
	r := e.do(http.MethodGet, e.agentsPath(), nil, nil)
	require.Equal(e.t, http.StatusOK, r.Status, "%s", r)
	out := map[string]int{}
	for _, a := range decodeJSON[[]spec.Agent](e.t, r) {
		out[a.ID] = a.InstructionCount
	}
	return out
}

// audit returns the organisation's whole audit trail.
func (e *testEnv) audit(orgID string) []org.AuditRecord {
	e.t.Helper()
	recs, err := e.store.Audit(e.ctx(), orgID, 0, 100000)
	require.NoError(e.t, err)
	return recs
}

// fill gives agentID n more instructions, created through the store.
func (e *testEnv) fill(agentID string, n int) []spec.Instruction {
	e.t.Helper()
	out := make([]spec.Instruction, 0, n)
	for i := range n {
		in, err := e.store.CreateInstruction(e.ctx(), e.Org.ID, org.InstructionCreate{
			AgentType: spec.AgentTypeDataProtection, Title: fmt.Sprintf("filler %d", i),
			Trigger: spec.StringMatchTrigger([]string{fmt.Sprintf("term-%d", i)}, true),
			Action:  spec.ActionBlock, Criticality: spec.CriticalityLow, UsedBy: []string{agentID},
		}, adminActor)
		require.NoError(e.t, err)
		out = append(out, in)
	}
	return out
}

// state is what a failed request must leave alone: the instruction list,
// the agents' counts and the audit trail.
type state struct {
	List   string
	Counts map[string]int
	Audit  int
}

func (e *testEnv) state() state {
	e.t.Helper()
	r := e.do(http.MethodGet, e.listPath()+"?pageSize=100", nil, nil)
	require.Equal(e.t, http.StatusOK, r.Status, "%s", r)
	return state{List: string(r.Body), Counts: e.counts(), Audit: len(e.audit(e.Org.ID))}
}

// requireUnchanged asserts that nothing was written since before.
func (e *testEnv) requireUnchanged(before state, msgAndArgs ...any) {
	e.t.Helper()
	after := e.state()
	require.JSONEq(e.t, before.List, after.List, msgAndArgs...)
	require.Equal(e.t, before.Counts, after.Counts, msgAndArgs...)
	require.Equal(e.t, before.Audit, after.Audit, msgAndArgs...)
}

// keysOf returns the sorted keys of a JSON object.
func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
