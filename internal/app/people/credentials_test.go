package people_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// invite creates a user of the env's organisation with a one-time password.
func (e *env) invite(email string) (people.User, string) {
	e.t.Helper()
	otp := people.NewOneTimePassword()
	u, err := e.people.CreateUser(e.t.Context(), people.UserCreate{OrganisationID: e.org.ID, Email: email, Role: people.RoleReviewer,
		Password: otp, OneTime: true}, admin)
	require.NoError(e.t, err)
	return u, otp
}

func TestOneTimePasswordExpires(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{})
		ctx := t.Context()
		u, otp := e.invite("bob@example.com")
		require.Len(t, otp, 26)
		require.True(t, u.MustChangePassword())
		require.Equal(t, t0.Add(people.DefaultOneTimePasswordTTL), *u.OneTimePasswordUntil)
		listed, err := e.people.User(ctx, e.org.ID, u.ID)
		require.NoError(t, err)
		require.Equal(t, u, listed)

		// Within 72 hours it signs in, to a session that must change it.
		e.clock.Advance(people.DefaultOneTimePasswordTTL - time.Millisecond)
		s, got, err := e.people.SignIn(ctx, "bob@example.com", otp, people.Client{Addr: "192.0.2.1"})
		require.NoError(t, err)
		require.True(t, got.MustChangePassword())
		_, got, err = e.people.Authenticate(ctx, s.Token)
		require.NoError(t, err)
		require.True(t, got.MustChangePassword())

		// Then it is refused with its own error; a wrong one stays the usual.
		e.clock.Advance(time.Millisecond)
		_, _, err = e.people.SignIn(ctx, "bob@example.com", otp, people.Client{Addr: "192.0.2.1"})
		require.ErrorIs(t, err, people.ErrOneTimePasswordExpired)
		require.ErrorIs(t, err, spec.ErrUnauthorized)
		require.Contains(t, err.Error(), "ask an Administrator")
		_, _, err = e.people.SignIn(ctx, "bob@example.com", "not the password", people.Client{Addr: "192.0.2.1"})
		require.Equal(t, people.ErrBadCredentials, err)

		// A password created by the operator is not one-time.
		e.create("carol@example.com", people.RoleReviewer)
		e.clock.Advance(30 * 24 * time.Hour)
		e.signIn("carol@example.com", "192.0.2.2")
	})
}

func TestChangePassword(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{})
		ctx := t.Context()
		u, otp := e.invite("bob@example.com")
		s, _, err := e.people.SignIn(ctx, "bob@example.com", otp, people.Client{Addr: "192.0.2.1"})
		require.NoError(t, err)
		other, _, err := e.people.SignIn(ctx, "bob@example.com", otp, people.Client{Addr: "192.0.2.2"})
		require.NoError(t, err)

		const next = "a passphrase of my own"
		for name, c := range map[string]struct{ current, next, field string }{
			"no current":    {"", next, "currentPassword"},
			"too short":     {otp, "short", "newPassword"},
			"too long":      {otp, string(make([]byte, people.MaxPasswordBytes+1)) + "aaaaaaaaaaaa", "newPassword"},
			"unchanged":     {otp, otp, "newPassword"},
			"wrong current": {"not my password", next, "currentPassword"},
		} {
			_, err := e.people.ChangePassword(ctx, s.Token, c.current, c.next)
			requireField(t, err, spec.ErrInvalid, c.field)
			_ = name
		}
		_, err = e.people.ChangePassword(ctx, "not a session", otp, next)
		require.ErrorIs(t, err, people.ErrNoSession)

		changed, err := e.people.ChangePassword(ctx, s.Token, otp, next)
		require.NoError(t, err)
		require.False(t, changed.MustChangePassword())
		// This session stays and may do anything now; the other ended.
		_, got, err := e.people.Authenticate(ctx, s.Token)
		require.NoError(t, err)
		require.False(t, got.MustChangePassword())
		_, _, err = e.people.Authenticate(ctx, other.Token)
		require.ErrorIs(t, err, people.ErrNoSession)
		// The old password is refused, the new one signs in, forever.
		_, _, err = e.people.SignIn(ctx, "bob@example.com", otp, people.Client{Addr: "192.0.2.3"})
		require.Equal(t, people.ErrBadCredentials, err)
		e.clock.Advance(30 * 24 * time.Hour)
		_, _, err = e.people.SignIn(ctx, "bob@example.com", next, people.Client{Addr: "192.0.2.3"})
		require.NoError(t, err)

		// Audited with the user as actor, no password in it.
		recs := e.audit()
		last := recs[len(recs)-1]
		require.Equal(t, people.AuditUserPasswordChanged, last.Action)
		require.Equal(t, u.ID, last.Actor.ID)
		require.Equal(t, u.ID, last.ResourceID)
		var before, after map[string]any
		require.NoError(t, json.Unmarshal(last.Before, &before))
		require.NoError(t, json.Unmarshal(last.After, &after))
		require.NotNil(t, before["oneTimePasswordUntil"])
		require.Nil(t, after["oneTimePasswordUntil"])
		for _, b := range [][]byte{last.Before, last.After} {
			require.NotContains(t, string(b), otp)
			require.NotContains(t, string(b), next)
			require.NotContains(t, string(b), "argon2")
		}
	})
}

