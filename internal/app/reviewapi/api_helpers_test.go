package reviewapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/testkit/webhooktest"
	"github.com/aiusage/kit/spec"
)

// apiEpoch is where the harness clock starts: 09:29:28 UTC. A request made
// then is counted in the rate-limit bucket of the minute 09:29, which leaves
// the sliding hour with it, at 10:29:28, in 3600 seconds.
var apiEpoch = time.Date(2027, 3, 2, 9, 29, 28, 0, time.UTC)

// apiWait bounds every wait for asynchronous work (deliveries, evaluations).
const apiWait = 30 * time.Second

// harness is a running service (the organisation and review-task APIs over
// one database, River working jobs) on a settable clock, behind an
// httptest server whose handler survives a restart of the service.
type harness struct {
	t      *testing.T
	db     *sqldb.DB
	orgs   *org.Store
	people *people.Store
	clock  *clock
	cfg    reviewapi.Config
	url    string
	// insertOnly starts a service that queues jobs but does not work them.
	insertOnly bool

	mu      sync.Mutex
	srv     *server.Server
	handler atomic.Pointer[http.Handler]
}

// startHarness starts a service on db. The defaults: private webhooks
// allowed, a retry schedule of 20, 40 and 80 ms, polling every 20 ms and a
// sweep that never runs during a test (SweepTimeouts is called explicitly).
// mutate changes the configuration before the service starts.
func startHarness(t *testing.T, db *sqldb.DB, mutate func(*reviewapi.Config)) *harness {
	t.Helper()
	clk := &clock{now: apiEpoch}
	orgs, err := org.NewStore(t.Context(), db, org.WithNow(clk.Now))
	require.NoError(t, err)
	ppl, err := people.New(t.Context(), people.Config{HashCost: people.HashTest, DB: db, Orgs: orgs, Now: clk.Now})
	require.NoError(t, err)
	h := &harness{t: t, db: db, orgs: orgs, people: ppl, clock: clk}
	h.cfg = reviewapi.Config{DB: db, Orgs: orgs, Secrets: keyring.Ephemeral(), People: ppl, AllowPrivateWebhooks: true, Now: clk.Now,
		RetrySchedule:   []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond},
		DeliveryTimeout: 2 * time.Second, SweepInterval: time.Hour,
		// The tests sweep themselves, and count what their sweep did: the
		// start-up sweep, late on PostgreSQL, once took their task first.
		NoSweepOnStart: true}
	if mutate != nil {
		mutate(&h.cfg)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*h.handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	h.startService()
	t.Cleanup(h.stopService)
	return h
}

// startService starts a new service on the harness's database and routes
// the server to it.
func (h *harness) startService() {
	h.t.Helper()
	srv, err := server.New(h.t.Context(), h.serverConfig(h.cfg))
	require.NoError(h.t, err)
	if !h.insertOnly {
		require.NoError(h.t, srv.Start(context.WithoutCancel(h.t.Context())))
	}
	handler := srv.Handler()
	h.mu.Lock()
	h.srv = srv
	h.mu.Unlock()
	h.handler.Store(&handler)
}

// serverConfig is the configuration of the whole service around the
// review-task API's rc, on the harness's database and clock.
func (h *harness) serverConfig(rc reviewapi.Config) server.Config {
	return server.Config{DB: h.db, Orgs: h.orgs, Secrets: rc.Secrets, People: h.people, Concurrency: rc.Concurrency,
		PollInterval: 20 * time.Millisecond, Review: rc}
}

// stopService stops and closes the running service, as a process that ends.
func (h *harness) stopService() {
	h.mu.Lock()
	srv := h.srv
	h.srv = nil
	h.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !h.insertOnly {
		require.NoError(h.t, srv.Stop(ctx))
	}
	srv.Close()
}

func (h *harness) service() *reviewapi.Service {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.srv.Review()
}

