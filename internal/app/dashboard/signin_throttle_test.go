package dashboard_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// waitMessage is the sign-in page's word on a delayed attempt (the test
// service's first delay is a minute).
var waitMessage = regexp.MustCompile(`Too many failed sign-ins\. Try again in (\d+) (seconds|minutes); each further failure doubles the wait, up to 5 minutes\.`)

// requireDelayed checks that p is the sign-in page of a delayed attempt,
// saying how long to wait as its Retry-After does.
func requireDelayed(t *testing.T, p page) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, p.Status, p.Body)
	m := waitMessage.FindStringSubmatch(p.Body)
	require.NotNil(t, m, p.Body)
	secs, err := strconv.Atoi(p.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.True(t, secs >= 1 && secs <= 300, "Retry-After: %d", secs)
	if m[2] == "seconds" {
		require.Equal(t, m[1], strconv.Itoa(secs))
	} else {
		require.Equal(t, m[1], strconv.Itoa((secs+59)/60))
	}
}

// TestSignInScriptsBehindTrustedProxy plays, through the trusted proxy
// (X-Forwarded-For), one address failing at many accounts and many
// addresses failing at one account: the guessing addresses are delayed,
// each by its own count, and the right people still sign in.
func TestSignInScriptsBehindTrustedProxy(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		// Ada signed in from her browser before: it holds a device cookie.
		ada := e.browser()
		p := ada.signInFrom(t, "198.51.100.7", "ada@acme.test", password)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, http.StatusSeeOther, ada.post(t, "/signout", nil).Status)

		// One address, many accounts: its free failures, then a delay.
		attacker := e.browser()
		for i := range people.DefaultMaxAddressFailures {
			p := attacker.signInFrom(t, "203.0.113.9", fmt.Sprintf("user%d@acme.test", i), "a wrong guess")
			require.Equal(t, http.StatusUnauthorized, p.Status, "guess %d", i)
		}
		requireDelayed(t, attacker.signInFrom(t, "203.0.113.9", "user99@acme.test", "a wrong guess"))
		// Even the right password waits there, without a device cookie...
		requireDelayed(t, e.browser().signInFrom(t, "203.0.113.9", "rex@acme.test", password))
		// ...but Rex from his own address signs in, and Ada's browser from
		// the guessing address.
		require.Equal(t, http.StatusSeeOther, e.browser().signInFrom(t, "198.51.100.20", "rex@acme.test", password).Status)
		require.Equal(t, http.StatusSeeOther, ada.signInFrom(t, "203.0.113.9", "ada@acme.test", password).Status)
		require.Equal(t, http.StatusSeeOther, ada.post(t, "/signout", nil).Status)

		// Many addresses, one account: twelve addresses fail at Rex's, until
		// each is delayed; past ten failures the account is under attack
		// and each new address has one free failure.
		checked := 0
		for i := range 12 {
			for {
				p := attacker.signInFrom(t, fmt.Sprintf("192.0.2.%d", i), "rex@acme.test", "a wrong guess")
				if p.Status == http.StatusTooManyRequests {
					requireDelayed(t, p)
					break
				}
				require.Equal(t, http.StatusUnauthorized, p.Status)
				checked++
			}
		}
		require.Equal(t, 2*people.DefaultMaxFailures+10, checked)
		// Rex signs in from an address that has not failed, at once.
		require.Equal(t, http.StatusSeeOther, e.browser().signInFrom(t, "198.51.100.21", "rex@acme.test", password).Status)
	})
}

// TestBrowserSignInDelayed fails to sign in with the keyboard alone in
// Chromium at a phone's and a desktop's width until the page says how long
// to wait; the page fits the window with a 200-character email.
func TestBrowserSignInDelayed(t *testing.T) {
	for _, width := range []int{390, 1280} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			db := sqldbtest.Open(t, sqldb.SQLite)
			e := newEnv(t, db)
			ctx := newBrowser(t, width, 800)
			email := strings.Repeat("a", 188) + "@example.test"
			// The form that asks for email and password at once, as the
			// page does again after a failure.
			do(t, ctx, chromedp.Navigate(e.url+"/signin?with=password"), chromedp.WaitVisible(chromedp.CSS(`#email`)))
			for _, id := range []string{"email", "password"} {
				n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('label[for=`+id+`]').length`))
				require.NoError(t, err)
				require.Equal(t, 1, n, "a label for #%s", id)
			}
			for i := range people.DefaultMaxFailures + 1 {
				// The last page's alert goes, so that the next one is waited for.
				_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector('p.error')?.remove(), true)`))
				require.NoError(t, err)
				do(t, ctx,
					chromedp.Clear(chromedp.CSS(`#email`)),
					chromedp.SendKeys(chromedp.CSS(`#email`), email),
					chromedp.SendKeys(chromedp.CSS(`#password`), fmt.Sprintf("wrong guess %d\r", i)),
					chromedp.WaitVisible(chromedp.CSS(`p.error[role=alert]`)),
				)
			}
			msg := text(t, ctx, `p.error[role=alert]`)
			require.Regexp(t, waitMessage, msg)
			name := "signin-delayed"
			if width < 500 {
				name = "phone-" + name
			}
			shot(t, ctx, name)
		})
	}
}
