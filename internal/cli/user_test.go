package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// testPassword is the password of the users the tests create.
const testPassword = "correct horse battery"

// adminStdin runs "aiusage admin args..." on the database at dbURL with
// stdin as standard input.
func adminStdin(t *testing.T, dbURL, stdin string, environ map[string]string, args ...string) result {
	t.Helper()
	return runCLI(t, stdin, environ, append(append([]string{"admin"}, args...), "--database-url", dbURL)...)
}

// createUser runs "admin user create" with the password on standard input,
// which must succeed and print the user.
func createUser(t *testing.T, dbURL, password string, args ...string) (people.User, result) {
	t.Helper()
	r := adminStdin(t, dbURL, password+"\n", nil, append([]string{"user", "create", "--password-stdin"}, args...)...)
	require.Equal(t, ExitOK, r.code, "%v: %s", args, r.stderr)
	require.Equal(t, 1, strings.Count(r.stdout, "\n"), r.stdout)
	var u people.User
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&u), r.stdout)
	require.NotContains(t, r.stdout, password)
	require.NotContains(t, r.stdout, "argon2")
	require.NotContains(t, r.stdout+r.stderr, "hash")
	return u, r
}

// userList is what "admin user list" prints.
type userList struct {
	OrganisationID string        `json:"organisationId"`
	Users          []people.User `json:"users"`
}

// peopleOn returns a people store on the database at dbURL, as another
// process (the dashboard) would open it.
func peopleOn(t *testing.T, dbURL string) *people.Store {
	t.Helper()
	db, err := sqldb.Open(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	orgs, err := org.NewStore(t.Context(), db)
	require.NoError(t, err)
	p, err := people.New(t.Context(), people.Config{HashCost: people.HashTest, DB: db, Orgs: orgs})
	require.NoError(t, err)
	return p
}

func TestAdminUser(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			var o org.Organisation
			adminOK(t, dbURL, &o, "org", "create", "--name", "Acme")

			// The first Administrator: the email trimmed and lowercased, the
			// name from the email, the password from the first line of
			// standard input (a Windows line break too).
			before := time.Now().Add(-time.Second)
			r := adminStdin(t, dbURL, testPassword+"\r\nignored second line\n", nil, "user", "create", "--org", strings.ToUpper(o.ID),
				"--email", " Alice@Example.COM ", "--role", "Administrator", "--password-stdin")
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.Empty(t, r.stderr)
			var alice people.User
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &alice))
			require.Equal(t, people.User{ID: alice.ID, OrganisationID: o.ID, Email: "alice@example.com", Name: "alice",
				Role: people.RoleAdministrator, CreatedAt: alice.CreatedAt}, alice)
			require.WithinRange(t, alice.CreatedAt, before, time.Now().Add(time.Second))
			require.Contains(t, r.stdout, `"disabledAt":null`)

			bob, _ := createUser(t, dbURL, "ünïcödé passwörd", "--org", o.ID, "--email", "bob@example.com", "--role", "Reviewer", "--name", "Bob B")
			require.Equal(t, "Bob B", bob.Name)
			require.Equal(t, people.RoleReviewer, bob.Role)

			var list userList
			adminOK(t, dbURL, &list, "user", "list", "--org", strings.ToUpper(o.ID))
			require.Equal(t, userList{o.ID, []people.User{alice, bob}}, list)

			// The dashboard signs them in with those passwords.
			p := peopleOn(t, dbURL)
			_, u, err := p.SignIn(t.Context(), "alice@example.com", testPassword, people.Client{Addr: "192.0.2.1"})
			require.NoError(t, err)
			require.Equal(t, alice, u)
			sess, _, err := p.SignIn(t.Context(), "bob@example.com", "ünïcödé passwörd", people.Client{Addr: "192.0.2.1"})
			require.NoError(t, err)

			// Disable Bob, with the email in any case: his session ends at
			// once and he can no longer sign in.
			var disabled people.User
			adminOK(t, dbURL, &disabled, "user", "disable", "--org", o.ID, "--email", "BOB@example.com")
			require.NotNil(t, disabled.DisabledAt)
			require.Equal(t, bob.ID, disabled.ID)
			_, _, err = p.Authenticate(t.Context(), sess.Token)
			require.ErrorIs(t, err, people.ErrNoSession)
			_, _, err = p.SignIn(t.Context(), "bob@example.com", "ünïcödé passwörd", people.Client{Addr: "192.0.2.1"})
			require.ErrorIs(t, err, people.ErrBadCredentials)
			adminOK(t, dbURL, &list, "user", "list", "--org", o.ID)
			require.Equal(t, userList{o.ID, []people.User{alice, disabled}}, list)
			// Again: nothing changes.
			var again people.User
			adminOK(t, dbURL, &again, "user", "disable", "--org", o.ID, "--email", "bob@example.com")
			require.Equal(t, disabled, again)

			// The audit trail has each change, by the administrator.
			var actions []string
			for _, rec := range readAudit(t, dbURL, "--org", o.ID) {
				if rec.ResourceType == "user" {
					actions = append(actions, rec.Action)
					require.Equal(t, org.ActorAdmin, rec.Actor.Type)
					require.NotContains(t, string(rec.After), "argon2")
				}
			}
			require.Equal(t, []string{people.AuditUserCreated, people.AuditUserCreated, people.AuditUserDisabled}, actions)

			// An organisation without users lists none, as [].
			var other org.Organisation
			adminOK(t, dbURL, &other, "org", "create", "--name", "Other")
			r = adminOK(t, dbURL, nil, "user", "list", "--org", other.ID)
			require.Equal(t, fmt.Sprintf(`{"organisationId":%q,"users":[]}`+"\n", other.ID), r.stdout)
		})
	}
}

