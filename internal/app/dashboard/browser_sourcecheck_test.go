package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// noneWider requires that no element of the page's main part reaches past
// the window's right edge.
func noneWider(t *testing.T, ctx context.Context) {
	t.Helper()
	wide, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('main *')].filter(el => !el.closest('thead, .sr') && el.getBoundingClientRect().right > window.innerWidth + 1).map(el => el.tagName + '.' + el.className).slice(0, 5).join(' ')`))
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(wide), "elements wider than the window")
}

// TestBrowserSourceCheck checks a source from its card with the keyboard,
// reads the report, and sees resources a provider does not offer as such,
// at a desktop's and at a phone's width, with 200-character names.
func TestBrowserSourceCheck(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newSourcesEnv(t, db)
	ctx := t.Context()
	prov := newProvider(t, 10)
	long := strings.Repeat("Vendorname", 20)
	src, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: long, URL: prov, Token: providerToken})
	require.NoError(t, err)
	usage, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Usage only " + strings.Repeat("x", 189), URL: usageOnlyProvider(t, prov), Token: providerToken})
	require.NoError(t, err)
	_, err = e.src.SyncNow(ctx, usage.ID)
	require.NoError(t, err)

	c := newBrowser(t, 1280, 900)
	errs := consoleErrors(c)
	signInBrowser(t, c, e.url, "ada@acme.test")
	card := `#source-` + src.ID
	do(t, c, chromedp.Navigate(e.url+"/sources"), chromedp.WaitVisible(chromedp.CSS(card)))
	require.Equal(t, "not offered", text(t, c, `#source-`+usage.ID+` tbody tr .status`))
	require.Equal(t, "Synced", text(t, c, `#source-`+usage.ID+` .sourcehead .status`))
	label, err := chromedp.Run(c, chromedp.Evaluate[string](`document.querySelector('`+card+` .checknow button').textContent`))
	require.NoError(t, err)
	require.Contains(t, label, "Check this source "+long, "the button names its source")
	// The keyboard: focus the button, press Enter.
	do(t, c,
		chromedp.Focus(chromedp.CSS(card+` .checknow button`)),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	)
	require.Contains(t, text(t, c, ".notice"), "conformance check runs in the background")
	require.Eventually(t, func() bool {
		runs, err := e.src.ConformanceRuns(ctx, e.org.ID, src.ID)
		require.NoError(t, err)
		return runs[0].State == sources.ConformanceDone
	}, 2*time.Minute, 100*time.Millisecond)
	do(t, c, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(card+` .conformance a`)))
	require.Regexp(t, `^Conformance report, .+: \d+ passed, 0 failed$`, text(t, c, card+` .conformance a`))
	noneWider(t, c)
	shot(t, c, "sources-conformance")
	do(t, c,
		chromedp.Focus(chromedp.CSS(card+` .conformance a`)),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`h1`)),
	)
	require.Contains(t, text(t, c, "h1"), "onformance")
	// The report's own inline style applies under its CSP.
	bg, err := chromedp.Run(c, chromedp.Evaluate[string](`getComputedStyle(document.body).fontFamily`))
	require.NoError(t, err)
	require.NotEqual(t, `"Times New Roman"`, bg, "the report's style sheet applies")
	// Not a screenshot of make screenshots: the report is some 24,000
	// pixels tall. It fits the desktop's width.
	overflow, err := chromedp.Run(c, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
	require.NoError(t, err)
	require.False(t, overflow, "the report scrolls sideways at 1280 px")
	require.Empty(t, errs(), "console errors")

	phone := newBrowser(t, 390, 844)
	perrs := consoleErrors(phone)
	signInBrowser(t, phone, e.url, "ada@acme.test")
	do(t, phone, chromedp.Navigate(e.url+"/sources"), chromedp.WaitVisible(chromedp.CSS(card+` .conformance a`)))
	noneWider(t, phone)
	shot(t, phone, "phone-sources-conformance")
	unlabelled, err := chromedp.Run(phone, chromedp.Evaluate[int](`[...document.querySelectorAll('main button, main a')].filter(el => !el.textContent.trim() && !el.getAttribute('aria-label')).length`))
	require.NoError(t, err)
	require.Zero(t, unlabelled, "every control has a name")
	do(t, phone, chromedp.Click(chromedp.CSS(card+` .conformance a`)), chromedp.WaitVisible(chromedp.CSS(`h1`)))
	require.Equal(t, "Conformance report", text(t, phone, "h1"))
	// The report is the suite's own document (package conformance), served
	// as it is; its checks' messages hold long query strings, which wrap
	// at a phone's width instead of widening the page.
	shot(t, phone, "phone-conformance-report")
	require.Empty(t, perrs(), "console errors")
}
