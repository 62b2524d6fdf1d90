package dashboard_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
)

// TestBrowserUsage signs in as a Reviewer in Chromium after two sources
// synced, and sees the usage charts and the conversations, on a desktop and
// at a phone's width.
func TestBrowserUsage(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newUsageEnv(t, db)
	ctx := newBrowser(t, 1280, 900)

	// A week of use of three models by seven people, and conversations.
	models := []string{"gpt-large", "gpt-small", "claude"}
	var recs []provider.UsageRecord
	many := testSource{name: "Chat workspace"}
	for day := -4; day <= 2; day++ {
		for i := range 4 + (day+4)%3 {
			u := fmt.Sprintf("person%d@acme.example", (i*3+day+7)%7)
			recs = append(recs, rec(fmt.Sprintf("w%d-%d", day, i), day, 8+i, u, models[(i+day+4)%3],
				int64(400+150*i+60*(day+4)), int64(90+40*i), 0.25*float64(1+i%3)))
		}
	}
	many.usage = recs
	for i := range 8 {
		many.convs = append(many.convs, conversation(fmt.Sprintf("conv-%d", i), 3*i, fmt.Sprintf("person%d", i%4), "a"+fmt.Sprint(i%2),
			fmt.Sprintf("Summarise the quarterly report, part %d", i+1), "Thanks"))
	}
	e.addSource(t, many)
	e.addSource(t, vendorTwo)

	signInBrowser(t, ctx, e.url, "rex@acme.test")
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`nav a[href="/usage"]`)),
		chromedp.WaitVisible(chromedp.CSS(`svg.chart rect.bar`)),
	)
	require.Equal(t, "Usage", text(t, ctx, "h1"))
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg.chart[role=img] rect.bar').length`))
	require.NoError(t, err)
	require.Greater(t, bars, 10, "the charts have bars")
	// The total chart is drawn at a readable size.
	width, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector('svg.chart').getBoundingClientRect().width`))
	require.NoError(t, err)
	require.Greater(t, width, 600.0)
	require.Contains(t, text(t, ctx, "#h-c-model"), "per model")
	require.Contains(t, text(t, ctx, "#t-c-source"), "Chat workspace")
	shot(t, ctx, "usage")

	do(t, ctx,
		chromedp.Click(chromedp.CSS(`nav a[href="/conversations"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#conversations`)),
	)
	require.Contains(t, text(t, ctx, "#conversations tbody tr"), "Summarise the quarterly report, part 1")
	do(t, ctx,
		chromedp.SendKeys(chromedp.CSS(`#user`), "person1"),
		chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.range a[href="/conversations"]`)), // "Clear the search": the new page
	)
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#conversations tbody tr').length`))
	require.NoError(t, err)
	require.Equal(t, 2, rows, "person1 has conv-1 and conv-5")
	shot(t, ctx, "conversations")

	// At a phone's width nothing scrolls sideways.
	phone := newBrowser(t, 390, 844)
	signInBrowser(t, phone, e.url, "rex@acme.test")
	for _, path := range []string{"/usage", "/conversations", "/usage?granularity=hour&metric=cost"} {
		do(t, phone, chromedp.Navigate(e.url+path), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		name := "phone-" + strings.TrimPrefix(path, "/")
		if strings.Contains(path, "?") {
			name = "phone-usage-hours"
		}
		shot(t, phone, name)
		overflow, err := chromedp.Run(phone, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
		require.NoError(t, err)
		require.False(t, overflow, "%s scrolls sideways at a phone's width", path)
	}
}
