package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// signInFrom posts the sign-in form from the client address addr (named by
// the trusted loopback proxy).
func (b *browser) signInFrom(t *testing.T, addr, email, pw string) page {
	t.Helper()
	return b.do(t, http.MethodPost, "/signin", url.Values{"email": {email}, "password": {pw}}, "X-Forwarded-For", addr)
}

// TestSignInAttackerCannotLockOutOwner: an attacker failing from many
// addresses does not keep Rex out, from his browser or from his own
// address; one address guessing is still throttled.
func TestSignInAttackerCannotLockOutOwner(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		// Rex signed in from his browser yesterday: it holds a device cookie
		// (for the sign-in form only, HttpOnly, SameSite=Strict).
		rex := e.browser()
		p := rex.signInFrom(t, "198.51.100.7", "rex@acme.test", password)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		var device string
		for _, c := range p.Header.Values("Set-Cookie") {
			if strings.HasPrefix(c, "aiusage_device=") {
				device = c
			}
		}
		require.Contains(t, device, "Path=/signin")
		require.Contains(t, device, "HttpOnly")
		require.Contains(t, device, "SameSite=Strict")
		require.NotContains(t, device, "Secure")
		require.Equal(t, http.StatusSeeOther, rex.post(t, "/signout", url.Values{}).Status)

		// An attacker fails twelve times on his account, from six addresses.
		attacker := e.browser()
		for i := range 12 {
			p := attacker.signInFrom(t, fmt.Sprintf("203.0.113.%d", i%6), "rex@acme.test", "a wrong guess")
			require.Contains(t, []int{http.StatusUnauthorized, http.StatusTooManyRequests}, p.Status)
		}
		// Rex's browser signs in, even from an address the attacker used.
		p = rex.signInFrom(t, "203.0.113.1", "rex@acme.test", password)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/", p.location())
		// And from his own address, in a browser without the cookie.
		p = e.browser().signInFrom(t, "198.51.100.8", "rex@acme.test", password)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)

		// One address guessing at one account is still throttled.
		for range 5 {
			require.Equal(t, http.StatusUnauthorized, attacker.signInFrom(t, "192.0.2.99", "ada@acme.test", "a wrong guess").Status)
		}
		p = attacker.signInFrom(t, "192.0.2.99", "ada@acme.test", password)
		require.Equal(t, http.StatusTooManyRequests, p.Status)
		require.Contains(t, p.Body, "Too many failed sign-ins")
		require.NotEmpty(t, p.Header.Get("Retry-After"))
	})
}

// TestCookiesSecureBehindTrustedProxy: a TLS-terminating proxy that says
// X-Forwarded-Proto: https gets Secure cookies, and https push addresses.
func TestCookiesSecureBehindTrustedProxy(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		b := e.browser()
		p := b.do(t, http.MethodPost, "/signin", url.Values{"email": {"ada@acme.test"}, "password": {password}},
			"X-Forwarded-For", "198.51.100.7", "X-Forwarded-Proto", "https")
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		cookies := p.Header.Values("Set-Cookie")
		require.Len(t, cookies, 2)
		for _, c := range cookies {
			require.Contains(t, c, "; Secure", c)
		}
		p = b.do(t, http.MethodPost, "/signout", url.Values{}, "X-Forwarded-Proto", "https")
		require.Contains(t, p.Header.Get("Set-Cookie"), "; Secure")
	})
}

// otpOf finds the one-time password on a users page.
func otpOf(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`id="otp" class="mono" readonly value="([A-Za-z0-9]+)"`).FindStringSubmatch(body)
	require.NotNil(t, m, body)
	return m[1]
}

