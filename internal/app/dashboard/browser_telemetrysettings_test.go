package dashboard_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestBrowserTelemetrySettings turns the storing of prompt text on, at a
// desktop's width and at a phone's (390 px).
func TestBrowserTelemetrySettings(t *testing.T) {
	for _, c := range []struct {
		name          string
		width, height int
	}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
		t.Run(c.name, func(t *testing.T) {
			db := sqldbtest.Open(t, sqldb.SQLite)
			e := newEnv(t, db)
			b := newBrowser(t, c.width, c.height)
			signInBrowser(t, b, e.url, "ada@acme.test")
			do(t, b,
				chromedp.Navigate(e.url+"/settings/telemetry"),
				chromedp.WaitVisible(chromedp.CSS(`input[name=storePrompts][value=on]`)),
			)
			require.Contains(t, text(t, b, "main"), "not stored (the default)")
			shot(t, b, "telemetry-settings-off-"+c.name)
			do(t, b,
				chromedp.Click(chromedp.CSS(`input[name=storePrompts][value=on]`)),
				chromedp.Click(chromedp.CSS(`form[action="/settings/telemetry"] button[type=submit]`)),
				chromedp.WaitVisible(chromedp.CSS(`.notice`)),
			)
			require.Contains(t, text(t, b, ".notice"), "Prompt text is stored from the next telemetry request on.")
			require.Contains(t, text(t, b, "main"), "prompt text is stored (turned on")
			shot(t, b, "telemetry-settings-on-"+c.name)
		})
	}
}
