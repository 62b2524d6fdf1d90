package dashboard_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestBrowserUsagePerson: an Administrator finds a person's usage by their
// email with the keyboard, then another's from the per-user table; with a
// 200-character userId the page does not scroll sideways, at a phone's
// width and on a desktop, with a label on every control and no console
// error.
func TestBrowserUsagePerson(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newUsageEnv(t, db)
	long := strings.Repeat("averyverylonguserid", 11)[:200]
	src := testSource{name: "Team workspace"}
	for day := range 3 {
		for i, u := range []string{"ada@acme.test", "bob@acme.test", long} {
			src.usage = append(src.usage, rec(fmt.Sprintf("r%d-%d", day, i), day, 9+i, u, "gpt-large", int64(100*(i+1)), 10, 0.5))
		}
	}
	e.addSource(t, src)
	from, to := usageDay0.Format("2006-01-02"), usageDay0.AddDate(0, 0, 2).Format("2006-01-02")
	for _, size := range []struct {
		w, h   int
		prefix string
	}{{1280, 900, ""}, {390, 844, "phone-"}} {
		ctx := newBrowser(t, size.w, size.h)
		consoleErrors := watchConsole(t, ctx)
		signInBrowser(t, ctx, e.url, "ada@acme.test")
		do(t, ctx,
			chromedp.Navigate(e.url+"/usage?from="+from+"&to="+to),
			chromedp.WaitVisible(chromedp.CSS(`#t-c-user`)),
			chromedp.Focus(chromedp.CSS(`#user`)),
			chromedp.KeyEvent("Ada@acme.test"),
			chromedp.KeyEvent("\r"),
			chromedp.WaitVisible(chromedp.CSS(`p.person-of`)),
		)
		require.Contains(t, text(t, ctx, "p.person-of"), "Usage of ada@acme.test (Ada)")
		require.Equal(t, "3", text(t, ctx, "section.tiles .tile:first-child .n"), "Ada's three requests")
		missing, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](unlabelled))
		require.NoError(t, err)
		require.Empty(t, missing, "every control has a label")
		shot(t, ctx, size.prefix+"usage-person")

		// Everyone again, then the long userId's row.
		do(t, ctx,
			chromedp.Click(chromedp.CSS(`p.person-of a`)),
			chromedp.WaitNotPresent(chromedp.CSS(`p.person-of`)),
			chromedp.Click(chromedp.CSS(`#t-c-user a[href*="averyverylong"]`)),
			chromedp.WaitVisible(chromedp.CSS(`p.person-of`)),
		)
		require.Contains(t, text(t, ctx, "p.person-of"), long)
		require.Equal(t, "3", text(t, ctx, "section.tiles .tile:first-child .n"))
		shot(t, ctx, size.prefix+"usage-person-long") // fails when the page scrolls sideways
		require.Empty(t, consoleErrors(), "console errors")
	}
}
