package dashboard_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// TestBrowserReviewProposal decides a task whose policy proposed a redacted
// copy, at a phone's width, and changes the review settings.
func TestBrowserReviewProposal(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newEnv(t, db)
	_, err := e.orgs.CreateInstruction(t.Context(), e.org.ID, spec.InstructionCreate{AgentType: spec.AgentTypeDataProtection,
		Title: "Card numbers", Trigger: spec.RegexTrigger(`\b\d{4}-\d{4}-\d{4}-\d{4}\b`, true), Action: spec.ActionBlock,
		Criticality: spec.CriticalityHigh, AllowRedaction: true, UsedBy: []string{e.agent.ID}}, admin)
	require.NoError(t, err)
	task := e.submitWaiting(t, "Refund order 1182 to card 4111-1111-1111-1111 and tell the customer when Project Falcon ships.")

	b := newBrowser(t, 500, 900)
	signInBrowser(t, b, e.url, "ada@acme.test")
	do(t, b,
		chromedp.Navigate(e.url+"/review"),
		chromedp.WaitVisible(chromedp.CSS(`article.task`)),
	)
	require.Equal(t, "[REDACTED]", text(t, b, "article.task mark.redacted"))
	shot(t, b, "review-proposal-phone")
	do(t, b,
		chromedp.SendKeys(chromedp.CSS(`article.task textarea`), "Masked is fine."),
		chromedp.Click(chromedp.CSS(`article.task button[value=approve-redacted]`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	)
	require.Contains(t, text(t, b, ".notice"), "approved as redacted")
	require.Contains(t, text(t, b, "main"), "No task waits for a person.")
	got, err := e.review.Task(t.Context(), e.org.ID, task.ID)
	require.NoError(t, err)
	require.Equal(t, spec.StatusApproved, got.Status)
	require.Equal(t, "approve-redacted", got.Decision.Choice)
	require.Equal(t, "Masked is fine.", got.Decision.Comment)

	do(t, b,
		chromedp.Navigate(e.url+"/settings/review"),
		chromedp.WaitVisible(chromedp.CSS(`#timeout`)),
		chromedp.SendKeys(chromedp.CSS(`#timeout`), "soon"),
		chromedp.Click(chromedp.CSS(`form[action="/settings/review"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.error`)),
	)
	require.Contains(t, text(t, b, ".error"), "must be a duration")
	shot(t, b, "review-settings-phone")
	do(t, b,
		chromedp.SetValue(chromedp.CSS(`#timeout`), "48h"),
		chromedp.Click(chromedp.CSS(`input[name=outcome][value=approve]`)),
		chromedp.Click(chromedp.CSS(`form[action="/settings/review"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	)
	require.Contains(t, text(t, b, "main"), "tasks wait 48h, then are approved")

	wide := newBrowser(t, 1280, 900)
	signInBrowser(t, wide, e.url, "ada@acme.test")
	do(t, wide, chromedp.Navigate(e.url+"/settings/review"), chromedp.WaitVisible(chromedp.CSS(`#timeout`)))
	shot(t, wide, "review-settings")
}

// TestBrowserReviewBudget shows, at a phone's width, a task the policy
// could not decide within its budget (an instruction stored before the
// pattern limits) beside an ordinary one, and decides it.
func TestBrowserReviewBudget(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newEnv(t, db)
	_, err := e.orgs.CreateInstruction(t.Context(), e.org.ID, spec.InstructionCreate{AgentType: spec.AgentTypeDataProtection,
		Title: "Legacy words", Trigger: spec.RegexTrigger(`[a-z]{0,1000}x`, true), Action: spec.ActionBlock,
		Criticality: spec.CriticalityLow, UsedBy: []string{e.agent.ID}}, admin)
	require.NoError(t, err)
	task := e.submitWaiting(t, "Summarise the quarterly figures for the board.")
	require.Equal(t, spec.ReasonBudget, task.Decision.Reason)

	b := newBrowser(t, 500, 900)
	signInBrowser(t, b, e.url, "ada@acme.test")
	do(t, b,
		chromedp.Navigate(e.url+"/review"),
		chromedp.WaitVisible(chromedp.CSS(`article.task`)),
	)
	require.Contains(t, text(t, b, "article.task"), "The policy could not decide in time")
	shot(t, b, "review-budget-phone")
	do(t, b,
		chromedp.Click(chromedp.CSS(`article.task button[value=approve]`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	)
	got, err := e.review.Task(t.Context(), e.org.ID, task.ID)
	require.NoError(t, err)
	require.Equal(t, spec.StatusApproved, got.Status)
}