func TestForcedPasswordChange(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/settings/users")
		p := adm.post(t, "/settings/users", url.Values{"email": {"vera@acme.test"}, "name": {"Vera"}, "role": {"Administrator"}})
		require.Equal(t, http.StatusCreated, p.Status, p.Body)
		require.Contains(t, p.Body, "must choose their own password")
		otp := otpOf(t, p.Body)
		p = adm.get(t, "/settings/users")
		require.Contains(t, p.Body, "one-time password until")

		vera := e.browser()
		p = vera.post(t, "/signin", url.Values{"email": {"vera@acme.test"}, "password": {otp}, "next": {"/review"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/account/password", p.location())
		// Every other page, and every form, leads to the password form.
		for _, path := range []string{"/", "/review", "/settings/users", "/audit"} {
			p := vera.get(t, path)
			require.Equal(t, http.StatusSeeOther, p.Status, path)
			require.Equal(t, "/account/password", p.location(), path)
		}
		p = vera.post(t, "/settings/api-keys", url.Values{"name": {"mine"}, "type": {"API"}})
		require.Equal(t, http.StatusSeeOther, p.Status)
		require.Equal(t, "/account/password", p.location())
		p = vera.get(t, "/account/password")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "Choose your password")
		require.NotContains(t, p.Body, `<nav aria-label="Main">`, "no way elsewhere")

		// Refusals come back as the form with the cause.
		for _, c := range []struct {
			form   url.Values
			status int
			msg    string
		}{
			{url.Values{"current": {otp}, "new": {"a fine passphrase"}, "confirm": {"another passphrase"}}, 400, "differ"},
			{url.Values{"current": {"not it at all"}, "new": {"a fine passphrase"}, "confirm": {"a fine passphrase"}}, 400, "The current password is wrong."},
			{url.Values{"current": {otp}, "new": {"short"}, "confirm": {"short"}}, 400, "The new password is 5 characters, at least 12."},
			{url.Values{"current": {otp}, "new": {otp}, "confirm": {otp}}, 400, "must differ from the current password"},
		} {
			p := vera.post(t, "/account/password", c.form)
			require.Equal(t, c.status, p.Status, p.Body)
			require.Contains(t, p.Body, c.msg)
		}
		p = vera.post(t, "/account/password", url.Values{"current": {otp}, "new": {"vera's own passphrase"}, "confirm": {"vera's own passphrase"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/account/password?done=changed", p.location())
		p = vera.get(t, "/account/password?done=changed")
		require.Contains(t, p.Body, "Your password is changed.")
		require.Contains(t, p.Body, `<nav aria-label="Main">`)
		require.Equal(t, http.StatusOK, vera.get(t, "/review").Status)

		// The one-time password is gone; the change is in the audit trail.
		p = e.browser().post(t, "/signin", url.Values{"email": {"vera@acme.test"}, "password": {otp}})
		require.Equal(t, http.StatusUnauthorized, p.Status)
		p = adm.get(t, "/audit?action=user.password")
		require.Contains(t, p.Body, "user.password_changed")
	})
}

func TestInvitationExpires(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/settings/users")
		p := adm.post(t, "/settings/users", url.Values{"email": {"vera@acme.test"}, "role": {"Reviewer"}})
		require.Equal(t, http.StatusCreated, p.Status, p.Body)
		otp := otpOf(t, p.Body)
		// Three days later (the expiry moved to the past in the database).
		_, err := e.db.ExecContext(t.Context(), `UPDATE people_users SET one_time_until = 1 WHERE email = 'vera@acme.test'`)
		require.NoError(t, err)
		p = e.browser().post(t, "/signin", url.Values{"email": {"vera@acme.test"}, "password": {otp}})
		require.Equal(t, http.StatusUnauthorized, p.Status)
		require.Contains(t, p.Body, "Your one-time password has expired. Ask an Administrator of your organisation for a new one.")
		require.Contains(t, adm.get(t, "/settings/users").Body, "one-time password expired")
	})
}

func TestUsersResetPassword(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		rex := e.browser()
		rex.signIn(t, "rex@acme.test", "/review")
		// A Reviewer may not reset anyone.
		require.Equal(t, http.StatusForbidden, rex.post(t, "/settings/users/"+e.admin.ID+"/reset-password", url.Values{}).Status)

		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/settings/users")
		require.Contains(t, adm.get(t, "/settings/users").Body, "Reset password…")
		self := adm.post(t, "/settings/users/"+e.admin.ID+"/reset-password", url.Values{})
		require.Equal(t, http.StatusConflict, self.Status)
		require.Contains(t, self.Body, "password page")
		unknown := adm.post(t, "/settings/users/0b7e4a4c-5f0e-4d3e-9a51-2f6c1d2b3a4e/reset-password", url.Values{})
		require.Equal(t, http.StatusNotFound, unknown.Status)

		p := adm.post(t, "/settings/users/"+e.rev.ID+"/reset-password", url.Values{})
		require.Equal(t, http.StatusOK, p.Status, p.Body)
		require.Contains(t, p.Body, "New one-time password of rex@acme.test")
		otp := otpOf(t, p.Body)
		// Rex is signed out at once; his old password is refused.
		p = rex.get(t, "/review")
		require.Equal(t, http.StatusSeeOther, p.Status)
		require.Contains(t, p.location(), "/signin")
		require.Equal(t, http.StatusUnauthorized, e.browser().post(t, "/signin", url.Values{"email": {"rex@acme.test"}, "password": {password}}).Status)
		p = rex.post(t, "/signin", url.Values{"email": {"rex@acme.test"}, "password": {otp}})
		require.Equal(t, http.StatusSeeOther, p.Status)
		require.Equal(t, "/account/password", p.location())

		p = adm.get(t, "/audit?action=user.password_reset")
		require.Contains(t, p.Body, "user.password_reset")
		require.NotContains(t, p.Body, otp)
	})
}

// TestChangeOwnPassword: a user changes their password from the link in the
// header; their other sessions end.
func TestChangeOwnPassword(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		rex, other := e.browser(), e.browser()
		rex.signIn(t, "rex@acme.test", "/review")
		other.signIn(t, "rex@acme.test", "/review")
		p := rex.get(t, "/review")
		require.Contains(t, p.Body, `href="/account/password"`)
		p = rex.get(t, "/account/password")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "Current password")
		p = rex.post(t, "/account/password", url.Values{"current": {password}, "new": {"rex's new passphrase"}, "confirm": {"rex's new passphrase"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, http.StatusOK, rex.get(t, "/review").Status)
		require.Equal(t, http.StatusSeeOther, other.get(t, "/review").Status, "the other session ended")
		p = e.browser().post(t, "/signin", url.Values{"email": {"rex@acme.test"}, "password": {"rex's new passphrase"}})
		require.Equal(t, http.StatusSeeOther, p.Status)
	})
}
