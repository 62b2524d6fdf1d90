package reviewapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/webhooktest"
	"github.com/aiusage/kit/spec"
)

// semanticAgent adds an agent whose one instruction is Semantic, so that
// its evaluation goes through the configured SemanticMatcher.
func (tn *tenant) semanticAgent(t *testing.T) spec.Agent {
	t.Helper()
	agent, err := tn.h.orgs.CreateAgent(t.Context(), tn.org.ID, "Semantic", admin)
	require.NoError(t, err)
	tn.addInstruction(agent.ID, spec.InstructionCreate{Title: "Confidential plans", Trigger: spec.SemanticTrigger("confidential merger plans"),
		Action: spec.ActionBlock, Criticality: spec.CriticalityHigh})
	return agent
}

func semanticBody(agentID, text string) map[string]any {
	return map[string]any{"agentId": agentID, "request": map[string]any{"messages": []map[string]string{{"role": "user", "content": text}}}}
}

func TestAPIPolicyErrorKeepsTaskPendingThenEvaluates(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		m := newCtlMatcher(matcherFail)
		h := startHarness(t, db, func(c *reviewapi.Config) { c.Policy.Semantic = m })
		tn := h.newTenant("Acme", "", 0)
		agent := tn.semanticAgent(t)
		rcv := webhooktest.NewReceiver(t, "")
		tn.register(t, rcv)

		r := tn.call(t, http.MethodPost, "/review-tasks", semanticBody(agent.ID, "Tell me a joke about cats."))
		e := requireAPIError(t, r, http.StatusUnprocessableEntity, spec.CodePolicyError, "")
		require.NotEmpty(t, e.TaskID)
		require.NotContains(t, e.Message, errMatcherDown.Error(), "internals stay inside")
		require.NotEmpty(t, r.Header.Get("RateLimit"))

		// The task exists, waiting to be evaluated again (a background
		// attempt may be under way).
		task := tn.get(t, e.TaskID)
		require.Contains(t, []string{spec.StatusPending, spec.StatusProcessing}, task.Status)
		require.Equal(t, agent.ID, task.AgentID)
		require.Nil(t, task.Decision)
		l := tn.list(t, "")
		require.Equal(t, 1, l.Total)
		require.Equal(t, e.TaskID, l.Data[0].ID)

		// The background job tries again, fails again, and leaves it pending.
		m.waitCalls(t, 2)
		pending := tn.waitTask(t, e.TaskID, spec.StatusPending)
		require.Empty(t, pending.Reasons)
		require.Equal(t, spec.StatusPending, tn.get(t, e.TaskID).Status)
		l = tn.list(t, "status=pending")
		require.Equal(t, 1, l.Total)
		_, err := tn.decide(e.TaskID, reviewapi.DecisionApprove, "")
		require.ErrorIs(t, err, reviewapi.ErrFinal, "a pending task awaits no decision")

		// The matcher recovers: a retry evaluates the task.
		m.mode.Store(matcherOK)
		done := tn.waitTask(t, e.TaskID, spec.StatusApproved)
		require.Equal(t, spec.DecidedByPolicy, done.Decision.By)
		byTask := eventsOf(t, waitAcks(t, rcv, 2))
		requireEventTypes(t, byTask, e.TaskID, spec.EventTaskCreated, spec.EventTaskCompleted)
		require.Equal(t, done, byTask[e.TaskID][spec.EventTaskCompleted][0].Task)
		require.Equal(t, done, tn.get(t, e.TaskID))

		// The other agent, without Semantic instructions, never needed the
		// matcher.
		m.mode.Store(matcherFail)
		require.Equal(t, spec.StatusApproved, tn.submit(t, "hello").Status)
	})
}

