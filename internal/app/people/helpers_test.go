package people_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// t0 is when the test clock starts.
var t0 = time.Date(2026, 3, 2, 10, 7, 0, 0, time.UTC)

// clock is a clock the tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t, if later.
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.t) {
		c.t = t
	}
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var admin = org.Actor{Type: org.ActorAdmin, Name: "root"}

// password is the password of every user the tests create.
const password = "correct horse battery"

// env is a people store over a fresh database, with an organisation.
type env struct {
	t      *testing.T
	db     *sqldb.DB
	orgs   *org.Store
	people *people.Store
	clock  *clock
	org    org.Organisation
}

// newEnv returns an env on db; c configures the store (DB, Orgs and Now are
// set here).
func newEnv(t *testing.T, db *sqldb.DB, c people.Config) *env {
	t.Helper()
	clk := &clock{t: t0}
	orgs, err := org.NewStore(t.Context(), db, org.WithNow(clk.Now))
	require.NoError(t, err)
	org, err := orgs.CreateOrganisation(t.Context(), org.OrganisationCreate{Name: "Acme"}, admin)
	require.NoError(t, err)
	c.DB, c.Orgs, c.Now = db, orgs, clk.Now
	p, err := people.New(t.Context(), c)
	require.NoError(t, err)
	return &env{t: t, db: db, orgs: orgs, people: p, clock: clk, org: org}
}

// create creates a user of the env's organisation with the test password.
func (e *env) create(email string, role people.Role) people.User {
	e.t.Helper()
	u, err := e.people.CreateUser(e.t.Context(), people.UserCreate{OrganisationID: e.org.ID, Email: email, Role: role, Password: password}, admin)
	require.NoError(e.t, err)
	return u
}

// signIn signs in with the test password and must succeed.
func (e *env) signIn(email, addr string) people.Session {
	e.t.Helper()
	s, _, err := e.people.SignIn(e.t.Context(), email, password, people.Client{Addr: addr})
	require.NoError(e.t, err)
	return s
}

// audit returns the records of the organisation's audit trail about users.
func (e *env) audit() []org.AuditRecord {
	e.t.Helper()
	recs, err := e.orgs.Audit(e.t.Context(), e.org.ID, 0, 1000)
	require.NoError(e.t, err)
	var out []org.AuditRecord
	for _, r := range recs {
		if r.ResourceType == "user" {
			out = append(out, r)
		}
	}
	return out
}

// sessions counts the rows of the sessions table.
func (e *env) sessions() int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.db.QueryRowContext(e.t.Context(), `SELECT COUNT(*) FROM people_sessions`).Scan(&n))
	return n
}

// requireField checks that err is an *spec.Error of kind naming field.
func requireField(t *testing.T, err error, kind error, field string) {
	t.Helper()
	require.ErrorIs(t, err, kind)
	var he *spec.Error
	require.True(t, errors.As(err, &he), "%v (%T) is not an *spec.Error", err, err)
	require.Len(t, he.Fields, 1, "%v", err)
	require.Equal(t, field, he.Fields[0].Field, "%v", err)
	require.Contains(t, strings.ToLower(he.Detail), strings.ToLower(strings.TrimSuffix(field, "Id")), "the detail names the field")
}

// requireThrottled checks that err is a *people.ThrottledError with
// retryAfter.
func requireThrottled(t *testing.T, err error, retryAfter time.Duration) {
	t.Helper()
	var te *people.ThrottledError
	require.True(t, errors.As(err, &te), "%v (%T) is not a *people.ThrottledError", err, err)
	require.Equal(t, retryAfter, te.RetryAfter)
	require.NotErrorIs(t, err, people.ErrBadCredentials)
}
