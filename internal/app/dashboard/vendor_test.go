package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer/vendorusage/vendortest"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// fillVendor gives a vendor fake a person and two days of usage and costs:
// 1.25 + 0.75 per day, 4.00 in all.
func fillVendor(f *vendortest.Server, now time.Time) {
	f.AddUser("user_ann", "ann@acme.test")
	h := now.UTC().Truncate(time.Hour)
	for d := range 2 {
		at := h.Add(-time.Duration(d*24+1) * time.Hour)
		f.AddUsage(vendortest.Usage{Hour: at, Model: "model-large", User: "user_ann", APIKey: "key_1", Project: "proj_1", Requests: 3,
			Uncached: 1000, CacheRead: 500, Output: 250})
		f.AddCost(vendortest.Cost{Day: at, Project: "proj_1", LineItem: "model-large, input", Model: "model-large", USD: "1.25"},
			vendortest.Cost{Day: at, Project: "proj_1", LineItem: "model-large, output", Model: "model-large", USD: "0.75"})
	}
}

// sourceCard returns the card of source id on the sources page body.
func sourceCard(t *testing.T, body, id string) string {
	t.Helper()
	i := strings.Index(body, `id="source-`+id+`"`)
	require.GreaterOrEqual(t, i, 0, "the source's card")
	j := strings.Index(body[i:], "</section>")
	require.Positive(t, j)
	return body[i : i+j]
}

