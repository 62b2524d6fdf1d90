package people_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

func TestNewChecksTheConfig(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.SQLite)
	orgs, err := org.NewStore(t.Context(), db)
	require.NoError(t, err)
	for name, c := range map[string]people.Config{
		"no DB":            {Orgs: orgs},
		"no Orgs":          {DB: db},
		"negative idle":    {DB: db, Orgs: orgs, IdleTimeout: -time.Second},
		"negative window":  {DB: db, Orgs: orgs, FailureWindow: -time.Second},
		"sub-ms absolute":  {DB: db, Orgs: orgs, AbsoluteTimeout: time.Microsecond},
		"negative maximum": {DB: db, Orgs: orgs, MaxFailures: -1},
	} {
		_, err := people.New(t.Context(), c)
		require.Error(t, err, name)
	}
	_, err = people.New(t.Context(), people.Config{DB: db, Orgs: orgs})
	require.NoError(t, err)
	ok, err := db.MigrationsApplied(t.Context(), people.Component, people.Migrations())
	require.NoError(t, err)
	require.True(t, ok)
}

func TestParseRole(t *testing.T) {
	t.Parallel()
	for _, r := range []people.Role{people.RoleAdministrator, people.RoleReviewer} {
		got, err := people.ParseRole(string(r))
		require.NoError(t, err)
		require.Equal(t, r, got)
	}
	for _, s := range []string{"", "administrator", "REVIEWER", "Admin", " Reviewer"} {
		_, err := people.ParseRole(s)
		require.Error(t, err, "%q", s)
	}
}

func TestCreateListGetUsers(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{})
		ctx := t.Context()
		none, err := e.people.Users(ctx, e.org.ID)
		require.NoError(t, err)
		require.NotNil(t, none)
		require.Empty(t, none)

		alice, err := e.people.CreateUser(ctx, people.UserCreate{OrganisationID: strings.ToUpper(e.org.ID),
			Email: "  Alice.Smith@Example.COM ", Name: " Alice Smith ", Role: people.RoleAdministrator, Password: password}, admin)
		require.NoError(t, err)
		require.Equal(t, people.User{ID: alice.ID, OrganisationID: e.org.ID, Email: "alice.smith@example.com", Name: "Alice Smith",
			Role: people.RoleAdministrator, CreatedAt: t0}, alice)
		id, err := uuid.Parse(alice.ID)
		require.NoError(t, err)
		require.Equal(t, id.String(), alice.ID, "ids are lowercase UUIDs")

		e.clock.Advance(time.Second)
		bob := e.create("bob@example.com", people.RoleReviewer)
		require.Equal(t, "bob", bob.Name, "the name defaults to the part of the email before the @")
		require.Equal(t, t0.Add(time.Second), bob.CreatedAt)

		list, err := e.people.Users(ctx, e.org.ID)
		require.NoError(t, err)
		require.Equal(t, []people.User{alice, bob}, list, "oldest first")
		got, err := e.people.User(ctx, e.org.ID, strings.ToUpper(bob.ID))
		require.NoError(t, err)
		require.Equal(t, bob, got)

		// Another organisation sees neither user.
		other, err := e.orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Other"}, admin)
		require.NoError(t, err)
		_, err = e.people.User(ctx, other.ID, bob.ID)
		requireField(t, err, spec.ErrNotFound, "id")
		list, err = e.people.Users(ctx, other.ID)
		require.NoError(t, err)
		require.Empty(t, list)
		_, err = e.people.User(ctx, e.org.ID, uuid.NewString())
		require.ErrorIs(t, err, spec.ErrNotFound)
		_, err = e.people.User(ctx, e.org.ID, "not-a-uuid")
		require.ErrorIs(t, err, spec.ErrNotFound)
		_, err = e.people.Users(ctx, uuid.NewString())
		requireField(t, err, spec.ErrNotFound, "organisationId")
		_, err = e.people.Users(ctx, "not-a-uuid")
		requireField(t, err, spec.ErrNotFound, "organisationId")

		// Each creation is in the audit trail, by its actor, without the
		// password or its hash.
		recs := e.audit()
		require.Len(t, recs, 2)
		for i, u := range []people.User{alice, bob} {
			r := recs[i]
			require.Equal(t, people.AuditUserCreated, r.Action)
			require.Equal(t, admin, r.Actor)
			require.Equal(t, u.ID, r.ResourceID)
			require.Equal(t, "null", string(r.Before))
			want, err := json.Marshal(u)
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(r.After))
			require.NotContains(t, string(r.After), password)
			require.NotContains(t, string(r.After), "argon2")
		}
	})
}

