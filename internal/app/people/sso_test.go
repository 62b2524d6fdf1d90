package people_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

var idp = org.Actor{Type: org.ActorIdP, Name: "https://idp.example.com"}

func TestProvisionSSO(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{HashCost: people.HashTest})
		ctx := t.Context()
		id := people.SSOIdentity{OrganisationID: e.org.ID, Issuer: idp.Name, Subject: "sub-1", Email: "Carol@Example.com", Name: "Carol", Role: people.RoleReviewer}

		// The first sign-in creates the user, without a password.
		carol, created, err := e.people.ProvisionSSO(ctx, id, idp)
		require.NoError(t, err)
		require.True(t, created)
		require.True(t, carol.SSO)
		require.Equal(t, "carol@example.com", carol.Email)
		require.Equal(t, people.RoleReviewer, carol.Role)
		got, err := e.people.User(ctx, e.org.ID, carol.ID)
		require.NoError(t, err)
		require.Equal(t, carol, got)
		_, _, err = e.people.SignIn(ctx, carol.Email, "", people.Client{Addr: "192.0.2.1"})
		require.ErrorIs(t, err, people.ErrBadCredentials, "no password signs in")
		recs := e.audit()
		require.Len(t, recs, 1)
		require.Equal(t, people.AuditUserCreated, recs[0].Action)
		require.Equal(t, idp, recs[0].Actor)

		// A later sign-in updates the name and the role; a change of role is
		// recorded.
		id.Name, id.Role = "Carol C.", people.RoleAdministrator
		carol2, created, err := e.people.ProvisionSSO(ctx, id, idp)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, carol.ID, carol2.ID)
		require.Equal(t, "Carol C.", carol2.Name)
		require.Equal(t, people.RoleAdministrator, carol2.Role)
		recs = e.audit()
		require.Len(t, recs, 2)
		require.Equal(t, people.AuditUserRoleChanged, recs[1].Action)
		require.Equal(t, idp, recs[1].Actor)
		require.JSONEq(t, `"Reviewer"`, string(jsonField(t, recs[1].Before, "role")))
		require.JSONEq(t, `"Administrator"`, string(jsonField(t, recs[1].After, "role")))
		// The same role again records nothing; the name still follows.
		id.Name = "Carol Again"
		carol3, _, err := e.people.ProvisionSSO(ctx, id, idp)
		require.NoError(t, err)
		require.Equal(t, "Carol Again", carol3.Name)
		require.Len(t, e.audit(), 2)

		// The provider changed the person's email: the user follows.
		id.Email = "carol.c@example.com"
		moved, created, err := e.people.ProvisionSSO(ctx, id, idp)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, carol.ID, moved.ID)
		require.Equal(t, "carol.c@example.com", moved.Email)

		// A password user is linked at their first SSO sign-in.
		dave := e.create("dave@example.com", people.RoleReviewer)
		require.False(t, dave.SSO)
		linked, created, err := e.people.ProvisionSSO(ctx, people.SSOIdentity{OrganisationID: e.org.ID, Issuer: idp.Name, Subject: "sub-dave",
			Email: dave.Email, Name: "", Role: people.RoleReviewer}, idp)
		require.NoError(t, err)
		require.False(t, created)
		require.True(t, linked.SSO)
		require.Equal(t, "dave", linked.Name, "no name: the email's local part")
		e.signIn(dave.Email, "192.0.2.9") // the password still works while SSO is not required

		// Refusals.
		other := people.SSOIdentity{OrganisationID: e.org.ID, Issuer: idp.Name, Subject: "sub-other", Email: dave.Email, Role: people.RoleReviewer}
		_, _, err = e.people.ProvisionSSO(ctx, other, idp)
		require.ErrorIs(t, err, people.ErrSubjectMismatch)
		other.Issuer, other.Subject = "https://other.example.com", "sub-dave"
		_, _, err = e.people.ProvisionSSO(ctx, other, idp)
		require.ErrorIs(t, err, people.ErrSubjectMismatch, "same subject, another issuer")

		erin := e.create("erin@example.com", people.RoleReviewer)
		_, err = e.people.DisableUser(ctx, e.org.ID, erin.Email, admin)
		require.NoError(t, err)
		_, _, err = e.people.ProvisionSSO(ctx, people.SSOIdentity{OrganisationID: e.org.ID, Issuer: idp.Name, Subject: "sub-erin",
			Email: erin.Email, Role: people.RoleReviewer}, idp)
		require.ErrorIs(t, err, people.ErrUserDisabled)
		require.ErrorIs(t, err, spec.ErrForbidden)

		org2, err := e.orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Other"}, admin)
		require.NoError(t, err)
		_, _, err = e.people.ProvisionSSO(ctx, people.SSOIdentity{OrganisationID: org2.ID, Issuer: idp.Name, Subject: "sub-x",
			Email: dave.Email, Role: people.RoleReviewer}, idp)
		require.ErrorIs(t, err, people.ErrOtherOrganisation)
		_, _, err = e.people.ProvisionSSO(ctx, people.SSOIdentity{OrganisationID: org2.ID, Issuer: idp.Name, Subject: "sub-1",
			Email: "new@example.com", Role: people.RoleReviewer}, idp)
		require.ErrorIs(t, err, people.ErrOtherOrganisation, "the subject is a user of another organisation")

		// Bad fields.
		for field, bad := range map[string]people.SSOIdentity{
			"email":   {OrganisationID: e.org.ID, Issuer: idp.Name, Subject: "s", Email: "nope", Role: people.RoleReviewer},
			"role":    {OrganisationID: e.org.ID, Issuer: idp.Name, Subject: "s", Email: "s@example.com", Role: "Owner"},
			"subject": {OrganisationID: e.org.ID, Issuer: idp.Name, Email: "s@example.com", Role: people.RoleReviewer},
		} {
			_, _, err := e.people.ProvisionSSO(ctx, bad, idp)
			requireField(t, err, spec.ErrInvalid, field)
		}
		// A provider's odd name is made fit rather than refused.
		odd, _, err := e.people.ProvisionSSO(ctx, people.SSOIdentity{OrganisationID: e.org.ID, Issuer: idp.Name, Subject: "sub-odd",
			Email: "odd@example.com", Name: " Od\x00d\n" + string(make([]rune, 0)) + "\xff", Role: people.RoleReviewer}, idp)
		require.NoError(t, err)
		require.Equal(t, "Odd", odd.Name)
	})
}