// TestVendorSourceDashboard: an Administrator adds an OpenAI source on the
// Sources page (the Admin key as its token, the vendor's address by
// default); a bad form is 400 naming the field; the card names the
// transport and shows only usage; after Sync now the usage page and the
// overview label the vendor's costs as per day and project; a revoked key
// shows the vendor's answer, never the key.
func TestVendorSourceDashboard(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newSourcesEnv(t, db, func(c *sources.Config) { c.VendorRate = 50 })
		f := vendortest.NewOpenAI()
		t.Cleanup(f.Close)
		fillVendor(f, time.Now())
		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/sources")
		p := adm.get(t, "/sources")
		require.Contains(t, p.Body, `<option value="openai" data-url="https://api.openai.com"`)
		require.Contains(t, p.Body, `<option value="anthropic" data-url="https://api.anthropic.com"`)
		require.Contains(t, p.Body, `<span class="v-vendor">Admin key</span>`)

		good := url.Values{"name": {"OpenAI"}, "transport": {"openai"}, "url": {f.URL}, "token": {f.Key}}
		for _, c := range []struct {
			name   string
			change url.Values
			msg    string
		}{
			{"no key", url.Values{"token": {""}}, "token is required: the OpenAI Admin key"},
			{"bad url", url.Values{"url": {"ftp://x"}}, "url must be an absolute http or https URL"},
			{"no name", url.Values{"name": {""}}, "name is required"},
			{"bad transport", url.Values{"transport": {"gemini"}}, "transport must be rest, mcp, export, push, openai or anthropic"},
		} {
			form := url.Values{}
			for k, v := range good {
				form[k] = v
			}
			for k, v := range c.change {
				form[k] = v
			}
			p := adm.post(t, "/sources", form)
			require.Equal(t, http.StatusBadRequest, p.Status, c.name)
			require.Contains(t, p.Body, c.msg, c.name)
			require.NotContains(t, p.Body, f.Key, "the key is not put back in the form")
		}
		listed, err := e.src.List(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Empty(t, listed, "nothing added by a refused form")

		p = adm.post(t, "/sources", good)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		p = adm.post(t, "/sources", url.Values{"name": {"Anthropic"}, "transport": {"anthropic"}, "url": {""}, "token": {"sk-ant-admin-other-1234"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		listed, err = e.src.List(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Len(t, listed, 2)
		if listed[0].Name != "OpenAI" { // added in one millisecond: in the order of their ids
			listed[0], listed[1] = listed[1], listed[0]
		}
		oa := listed[0]
		require.Equal(t, f.Key, oa.Token)
		require.Equal(t, time.Hour, oa.Every, "hourly by default")
		require.Equal(t, "https://api.anthropic.com", listed[1].URL, "the vendor's own address by default")
		_, err = e.src.Remove(t.Context(), e.org.ID, listed[1].ID)
		require.NoError(t, err)

		p = adm.post(t, "/sources/"+oa.ID+"/sync", nil)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		card := sourceCard(t, adm.get(t, "/sources").Body, oa.ID)
		require.Contains(t, card, "<dd>OpenAI usage API</dd>")
		require.Contains(t, card, `data-label="Resource">usage</th>`)
		require.NotContains(t, card, "conversations", "only usage is synced")
		require.NotContains(t, card, f.Key)

		const label = "of which per day and project, not per person (OpenAI, Anthropic costs): USD 4.00"
		p = adm.get(t, "/usage")
		require.Equal(t, http.StatusOK, p.Status)
		// The usage buckets carry no cost (the vendor's costs are buckets
		// of their own), so the sum is "at least".
		require.Contains(t, p.Body, `<span class="n">≥ USD 4.00</span> cost: at least, as some usage has no cost <span class="est">(`+label+`)</span>`)
		require.Contains(t, p.Body, "ann@acme.test", "the person is the user's email")
		require.Contains(t, p.Body, `<td class="num">USD 4.00<br><span class="est">per day and project</span></td>`, "the cost of no person")
		require.Contains(t, p.Body, `<td class="num">≥ USD 2.00<br><span class="est">per day and project</span></td>`, "a day's cost")
		require.Contains(t, adm.get(t, "/").Body, `, cost ≥ USD 4.00 <span class="est">(`+label+`)</span>`)

		f.Revoke()
		p = adm.post(t, "/sources/"+oa.ID+"/sync", nil)
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "OpenAI refused the Admin key")
		require.Contains(t, p.Body, "Incorrect API key provided")
		require.NotContains(t, p.Body, f.Key)
		card = sourceCard(t, adm.get(t, "/sources").Body, oa.ID)
		require.Regexp(t, regexp.MustCompile(`class="errtext">OpenAI refused the Admin key: [^<]*Incorrect API key provided`), card)
	})
}

// TestBrowserVendorSource adds an OpenAI source in Chromium: choosing the
// transport labels the token "Admin key" and shows the vendor's address as
// the URL's placeholder; then the synced source's card and the usage page,
// at a desktop's and at a phone's width.
func TestBrowserVendorSource(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newSourcesEnv(t, db, func(c *sources.Config) { c.VendorRate = 50 })
	f := vendortest.NewOpenAI()
	t.Cleanup(f.Close)
	fillVendor(f, time.Now())
	for _, w := range []struct {
		width, height int
		suffix        string
	}{{1280, 900, ""}, {390, 844, "-phone"}} {
		c := newBrowser(t, w.width, w.height)
		signInBrowser(t, c, e.url, "ada@acme.test")
		name := "OpenAI" + w.suffix
		do(t, c,
			chromedp.Navigate(e.url+"/sources"),
			chromedp.Click(chromedp.CSS(`details.addsource summary`)),
			chromedp.SetValue(chromedp.CSS(`#stransport`), "openai"),
		)
		_, err := chromedp.Run(c, chromedp.Evaluate[bool](`document.getElementById('stransport').dispatchEvent(new Event('change'))`))
		require.NoError(t, err)
		require.Equal(t, "Admin key", text(t, c, `label[for=stoken]`))
		placeholder, err := chromedp.Run(c, chromedp.Evaluate[string](`document.getElementById('surl').placeholder`))
		require.NoError(t, err)
		require.Equal(t, "https://api.openai.com", placeholder)
		shot(t, c, "sources-add-openai"+w.suffix)
		do(t, c,
			chromedp.SendKeys(chromedp.CSS(`#sname`), name),
			chromedp.SendKeys(chromedp.CSS(`#surl`), f.URL),
			chromedp.SendKeys(chromedp.CSS(`#stoken`), f.Key),
			chromedp.Click(chromedp.CSS(`form[action="/sources"] button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`.notice`)),
		)
		list, err := e.src.List(t.Context(), e.org.ID)
		require.NoError(t, err)
		id := list[len(list)-1].ID
		do(t, c,
			chromedp.Click(chromedp.CSS(`#source-`+id+` .syncnow button`)),
			chromedp.WaitVisible(chromedp.CSS(`#source-`+id+` .sourcehead .status.synced`)),
		)
		require.Equal(t, "Synced", text(t, c, `#source-`+id+` .sourcehead .status`))
		require.Equal(t, "OpenAI usage API", text(t, c, `#source-`+id+` .facts div:nth-child(2) dd`))
		do(t, c, chromedp.ScrollIntoView(chromedp.CSS(`#source-`+id)))
		shot(t, c, "sources-openai"+w.suffix)
		do(t, c, chromedp.Navigate(e.url+"/usage"), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		require.Contains(t, text(t, c, `section.tiles`), "of which per day and project, not per person (OpenAI, Anthropic costs)")
		shot(t, c, "usage-vendor"+w.suffix)
	}
}