// tenant is an organisation with an agent, its instructions, an API key and
// a person with the Reviewer role.
type tenant struct {
	h        *harness
	reviewer people.User
	org      org.Organisation
	agent    spec.Agent
	key      string // the API key's secret
	keyID    string
	instrs   map[string]spec.Instruction // by title
}

// The instructions of every tenant's agent, one per outcome, and an Allow
// instruction that exempts the press release of Project Falcon.
const (
	instrIBAN     = "IBAN"          // Regex, Block Low, allowRedaction
	instrSalaries = "Salaries"      // StringMatch, Block Low
	instrMergers  = "Mergers"       // StringMatch "Project Falcon", Block High
	instrPress    = "Press release" // StringMatch "Project Falcon press release", Allow
)

func (h *harness) newTenant(name string, plan org.Plan, hourlyLimit int) *tenant {
	h.t.Helper()
	ctx := h.t.Context()
	tn := &tenant{h: h, instrs: map[string]spec.Instruction{}}
	var err error
	tn.org, err = h.orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: name, Plan: plan, HourlyLimit: hourlyLimit}, admin)
	require.NoError(h.t, err)
	tn.agent, err = h.orgs.CreateAgent(ctx, tn.org.ID, "Support", admin)
	require.NoError(h.t, err)
	tn.key, tn.keyID = tn.newKey(org.KeyTypeAPI)
	tn.reviewer = tn.newUser("reviewer", people.RoleReviewer)
	for _, c := range []spec.InstructionCreate{
		{Title: instrIBAN, Trigger: spec.RegexTrigger(`\bDE[0-9]{20}\b`, true), Action: spec.ActionBlock, Criticality: spec.CriticalityLow, AllowRedaction: true},
		{Title: instrSalaries, Trigger: spec.StringMatchTrigger([]string{"salary", "payroll"}, false), Action: spec.ActionBlock, Criticality: spec.CriticalityLow},
		{Title: instrMergers, Trigger: spec.StringMatchTrigger([]string{"Project Falcon"}, false), Action: spec.ActionBlock, Criticality: spec.CriticalityHigh},
		{Title: instrPress, Trigger: spec.StringMatchTrigger([]string{"Project Falcon press release"}, false), Action: spec.ActionAllow, Criticality: spec.CriticalityLow},
	} {
		tn.instrs[c.Title] = tn.addInstruction(tn.agent.ID, c)
	}
	return tn
}

func (tn *tenant) addInstruction(agentID string, c spec.InstructionCreate) spec.Instruction {
	tn.h.t.Helper()
	c.AgentType = spec.AgentTypeDataProtection
	c.UsedBy = []string{agentID}
	in, err := tn.h.orgs.CreateInstruction(tn.h.t.Context(), tn.org.ID, org.InstructionCreate(c), admin)
	require.NoError(tn.h.t, err)
	return in
}

// newUser creates a person of the organisation, named name, with an email
// unique in the service.
func (tn *tenant) newUser(name string, role people.Role) people.User {
	tn.h.t.Helper()
	u, err := tn.h.people.CreateUser(tn.h.t.Context(), people.UserCreate{OrganisationID: tn.org.ID,
		Email: name + "@" + strings.ReplaceAll(tn.org.ID, "-", "") + ".test", Name: name, Role: role,
		Password: "correct horse battery staple"}, admin)
	require.NoError(tn.h.t, err)
	return u
}

// decide decides the task as the tenant's reviewer.
func (tn *tenant) decide(id, choice, comment string) (spec.ReviewTask, error) {
	return tn.h.service().Decide(tn.h.t.Context(), tn.org.ID, id, reviewapi.Decision{Choice: choice, UserID: tn.reviewer.ID, Comment: comment})
}