func TestSSOSessions(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{HashCost: people.HashTest})
		ctx := t.Context()
		u, _, err := e.people.ProvisionSSO(ctx, people.SSOIdentity{OrganisationID: e.org.ID, Issuer: idp.Name, Subject: "s1",
			Email: "f@example.com", Role: people.RoleReviewer}, idp)
		require.NoError(t, err)
		s1, su, err := e.people.StartSSOSession(ctx, u.ID)
		require.NoError(t, err)
		require.Equal(t, u, su)
		require.Len(t, s1.Token, 43)
		require.Empty(t, s1.Device)
		require.Equal(t, t0.Add(people.DefaultAbsoluteTimeout), s1.ExpiresAt)
		require.Len(t, people.TokenDigest(s1.Token), 32)
		var n int
		require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM people_sessions WHERE token_hash = $1`, people.TokenDigest(s1.Token)).Scan(&n))
		require.Equal(t, 1, n)
		_, au, err := e.people.Authenticate(ctx, s1.Token)
		require.NoError(t, err)
		require.Equal(t, u, au)

		s2, _, err := e.people.StartSSOSession(ctx, u.ID)
		require.NoError(t, err)
		require.NoError(t, e.people.EndSession(ctx, s1.Token))
		_, _, err = e.people.Authenticate(ctx, s1.Token)
		require.ErrorIs(t, err, people.ErrNoSession)
		_, _, err = e.people.Authenticate(ctx, s2.Token)
		require.NoError(t, err)
		s3, _, err := e.people.StartSSOSession(ctx, u.ID)
		require.NoError(t, err)
		require.NoError(t, e.people.EndSessions(ctx, u.ID))
		for _, s := range []people.Session{s2, s3} {
			_, _, err = e.people.Authenticate(ctx, s.Token)
			require.ErrorIs(t, err, people.ErrNoSession)
		}

		_, err = e.people.DisableUser(ctx, e.org.ID, u.Email, admin)
		require.NoError(t, err)
		_, _, err = e.people.StartSSOSession(ctx, u.ID)
		require.ErrorIs(t, err, people.ErrUserDisabled)
		_, _, err = e.people.StartSSOSession(ctx, "00000000-0000-0000-0000-000000000000")
		require.ErrorIs(t, err, spec.ErrNotFound)
	})
}

func TestSSORequiredAndBreakGlass(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		var required atomic.Bool
		var asked atomic.Int32
		e := newEnv(t, db, people.Config{HashCost: people.HashTest, SSORequired: func(_ context.Context, orgID string) (bool, error) {
			asked.Add(1)
			return required.Load(), nil
		}})
		ctx := t.Context()
		gina := e.create("gina@example.com", people.RoleAdministrator)
		e.signIn(gina.Email, "192.0.2.1")
		require.EqualValues(t, 1, asked.Load())

		required.Store(true)
		_, _, err := e.people.SignIn(ctx, gina.Email, password, people.Client{Addr: "192.0.2.1"})
		require.ErrorIs(t, err, people.ErrSSORequired)
		require.ErrorIs(t, err, spec.ErrForbidden)
		_, _, err = e.people.SignIn(ctx, gina.Email, "wrong password!!", people.Client{Addr: "192.0.2.1"})
		require.ErrorIs(t, err, people.ErrBadCredentials, "a wrong password tells nothing about SSO")
		asked.Store(0)
		_, _, err = e.people.SignIn(ctx, "nobody@example.com", password, people.Client{Addr: "192.0.2.1"})
		require.ErrorIs(t, err, people.ErrBadCredentials)
		require.Zero(t, asked.Load(), "asked only once the password is right")

		// Break glass: a one-time password that signs in until its time.
		sess := e.signInAllowed(t, gina.Email) // none: required
		require.Empty(t, sess)
		bg := "break-glass-password-1"
		until := t0.Add(time.Hour)
		for _, c := range []struct {
			until time.Time
			field string
		}{{t0, "until"}, {t0.Add(-time.Minute), "until"}, {t0.Add(people.MaxBreakGlass + time.Millisecond), "until"}} {
			_, err := e.people.BreakGlass(ctx, e.org.ID, gina.ID, bg, c.until, admin)
			requireField(t, err, spec.ErrInvalid, c.field)
		}
		_, err = e.people.BreakGlass(ctx, e.org.ID, gina.ID, "short", until, admin)
		requireField(t, err, spec.ErrInvalid, "password")
		_, err = e.people.BreakGlass(ctx, e.org.ID, "00000000-0000-0000-0000-000000000000", bg, until, admin)
		require.ErrorIs(t, err, spec.ErrNotFound)

		g, err := e.people.BreakGlass(ctx, e.org.ID, gina.ID, bg, until, admin)
		require.NoError(t, err)
		require.Equal(t, until, *g.BreakGlassUntil)
		require.True(t, g.MustChangePassword())
		recs := e.audit()
		require.Equal(t, people.AuditUserBreakGlass, recs[len(recs)-1].Action)
		require.Equal(t, admin, recs[len(recs)-1].Actor)
		require.NotContains(t, string(recs[len(recs)-1].After), bg)
		require.Zero(t, e.sessions(), "break glass ends the user's sessions")

		s, u, err := e.people.SignIn(ctx, gina.Email, bg, people.Client{Addr: "192.0.2.1"})
		require.NoError(t, err)
		require.True(t, u.MustChangePassword())
		_, err = e.people.ChangePassword(ctx, s.Token, bg, "a password of my own")
		require.NoError(t, err)
		e.clock.Advance(30 * time.Minute)
		_, _, err = e.people.SignIn(ctx, gina.Email, "a password of my own", people.Client{Addr: "192.0.2.1"})
		require.NoError(t, err, "within the break-glass time")
		e.clock.Advance(30 * time.Minute)
		_, _, err = e.people.SignIn(ctx, gina.Email, "a password of my own", people.Client{Addr: "192.0.2.1"})
		require.ErrorIs(t, err, people.ErrSSORequired, "past the break-glass time")

		// A break-glass password never changed expires with its time.
		_, err = e.people.BreakGlass(ctx, e.org.ID, gina.ID, bg, e.clock.Now().Add(time.Minute), admin)
		require.NoError(t, err)
		e.clock.Advance(time.Minute)
		_, _, err = e.people.SignIn(ctx, gina.Email, bg, people.Client{Addr: "192.0.2.1"})
		require.ErrorIs(t, err, people.ErrOneTimePasswordExpired)

		// A disabled user gets none.
		_, err = e.people.DisableUser(ctx, e.org.ID, gina.Email, admin)
		require.NoError(t, err)
		_, err = e.people.BreakGlass(ctx, e.org.ID, gina.ID, bg, e.clock.Now().Add(time.Hour), admin)
		require.ErrorIs(t, err, spec.ErrConflict)
	})
}

// signInAllowed signs in with the test password and returns the session's
// token, or "" when the sign-in is refused as SSO-only.
func (e *env) signInAllowed(t *testing.T, email string) string {
	t.Helper()
	s, _, err := e.people.SignIn(t.Context(), email, password, people.Client{Addr: "192.0.2.1"})
	if err != nil {
		require.ErrorIs(t, err, people.ErrSSORequired)
		return ""
	}
	return s.Token
}

// jsonField returns the field name of the JSON object raw.
func jsonField(t *testing.T, raw json.RawMessage, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return m[name]
}
