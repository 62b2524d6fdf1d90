package dashboard_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// watchConsole collects the errors and exceptions the pages of ctx write to
// the console; the function returned reads them.
func watchConsole(t *testing.T, ctx context.Context) func() []string {
	t.Helper()
	var (
		mu   sync.Mutex
		errs []string
	)
	lctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() {
		for m, err := range chromedp.Console(lctx) {
			if err != nil {
				return
			}
			// The site has no favicon.ico (the layout names none):
			// the browser's own request for it is not the page's error.
			if (m.Type == chromedp.ConsoleError || m.IsException()) && !strings.HasSuffix(m.URL, "/favicon.ico") {
				mu.Lock()
				errs = append(errs, m.String()+" ("+m.URL+")")
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// TestBrowserConversations: a Reviewer finds a person's conversations with
// the keyboard and reads one; the conversation, assistant and event pages
// hold 200-character names without scrolling sideways, at a phone's width
// and on a desktop, with a label on every control and no console error.
func TestBrowserConversations(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newUsageEnv(t, db)
	long := strings.Repeat("Averyverylongname", 12)[:200]
	one, _ := convsFixture(t, e, long)
	src := url.QueryEscape(one)
	eventAt := url.QueryEscape(usageDay0.Add(4 * time.Hour).Format("2006-01-02T15:04:05.000Z07:00"))
	for _, size := range []struct {
		w, h   int
		prefix string
	}{{1280, 900, ""}, {390, 844, "phone-"}} {
		ctx := newBrowser(t, size.w, size.h)
		consoleErrors := watchConsole(t, ctx)
		signInBrowser(t, ctx, e.url, "rex@acme.test")

		// The keyboard alone: type a part of a person's email, press
		// Enter, then open the first conversation with Enter.
		do(t, ctx,
			chromedp.Navigate(e.url+"/conversations"),
			chromedp.WaitVisible(chromedp.CSS(`#conversations`)),
			chromedp.Focus(chromedp.CSS(`#user`)),
			chromedp.KeyEvent("ann.lee"),
			chromedp.KeyEvent("\r"),
			chromedp.WaitVisible(chromedp.CSS(`p.range a[href="/conversations"]`)),
		)
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#conversations tbody tr').length`))
		require.NoError(t, err)
		require.Equal(t, 2, rows, "Ann's c1 and c2")
		shot(t, ctx, size.prefix+"conversations-search")
		do(t, ctx,
			chromedp.Focus(chromedp.CSS(`#conversations tbody tr:first-child a`)),
			chromedp.KeyEvent("\r"),
			chromedp.WaitVisible(chromedp.CSS(`#messages`)),
		)
		require.Equal(t, "Review clause 4 of the supply contract", text(t, ctx, "h1"))
		require.Contains(t, text(t, ctx, "#messages li:nth-child(2)"), "Clause 4 limits liability to <b>fees</b> paid.")
		shot(t, ctx, size.prefix+"conversation")

		for _, page := range []struct{ path, name, wait string }{
			{"/conversations/c-long?source=" + src, "conversation-long", "#messages"},
			{"/conversations", "conversations-long", "#conversations"},
			{"/assistants", "assistants", "#assistants"},
			{"/assistants/asst-1?source=" + src, "assistant", "#assistant-facts"},
			{"/assistants/asst-long?source=" + src, "assistant-long", "#assistant-facts"},
			{"/events", "events", "#events"},
			{"/events/ev-29?source=" + src + "&at=" + eventAt, "event-long", "#event-facts"},
		} {
			do(t, ctx, chromedp.Navigate(e.url+page.path), chromedp.WaitVisible(chromedp.CSS(page.wait)))
			missing, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](unlabelled))
			require.NoError(t, err)
			require.Empty(t, missing, "%s: every control has a label", page.path)
			shot(t, ctx, size.prefix+page.name) // fails when the page scrolls sideways
		}
		require.Empty(t, consoleErrors(), "console errors")
	}
}
