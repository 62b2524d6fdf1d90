package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/orgapi"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// submitWaiting submits text with a new API key and waits until the task
// waits for a person.
func (e *env) submitWaiting(t *testing.T, text string) spec.ReviewTask {
	t.Helper()
	key, err := e.orgs.CreateKey(t.Context(), orgapi.KeyCreate{OrganisationID: e.org.ID, Name: "bot", Type: orgapi.KeyTypeAPI}, admin)
	require.NoError(t, err)
	body, err := json.Marshal(map[string]any{"agentId": e.agent.ID, "request": map[string]any{"messages": []map[string]string{{"role": "user", "content": text}}}})
	require.NoError(t, err)
	status, res := e.api(t, http.MethodPost, "/review-tasks", key.Secret, string(body))
	require.Equal(t, http.StatusCreated, status, res)
	var task spec.ReviewTask
	require.NoError(t, json.Unmarshal([]byte(res), &task))
	require.Equal(t, spec.StatusRequiresIntervention, task.Status)
	return task
}

// The review queue offers the policy's redacted copy as a proposal, and the
// decision records which version the person approved.
func TestReviewProposal(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		_, err := e.orgs.CreateInstruction(t.Context(), e.org.ID, spec.InstructionCreate{AgentType: spec.AgentTypeDataProtection,
			Title: "Card numbers", Trigger: spec.RegexTrigger(`\b\d{4}-\d{4}-\d{4}-\d{4}\b`, true), Action: spec.ActionBlock,
			Criticality: spec.CriticalityHigh, AllowRedaction: true, UsedBy: []string{e.agent.ID}}, admin)
		require.NoError(t, err)
		redacted := e.submitWaiting(t, "Charge 4111-1111-1111-1111 today")
		asSent := e.submitWaiting(t, "Charge 5500-0000-0000-0004 today")
		plain := e.submitWaiting(t, "Project Falcon")

		rev := e.browser()
		rev.signIn(t, "rex@acme.test", "/review")
		q := rev.get(t, "/review")
		require.Equal(t, http.StatusOK, q.Status)
		require.Contains(t, q.Body, "Proposed: the request redacted")
		require.Contains(t, q.Body, `Charge <mark class="redacted">[REDACTED]</mark> today`)
		require.Contains(t, q.Body, `value="approve-redacted"`)
		require.Contains(t, q.Body, "Approve as sent")

		p := rev.post(t, "/review/"+redacted.ID+"/decision", url.Values{"decision": {"approve-redacted"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/review?done=approve-redacted", p.location())
		require.Contains(t, rev.get(t, p.location()).Body, "approved as redacted")
		got, err := e.review.Task(t.Context(), e.org.ID, redacted.ID)
		require.NoError(t, err)
		require.Equal(t, spec.StatusApproved, got.Status)
		require.Equal(t, "approve-redacted", got.Decision.Choice)
		require.Equal(t, "Charge [REDACTED] today", got.RedactedRequest.Messages[0].Content)

		p = rev.post(t, "/review/"+asSent.ID+"/decision", url.Values{"decision": {"approve"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		got, err = e.review.Task(t.Context(), e.org.ID, asSent.ID)
		require.NoError(t, err)
		require.Equal(t, "approve", got.Decision.Choice)
		require.Nil(t, got.RedactedRequest)

		// No proposal, nothing to approve as redacted: 400, nothing changes.
		p = rev.post(t, "/review/"+plain.ID+"/decision", url.Values{"decision": {"approve-redacted"}})
		require.Equal(t, http.StatusBadRequest, p.Status)
		require.Contains(t, p.Body, "no redacted copy")
		got, err = e.review.Task(t.Context(), e.org.ID, plain.ID)
		require.NoError(t, err)
		require.Equal(t, spec.StatusRequiresIntervention, got.Status)
	})
}

// A person of another organisation cannot see or decide the task; the
// service refuses the decision even when asked directly.
func TestReviewOtherOrganisationRefused(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		task := e.submitWaiting(t, "Project Falcon")
		globex, err := e.orgs.CreateOrganisation(t.Context(), orgapi.OrganisationCreate{Name: "Globex"}, admin)
		require.NoError(t, err)
		mallory, err := e.people.CreateUser(t.Context(), people.UserCreate{OrganisationID: globex.ID, Email: "mallory@globex.test",
			Name: "Mallory", Role: people.RoleAdministrator, Password: password}, admin)
		require.NoError(t, err)

		m := e.browser()
		m.signIn(t, "mallory@globex.test", "/review")
		require.NotContains(t, m.get(t, "/review").Body, task.ID)
		p := m.post(t, "/review/"+task.ID+"/decision", url.Values{"decision": {"approve"}})
		require.Equal(t, http.StatusNotFound, p.Status)
		_, err = e.review.Decide(t.Context(), task.ID, reviewapi.Decision{Choice: reviewapi.DecisionApprove, UserID: mallory.ID})
		require.ErrorIs(t, err, reviewapi.ErrNotReviewer)
		got, err := e.review.Task(t.Context(), e.org.ID, task.ID)
		require.NoError(t, err)
		require.Equal(t, spec.StatusRequiresIntervention, got.Status)
	})
}

func TestReviewSettingsPage(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		adm, rev := e.browser(), e.browser()
		adm.signIn(t, "ada@acme.test", "/settings/review")
		rev.signIn(t, "rex@acme.test", "/review")

		p := adm.get(t, "/settings/review")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "tasks wait <strong>24h</strong> (the service's default)")
		require.Contains(t, p.Body, "then are <strong>rejected</strong>")
		require.NotContains(t, rev.get(t, "/review").Body, `href="/settings/review"`, "a Reviewer is not offered the settings")
		require.Equal(t, http.StatusForbidden, rev.get(t, "/settings/review").Status)
		require.Equal(t, http.StatusForbidden, rev.post(t, "/settings/review", url.Values{"timeout": {"1h"}, "outcome": {"approve"}}).Status)

		for _, c := range []struct {
			name string
			form url.Values
			msg  string
		}{
			{"not a duration", url.Values{"timeout": {"tomorrow"}, "outcome": {"reject"}}, "must be a duration"},
			{"zero", url.Values{"timeout": {"0s"}, "outcome": {"reject"}}, "at least 1m"},
			{"too short", url.Values{"timeout": {"30s"}, "outcome": {"reject"}}, "reviewTimeout"},
			{"too long", url.Values{"timeout": {"2161h"}, "outcome": {"reject"}}, "reviewTimeout"},
			{"outcome", url.Values{"timeout": {"2h"}, "outcome": {"escalate"}}, "reject or approve"},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := adm.post(t, "/settings/review", c.form)
				require.Equal(t, http.StatusBadRequest, p.Status)
				require.Contains(t, p.Body, c.msg)
				require.Contains(t, p.Body, `value="`+c.form.Get("timeout")+`"`, "the form keeps what was typed")
			})
		}
		st, err := e.review.Settings(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.True(t, st.DefaultTimeout, "nothing was saved")

		p = adm.post(t, "/settings/review", url.Values{"timeout": {"90m"}, "outcome": {"approve"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		p = adm.get(t, p.location())
		require.Contains(t, p.Body, "review settings are saved")
		require.Contains(t, p.Body, "tasks wait <strong>1h30m</strong>,\nthen are <strong>approved</strong>")
		st, err = e.review.Settings(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Equal(t, reviewapi.Settings{ReviewTimeout: 90 * time.Minute, TimeoutOutcome: reviewapi.TimeoutApprove}, st)
		audit, err := e.orgs.Audit(t.Context(), e.org.ID, 0, 100)
		require.NoError(t, err)
		last := audit[len(audit)-1]
		require.Equal(t, reviewapi.AuditSettingsChanged, last.Action)
		require.Equal(t, e.admin.ID, last.Actor.ID)

		// Empty restores the default.
		p = adm.post(t, "/settings/review", url.Values{"timeout": {""}, "outcome": {"reject"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		st, err = e.review.Settings(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.True(t, st.DefaultTimeout)
		require.Equal(t, reviewapi.TimeoutReject, st.TimeoutOutcome)
	})
}

// A task the policy could not decide within its budget (here: an instruction
// stored before the pattern limits, never run) shows why it waits.
func TestReviewQueueShowsBudgetOverrun(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		_, err := e.orgs.CreateInstruction(t.Context(), e.org.ID, spec.InstructionCreate{AgentType: spec.AgentTypeDataProtection,
			Title: "Legacy words", Trigger: spec.RegexTrigger(`[a-z]{0,1000}x`, true), Action: spec.ActionBlock,
			Criticality: spec.CriticalityLow, UsedBy: []string{e.agent.ID}}, admin)
		require.NoError(t, err)
		task := e.submitWaiting(t, "Hello")
		require.Equal(t, spec.ReasonBudget, task.Decision.Reason)

		rev := e.browser()
		rev.signIn(t, "rex@acme.test", "/review")
		q := rev.get(t, "/review")
		require.Equal(t, http.StatusOK, q.Status)
		require.Contains(t, q.Body, "The policy could not decide in time")
		require.Contains(t, q.Body, "Legacy words")
		require.Contains(t, q.Body, "compiles to 2003 instructions")
	})
}

// The review queue shows a bounded page of the oldest tasks, each with its
// request of up to 1 MiB, and says how many wait in all; the overview
// counts them all.
func TestReviewQueueBounded(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		n := reviewapi.MaxQueuePage + 2
		var first, last spec.ReviewTask
		for i := range n {
			task := e.submitWaiting(t, "Project Falcon")
			if i == 0 {
				first = task
			}
			last = task
		}
		rev := e.browser()
		rev.signIn(t, "rex@acme.test", "/review")
		q := rev.get(t, "/review")
		require.Equal(t, http.StatusOK, q.Status)
		require.Equal(t, reviewapi.MaxQueuePage, strings.Count(q.Body, `<article class="card task"`))
		require.Contains(t, q.Body, fmt.Sprintf("%d tasks wait for a decision, oldest first. The oldest %d are shown", n, reviewapi.MaxQueuePage))
		require.Contains(t, q.Body, first.ID, "oldest first")
		require.NotContains(t, q.Body, last.ID)
		o := rev.get(t, "/")
		require.Contains(t, o.Body, fmt.Sprintf(`<span class="n">%d</span> review tasks wait`, n))
	})
}
