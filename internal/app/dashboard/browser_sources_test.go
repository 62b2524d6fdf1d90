package dashboard_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestBrowserSourcesAndAudit signs in as an Administrator in Chromium, syncs
// a source from the sources page, sees one that failed, and reads the audit
// trail, at a desktop's and at a phone's width.
func TestBrowserSourcesAndAudit(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newSourcesEnv(t, db)
	ctx := t.Context()
	provURL := newProvider(t, 40)
	vendor, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Vendor AI", URL: provURL, Token: providerToken})
	require.NoError(t, err)
	down, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "Legacy gateway", URL: unreachableURL(t), Token: providerToken, Every: time.Hour})
	require.NoError(t, err)
	_, err = e.src.SyncNow(ctx, down.ID)
	require.Error(t, err)
	// A key and a user made in the dashboard, for the audit trail.
	b := e.browser()
	b.signIn(t, "ada@acme.test", "/")
	b.post(t, "/settings/api-keys", url.Values{"name": {"crm-sync"}, "type": {"API"}})
	b.post(t, "/settings/users", url.Values{"email": {"vera@acme.test"}, "name": {"Vera"}, "role": {"Reviewer"}})

	c := newBrowser(t, 1280, 900)
	signInBrowser(t, c, e.url, "ada@acme.test")
	do(t, c,
		chromedp.Click(chromedp.CSS(`nav a[href="/sources"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#source-`+vendor.ID)),
	)
	require.Equal(t, "Sources", text(t, c, "h1"))
	require.Equal(t, "Never synced", text(t, c, `#source-`+vendor.ID+` .sourcehead .status`))
	require.Equal(t, "Last sync failed", text(t, c, `#source-`+down.ID+` .sourcehead .status`))
	require.Contains(t, text(t, c, `#source-`+down.ID+` tbody tr .errtext`), "the source cannot be reached at its address")
	do(t, c,
		chromedp.Click(chromedp.CSS(`#source-`+vendor.ID+` .syncnow button`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	)
	require.Contains(t, text(t, c, ".notice"), "Source Vendor AI is synced")
	require.Equal(t, "Synced", text(t, c, `#source-`+vendor.ID+` .sourcehead .status`))
	records := text(t, c, `#source-`+vendor.ID+` tbody tr td.num`)
	require.NotEqual(t, "0", records, "Sync now stored the conversations")
	shot(t, c, "sources")

	do(t, c,
		chromedp.Click(chromedp.CSS(`nav a[href="/audit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`table.audit`)),
	)
	require.Equal(t, "Audit trail", text(t, c, "h1"))
	require.Equal(t, "synced source", text(t, c, `table.audit tbody tr td[data-label=Action]`), "the newest record first")
	require.Contains(t, text(t, c, `table.audit tbody tr td[data-label=Who]`), "Ada")
	require.Equal(t, "source Vendor AI", text(t, c, `table.audit tbody tr td[data-label=What] a[href="/sources"]`))
	// Open the change of the newest record, then filter by action.
	do(t, c, chromedp.Click(chromedp.CSS(`table.audit details.change summary`)))
	require.Contains(t, text(t, c, `table.audit details.change pre`), `"records"`)
	shot(t, c, "audit")
	do(t, c,
		chromedp.SetValue(chromedp.CSS(`#action`), "key.created"),
		chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.filters a[href="/audit"]`)),
	)
	n, err := chromedp.Run(c, chromedp.Evaluate[int](`document.querySelectorAll('table.audit tbody tr').length`))
	require.NoError(t, err)
	require.Equal(t, 1, n, "only the key's creation")
	require.Equal(t, "created API key", text(t, c, `table.audit tbody tr td[data-label=Action]`))

	// At a phone's width nothing scrolls sideways.
	phone := newBrowser(t, 390, 844)
	signInBrowser(t, phone, e.url, "ada@acme.test")
	for _, page := range []struct{ path, name string }{{"/sources", "phone-sources"}, {"/audit", "phone-audit"}} {
		do(t, phone, chromedp.Navigate(e.url+page.path), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		if page.path == "/audit" {
			do(t, phone, chromedp.Click(chromedp.CSS(`table.audit details.change summary`)))
		} else {
			// The form that adds a source, open, with a refusal above it.
			do(t, phone,
				chromedp.Click(chromedp.CSS(`details.addsource summary`)),
				chromedp.SendKeys(chromedp.CSS(`#sname`), "Second vendor"),
				chromedp.SendKeys(chromedp.CSS(`#surl`), "ftp://nowhere"),
				chromedp.SendKeys(chromedp.CSS(`#stoken`), "t"),
				chromedp.Click(chromedp.CSS(`form[action="/sources"] button[type=submit]`)),
				chromedp.WaitVisible(chromedp.CSS(`.error`)),
			)
			require.Contains(t, text(t, phone, ".error"), "url must be an absolute http or https URL")
			open, err := chromedp.Run(phone, chromedp.Evaluate[bool](`document.querySelector('details.addsource').open`))
			require.NoError(t, err)
			require.True(t, open, "the refused form stays open")
		}
		shot(t, phone, page.name)
		overflow, err := chromedp.Run(phone, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
		require.NoError(t, err)
		require.False(t, overflow, "%s scrolls sideways at a phone's width", page.path)
		wide, err := chromedp.Run(phone, chromedp.Evaluate[string](`[...document.querySelectorAll('main *')].filter(el => !el.closest('thead, .sr') && el.getBoundingClientRect().right > window.innerWidth + 1).map(el => el.tagName + '.' + el.className).slice(0, 5).join(' ')`))
		require.NoError(t, err)
		require.Empty(t, strings.TrimSpace(wide), "%s: elements wider than a phone", page.path)
	}
}
