package dashboard_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
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
	key, err := e.orgs.CreateKey(t.Context(), org.KeyCreate{OrganisationID: e.org.ID, Name: "bot", Type: org.KeyTypeAPI}, admin)
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
		_, err := e.orgs.CreateInstruction(t.Context(), e.org.ID, org.InstructionCreate{AgentType: spec.AgentTypeDataProtection,
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
		globex, err := e.orgs.CreateOrganisation(t.Context(), org.OrganisationCreate{Name: "Globex"}, admin)
		require.NoError(t, err)
		mallory, err := e.people.CreateUser(t.Context(), people.UserCreate{OrganisationID: globex.ID, Email: "mallory@globex.test",
			Name: "Mallory", Role: people.RoleAdministrator, Password: password}, admin)
		require.NoError(t, err)

		m := e.browser()
		m.signIn(t, "mallory@globex.test", "/review")
		require.NotContains(t, m.get(t, "/review").Body, task.ID)
		p := m.post(t, "/review/"+task.ID+"/decision", url.Values{"decision": {"approve"}})
		require.Equal(t, http.StatusNotFound, p.Status)
		_, err = e.review.Decide(t.Context(), e.org.ID, task.ID, reviewapi.Decision{Choice: reviewapi.DecisionApprove, UserID: mallory.ID})
		require.ErrorIs(t, err, reviewapi.ErrNotReviewer)
		_, err = e.review.Decide(t.Context(), mallory.OrganisationID, task.ID, reviewapi.Decision{Choice: reviewapi.DecisionApprove, UserID: mallory.ID})
		require.ErrorIs(t, err, reviewapi.ErrTaskNotFound, "another organisation's task is unknown")
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
		_, err := e.orgs.CreateInstruction(t.Context(), e.org.ID, org.InstructionCreate{AgentType: spec.AgentTypeDataProtection,
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

// The review queue shows a page of the oldest tasks at a time, with links
// to the pages before and after that work without JavaScript; the
// overview counts them all.
func TestReviewQueuePaged(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		n := reviewapi.DefaultQueuePage + 2
		var ids []string
		for range n {
			ids = append(ids, e.submitWaiting(t, "Project Falcon").ID)
		}
		rev := e.browser()
		rev.signIn(t, "rex@acme.test", "/review")
		q := rev.get(t, "/review")
		require.Equal(t, http.StatusOK, q.Status)
		require.Equal(t, reviewapi.DefaultQueuePage, strings.Count(q.Body, `<article class="card task"`))
		require.Contains(t, q.Body, fmt.Sprintf("%d tasks wait for a decision, oldest first. This page shows tasks 1 to %d.", n, reviewapi.DefaultQueuePage))
		require.NotContains(t, q.Body, `rel="prev"`)
		next := attr(t, q.Body, `rel="next"`)
		q2 := rev.get(t, next)
		require.Equal(t, http.StatusOK, q2.Status)
		require.Equal(t, 2, strings.Count(q2.Body, `<article class="card task"`))
		require.Contains(t, q2.Body, fmt.Sprintf("This page shows tasks %d to %d.", n-1, n))
		require.NotContains(t, q2.Body, `rel="next"`)
		seen := 0
		for _, id := range ids {
			if strings.Contains(q.Body, id) != strings.Contains(q2.Body, id) {
				seen++
			}
		}
		require.Equal(t, n, seen, "every task on exactly one page")
		back := rev.get(t, attr(t, q2.Body, `rel="prev"`))
		require.Equal(t, q.Body[strings.Index(q.Body, "<main>"):], back.Body[strings.Index(back.Body, "<main>"):], "the previous page is the first")

		for _, bad := range []string{"/review?after=1", "/review?before=x.y", "/review?after=1." + ids[0] + "&before=1." + ids[0]} {
			p := rev.get(t, bad)
			require.Equal(t, http.StatusBadRequest, p.Status, bad)
			require.Contains(t, p.Body, "not one of the review queue")
		}
		o := rev.get(t, "/")
		require.Contains(t, o.Body, fmt.Sprintf(`<span class="n">%d</span> review tasks wait`, n))
	})
}

// attr returns the href of the first link whose tag holds marker, with
// its HTML entities decoded.
func attr(t *testing.T, body, marker string) string {
	t.Helper()
	i := strings.Index(body, marker)
	require.GreaterOrEqual(t, i, 0, "no link %s", marker)
	start := strings.LastIndex(body[:i], "<a ")
	tag := body[start:i]
	h := strings.Index(tag, `href="`)
	require.GreaterOrEqual(t, h, 0)
	href := tag[h+len(`href="`):]
	return html.UnescapeString(href[:strings.Index(href, `"`)])
}

// Tasks of about 1 MB each: the queue shows the first 2,000 characters of
// each message and says so; the task page shows its text 20,000 characters
// a page, and the download all of it. Before, 25 such tasks made a page of
// 26 MB.
func TestReviewQueueLargeTasks(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		// No job runs here (the tasks wait for a person, who decides
		// none): the queue's polls would only cost CPU.
		e := newEnvIdleJobs(t, db)
		const size = 1_000_000
		text := "Project Falcon " + strings.Repeat("é", 1000) + strings.Repeat("x", size-15-1000) // 1,001,000 bytes
		// 25 in make test; with -short (CI's race phase, where each task of
		// 1 MB costs seconds) one more than a page still fills the page
		// measured below.
		tasks := 25
		if testing.Short() {
			tasks = reviewapi.DefaultQueuePage + 1
		}
		var first spec.ReviewTask
		for i := range tasks {
			task := e.submitWaiting(t, text)
			if i == 0 {
				first = task
			}
		}
		rev := e.browser()
		rev.signIn(t, "rex@acme.test", "/review")
		q := rev.get(t, "/review")
		require.Equal(t, http.StatusOK, q.Status)
		require.Less(t, len(q.Body), 256<<10, "a page of 10 tasks of 1 MB")
		require.Equal(t, reviewapi.DefaultQueuePage, strings.Count(q.Body, "Showing the first 2,000 of 1,000,000 characters."))
		require.Contains(t, q.Body, "<mark>Project Falcon</mark>")
		require.Contains(t, q.Body, `<a href="/review/`+first.ID+`">Read the whole task</a>`)

		p := rev.get(t, "/review/"+first.ID)
		require.Equal(t, http.StatusOK, p.Status)
		require.Less(t, len(p.Body), 128<<10)
		require.Contains(t, p.Body, "1 message, 1,000,000 characters in all, shown 20,000 characters a page: this is page 1 of 50.")
		require.Contains(t, p.Body, "<mark>Project Falcon</mark>")
		require.Contains(t, p.Body, "Characters 1 to 20,000 of 1,000,000.")
		require.Contains(t, p.Body, `value="approve"`)
		p = rev.get(t, attr(t, p.Body, `rel="next"`))
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "Characters 20,001 to 40,000 of 1,000,000.")
		require.NotContains(t, p.Body, "<mark>")
		p = rev.get(t, "/review/"+first.ID+"?page=50")
		require.Contains(t, p.Body, "Characters 980,001 to 1,000,000 of 1,000,000.")
		require.NotContains(t, p.Body, `rel="next"`)
		for path, status := range map[string]int{
			"?page=51": http.StatusNotFound, "?page=0": http.StatusBadRequest, "?page=x": http.StatusBadRequest,
			"?copy=other": http.StatusBadRequest, "?copy=redacted": http.StatusNotFound,
		} {
			require.Equal(t, status, rev.get(t, "/review/"+first.ID+path).Status, path)
		}

		d := rev.get(t, "/review/"+first.ID+"/request.txt")
		require.Equal(t, http.StatusOK, d.Status)
		require.Equal(t, "text/plain; charset=utf-8", d.Header.Get("Content-Type"))
		require.Contains(t, d.Header.Get("Content-Disposition"), "attachment")
		require.Equal(t, "--- message 1 of 1 · user ---\n"+text+"\n", d.Body)
	})
}