func TestAdminUserEnvironment(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	var o org.Organisation
	adminOK(t, dbURL, &o, "org", "create", "--name", "Acme")
	// AIUSAGE_DATABASE_URL and AIUSAGE_ACTOR, and nothing else: the password
	// is never read from the environment.
	environ := map[string]string{"AIUSAGE_DATABASE_URL": dbURL, "AIUSAGE_ACTOR": "carol", "AIUSAGE_PASSWORD": testPassword}
	r := runCLI(t, testPassword+"\n", environ, "admin", "user", "create", "--org", o.ID, "--email", "a@example.com",
		"--role", "Reviewer", "--password-stdin")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = runCLI(t, "", environ, "admin", "user", "create", "--org", o.ID, "--email", "b@example.com", "--role", "Reviewer", "--password-stdin")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "--password-stdin: standard input holds no password")
	recs := filterAudit(readAudit(t, dbURL, "--org", o.ID), people.AuditUserCreated)
	require.Len(t, recs, 1)
	require.Equal(t, org.Actor{Type: org.ActorAdmin, Name: "carol"}, recs[0].Actor)
}

func TestAdminUserErrors(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	var org org.Organisation
	adminOK(t, dbURL, &org, "org", "create", "--name", "Acme")
	createUser(t, dbURL, testPassword, "--org", org.ID, "--email", "alice@example.com", "--role", "Administrator")
	const missing = "00000000-0000-4000-8000-000000000000"
	create := func(extra ...string) []string {
		return append([]string{"user", "create", "--org", org.ID, "--email", "bob@example.com", "--role", "Reviewer", "--password-stdin"}, extra...)
	}
	ok := testPassword + "\n"
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
		code  int
		want  string
	}{
		{"no org", []string{"user", "create", "--email", "b@x", "--role", "Reviewer", "--password-stdin"}, ok, ExitUsage, "--org is required"},
		{"bad org", []string{"user", "create", "--org", "acme", "--email", "b@x", "--role", "Reviewer", "--password-stdin"}, ok, ExitUsage, "--org must be a UUID"},
		{"no email", []string{"user", "create", "--org", org.ID, "--role", "Reviewer", "--password-stdin"}, ok, ExitUsage, "--email is required"},
		{"no role", []string{"user", "create", "--org", org.ID, "--email", "b@x", "--password-stdin"}, ok, ExitUsage, "--role is required"},
		{"bad role", []string{"user", "create", "--org", org.ID, "--email", "b@x", "--role", "administrator", "--password-stdin"}, ok, ExitUsage,
			`--role: role must be Administrator or Reviewer, got "administrator"`},
		{"no --password-stdin", []string{"user", "create", "--org", org.ID, "--email", "b@x", "--role", "Reviewer"}, ok, ExitUsage,
			"--password-stdin is required"},
		{"password on the command line", create("hunter2hunter2"), ok, ExitUsage, "takes no arguments"},
		{"empty stdin", create(), "", ExitUsage, "--password-stdin: standard input holds no password"},
		{"empty first line", create(), "\n" + ok, ExitUsage, "--password-stdin: standard input holds no password"},
		{"short password", create(), "eleven char\n", ExitUsage, "--password-stdin: the password is 11 characters, at least 12"},
		{"short multibyte password", create(), strings.Repeat("é", 11) + "\n", ExitUsage, "the password is 11 characters, at least 12"},
		{"long password", create(), strings.Repeat("p", 1025) + "\n", ExitUsage, "--password-stdin: the password is 1025 bytes, at most 1024"},
		{"endless password", create(), strings.Repeat("p", 5000), ExitUsage, "--password-stdin: the password is more than 1024 bytes"},
		{"bad email", []string{"user", "create", "--org", org.ID, "--email", "bob", "--role", "Reviewer", "--password-stdin"}, ok, ExitUsage,
			"--email: the email must hold exactly one @"},
		{"long name", create("--name", strings.Repeat("n", 201)), ok, ExitUsage, "--name: the name is 201 characters, at most 200"},
		{"unknown org", []string{"user", "create", "--org", missing, "--email", "b@x", "--role", "Reviewer", "--password-stdin"}, ok, ExitFailure,
			"No organisation " + missing + ".; 'aiusage admin org list' lists the organisations"},
		{"email taken", []string{"user", "create", "--org", org.ID, "--email", "ALICE@example.com", "--role", "Reviewer", "--password-stdin"}, ok, ExitFailure,
			"A user with email alice@example.com already exists"},
		{"list unknown org", []string{"user", "list", "--org", missing}, "", ExitFailure, "'aiusage admin org list' lists the organisations"},
		{"disable without email", []string{"user", "disable", "--org", org.ID}, "", ExitUsage, "--email is required"},
		{"disable unknown org", []string{"user", "disable", "--org", missing, "--email", "alice@example.com"}, "", ExitFailure,
			"'aiusage admin org list' lists the organisations"},
		{"disable unknown user", []string{"user", "disable", "--org", org.ID, "--email", "carol@example.com"}, "", ExitFailure,
			"No user with email carol@example.com in this organisation.; 'aiusage admin user list --org ID' lists an organisation's users"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := adminStdin(t, dbURL, c.stdin, nil, c.args...)
			require.Equal(t, c.code, r.code, "stderr: %s", r.stderr)
			require.Contains(t, r.stderr, c.want)
			require.Contains(t, r.stderr, "aiusage: admin user ")
			require.Empty(t, r.stdout)
			if strings.TrimSpace(c.stdin) != "" {
				require.NotContains(t, r.stderr, strings.TrimSpace(c.stdin), "the error shows the password")
			}
		})
	}
	var list userList
	adminOK(t, dbURL, &list, "user", "list", "--org", org.ID)
	require.Len(t, list.Users, 1)
	require.Nil(t, list.Users[0].DisabledAt)

	// The limits themselves are accepted.
	createUser(t, dbURL, strings.Repeat("é", 12), "--org", org.ID, "--email", "c@example.com", "--role", "Reviewer")
	createUser(t, dbURL, strings.Repeat("p", 1024), "--org", org.ID, "--email", "d@example.com", "--role", "Reviewer")
}

// TestServiceServeMigratesPeople checks that "service serve" creates the
// people's tables, and that /readyz counts their migrations.
func TestServiceServeMigratesPeople(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	base, _, stop := startService(t, serviceURLText, "--database-url", dbURL)
	status, body, _ := call(t, http.MethodGet, base+"readyz", "", nil)
	require.Equal(t, http.StatusOK, status, string(body))
	db, err := sqldb.Open(t.Context(), dbURL)
	require.NoError(t, err)
	defer db.Close()
	ok, err := db.MigrationsApplied(t.Context(), people.Component, people.Migrations())
	require.NoError(t, err)
	require.True(t, ok)
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM people_users`).Scan(&n))

	// Were the people's migrations not applied, the service would not be
	// ready.
	_, err = db.ExecContext(t.Context(), `DELETE FROM schema_migrations WHERE component = $1`, people.Component)
	require.NoError(t, err)
	status, body, _ = call(t, http.MethodGet, base+"readyz", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, status, string(body))
	require.Equal(t, ExitOK, stop())
}
