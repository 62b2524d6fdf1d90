package dashboard_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestBrowserPrices sets a price at a phone's width (390 px): the empty
// state, an error naming the field, the table.
func TestBrowserPrices(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newEnv(t, db)
	b := newBrowser(t, 390, 844)
	signInBrowser(t, b, e.url, "ada@acme.test")
	do(t, b,
		chromedp.Navigate(e.url+"/settings/prices"),
		chromedp.WaitVisible(chromedp.CSS(`#model`)),
	)
	require.Contains(t, text(t, b, "main"), "No prices yet: costs are the tools' own estimates only.")
	shot(t, b, "prices-empty-phone")
	do(t, b,
		chromedp.SendKeys(chromedp.CSS(`#model`), "claude-sonnet-4-5"),
		chromedp.SendKeys(chromedp.CSS(`#input`), "3"),
		chromedp.SendKeys(chromedp.CSS(`#output`), "-15"),
		chromedp.Click(chromedp.CSS(`form[action="/settings/prices"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.error`)),
	)
	require.Contains(t, text(t, b, ".error"), "Output price")
	shot(t, b, "prices-error-phone")
	do(t, b,
		chromedp.SetValue(chromedp.CSS(`#output`), "15"),
		chromedp.SendKeys(chromedp.CSS(`#cacheRead`), "0.3"),
		chromedp.SendKeys(chromedp.CSS(`#cacheWrite`), "3.75"),
		chromedp.Click(chromedp.CSS(`form[action="/settings/prices"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	)
	require.Contains(t, text(t, b, "main table"), "claude-sonnet-4-5")
	shot(t, b, "prices-phone")
}
