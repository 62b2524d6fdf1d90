package dashboard_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// TestBrowserReviewProposal decides a task whose policy proposed a redacted
// copy, at a phone's width, and changes the review settings.
func TestBrowserReviewProposal(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newEnv(t, db)
	_, err := e.orgs.CreateInstruction(t.Context(), e.org.ID, org.InstructionCreate{AgentType: spec.AgentTypeDataProtection,
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
	_, err := e.orgs.CreateInstruction(t.Context(), e.org.ID, org.InstructionCreate{AgentType: spec.AgentTypeDataProtection,
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

// TestBrowserReviewLarge pages through a queue holding a task of about
// 1 MB, at a desktop's and a phone's width: the queue shows each message cut
// and says so, the task page shows the whole text a page at a time; an
// organisation without tasks sees the empty queue.
func TestBrowserReviewLarge(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newEnv(t, db)
	_, err := e.orgs.CreateInstruction(t.Context(), e.org.ID, org.InstructionCreate{AgentType: spec.AgentTypeDataProtection,
		Title: "Card numbers", Trigger: spec.RegexTrigger(`\b\d{4}-\d{4}-\d{4}-\d{4}\b`, true), Action: spec.ActionBlock,
		Criticality: spec.CriticalityHigh, AllowRedaction: true, UsedBy: []string{e.agent.ID}}, admin)
	require.NoError(t, err)
	para := "The customer asks for a refund of order 1182 to card 4111-1111-1111-1111 and wants to know when Project Falcon ships. " +
		"Summarise the attached thread for the support lead, keep the tone friendly and list the open questions. "
	long := strings.Repeat(para, 45_000/len(para)) // three pages of the task
	big := e.submitWaiting(t, long)
	for _, s := range []string{
		"Draft the press release for Project Falcon.",
		"Which suppliers does Project Falcon use?",
		"Charge 5500-0000-0000-0004 for the renewal.",
		"Translate the Project Falcon roadmap into German.",
		"Compare Project Falcon's budget with last year's.",
		"Write the onboarding mail for the Project Falcon team.",
		"List the risks of Project Falcon for the board.",
		"Refund 4000-1234-5678-9010 and close the ticket.",
		"Plan the Project Falcon launch event.",
		"Summarise the Project Falcon status report.",
	} {
		e.submitWaiting(t, s)
	}

	b := newBrowser(t, 1280, 900)
	signInBrowser(t, b, e.url, "rex@acme.test")
	do(t, b, chromedp.Navigate(e.url+"/review"), chromedp.WaitVisible(chromedp.CSS(`article.task`)))
	require.Contains(t, text(t, b, "main > p"), "11 tasks wait for a decision, oldest first. This page shows tasks 1 to 10.")
	require.Contains(t, text(t, b, "article.task .cut"), "Showing the first 2,000 of ")
	shot(t, b, "review-queue")
	do(t, b,
		chromedp.Click(chromedp.CSS(`a[rel=next]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[rel=prev]`)),
	)
	require.Contains(t, text(t, b, "main > p"), "This page shows tasks 11 to 11.")
	do(t, b,
		chromedp.Click(chromedp.CSS(`a[rel=prev]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[rel=next]`)),
		chromedp.Click(chromedp.CSS(`a[href="/review/`+big.ID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#text-h`)),
	)
	require.Equal(t, "Review task", text(t, b, "h1"))
	require.Contains(t, text(t, b, "section"), "page 1 of 3")
	require.Equal(t, "4111-1111-1111-1111", text(t, b, "section .message mark"))
	do(t, b,
		chromedp.Click(chromedp.CSS(`a[rel=next]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[rel=prev]`)),
		chromedp.Click(chromedp.CSS(`a[rel=next]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`a[rel=next]`)),
	)
	require.Contains(t, text(t, b, "section .cut"), "Characters 40,001 to ")
	shot(t, b, "review-task")
	do(t, b,
		chromedp.Click(chromedp.CSS(`a[href$="?copy=redacted"]`)),
		chromedp.WaitVisible(chromedp.CSS(`mark.redacted`)),
	)
	require.Equal(t, "[REDACTED]", text(t, b, "section .message mark.redacted"))

	phone := newBrowser(t, 390, 844)
	signInBrowser(t, phone, e.url, "rex@acme.test")
	do(t, phone, chromedp.Navigate(e.url+"/review"), chromedp.WaitVisible(chromedp.CSS(`article.task`)))
	shot(t, phone, "phone-review-queue")
	do(t, phone, chromedp.Navigate(e.url+"/review/"+big.ID+"?page=3"), chromedp.WaitVisible(chromedp.CSS(`#text-h`)))
	require.Contains(t, text(t, phone, "section .cut"), "Characters 40,001 to ")
	shot(t, phone, "phone-review-task")

	empty := newEnv(t, sqldbtest.Open(t, sqldb.SQLite))
	w := newBrowser(t, 1280, 900)
	signInBrowser(t, w, empty.url, "rex@acme.test")
	do(t, w, chromedp.Navigate(empty.url+"/review"), chromedp.WaitVisible(chromedp.CSS(`p.empty`)))
	require.Contains(t, text(t, w, "p.empty"), "No task waits for a person.")
	shot(t, w, "review-empty")
}
