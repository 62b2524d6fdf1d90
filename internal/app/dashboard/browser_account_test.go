package dashboard_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestBrowserPasswords walks the password pages in Chromium, at a desktop's
// and a phone's width: an invitation, the forced change at the first
// sign-in, a reset by an Administrator, and a user's own change.
func TestBrowserPasswords(t *testing.T) {
	for _, size := range []struct {
		prefix        string
		width, height int
	}{{"", 1280, 900}, {"phone-", 390, 844}} {
		t.Run(size.prefix+"width", func(t *testing.T) {
			db := sqldbtest.Open(t, sqldb.SQLite)
			e := newEnv(t, db)
			adm := newBrowser(t, size.width, size.height)
			signInBrowser(t, adm, e.url, "ada@acme.test")

			// Ada invites Vera: a one-time password, shown once, with its
			// expiry.
			do(t, adm,
				chromedp.Navigate(e.url+"/settings/users"),
				chromedp.WaitVisible(chromedp.CSS(`#email`)),
				chromedp.SendKeys(chromedp.CSS(`#email`), "vera@acme.test"),
				chromedp.SendKeys(chromedp.CSS(`#uname`), "Vera"),
				chromedp.Click(chromedp.CSS(`form[action="/settings/users"] button[type=submit]`)),
				chromedp.WaitVisible(chromedp.CSS(`#otp`)),
			)
			otp, err := chromedp.Run(adm, chromedp.Value(chromedp.CSS(`#otp`)))
			require.NoError(t, err)
			require.Len(t, otp, 26)
			require.Contains(t, text(t, adm, ".notice"), "must then choose their own")

			// Vera signs in with it and lands on the only page she may open.
			vera := newBrowser(t, size.width, size.height)
			do(t, vera, chromedp.Navigate(e.url+"/review"))
			signInForm(t, vera, "vera@acme.test", otp)
			do(t, vera, chromedp.WaitVisible(chromedp.CSS(`#confirm`)))
			require.Equal(t, "Choose your password", text(t, vera, "h1"))
			shot(t, vera, size.prefix+"password-first-sign-in")
			do(t, vera,
				chromedp.SendKeys(chromedp.CSS(`#current`), otp),
				chromedp.SendKeys(chromedp.CSS(`#new`), "vera's own passphrase"),
				chromedp.SendKeys(chromedp.CSS(`#confirm`), "vera's own passphrase"),
				chromedp.Click(chromedp.CSS(`form[action="/account/password"] button[type=submit]`)),
				chromedp.WaitVisible(chromedp.CSS(`.notice`)),
			)
			require.Contains(t, text(t, vera, ".notice"), "Your password is changed.")
			do(t, vera, chromedp.WaitVisible(chromedp.CSS(`.who a[href="/account/password"]`)))

			// Ada resets Rex's password.
			do(t, adm,
				chromedp.Navigate(e.url+"/settings/users"),
				chromedp.WaitVisible(chromedp.CSS(`h1`)),
				chromedp.Click(chromedp.CSS(`details.confirm summary`)),
				chromedp.WaitVisible(chromedp.CSS(`form[action="/settings/users/`+e.rev.ID+`/reset-password"] button`)),
			)
			shot(t, adm, size.prefix+"user-reset-confirm")
			do(t, adm,
				chromedp.Click(chromedp.CSS(`form[action="/settings/users/`+e.rev.ID+`/reset-password"] button`)),
				chromedp.WaitVisible(chromedp.CSS(`#otp`)),
			)
			require.Contains(t, text(t, adm, "#pw-h"), "New one-time password of rex@acme.test")
			shot(t, adm, size.prefix+"user-reset")

			// Ada changes her own password from the header's link.
			do(t, adm,
				chromedp.Click(chromedp.CSS(`a[href="/account/password"]`)),
				chromedp.WaitVisible(chromedp.CSS(`#confirm`)),
			)
			require.Equal(t, "Change your password", text(t, adm, "h1"))
			shot(t, adm, size.prefix+"password")
		})
	}
}