// newKey creates another key of the organisation and returns its secret
// and id.
func (tn *tenant) newKey(typ org.KeyType) (secret, id string) {
	tn.h.t.Helper()
	k, err := tn.h.orgs.CreateKey(tn.h.t.Context(), org.KeyCreate{OrganisationID: tn.org.ID, Name: "key " + string(typ), Type: typ}, admin)
	require.NoError(tn.h.t, err)
	return k.Secret, k.ID
}

// apiResponse is an HTTP answer, read whole.
type apiResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// send makes a request to the service. body is sent as is when it is a
// []byte or a string, JSON-encoded otherwise; nil sends none. headers are
// name, value pairs; Content-Type defaults to application/json with a body.
// It fails the test on a 5xx answer.
func (h *harness) send(t *testing.T, method, path string, body any, headers ...string) apiResponse {
	t.Helper()
	r := h.sendAllow5xx(t, method, path, body, headers...)
	require.Less(t, r.Status, 500, "%s %s: %s", method, path, r.Body)
	return r
}

func (h *harness) sendAllow5xx(t *testing.T, method, path string, body any, headers ...string) apiResponse {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, h.url+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	require.Zero(t, len(headers)%2, "headers are name, value pairs")
	for i := 0; i < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return apiResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// call makes a request with the tenant's API key as a bearer token.
func (tn *tenant) call(t *testing.T, method, path string, body any, headers ...string) apiResponse {
	t.Helper()
	return tn.h.send(t, method, path, body, append([]string{"Authorization", "Bearer " + tn.key}, headers...)...)
}

// taskBody is a create body for the tenant's agent with one user message
// per text.
func (tn *tenant) taskBody(texts ...string) map[string]any {
	msgs := make([]map[string]string, len(texts))
	for i, s := range texts {
		msgs[i] = map[string]string{"role": "user", "content": s}
	}
	return map[string]any{"agentId": tn.agent.ID, "request": map[string]any{"model": "gpt-x", "messages": msgs}}
}

// submit creates a task of the tenant's agent and requires 201.
func (tn *tenant) submit(t *testing.T, texts ...string) spec.ReviewTask {
	t.Helper()
	r := tn.call(t, http.MethodPost, "/review-tasks", tn.taskBody(texts...))
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	requireSchema(t, "review-task", r.Body)
	var task spec.ReviewTask
	require.NoError(t, json.Unmarshal(r.Body, &task))
	require.Equal(t, "/review-tasks/"+task.ID, r.Header.Get("Location"))
	return task
}

// get reads a task over HTTP and requires 200.
func (tn *tenant) get(t *testing.T, id string) spec.ReviewTask {
	t.Helper()
	r := tn.call(t, http.MethodGet, "/review-tasks/"+id, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	requireSchema(t, "review-task", r.Body)
	var task spec.ReviewTask
	require.NoError(t, json.Unmarshal(r.Body, &task))
	return task
}

// list reads GET /review-tasks?query and requires 200.
func (tn *tenant) list(t *testing.T, query string) spec.ReviewTaskList {
	t.Helper()
	r := tn.call(t, http.MethodGet, "/review-tasks?"+query, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	requireSchema(t, "review-task-list", r.Body)
	var l spec.ReviewTaskList
	require.NoError(t, json.Unmarshal(r.Body, &l))
	return l
}

// register registers rcv for events (all when none) and gives the receiver
// the secret.
func (tn *tenant) register(t *testing.T, rcv *webhooktest.Receiver, events ...string) spec.Webhook {
	t.Helper()
	body := map[string]any{"url": rcv.URL(), "description": "test receiver"}
	if len(events) > 0 {
		body["events"] = events
	}
	r := tn.call(t, http.MethodPost, "/webhooks", body)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	requireSchema(t, "webhook-created", r.Body)
	var hook spec.Webhook
	require.NoError(t, json.Unmarshal(r.Body, &hook))
	require.True(t, strings.HasPrefix(hook.Secret, "whsec_"), hook.Secret)
	rcv.SetSecret(hook.Secret)
	return hook
}

// waitTask polls the store (not the API, which counts against the rate
// limit) until the task has status want.
func (tn *tenant) waitTask(t *testing.T, id, want string) spec.ReviewTask {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), apiWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		task, err := tn.h.service().Task(ctx, tn.org.ID, id)
		if err == nil && task.Status == want {
			return task
		}
		select {
		case <-ctx.Done():
			require.FailNow(t, "task did not reach its status", "task %s: status %q, want %q (err %v)", id, task.Status, want, err)
		case <-tick.C:
		}
	}
}

// waitDeliveries polls Service.Deliveries until cond holds for the
// organisation's deliveries, and returns them.
func (tn *tenant) waitDeliveries(t *testing.T, what string, cond func([]reviewapi.DeliveryState) bool) []reviewapi.DeliveryState {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), apiWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ds, err := tn.h.service().Deliveries(ctx, tn.org.ID)
		if err == nil && cond(ds) {
			return ds
		}
		select {
		case <-ctx.Done():
			require.FailNow(t, "deliveries did not reach the expected state", "%s: %+v (err %v)", what, ds, err)
		case <-tick.C:
		}
	}
}

