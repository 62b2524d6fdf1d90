package reviewapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/servicetest"
	"github.com/aiusage/kit/internal/testkit/webhooktest"
	"github.com/aiusage/kit/spec"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fixture is a running service: the organisation and review-task APIs over
// one database, River working jobs, an organisation with an agent, four
// instructions (one per outcome) and an API key.
type fixture struct {
	t      *testing.T
	db     *sqldb.DB
	orgs   *org.Store
	svc    *reviewapi.Service
	clock  *clock
	url    string
	org    org.Organisation
	agent  spec.Agent
	secret string
}

var admin = org.Actor{Type: org.ActorAdmin, Name: "test"}

func newFixture(t *testing.T, db *sqldb.DB, mutate func(*reviewapi.Config)) *fixture {
	t.Helper()
	ctx := t.Context()
	clk := &clock{now: time.Now().UTC()}
	orgs, err := org.NewStore(ctx, db, org.WithNow(clk.Now))
	require.NoError(t, err)
	cfg := reviewapi.Config{AllowPrivateWebhooks: true, Now: clk.Now,
		RetrySchedule:   []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond},
		DeliveryTimeout: 2 * time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	full, srv := servicetest.Serve(t, server.Config{DB: db, Orgs: orgs, Secrets: keyring.Ephemeral(), PollInterval: 20 * time.Millisecond, Review: cfg})
	f := &fixture{t: t, db: db, orgs: orgs, svc: full.Review(), clock: clk, url: srv.URL}
	f.org, err = orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Acme"}, admin)
	require.NoError(t, err)
	f.agent, err = orgs.CreateAgent(ctx, f.org.ID, "Support", admin)
	require.NoError(t, err)
	key, err := orgs.CreateKey(ctx, org.KeyCreate{OrganisationID: f.org.ID, Name: "bot", Type: org.KeyTypeAPI}, admin)
	require.NoError(t, err)
	f.secret = key.Secret
	for _, c := range []spec.InstructionCreate{
		{Title: "IBAN", Trigger: spec.RegexTrigger(`\bDE[0-9]{20}\b`, true), Action: spec.ActionBlock, Criticality: spec.CriticalityLow, AllowRedaction: true},
		{Title: "Salaries", Trigger: spec.StringMatchTrigger([]string{"salary", "payroll"}, false), Action: spec.ActionBlock, Criticality: spec.CriticalityLow},
		{Title: "Mergers", Trigger: spec.StringMatchTrigger([]string{"Project Falcon"}, false), Action: spec.ActionBlock, Criticality: spec.CriticalityHigh},
	} {
		c.AgentType = spec.AgentTypeDataProtection
		c.UsedBy = []string{f.agent.ID}
		_, err := orgs.CreateInstruction(ctx, f.org.ID, org.InstructionCreate(c), admin)
		require.NoError(t, err)
	}
	return f
}