// TestAPIProcessingIsVisible holds a background evaluation in the semantic
// matcher: meanwhile the task is processing, and awaits no decision.
func TestAPIProcessingIsVisible(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		m := newCtlMatcher(matcherFail)
		h := startHarness(t, db, func(c *reviewapi.Config) { c.Policy.Semantic = m })
		t.Cleanup(m.Release) // before the service stops, should the test fail
		tn := h.newTenant("Acme", "", 0)
		agent := tn.semanticAgent(t)

		r := tn.call(t, http.MethodPost, "/review-tasks", semanticBody(agent.ID, "A harmless question."))
		e := requireAPIError(t, r, http.StatusUnprocessableEntity, spec.CodePolicyError, "")
		m.mode.Store(matcherBlock)
		// A retry that began before the switch can still fail, and the task
		// be pending again: wait for an evaluation held in the matcher.
		m.waitBlocked(t)
		tn.waitTask(t, e.TaskID, spec.StatusProcessing)
		require.Equal(t, spec.StatusProcessing, tn.get(t, e.TaskID).Status)
		l := tn.list(t, "status=processing")
		require.Equal(t, 1, l.Total)
		require.Equal(t, e.TaskID, l.Data[0].ID)
		require.Zero(t, tn.list(t, "status=pending").Total)
		_, err := tn.decide(e.TaskID, reviewapi.DecisionReject, "")
		require.ErrorIs(t, err, reviewapi.ErrFinal, "a task being evaluated awaits no decision")

		m.Release()
		task := tn.waitTask(t, e.TaskID, spec.StatusApproved)
		require.Equal(t, spec.DecidedByPolicy, task.Decision.By)
	})
}

// TestAPIPolicyErrorSurvivesRestart stops the service while a task waits
// for its evaluation to be retried: another process evaluates it.
func TestAPIPolicyErrorSurvivesRestart(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		m := newCtlMatcher(matcherFail)
		h := startHarness(t, db, func(c *reviewapi.Config) { c.Policy.Semantic = m })
		tn := h.newTenant("Acme", "", 0)
		agent := tn.semanticAgent(t)
		rcv := webhooktest.NewReceiver(t, "")
		tn.register(t, rcv, spec.EventTaskCompleted)

		r := tn.call(t, http.MethodPost, "/review-tasks", semanticBody(agent.ID, "Is this fine?"))
		e := requireAPIError(t, r, http.StatusUnprocessableEntity, spec.CodePolicyError, "")
		m.waitCalls(t, 2) // the POST, then the background job
		tn.waitTask(t, e.TaskID, spec.StatusPending)
		h.stopService()

		m.mode.Store(matcherOK)
		h.startService()
		acks := waitAcks(t, rcv, 1)
		ev := decodeEvent(t, acks[0])
		require.Equal(t, e.TaskID, ev.Task.ID)
		require.Equal(t, spec.StatusApproved, ev.Task.Status)
		require.Equal(t, spec.StatusApproved, tn.get(t, e.TaskID).Status)
	})
}

// timeoutMatcher fails as an embeddings client does when its HTTP client
// times out: with an error that is context.DeadlineExceeded.
type timeoutMatcher struct{}

func (timeoutMatcher) Match(context.Context, []string, []string) ([][]int, error) {
	return nil, fmt.Errorf("embeddings: Post \"http://127.0.0.1/v1/embeddings\": %w", context.DeadlineExceeded)
}

// TestAPIPolicyErrorOnMatcherTimeout checks that a matcher that times out is
// a POLICY_ERROR naming the task, not the 503 of a request that ran out of
// time: the task exists and stays pending.
func TestAPIPolicyErrorOnMatcherTimeout(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, func(c *reviewapi.Config) { c.Policy.Semantic = timeoutMatcher{} })
		tn := h.newTenant("Acme", "", 0)
		agent := tn.semanticAgent(t)
		r := tn.call(t, http.MethodPost, "/review-tasks", semanticBody(agent.ID, "Our confidential merger plans."))
		e := requireAPIError(t, r, http.StatusUnprocessableEntity, spec.CodePolicyError, "")
		require.NotEmpty(t, e.TaskID)
		require.Contains(t, []string{spec.StatusPending, spec.StatusProcessing}, tn.get(t, e.TaskID).Status)
	})
}