// waitAcks waits, bounded, for n acknowledged deliveries at rcv.
func waitAcks(t *testing.T, rcv *webhooktest.Receiver, n int) []webhooktest.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), apiWait)
	defer cancel()
	acks, err := rcv.WaitAcknowledged(ctx, n)
	require.NoError(t, err, "acknowledged so far: %v", describe(rcv.Deliveries()))
	return acks
}

// requireQuiet waits d for rcv to get more than n requests, and requires
// that it does not: nothing more is sent.
func requireQuiet(t *testing.T, rcv *webhooktest.Receiver, n int, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	got, err := rcv.Wait(ctx, n+1)
	require.ErrorIs(t, err, context.DeadlineExceeded, "unexpected deliveries: %v", describe(got))
	require.Len(t, got, n, "deliveries: %v", describe(got))
}

func describe(ds []webhooktest.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%s %s attempt %d status %d err %v", d.Type, d.ID, d.Attempt, d.Status, d.Err)
	}
	return out
}

// event is a webhook delivery body decoded strictly: exactly type,
// timestamp and data.
type event struct {
	Type      string
	Timestamp string
	Task      spec.ReviewTask
	Data      map[string]json.RawMessage
}

func decodeEvent(t *testing.T, d webhooktest.Delivery) event {
	t.Helper()
	require.NoError(t, d.Err, "delivery %s", d.ID)
	require.Equal(t, "application/json", d.Header.Get("Content-Type"))
	require.True(t, strings.HasPrefix(d.ID, "msg_"), d.ID)
	requireSchema(t, "webhook-delivery", d.Body)
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(d.Body, &top), "%s", d.Body)
	require.ElementsMatch(t, []string{"type", "timestamp", "data"}, keys(top), "%s", d.Body)
	var e event
	require.NoError(t, json.Unmarshal(top["type"], &e.Type))
	require.NoError(t, json.Unmarshal(top["timestamp"], &e.Timestamp))
	_, err := time.Parse(spec.TimeLayout, e.Timestamp)
	require.NoError(t, err, "timestamp %q is not RFC 3339 UTC with milliseconds", e.Timestamp)
	require.NoError(t, json.Unmarshal(top["data"], &e.Task))
	require.NoError(t, json.Unmarshal(top["data"], &e.Data))
	require.Equal(t, d.Type, e.Type)
	return e
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// eventsOf decodes every delivery and returns them by task id and type.
func eventsOf(t *testing.T, ds []webhooktest.Delivery) map[string]map[string][]event {
	t.Helper()
	out := map[string]map[string][]event{}
	for _, d := range ds {
		e := decodeEvent(t, d)
		if out[e.Task.ID] == nil {
			out[e.Task.ID] = map[string][]event{}
		}
		out[e.Task.ID][e.Type] = append(out[e.Task.ID][e.Type], e)
	}
	return out
}