func (f *fixture) do(method, path string, body any) (int, http.Header, []byte) {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(f.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	require.NoError(f.t, err)
	req.Header.Set("Authorization", "Bearer "+f.secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	require.Less(f.t, resp.StatusCode, 500, "%s %s: %s", method, path, b)
	return resp.StatusCode, resp.Header, b
}

func (f *fixture) submit(text string) spec.ReviewTask {
	f.t.Helper()
	status, _, body := f.do(http.MethodPost, "/review-tasks", map[string]any{
		"agentId": f.agent.ID,
		"request": map[string]any{"model": "gpt-x", "messages": []map[string]string{{"role": "user", "content": text}}},
	})
	require.Equal(f.t, http.StatusCreated, status, "%s", body)
	var t spec.ReviewTask
	require.NoError(f.t, json.Unmarshal(body, &t))
	return t
}

func TestReviewFlow(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		f := newFixture(t, db, nil)
		rcv := webhooktest.NewReceiver(t, "")
		status, _, body := f.do(http.MethodPost, "/webhooks", map[string]any{"url": rcv.URL()})
		require.Equal(t, http.StatusCreated, status, "%s", body)
		var hook spec.Webhook
		require.NoError(t, json.Unmarshal(body, &hook))
		rcv.SetSecret(hook.Secret)

		approved := f.submit("Hello, how are you?")
		require.Equal(t, spec.StatusApproved, approved.Status)
		redacted := f.submit("Refund to DE89370400440532013000 please")
		require.Equal(t, spec.StatusApproved, redacted.Status)
		require.NotNil(t, redacted.RedactedRequest)
		require.Equal(t, "Refund to [REDACTED] please", redacted.RedactedRequest.Messages[0].Content)
		changes := f.submit("What is the SALARY of Bob?")
		require.Equal(t, spec.StatusChangeRequested, changes.Status)
		require.Len(t, changes.Reasons, 1)
		waits := f.submit("Status of project falcon?")
		require.Equal(t, spec.StatusRequiresIntervention, waits.Status)
		timesOut := f.submit("Project Falcon again")
		require.Equal(t, spec.StatusRequiresIntervention, timesOut.Status)

		ppl, err := people.New(t.Context(), people.Config{HashCost: people.HashTest, DB: f.db, Orgs: f.orgs})
		require.NoError(t, err)
		alice, err := ppl.CreateUser(t.Context(), people.UserCreate{OrganisationID: f.org.ID, Email: "alice@acme.test",
			Role: people.RoleReviewer, Password: "correct horse battery staple"}, admin)
		require.NoError(t, err)
		decided, err := f.svc.Decide(t.Context(), f.org.ID, waits.ID, reviewapi.Decision{Choice: reviewapi.DecisionApprove, UserID: alice.ID, Comment: "fine"})
		require.NoError(t, err)
		require.Equal(t, spec.StatusApproved, decided.Status)
		require.Equal(t, "alice@acme.test", decided.Decision.Reviewer)
		_, err = f.svc.Decide(t.Context(), f.org.ID, waits.ID, reviewapi.Decision{Choice: reviewapi.DecisionReject, UserID: alice.ID})
		require.ErrorIs(t, err, reviewapi.ErrFinal)

		f.clock.Advance(25 * time.Hour)
		n, err := f.svc.SweepTimeouts(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		status, _, body = f.do(http.MethodGet, "/review-tasks/"+timesOut.ID, nil)
		require.Equal(t, http.StatusOK, status)
		var got spec.ReviewTask
		require.NoError(t, json.Unmarshal(body, &got))
		require.Equal(t, spec.StatusRejected, got.Status)
		require.Equal(t, reviewapi.ReasonTimeout, got.Decision.Reason)

		// 5 created + 3 completed by policy + 2 requires_intervention + 1
		// completed by the reviewer + 1 timeout and its completed.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		acks, err := rcv.WaitAcknowledged(ctx, 13)
		require.NoError(t, err)
		types := map[string]int{}
		for _, a := range acks {
			require.NoError(t, a.Err)
			types[a.Type]++
		}
		require.Equal(t, map[string]int{"task.created": 5, "task.completed": 5, "task.requires_intervention": 2, "task.timeout": 1}, types)

		status, _, body = f.do(http.MethodGet, "/review-tasks?status=approved&limit=10", nil)
		require.Equal(t, http.StatusOK, status)
		var list spec.ReviewTaskList
		require.NoError(t, json.Unmarshal(body, &list))
		require.Equal(t, 3, list.Total)
	})
}

func TestWebhookRetriesUntilAcknowledged(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		f := newFixture(t, db, nil)
		rcv := webhooktest.NewReceiver(t, "")
		rcv.FailFirst(2)
		status, _, body := f.do(http.MethodPost, "/webhooks", map[string]any{"url": rcv.URL(), "events": []string{"task.completed"}})
		require.Equal(t, http.StatusCreated, status, "%s", body)
		var hook spec.Webhook
		require.NoError(t, json.Unmarshal(body, &hook))
		rcv.SetSecret(hook.Secret)
		f.submit("nothing to see")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		acks, err := rcv.WaitAcknowledged(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, 3, acks[0].Attempt)
		time.Sleep(300 * time.Millisecond) // no further attempt after the acknowledgement
		require.Len(t, rcv.Deliveries(), 3)
		require.Len(t, rcv.Acknowledged(), 1)
	})
}