func TestChangePasswordThrottled(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{})
		ctx := t.Context()
		e.create("bob@example.com", people.RoleReviewer)
		s := e.signIn("bob@example.com", "192.0.2.1")
		// A stolen session cannot guess the password through the form.
		for range people.DefaultMaxFailures {
			_, err := e.people.ChangePassword(ctx, s.Token, "a guess at it", "a new passphrase")
			requireField(t, err, spec.ErrInvalid, "currentPassword")
		}
		// Then each guess waits twice as long after the last one.
		_, err := e.people.ChangePassword(ctx, s.Token, password, "a new passphrase")
		requireThrottled(t, err, time.Second)
		e.clock.Advance(time.Second)
		_, err = e.people.ChangePassword(ctx, s.Token, "a guess at it", "a new passphrase")
		requireField(t, err, spec.ErrInvalid, "currentPassword")
		e.clock.Advance(time.Second)
		_, err = e.people.ChangePassword(ctx, s.Token, password, "a new passphrase")
		requireThrottled(t, err, time.Second)
		e.clock.Advance(time.Second)
		_, err = e.people.ChangePassword(ctx, s.Token, password, "a new passphrase")
		require.NoError(t, err)
	})
}

func TestResetPassword(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{OneTimePasswordTTL: time.Hour})
		ctx := t.Context()
		bob := e.create("bob@example.com", people.RoleReviewer)
		s := e.signIn("bob@example.com", "192.0.2.1")
		ada := e.create("ada@example.com", people.RoleAdministrator)

		otp := people.NewOneTimePassword()
		u, err := e.people.ResetPassword(ctx, e.org.ID, bob.ID, otp, true, ada.Actor())
		require.NoError(t, err)
		require.True(t, u.MustChangePassword())
		require.Equal(t, t0.Add(time.Hour), *u.OneTimePasswordUntil)
		// Bob's sessions ended; his old password is refused; the new one is
		// one-time.
		_, _, err = e.people.Authenticate(ctx, s.Token)
		require.ErrorIs(t, err, people.ErrNoSession)
		_, _, err = e.people.SignIn(ctx, "bob@example.com", password, people.Client{Addr: "192.0.2.1"})
		require.Equal(t, people.ErrBadCredentials, err)
		_, got, err := e.people.SignIn(ctx, "bob@example.com", otp, people.Client{Addr: "192.0.2.1"})
		require.NoError(t, err)
		require.True(t, got.MustChangePassword())
		e.clock.Advance(time.Hour)
		_, _, err = e.people.SignIn(ctx, "bob@example.com", otp, people.Client{Addr: "192.0.2.1"})
		require.ErrorIs(t, err, people.ErrOneTimePasswordExpired)

		recs := e.audit()
		last := recs[len(recs)-1]
		require.Equal(t, people.AuditUserPasswordReset, last.Action)
		require.Equal(t, ada.ID, last.Actor.ID)
		require.Equal(t, bob.ID, last.ResourceID)
		require.NotContains(t, string(last.After), otp)

		// The operator sets a password the user keeps.
		u, err = e.people.ResetPassword(ctx, e.org.ID, bob.ID, "the operator's choice", false, admin)
		require.NoError(t, err)
		require.False(t, u.MustChangePassword())
		_, _, err = e.people.SignIn(ctx, "bob@example.com", "the operator's choice", people.Client{Addr: "192.0.2.1"})
		require.NoError(t, err)

		// Refusals.
		_, err = e.people.ResetPassword(ctx, e.org.ID, bob.ID, "short", true, admin)
		requireField(t, err, spec.ErrInvalid, "password")
		_, err = e.people.ResetPassword(ctx, e.org.ID, "0b7e4a4c-5f0e-4d3e-9a51-2f6c1d2b3a4e", otp, true, admin)
		require.ErrorIs(t, err, spec.ErrNotFound)
		_, err = e.people.DisableUser(ctx, e.org.ID, "bob@example.com", admin)
		require.NoError(t, err)
		_, err = e.people.ResetPassword(ctx, e.org.ID, bob.ID, otp, true, admin)
		require.ErrorIs(t, err, spec.ErrConflict)
	})
}
