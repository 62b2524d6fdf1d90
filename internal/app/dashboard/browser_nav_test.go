package dashboard_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// consoleErrors collects the console errors and uncaught exceptions of the
// browser's tab.
func consoleErrors(ctx context.Context) func() []string {
	var mu sync.Mutex
	var errs []string
	_ = chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == "error" {
				errs = append(errs, "console error")
			}
		case *runtime.EventExceptionThrown:
			errs = append(errs, e.ExceptionDetails.Text)
		}
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// unlabelled returns the ids (or names) of the page's form controls that
// have no label.
const unlabelled = `Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea'))
  .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
  .map(el => el.id || el.name)`

// TestBrowserNavigation: at a desktop's and a phone's width, with an
// organisation and a person named in 200 characters, an Administrator
// reaches API keys through Settings and sets the organisation's time zone
// with the keyboard alone; on the phone the navigation is one closed menu
// that opens from the keyboard. No page scrolls sideways, logs a console
// error or has a control without a label.
func TestBrowserNavigation(t *testing.T) {
	for _, size := range []struct {
		prefix        string
		width, height int
	}{{"", 1280, 900}, {"phone-", 390, 844}} {
		t.Run(size.prefix+"width", func(t *testing.T) {
			db := sqldbtest.Open(t, sqldb.SQLite)
			e := newEnv(t, db)
			ctx := t.Context()
			long, err := e.orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Org" + strings.Repeat("n", 197)}, admin)
			require.NoError(t, err)
			_, err = e.people.CreateUser(ctx, people.UserCreate{OrganisationID: long.ID, Email: "lee@long.test",
				Name: "Lee" + strings.Repeat("e", 197), Role: people.RoleAdministrator, Password: password}, admin)
			require.NoError(t, err)

			b := newBrowser(t, size.width, size.height)
			errs := consoleErrors(b)
			signInBrowser(t, b, e.url, "ada@acme.test")
			phone := size.width < 600
			navShown, err := chromedp.Run(b, chromedp.Evaluate[bool](`getComputedStyle(document.querySelector('nav[aria-label=Main]')).display !== 'none'`))
			require.NoError(t, err)
			require.Equal(t, !phone, navShown, "the navigation is a closed menu on a phone only")
			shot(t, b, size.prefix+"nav-overview")

			// To Settings: by the menu on a phone, opened with the
			// keyboard; by the navigation on a desktop.
			if phone {
				do(t, b, chromedp.Focus(chromedp.CSS(`details.menu summary`)),
					chromedp.KeyEvent(kb.Enter),
					chromedp.WaitVisible(chromedp.CSS(`nav[aria-label=Main] a[href="/settings"]`)))
				shot(t, b, size.prefix+"nav-menu-open")
			}
			do(t, b, chromedp.Focus(chromedp.CSS(`nav[aria-label=Main] a[href="/settings"]`)),
				chromedp.KeyEvent(kb.Enter),
				chromedp.WaitVisible(chromedp.CSS(`ul.settings-list`)))
			require.Equal(t, "Settings", text(t, b, "h1"))
			shot(t, b, size.prefix+"settings")
			do(t, b, chromedp.Focus(chromedp.CSS(`ul.settings-list a[href="/settings/api-keys"]`)),
				chromedp.KeyEvent(kb.Enter),
				chromedp.WaitVisible(chromedp.CSS(`#name`)))
			require.Equal(t, "API keys", text(t, b, "h1"))
			require.Contains(t, text(t, b, ".crumbs"), "Settings")

			// The organisation's time zone, by the keyboard.
			do(t, b, chromedp.Navigate(e.url+"/settings/organisation"), chromedp.WaitVisible(chromedp.CSS(`#timeZone`)))
			require.Contains(t, text(t, b, "#hour-used"), "0 of 1,000 requests this hour")
			shot(t, b, size.prefix+"settings-organisation")
			do(t, b, chromedp.Focus(chromedp.CSS(`#timeZone`)),
				chromedp.KeyEvent(kb.End+kb.Backspace+kb.Backspace+kb.Backspace), // "UTC"
				chromedp.SendKeys(chromedp.CSS(`#timeZone`), "America/New_York"+kb.Enter),
				chromedp.WaitVisible(chromedp.CSS(`.notice`)))
			require.Contains(t, text(t, b, ".notice"), "Time zone saved")
			require.Contains(t, text(t, b, "#h-zone + p"), "Pages show times in America/New_York")
			require.Contains(t, text(t, b, "#h-zone + p"), " America/New_York.")
			shot(t, b, size.prefix+"settings-organisation-saved")

			require.Empty(t, errs(), "console errors")

			// An organisation and a person named in 200 characters: no
			// page scrolls sideways, the menu included.
			l := newBrowser(t, size.width, size.height)
			lerrs := consoleErrors(l)
			signInBrowser(t, l, e.url, "lee@long.test")
			if phone {
				do(t, l, chromedp.Click(chromedp.CSS(`details.menu summary`)),
					chromedp.WaitVisible(chromedp.CSS(`nav[aria-label=Main] a[href="/settings"]`)))
				shot(t, l, size.prefix+"nav-long-names")
			}
			for _, path := range []string{"/", "/settings", "/settings/organisation", "/settings/api-keys", "/usage"} {
				do(t, l, chromedp.Navigate(e.url+path), chromedp.WaitVisible(chromedp.CSS(`h1`)))
				overflow, err := chromedp.Run(l, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
				require.NoError(t, err)
				require.False(t, overflow, "%s scrolls sideways", path)
				missing, err := chromedp.Run(l, chromedp.Evaluate[[]string](unlabelled))
				require.NoError(t, err)
				require.Empty(t, missing, "%s: controls without a label", path)
			}
			require.Empty(t, lerrs(), "console errors")
		})
	}
}
