package people_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

func TestSignInAndAuthenticate(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{})
		ctx := t.Context()
		alice := e.create("alice@example.com", people.RoleAdministrator)

		sess, u, err := e.people.SignIn(ctx, " Alice@Example.com ", password, people.Client{Addr: "192.0.2.1"})
		require.NoError(t, err)
		require.Equal(t, alice, u)
		require.Len(t, sess.Token, 43)
		raw, err := base64.RawURLEncoding.DecodeString(sess.Token)
		require.NoError(t, err)
		require.Len(t, raw, 32)
		require.Len(t, sess.Device, 43)
		require.NotEqual(t, sess.Token, sess.Device)
		require.Equal(t, people.Session{Token: sess.Token, UserID: alice.ID, CreatedAt: t0, LastSeenAt: t0,
			ExpiresAt: t0.Add(people.DefaultAbsoluteTimeout), Device: sess.Device}, sess)

		// The token is kept as its digest only.
		var n int
		require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM people_sessions WHERE token_hash = $1`, []byte(sess.Token)).Scan(&n))
		require.Zero(t, n)

		got, u, err := e.people.Authenticate(ctx, sess.Token)
		require.NoError(t, err)
		require.Equal(t, alice, u)
		require.Equal(t, people.Session{UserID: alice.ID, CreatedAt: t0, LastSeenAt: t0, ExpiresAt: sess.ExpiresAt}, got,
			"no token outside SignIn")

		// Every sign-in starts a new session; the earlier ones stay.
		again := e.signIn("alice@example.com", "192.0.2.1")
		require.NotEqual(t, sess.Token, again.Token)
		for _, s := range []people.Session{sess, again} {
			_, _, err := e.people.Authenticate(ctx, s.Token)
			require.NoError(t, err)
		}

		// Tokens that are not sessions.
		for _, tok := range []string{"", "x", sess.Token[:42], sess.Token + "A", base64.RawURLEncoding.EncodeToString(make([]byte, 32))} {
			_, _, err := e.people.Authenticate(ctx, tok)
			require.ErrorIs(t, err, people.ErrNoSession, "%q", tok)
			require.ErrorIs(t, err, spec.ErrUnauthorized)
		}
	})
}

func TestSignInFailuresAreAlike(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{MaxFailures: 100})
		ctx := t.Context()
		e.create("alice@example.com", people.RoleAdministrator)
		e.create("bob@example.com", people.RoleReviewer)
		_, err := e.people.DisableUser(ctx, e.org.ID, "bob@example.com", admin)
		require.NoError(t, err)

		for name, c := range map[string][2]string{
			"wrong password":         {"alice@example.com", password + "!"},
			"password in other case": {"alice@example.com", "CORRECT HORSE BATTERY"},
			"empty password":         {"alice@example.com", ""},
			"long password":          {"alice@example.com", password + string(make([]byte, 2000))},
			"unknown email":          {"carol@example.com", password},
			"disabled user":          {"bob@example.com", password},
			"not an email":           {"alice", password},
			"empty email":            {"", password},
		} {
			sess, u, err := e.people.SignIn(ctx, c[0], c[1], people.Client{Addr: "192.0.2.1"})
			require.Equal(t, people.ErrBadCredentials, err, name)
			require.ErrorIs(t, err, spec.ErrUnauthorized, name)
			require.Equal(t, people.Session{}, sess, name)
			require.Equal(t, people.User{}, u, name)
		}
		require.Zero(t, e.sessions())
	})
}

func TestSessionTimeouts(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{})
		ctx := t.Context()
		e.create("alice@example.com", people.RoleAdministrator)

		// Idle: used every 1h59m, the session lives on; left 2h, it ends.
		s := e.signIn("alice@example.com", "192.0.2.1")
		for range 3 {
			e.clock.Advance(people.DefaultIdleTimeout - time.Minute)
			got, _, err := e.people.Authenticate(ctx, s.Token)
			require.NoError(t, err)
			require.Equal(t, e.clock.Now(), got.LastSeenAt)
		}
		e.clock.Advance(people.DefaultIdleTimeout)
		_, _, err := e.people.Authenticate(ctx, s.Token)
		require.ErrorIs(t, err, people.ErrNoSession)
		require.Zero(t, e.sessions(), "the ended session is deleted")

		// LastSeenAt is written at most once a minute.
		s = e.signIn("alice@example.com", "192.0.2.1")
		e.clock.Advance(59 * time.Second)
		got, _, err := e.people.Authenticate(ctx, s.Token)
		require.NoError(t, err)
		require.Equal(t, s.CreatedAt, got.LastSeenAt)
		e.clock.Advance(time.Second)
		got, _, err = e.people.Authenticate(ctx, s.Token)
		require.NoError(t, err)
		require.Equal(t, e.clock.Now(), got.LastSeenAt)

		// Absolute: used every hour, the session still ends 12h after its
		// sign-in.
		start := e.clock.Now()
		s = e.signIn("alice@example.com", "192.0.2.1")
		for e.clock.Now().Before(start.Add(people.DefaultAbsoluteTimeout - time.Hour)) {
			e.clock.Advance(time.Hour)
			_, _, err := e.people.Authenticate(ctx, s.Token)
			require.NoError(t, err, "at %s", e.clock.Now().Sub(start))
		}
		e.clock.Advance(time.Hour - time.Millisecond)
		_, _, err = e.people.Authenticate(ctx, s.Token)
		require.NoError(t, err)
		e.clock.Advance(time.Millisecond)
		_, _, err = e.people.Authenticate(ctx, s.Token)
		require.ErrorIs(t, err, people.ErrNoSession)

		// A sign-in deletes the user's sessions that ended unseen.
		old := e.signIn("alice@example.com", "192.0.2.1")
		e.clock.Advance(people.DefaultIdleTimeout)
		e.signIn("alice@example.com", "192.0.2.1")
		require.Equal(t, 1, e.sessions())
		_, _, err = e.people.Authenticate(ctx, old.Token)
		require.ErrorIs(t, err, people.ErrNoSession)
	})
}

func TestSessionTimeoutsConfigured(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{IdleTimeout: 20 * time.Second, AbsoluteTimeout: time.Minute})
		ctx := t.Context()
		e.create("alice@example.com", people.RoleAdministrator)
		s := e.signIn("alice@example.com", "192.0.2.1")
		require.Equal(t, t0.Add(time.Minute), s.ExpiresAt)
		// Written every 5 seconds (a quarter of the idle timeout), so used
		// every 15 seconds, the session lives to its absolute end.
		for range 3 {
			e.clock.Advance(15 * time.Second)
			_, _, err := e.people.Authenticate(ctx, s.Token)
			require.NoError(t, err)
		}
		e.clock.Advance(15 * time.Second)
		_, _, err := e.people.Authenticate(ctx, s.Token)
		require.ErrorIs(t, err, people.ErrNoSession)
	})
}

func TestSignOut(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{})
		ctx := t.Context()
		e.create("alice@example.com", people.RoleAdministrator)
		a := e.signIn("alice@example.com", "192.0.2.1")
		b := e.signIn("alice@example.com", "192.0.2.1")

		require.NoError(t, e.people.SignOut(ctx, a.Token))
		_, _, err := e.people.Authenticate(ctx, a.Token)
		require.ErrorIs(t, err, people.ErrNoSession)
		_, _, err = e.people.Authenticate(ctx, b.Token)
		require.NoError(t, err, "another session of the user stays")
		require.Equal(t, 1, e.sessions())

		// Again, or with a token that is no session: nothing happens.
		require.NoError(t, e.people.SignOut(ctx, a.Token))
		require.NoError(t, e.people.SignOut(ctx, ""))
		require.NoError(t, e.people.SignOut(ctx, "not a token"))
		require.Equal(t, 1, e.sessions())
	})
}

func TestSignInThrottleHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{})
		e.create("alice@example.com", people.RoleAdministrator)
		// Twenty guesses at once, from one address: only five are checked.
		const n = 20
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, _, errs[i] = e.people.SignIn(t.Context(), "alice@example.com", fmt.Sprintf("guess number %d", i), people.Client{Addr: "192.0.2.1"})
			})
		}
		wg.Wait()
		bad, throttled := 0, 0
		for _, err := range errs {
			var te *people.ThrottledError
			switch {
			case err == people.ErrBadCredentials:
				bad++
			case errors.As(err, &te):
				throttled++
			default:
				t.Fatalf("unexpected error %v", err)
			}
		}
		require.Equal(t, people.DefaultMaxFailures, bad)
		require.Equal(t, n-people.DefaultMaxFailures, throttled)
	})
}

func TestSessionsAndThrottleAreSharedByProcesses(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			// Two stores, each with its own connections to one database,
			// as two processes of the service have.
			url := sqldbtest.URL(t, d)
			clk := &clock{t: t0}
			open := func() *people.Store {
				db, err := sqldb.Open(t.Context(), url)
				require.NoError(t, err)
				t.Cleanup(func() { _ = db.Close() })
				orgs, err := org.NewStore(t.Context(), db, org.WithNow(clk.Now))
				require.NoError(t, err)
				p, err := people.New(t.Context(), people.Config{DB: db, Orgs: orgs, Now: clk.Now})
				require.NoError(t, err)
				return p
			}
			a, b := open(), open()
			db, err := sqldb.Open(t.Context(), url)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			orgs, err := org.NewStore(t.Context(), db)
			require.NoError(t, err)
			org, err := orgs.CreateOrganisation(t.Context(), org.OrganisationCreate{Name: "Acme"}, admin)
			require.NoError(t, err)
			alice, err := a.CreateUser(t.Context(), people.UserCreate{OrganisationID: org.ID, Email: "alice@example.com",
				Role: people.RoleAdministrator, Password: password}, admin)
			require.NoError(t, err)

			// A session started by one is honoured by the other, and ended
			// by either.
			s, _, err := a.SignIn(t.Context(), "alice@example.com", password, people.Client{Addr: "192.0.2.1"})
			require.NoError(t, err)
			_, u, err := b.Authenticate(t.Context(), s.Token)
			require.NoError(t, err)
			require.Equal(t, alice, u)
			require.NoError(t, b.SignOut(t.Context(), s.Token))
			_, _, err = a.Authenticate(t.Context(), s.Token)
			require.ErrorIs(t, err, people.ErrNoSession)

			// A user disabled by one has no session left in the other.
			s, _, err = b.SignIn(t.Context(), "alice@example.com", password, people.Client{Addr: "192.0.2.1"})
			require.NoError(t, err)
			_, err = a.DisableUser(t.Context(), org.ID, "alice@example.com", admin)
			require.NoError(t, err)
			_, _, err = b.Authenticate(t.Context(), s.Token)
			require.ErrorIs(t, err, people.ErrNoSession)

			// Failures counted by one throttle the other.
			for i := range people.DefaultMaxFailures {
				p := []*people.Store{a, b}[i%2]
				_, _, err := p.SignIn(t.Context(), "bob@example.com", "wrong password!", people.Client{Addr: "192.0.2.9"})
				require.Equal(t, people.ErrBadCredentials, err)
			}
			for _, p := range []*people.Store{a, b} {
				_, _, err := p.SignIn(t.Context(), "bob@example.com", "wrong password!", people.Client{Addr: "192.0.2.9"})
				requireThrottled(t, err, time.Second)
			}
			// The delay grows with the failures of either.
			clk.Advance(time.Second)
			_, _, err = a.SignIn(t.Context(), "bob@example.com", "wrong password!", people.Client{Addr: "192.0.2.9"})
			require.Equal(t, people.ErrBadCredentials, err)
			_, _, err = b.SignIn(t.Context(), "bob@example.com", "wrong password!", people.Client{Addr: "192.0.2.9"})
			requireThrottled(t, err, 2*time.Second)
		})
	}
}