// requireAPIError checks an error answer: the status, application/json and
// the body {"error": {"code", "message", "field"?, "taskId"?}} and nothing
// else. field "" requires that no field is named.
func requireAPIError(t *testing.T, r apiResponse, status int, code, field string) spec.ReviewErrorDetail {
	t.Helper()
	require.Equal(t, status, r.Status, "%s", r.Body)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"), "%s", r.Body)
	requireSchema(t, "review-error", r.Body)
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.Body, &top), "%s", r.Body)
	require.Equal(t, []string{"error"}, keys(top), "%s", r.Body)
	var detail map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(top["error"], &detail), "%s", r.Body)
	for k := range detail {
		require.Contains(t, []string{"code", "message", "field", "taskId"}, k, "%s", r.Body)
	}
	var e spec.ReviewErrorDetail
	dec := json.NewDecoder(bytes.NewReader(top["error"]))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&e), "%s", r.Body)
	require.Equal(t, code, e.Code, "%s", r.Body)
	require.NotEmpty(t, e.Message, "%s", r.Body)
	require.Equal(t, field, e.Field, "%s", r.Body)
	if code != spec.CodePolicyError {
		require.Empty(t, e.TaskID, "%s", r.Body)
	}
	return e
}

// ctlMatcher is a SemanticMatcher the test controls: it answers "no match",
// fails, or blocks until released.
type ctlMatcher struct {
	mode    atomic.Int32 // matcherOK, matcherFail, matcherBlock
	calls   chan struct{}
	blocked chan struct{} // a call that blocks (matcherBlock)
	release chan struct{}
	once    sync.Once
}

// Release ends every wait of a blocking matcher, now and later.
func (m *ctlMatcher) Release() { m.once.Do(func() { close(m.release) }) }

const (
	matcherOK int32 = iota
	matcherFail
	matcherBlock
)

var errMatcherDown = errors.New("semantic matcher is down")

func newCtlMatcher(mode int32) *ctlMatcher {
	m := &ctlMatcher{calls: make(chan struct{}, 1000), blocked: make(chan struct{}, 1000), release: make(chan struct{})}
	m.mode.Store(mode)
	return m
}

func (m *ctlMatcher) Match(ctx context.Context, segments, queries []string) ([][]int, error) {
	mode := m.mode.Load()
	select {
	case m.calls <- struct{}{}:
	default:
	}
	switch mode {
	case matcherFail:
		return nil, errMatcherDown
	case matcherBlock:
		select {
		case m.blocked <- struct{}{}:
		default:
		}
		select {
		case <-m.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return make([][]int, len(queries)), nil
}

// waitBlocked waits, bounded, for a call of the matcher that blocks: one
// that began after the mode became matcherBlock.
func (m *ctlMatcher) waitBlocked(t *testing.T) {
	t.Helper()
	select {
	case <-m.blocked:
	case <-time.After(apiWait):
		require.FailNow(t, "no call of the semantic matcher blocked")
	}
}

// waitCalls waits, bounded, for n more calls of the matcher.
func (m *ctlMatcher) waitCalls(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), apiWait)
	defer cancel()
	for range n {
		select {
		case <-m.calls:
		case <-ctx.Done():
			require.FailNow(t, "the semantic matcher was not called")
		}
	}
}

// rawPost posts body as JSON with key as a bearer token. It is safe to call
// from any goroutine: it reports errors instead of failing the test.
func rawPost(url, key string, body any) (int, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// requireSchema validates body against the named JSON schema of package
// spec (spec/schemas), the published contract.
func requireSchema(t *testing.T, schema string, body []byte) {
	t.Helper()
	findings, err := spec.Validate(schema, body)
	require.NoError(t, err, "%s", body)
	require.True(t, spec.Valid(findings), "%s does not follow %s: %+v", body, schema, findings)
}
