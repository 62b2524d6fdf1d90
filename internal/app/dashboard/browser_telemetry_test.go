package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestBrowserSourcesTelemetry: an Ingestion key that has sent telemetry is
// a source on the Sources page, beside a provider, and its estimated cost
// is labelled on the usage page, at a desktop's and at a phone's width.
func TestBrowserSourcesTelemetry(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newUsageEnv(t, db)
	e.addSource(t, vendorOne)
	key, err := e.orgs.CreateKey(t.Context(), org.KeyCreate{OrganisationID: e.org.ID, Name: "Claude Code laptops", Type: org.KeyTypeIngestion}, admin)
	require.NoError(t, err)
	postClaudeRequest(t, e.url, key.Secret, usageDay0.AddDate(0, 0, 1).Add(13*time.Hour), "claude-sonnet-4-5", 1000, 100, 2.5)
	adm := e.browser()
	adm.signIn(t, "ada@acme.test", "/")
	require.Eventually(t, func() bool {
		return strings.Contains(adm.get(t, "/usage").Body, "claude-sonnet-4-5")
	}, 30*time.Second, 100*time.Millisecond, "the telemetry is rolled up")

	for _, w := range []struct {
		width, height int
		suffix        string
	}{{1280, 900, ""}, {390, 844, "-phone"}} {
		c := newBrowser(t, w.width, w.height)
		signInBrowser(t, c, e.url, "ada@acme.test")
		do(t, c, chromedp.Navigate(e.url+"/sources"), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		page := text(t, c, "main")
		require.Contains(t, page, "Claude Code laptops")
		require.Contains(t, page, "Receives telemetry")
		require.Contains(t, page, "Last received")
		require.NotContains(t, page, "Nothing received yet")
		require.Contains(t, page, "Vendor One")
		wide, err := chromedp.Run(c, chromedp.Evaluate[string](`[...document.querySelectorAll('main *')].filter(el => !el.closest('thead, .sr') && el.getBoundingClientRect().right > window.innerWidth + 1).map(el => el.tagName + '.' + el.className).slice(0, 5).join(' ')`))
		require.NoError(t, err)
		require.Empty(t, strings.TrimSpace(wide), "elements wider than the window")
		shot(t, c, "sources-telemetry"+w.suffix)

		do(t, c, chromedp.Navigate(e.url+"/usage?metric=cost"), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		require.Contains(t, text(t, c, "main"), "of which estimated by the AI tools themselves: USD 2.50")
		shot(t, c, "usage-estimate"+w.suffix)
	}
}
