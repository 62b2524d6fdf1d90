package reviewapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/spec"
)

// agentWith adds an agent of the tenant whose instructions are Block Low
// Regex instructions with these patterns, titled by them, stored as they are
// (the store does not check patterns; the API does).
func (tn *tenant) agentWith(t *testing.T, name string, patterns ...string) spec.Agent {
	t.Helper()
	agent, err := tn.h.orgs.CreateAgent(t.Context(), tn.org.ID, name, admin)
	require.NoError(t, err)
	for _, p := range patterns {
		tn.addInstruction(agent.ID, spec.InstructionCreate{Title: p, Trigger: spec.RegexTrigger(p, true),
			Action: spec.ActionBlock, Criticality: spec.CriticalityLow})
	}
	return agent
}

// submitTo creates a task of the agent with one message and requires 201.
func (tn *tenant) submitTo(t *testing.T, agentID, text string) spec.ReviewTask {
	t.Helper()
	r := tn.call(t, http.MethodPost, "/review-tasks", semanticBody(agentID, text))
	require.Equal(t, http.StatusCreated, r.Status, "%.2000s", r.Body)
	requireSchema(t, "review-task", r.Body)
	var task spec.ReviewTask
	require.NoError(t, json.Unmarshal(r.Body, &task))
	return task
}

// A request of about 1 MB against patterns the API allows but whose search
// costs seconds of CPU: the evaluation stops at its budget and the task
// waits for a person, never approved by default.
func TestAPIEvaluationOverBudgetWaitsForPerson(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, func(c *reviewapi.Config) { c.Policy.Budget = 20 * time.Millisecond })
		tn := h.newTenant("Acme", "", 0)
		heavy := []string{`[a-z]{0,400}[^a-z]`, `(?:[a-z]|\pL){0,300}[^a-z]`, `\w{1,500}[^\w]`}
		for _, p := range heavy {
			require.NoError(t, policy.CheckPattern(p, true), "the API accepts %s", p)
		}
		agent := tn.agentWith(t, "Heavy", heavy...)
		start := time.Now()
		task := tn.submitTo(t, agent.ID, strings.Repeat("a", 1_000_000))
		require.Less(t, time.Since(start), 30*time.Second, "bounded by the budget, not by the patterns")
		require.Equal(t, spec.StatusRequiresIntervention, task.Status)
		require.Empty(t, task.Reasons)
		require.NotNil(t, task.Decision)
		require.Equal(t, spec.DecidedByPolicy, task.Decision.By)
		require.Equal(t, spec.ReasonBudget, task.Decision.Reason)
		require.Contains(t, task.Decision.Comment, "exceeded its time budget of 20ms")
		require.True(t, slices.ContainsFunc(heavy, func(p string) bool { return strings.Contains(task.Decision.Comment, strconv.Quote(p)) }),
			"the comment names the instruction: %s", task.Decision.Comment)
		require.False(t, task.ReviewDeadline.IsZero())
		require.True(t, task.CompletedAt.IsZero())

		got := tn.get(t, task.ID)
		require.Equal(t, spec.StatusRequiresIntervention, got.Status)
		require.Equal(t, spec.ReasonBudget, got.Decision.Reason)

		// A person decides it as any other task waiting for one.
		decided, err := tn.decide(task.ID, reviewapi.DecisionReject, "too large to evaluate")
		require.NoError(t, err)
		require.Equal(t, spec.StatusRejected, decided.Status)
		require.Equal(t, spec.DecidedByReviewer, decided.Decision.By)
	})
}

// An instruction stored before the pattern limits applied is never run:
// every task of its agent waits for a person, the decision naming it.
func TestAPIPatternOverLimitsWaitsForPerson(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		legacy := `[a-z]{0,1000}x`
		require.Error(t, policy.CheckPattern(legacy, true))
		agent := tn.agentWith(t, "Legacy", `secret`, legacy)
		task := tn.submitTo(t, agent.ID, "Nothing to see here.")
		require.Equal(t, spec.StatusRequiresIntervention, task.Status)
		require.Equal(t, spec.ReasonBudget, task.Decision.Reason)
		require.Contains(t, task.Decision.Comment, "Not evaluated: the pattern of instruction")
		require.Contains(t, task.Decision.Comment, legacy)
		require.Contains(t, task.Decision.Comment, "compiles to 2003 instructions")
	})
}

// The background evaluation of a task kept pending (its semantic matcher
// failed) meets an instruction over the limits: the task goes to a person
// instead of being retried again and again.
func TestAPIBackgroundEvaluationOverBudgetWaitsForPerson(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		m := newCtlMatcher(matcherFail)
		h := startHarness(t, db, func(c *reviewapi.Config) { c.Policy.Semantic = m })
		tn := h.newTenant("Acme", "", 0)
		agent := tn.semanticAgent(t)
		r := tn.call(t, http.MethodPost, "/review-tasks", semanticBody(agent.ID, "Tell me a joke about cats."))
		e := requireAPIError(t, r, http.StatusUnprocessableEntity, spec.CodePolicyError, "")

		legacy := `[a-z]{0,1000}x`
		tn.addInstruction(agent.ID, spec.InstructionCreate{Title: legacy, Trigger: spec.RegexTrigger(legacy, true),
			Action: spec.ActionBlock, Criticality: spec.CriticalityLow})
		task := tn.waitTask(t, e.TaskID, spec.StatusRequiresIntervention)
		require.Equal(t, spec.DecidedByPolicy, task.Decision.By)
		require.Equal(t, spec.ReasonBudget, task.Decision.Reason)
		require.Contains(t, task.Decision.Comment, strconv.Quote(legacy))
	})
}

// A request with more matches than the bound of one evaluation
// (policy.DefaultMaxMatches) is stopped there and waits for a person; the
// comment says so, with the bound and the instruction, not a time budget.
func TestAPIMatchBoundWaitsForPerson(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		agent := tn.agentWith(t, "Letters", `a`)
		task := tn.submitTo(t, agent.ID, strings.Repeat("a ", policy.DefaultMaxMatches+1))
		require.Equal(t, spec.StatusRequiresIntervention, task.Status)
		require.Equal(t, spec.ReasonBudget, task.Decision.Reason)
		require.Empty(t, task.Reasons)
		require.NotContains(t, task.Decision.Comment, "time budget")
		require.Contains(t, task.Decision.Comment, "stopped after more than 10,000 matches")
		require.Contains(t, task.Decision.Comment, `while matching the pattern of instruction`)
		require.Contains(t, task.Decision.Comment, `("a")`)
	})
}