// The task page marks the matches and shows the redacted copy on request;
// a task of another organisation is unknown, a decided one has no form.
func TestReviewTaskPage(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		_, err := e.orgs.CreateInstruction(t.Context(), e.org.ID, org.InstructionCreate{AgentType: spec.AgentTypeDataProtection,
			Title: "Card numbers", Trigger: spec.RegexTrigger(`\b\d{4}-\d{4}-\d{4}-\d{4}\b`, true), Action: spec.ActionBlock,
			Criticality: spec.CriticalityHigh, AllowRedaction: true, UsedBy: []string{e.agent.ID}}, admin)
		require.NoError(t, err)
		task := e.submitWaiting(t, "Charge 4111-1111-1111-1111 <b>today</b>")
		rev := e.browser()
		rev.signIn(t, "rex@acme.test", "/review")
		p := rev.get(t, "/review/"+task.ID)
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "Charge <mark>4111-1111-1111-1111</mark> &lt;b&gt;today&lt;/b&gt;")
		require.Contains(t, p.Body, "Card numbers")
		r := rev.get(t, "/review/"+task.ID+"?copy=redacted")
		require.Equal(t, http.StatusOK, r.Status)
		require.Contains(t, r.Body, `Charge <mark class="redacted">[REDACTED]</mark> &lt;b&gt;today&lt;/b&gt;`)
		txt := rev.get(t, "/review/"+task.ID+"/request.txt?copy=redacted")
		require.Equal(t, "--- message 1 of 1 · user ---\nCharge [REDACTED] <b>today</b>\n", txt.Body)

		require.Equal(t, http.StatusNotFound, rev.get(t, "/review/not-a-task").Status)
		require.Equal(t, http.StatusNotFound, rev.get(t, "/review/"+uuid.NewString()).Status)
		require.Equal(t, http.StatusNotFound, rev.get(t, "/review/"+uuid.NewString()+"/request.txt").Status)
		globex, err := e.orgs.CreateOrganisation(t.Context(), org.OrganisationCreate{Name: "Globex"}, admin)
		require.NoError(t, err)
		_, err = e.people.CreateUser(t.Context(), people.UserCreate{OrganisationID: globex.ID, Email: "mallory@globex.test",
			Name: "Mallory", Role: people.RoleAdministrator, Password: password}, admin)
		require.NoError(t, err)
		m := e.browser()
		m.signIn(t, "mallory@globex.test", "/review")
		require.Equal(t, http.StatusNotFound, m.get(t, "/review/"+task.ID).Status)
		require.Equal(t, http.StatusNotFound, m.get(t, "/review/"+task.ID+"/request.txt").Status)

		d := rev.post(t, "/review/"+task.ID+"/decision", url.Values{"decision": {"reject"}})
		require.Equal(t, http.StatusSeeOther, d.Status, d.Body)
		p = rev.get(t, "/review/"+task.ID)
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "it is rejected")
		require.NotContains(t, p.Body, `value="approve"`)
	})
}