func TestUserJSON(t *testing.T) {
	t.Parallel()
	disabled := time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC)
	u := people.User{ID: "0b7e4a4c-5f0e-4d3e-9a51-2f6c1d2b3a4e", OrganisationID: "1c7e4a4c-5f0e-4d3e-9a51-2f6c1d2b3a4e",
		Email: "a@example.com", Name: "A", Role: people.RoleReviewer, CreatedAt: t0}
	b, err := json.Marshal(u)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"0b7e4a4c-5f0e-4d3e-9a51-2f6c1d2b3a4e","organisationId":"1c7e4a4c-5f0e-4d3e-9a51-2f6c1d2b3a4e",
		"email":"a@example.com","name":"A","role":"Reviewer","createdAt":"2026-03-02T10:07:00.000Z","disabledAt":null,"oneTimePasswordUntil":null,"sso":false,"breakGlassUntil":null}`, string(b))
	u.DisabledAt = &disabled
	b, err = json.Marshal(u)
	require.NoError(t, err)
	require.Contains(t, string(b), `"disabledAt":"2026-03-02T11:00:00.000Z"`)
	var back people.User
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, u, back)
	require.Equal(t, org.Actor{Type: "user", ID: u.ID, Name: "A"}, u.Actor())
}

func TestCreateUserValidation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{})
		ok := people.UserCreate{OrganisationID: e.org.ID, Email: "ok@example.com", Name: "OK", Role: people.RoleReviewer, Password: password}
		with := func(edit func(*people.UserCreate)) people.UserCreate {
			c := ok
			edit(&c)
			return c
		}
		for _, c := range []struct {
			name  string
			in    people.UserCreate
			field string
		}{
			{"no email", with(func(c *people.UserCreate) { c.Email = "  " }), "email"},
			{"no @", with(func(c *people.UserCreate) { c.Email = "alice.example.com" }), "email"},
			{"two @", with(func(c *people.UserCreate) { c.Email = "alice@corp@example.com" }), "email"},
			{"nothing before @", with(func(c *people.UserCreate) { c.Email = "@example.com" }), "email"},
			{"nothing after @", with(func(c *people.UserCreate) { c.Email = "alice@" }), "email"},
			{"space in email", with(func(c *people.UserCreate) { c.Email = "alice smith@example.com" }), "email"},
			{"tab in email", with(func(c *people.UserCreate) { c.Email = "alice\tsmith@example.com" }), "email"},
			{"control in email", with(func(c *people.UserCreate) { c.Email = "alice\x00@example.com" }), "email"},
			{"email not UTF-8", with(func(c *people.UserCreate) { c.Email = "al\xffice@example.com" }), "email"},
			{"email of 255", with(func(c *people.UserCreate) { c.Email = strings.Repeat("a", 243) + "@example.com" }), "email"},
			{"name of 201", with(func(c *people.UserCreate) { c.Name = strings.Repeat("n", 201) }), "name"},
			{"control in name", with(func(c *people.UserCreate) { c.Name = "Ali\x07ce" }), "name"},
			{"name not UTF-8", with(func(c *people.UserCreate) { c.Name = "Al\xffice" }), "name"},
			{"no role", with(func(c *people.UserCreate) { c.Role = "" }), "role"},
			{"unknown role", with(func(c *people.UserCreate) { c.Role = "Owner" }), "role"},
			{"role in lowercase", with(func(c *people.UserCreate) { c.Role = "reviewer" }), "role"},
			{"no password", with(func(c *people.UserCreate) { c.Password = "" }), "password"},
			{"password of 11", with(func(c *people.UserCreate) { c.Password = "abcdefghijk" }), "password"},
			{"password of 11 characters in 22 bytes", with(func(c *people.UserCreate) { c.Password = strings.Repeat("é", 11) }), "password"},
			{"password of 1025 bytes", with(func(c *people.UserCreate) { c.Password = strings.Repeat("p", 1025) }), "password"},
		} {
			_, err := e.people.CreateUser(t.Context(), c.in, admin)
			require.Error(t, err, c.name)
			requireField(t, err, spec.ErrInvalid, c.field)
			if c.in.Password != "" {
				require.NotContains(t, err.Error(), c.in.Password, "%s: the error shows the password", c.name)
			}
		}
		for name, orgID := range map[string]string{"unknown": uuid.NewString(), "not a UUID": "acme", "empty": ""} {
			_, err := e.people.CreateUser(t.Context(), with(func(c *people.UserCreate) { c.OrganisationID = orgID }), admin)
			requireField(t, err, spec.ErrNotFound, "organisationId")
			_ = name
		}
		require.Empty(t, e.audit(), "a refused creation is not audited")
		users, err := e.people.Users(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Empty(t, users)

		// The limits themselves are accepted.
		for i, c := range []people.UserCreate{
			with(func(c *people.UserCreate) { c.Email = strings.Repeat("a", 242) + "@example.com" }), // 254 bytes
			with(func(c *people.UserCreate) { c.Email = "b@x"; c.Name = strings.Repeat("é", 200) }),
			with(func(c *people.UserCreate) { c.Email = "c@x"; c.Password = strings.Repeat("é", 12) }),
			with(func(c *people.UserCreate) { c.Email = "d@x"; c.Password = strings.Repeat("p", 1024) }),
			with(func(c *people.UserCreate) { c.Email = strings.Repeat("e", 220) + "@x"; c.Name = "" }),
		} {
			u, err := e.people.CreateUser(t.Context(), c, admin)
			require.NoError(t, err, "case %d", i)
			if c.Name == "" {
				require.Equal(t, strings.Repeat("e", 200), u.Name, "a default name longer than the limit is cut")
			}
		}
	})
}

func TestCreateUserEmailTakenIsAConflict(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{})
		first := e.create("alice@example.com", people.RoleAdministrator)
		other, err := e.orgs.CreateOrganisation(t.Context(), org.OrganisationCreate{Name: "Other"}, admin)
		require.NoError(t, err)
		for _, org := range []string{e.org.ID, other.ID} {
			_, err := e.people.CreateUser(t.Context(), people.UserCreate{OrganisationID: org, Email: " ALICE@example.com",
				Role: people.RoleReviewer, Password: password}, admin)
			requireField(t, err, spec.ErrConflict, "email")
		}
		list, err := e.people.Users(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Equal(t, []people.User{first}, list)
		require.Len(t, e.audit(), 1)
	})
}

func TestSetRole(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{})
		ctx := t.Context()
		alice := e.create("alice@example.com", people.RoleAdministrator)
		bob := e.create("bob@example.com", people.RoleReviewer)

		e.clock.Advance(time.Minute)
		promoted, err := e.people.SetRole(ctx, strings.ToUpper(e.org.ID), strings.ToUpper(bob.ID), people.RoleAdministrator, alice.Actor())
		require.NoError(t, err)
		want := bob
		want.Role = people.RoleAdministrator
		require.Equal(t, want, promoted)
		got, err := e.people.User(ctx, e.org.ID, bob.ID)
		require.NoError(t, err)
		require.Equal(t, want, got)

		recs := e.audit()
		require.Len(t, recs, 3)
		r := recs[2]
		require.Equal(t, people.AuditUserRoleChanged, r.Action)
		require.Equal(t, org.Actor{Type: org.ActorUser, ID: alice.ID, Name: alice.Name}, r.Actor)
		require.True(t, t0.Add(time.Minute).Equal(r.At.Time))
		require.Contains(t, string(r.Before), `"role":"Reviewer"`)
		require.Contains(t, string(r.After), `"role":"Administrator"`)

		// The role the user holds: nothing changes, nothing is recorded.
		same, err := e.people.SetRole(ctx, e.org.ID, bob.ID, people.RoleAdministrator, admin)
		require.NoError(t, err)
		require.Equal(t, want, same)
		require.Len(t, e.audit(), 3)

		_, err = e.people.SetRole(ctx, e.org.ID, bob.ID, "Owner", admin)
		requireField(t, err, spec.ErrInvalid, "role")
		_, err = e.people.SetRole(ctx, e.org.ID, uuid.NewString(), people.RoleReviewer, admin)
		requireField(t, err, spec.ErrNotFound, "id")
		other, err := e.orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Other"}, admin)
		require.NoError(t, err)
		_, err = e.people.SetRole(ctx, other.ID, bob.ID, people.RoleReviewer, admin)
		requireField(t, err, spec.ErrNotFound, "id")
		got, err = e.people.User(ctx, e.org.ID, bob.ID)
		require.NoError(t, err)
		require.Equal(t, people.RoleAdministrator, got.Role)
		require.Len(t, e.audit(), 3)
	})
}

func TestDisableUserEndsItsSessions(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{})
		ctx := t.Context()
		alice := e.create("alice@example.com", people.RoleAdministrator)
		e.clock.Advance(time.Millisecond)
		bob := e.create("bob@example.com", people.RoleReviewer)
		s1 := e.signIn("bob@example.com", "192.0.2.1")
		s2 := e.signIn("bob@example.com", "192.0.2.2")
		sa := e.signIn("alice@example.com", "192.0.2.1")

		e.clock.Advance(time.Minute)
		at := e.clock.Now()
		disabled, err := e.people.DisableUser(ctx, strings.ToUpper(e.org.ID), " BOB@example.com ", alice.Actor())
		require.NoError(t, err)
		want := bob
		want.DisabledAt = &at
		require.Equal(t, want, disabled)

		// Its sessions end at once, deleted; another user's stay.
		for _, s := range []people.Session{s1, s2} {
			_, _, err := e.people.Authenticate(ctx, s.Token)
			require.ErrorIs(t, err, people.ErrNoSession)
			require.ErrorIs(t, err, spec.ErrUnauthorized)
		}
		require.Equal(t, 1, e.sessions())
		_, u, err := e.people.Authenticate(ctx, sa.Token)
		require.NoError(t, err)
		require.Equal(t, alice, u)

		// It cannot sign in: the same error as a wrong password.
		_, _, err = e.people.SignIn(ctx, "bob@example.com", password, people.Client{Addr: "192.0.2.3"})
		require.Equal(t, people.ErrBadCredentials, err)

		// It stays listed, disabled; the change is audited once.
		list, err := e.people.Users(ctx, e.org.ID)
		require.NoError(t, err)
		require.Equal(t, []people.User{alice, want}, list)
		again, err := e.people.DisableUser(ctx, e.org.ID, "bob@example.com", admin)
		require.NoError(t, err)
		require.Equal(t, want, again)
		recs := e.audit()
		require.Len(t, recs, 3)
		require.Equal(t, people.AuditUserDisabled, recs[2].Action)
		require.Equal(t, alice.Actor(), recs[2].Actor)
		require.Contains(t, string(recs[2].Before), `"disabledAt":null`)
		require.Contains(t, string(recs[2].After), `"disabledAt":"`)

		_, err = e.people.DisableUser(ctx, e.org.ID, "carol@example.com", admin)
		requireField(t, err, spec.ErrNotFound, "email")
		other, err := e.orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Other"}, admin)
		require.NoError(t, err)
		_, err = e.people.DisableUser(ctx, other.ID, "alice@example.com", admin)
		requireField(t, err, spec.ErrNotFound, "email")
		_, _, err = e.people.Authenticate(ctx, sa.Token)
		require.NoError(t, err, "another organisation cannot disable the user")
	})
}
