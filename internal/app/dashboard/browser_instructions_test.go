package dashboard_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// TestBrowserInstructions creates an instruction through the form in
// Chromium, meets the API's message for a bad pattern on the way, and sees
// the instruction listed.
func TestBrowserInstructions(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newEnv(t, db)
	ctx := newBrowser(t, 1280, 900)
	signInBrowser(t, ctx, e.url, "ada@acme.test")

	do(t, ctx,
		chromedp.Click(chromedp.CSS(`nav a[href="/instructions"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/instructions/new"]`)),
		chromedp.Click(chromedp.CSS(`a[href="/instructions/new"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#title`)),
	)
	require.Equal(t, "New instruction", text(t, ctx, "h1"))
	// Only the input of the chosen trigger type shows (CSS, no script).
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[[]bool](
		`['#pattern', '#values', '#text'].map(s => document.querySelector(s).offsetParent === null)`))
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, true}, hidden)

	do(t, ctx,
		chromedp.SendKeys(chromedp.CSS(`#title`), "Falcon codes"),
		chromedp.SetValue(chromedp.CSS(`#pattern`), `FALCON-(\d{4}`),
		chromedp.Click(chromedp.CSS(`input[name=isCaseSensitive]`)),
		chromedp.Click(chromedp.CSS(`input[name=usedBy][value="`+e.agent.ID+`"]`)),
		chromedp.Click(chromedp.CSS(`form.instr-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#e-pattern`)),
	)
	require.Contains(t, text(t, ctx, "#e-pattern"), "invalid RE2 syntax")
	require.Contains(t, text(t, ctx, ".problems"), "trigger.pattern")
	title, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#title`)))
	require.NoError(t, err)
	require.Equal(t, "Falcon codes", title, "the input is kept")
	shot(t, ctx, "instruction-form")

	do(t, ctx,
		chromedp.SetValue(chromedp.CSS(`#pattern`), `FALCON-\d{4}`),
		chromedp.Click(chromedp.CSS(`form.instr-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	)
	require.Contains(t, text(t, ctx, ".notice"), "created")
	require.Contains(t, text(t, ctx, "table.instructions"), "Falcon codes")
	require.Contains(t, text(t, ctx, "table.instructions"), `FALCON-\d{4}`)
	in := e.instruction(t, "Falcon codes")
	require.False(t, in.Trigger.CaseSensitive())
	require.Equal(t, []string{e.agent.ID}, in.UsedBy)
	shot(t, ctx, "instructions")

	// The filter narrows the list.
	do(t, ctx,
		chromedp.SetValue(chromedp.CSS(`#f-type`), "StringMatch"),
		chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`.notice`)), // the filtered page is loaded
		chromedp.WaitVisible(chromedp.CSS(`.count`)),
	)
	require.Contains(t, text(t, ctx, "table.instructions"), "Mergers")
	require.NotContains(t, text(t, ctx, "table.instructions"), "Falcon codes")

	// At a phone's width nothing scrolls sideways, with an agent name of 40
	// characters and names and a title of 200, used by an instruction.
	long40, err := e.orgs.CreateAgent(t.Context(), e.org.ID, "Customer-support-assistant-for-Europe-40", admin)
	require.NoError(t, err)
	long200, err := e.orgs.CreateAgent(t.Context(), e.org.ID, strings.Repeat("Agent", 40), admin)
	require.NoError(t, err)
	_, err = e.orgs.CreateInstruction(t.Context(), e.org.ID, org.InstructionCreate{AgentType: spec.AgentTypeDataProtection,
		Title: strings.Repeat("Title", 40), Trigger: spec.StringMatchTrigger([]string{strings.Repeat("word", 50)}, true),
		Action: spec.ActionBlock, Criticality: spec.CriticalityHigh, UsedBy: []string{long40.ID, long200.ID}}, admin)
	require.NoError(t, err)
	phone := newBrowser(t, 390, 844)
	signInBrowser(t, phone, e.url, "ada@acme.test")
	for _, c := range []struct{ path, name string }{
		{"/instructions", "phone-instructions"},
		{"/instructions/new", "phone-instruction-form"},
		{"/agents", "phone-agents"},
	} {
		do(t, phone, chromedp.Navigate(e.url+c.path), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		shot(t, phone, c.name)
		overflow, err := chromedp.Run(phone, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
		require.NoError(t, err)
		require.False(t, overflow, "%s scrolls sideways at a phone's width", c.path)
	}
	do(t, ctx, chromedp.Navigate(e.url+"/agents"), chromedp.WaitVisible(chromedp.CSS(`h1`)))
	shot(t, ctx, "agents")
}

// TestBrowserInstructionSensitivity shows the sensitivity select only for a
// Semantic trigger (CSS, no script), at a desktop's and a phone's width,
// and creates an instruction of high sensitivity with it.
func TestBrowserInstructionSensitivity(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newEnv(t, db)
	for _, width := range []int{1280, 390} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			ctx := newBrowser(t, width, 900)
			signInBrowser(t, ctx, e.url, "ada@acme.test")
			do(t, ctx,
				chromedp.Navigate(e.url+"/instructions/new"),
				chromedp.WaitVisible(chromedp.CSS(`#title`)),
			)
			hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#sensitivity').offsetParent === null`))
			require.NoError(t, err)
			require.True(t, hidden, "no sensitivity for a Regex trigger")

			title := "Salaries " + strconv.Itoa(width)
			do(t, ctx,
				chromedp.SetValue(chromedp.CSS(`#triggerType`), "Semantic"),
				chromedp.WaitVisible(chromedp.CSS(`#sensitivity`)),
				chromedp.SendKeys(chromedp.CSS(`#title`), title),
				chromedp.SetValue(chromedp.CSS(`#text`), "Salaries, bonuses or other compensation of individual employees"),
				chromedp.SetValue(chromedp.CSS(`#sensitivity`), "high"),
				chromedp.ScrollIntoView(chromedp.CSS(`#sensitivity`)),
			)
			require.Contains(t, text(t, ctx, `label[for=sensitivity]`), "Sensitivity")
			require.Contains(t, text(t, ctx, `#h-sensitivity`), "High catches most of them")
			shot(t, ctx, "instruction-sensitivity-"+strconv.Itoa(width))
			do(t, ctx,
				chromedp.Click(chromedp.CSS(`input[name=usedBy][value="`+e.agent.ID+`"]`)),
				chromedp.Click(chromedp.CSS(`form.instr-form button[type=submit]`)),
				chromedp.WaitVisible(chromedp.CSS(`.notice`)),
			)
			require.Equal(t, spec.SensitivityHigh, e.instruction(t, title).Trigger.Sensitivity)
		})
	}
}
