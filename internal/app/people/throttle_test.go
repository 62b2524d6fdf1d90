package people_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// try signs in and returns whether the password was checked (and failed),
// or else how long the client must wait. A success fails the test.
func (e *env) try(email, pw string, c people.Client) (checked bool, wait time.Duration) {
	e.t.Helper()
	_, _, err := e.people.SignIn(e.t.Context(), email, pw, c)
	var te *people.ThrottledError
	switch {
	case errors.Is(err, people.ErrBadCredentials):
		return true, 0
	case errors.As(err, &te):
		require.Positive(e.t, te.RetryAfter)
		require.LessOrEqual(e.t, te.RetryAfter, people.DefaultMaxDelay)
		return false, te.RetryAfter
	}
	e.t.Fatalf("sign-in of %s from %s: %v", email, c.Addr, err)
	return false, 0
}

// TestSignInDelaysGrow: past the free failures, each attempt waits twice as
// long after the last failure, up to the cap; attempts made sooner are
// refused without counting, so hammering does not lengthen the wait; the
// right password after the wait signs in.
func TestSignInDelaysGrow(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		// Only the address's count on the account delays here (see the
		// scripts below for the others).
		e := newEnv(t, db, people.Config{MaxAccountFailures: 100, MaxAddressFailures: 100})
		e.create("alice@example.com", people.RoleAdministrator)
		from := people.Client{Addr: "192.0.2.1"}
		for range people.DefaultMaxFailures {
			checked, _ := e.try("alice@example.com", "wrong password!", from)
			require.True(t, checked)
		}
		var waits []time.Duration
		for range 12 {
			checked, wait := e.try("alice@example.com", "wrong password!", from)
			require.False(t, checked)
			waits = append(waits, wait)
			// Hammering while waiting changes nothing.
			e.clock.Advance(wait / 2)
			for range 3 {
				_, _, err := e.people.SignIn(t.Context(), "alice@example.com", password, from)
				requireThrottled(t, err, wait-wait/2)
			}
			e.clock.Advance(wait - wait/2)
			checked, _ = e.try("alice@example.com", "wrong password!", from)
			require.True(t, checked, "after %s", wait)
		}
		s := time.Second
		require.Equal(t, []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 64 * s, 128 * s, 256 * s,
			5 * time.Minute, 5 * time.Minute, 5 * time.Minute}, waits)
		_, _, err := e.people.SignIn(t.Context(), "alice@example.com", password, from)
		requireThrottled(t, err, 5*time.Minute)
		require.Contains(t, err.Error(), "retry in 300 seconds")
		// Another address is not delayed at all.
		e.signIn("alice@example.com", "198.51.100.1")
		// After the wait the right password signs in and clears the count
		// of the address on the account.
		e.clock.Advance(5 * time.Minute)
		e.signIn("alice@example.com", "192.0.2.1")
		for range people.DefaultMaxFailures {
			checked, _ := e.try("alice@example.com", "wrong password!", from)
			require.True(t, checked)
		}
		_, wait := e.try("alice@example.com", password, from)
		require.Equal(t, time.Second, wait)
		// A count whose last failure is a FailureWindow old is forgotten.
		e.clock.Advance(people.DefaultFailureWindow)
		for range people.DefaultMaxFailures {
			checked, _ := e.try("alice@example.com", "wrong password!", from)
			require.True(t, checked)
		}
		e.clock.Advance(time.Second)
		e.signIn("alice@example.com", "192.0.2.1")
	})
}

// script plays clients that guess as fast as the throttle lets them, each
// waiting exactly the delay it is told, for the duration d of the test
// clock; it returns how many guesses were checked.
func (e *env) script(d time.Duration, clients []people.Client, email func(i, n int) string) int {
	e.t.Helper()
	end := e.clock.Now().Add(d)
	next := make([]time.Time, len(clients))
	for i := range next {
		next[i] = e.clock.Now()
	}
	checked := 0
	for {
		i := 0
		for j := range next {
			if next[j].Before(next[i]) {
				i = j
			}
		}
		if !next[i].Before(end) {
			return checked
		}
		e.clock.Set(next[i])
		ok, wait := e.try(email(i, checked), fmt.Sprintf("guess %d", checked), clients[i])
		if ok {
			checked++
		}
		next[i] = e.clock.Now().Add(wait)
	}
}

// TestSignInScriptOneAddressManyAccounts: one address guessing at many
// accounts for an hour is slowed to a few dozen guesses, and nobody is
// locked out: the owner from another address or with their device signs in
// at once, and even from the guessing address after one delay.
func TestSignInScriptOneAddressManyAccounts(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{})
		ctx := t.Context()
		e.create("alice@example.com", people.RoleAdministrator)
		device := e.signIn("alice@example.com", "198.51.100.7").Device

		guesser := []people.Client{{Addr: "203.0.113.9"}}
		checked := e.script(time.Hour, guesser, func(_, n int) string { return fmt.Sprintf("user%d@example.com", n) })
		// 20 free, then delays of 1 s, 2 s, ... 256 s (511 s in all) and 5
		// minutes each: 20 + 9 + (3600-511)/300 checked.
		require.Equal(t, people.DefaultMaxAddressFailures+9+(3600-511)/300, checked)

		// Alice, from her address, and with her device from the guesser's,
		// signs in at once.
		e.signIn("alice@example.com", "198.51.100.8")
		s, _, err := e.people.SignIn(ctx, "alice@example.com", password, people.Client{Addr: "203.0.113.9", Device: device})
		require.NoError(t, err)
		require.Equal(t, device, s.Device)
		// Without her device at the guesser's address she waits one delay,
		// never more than the cap, then signs in.
		_, wait := e.try("alice@example.com", password, guesser[0])
		require.LessOrEqual(t, wait, people.DefaultMaxDelay)
		e.clock.Advance(wait)
		e.signIn("alice@example.com", "203.0.113.9")
	})
}

// TestSignInScriptManyAddressesOneAccount: a hundred addresses guessing at
// one account for an hour each get one free guess once the account is under
// attack, then growing delays; the owner signs in with their device from
// any address, and from an address of theirs that has not failed, at once.
func TestSignInScriptManyAddressesOneAccount(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{})
		ctx := t.Context()
		e.create("alice@example.com", people.RoleAdministrator)
		device := e.signIn("alice@example.com", "198.51.100.7").Device

		var guessers []people.Client
		for i := range 100 {
			guessers = append(guessers, people.Client{Addr: fmt.Sprintf("203.0.113.%d", i)})
		}
		checked := e.script(time.Hour, guessers, func(int, int) string { return "alice@example.com" })
		t.Logf("%d guesses checked in an hour from %d addresses", checked, len(guessers))
		// Per address at most 5 free (1 once under attack), 9 growing
		// delays and one per 5 minutes: far from a password's guess space,
		// and 20 an hour per address at most.
		require.LessOrEqual(t, checked, 2*people.DefaultMaxFailures+100*(1+9+(3600-511)/300))
		require.GreaterOrEqual(t, checked, 100)

		for i := range 3 {
			s, _, err := e.people.SignIn(ctx, "alice@example.com", password, people.Client{Addr: guessers[i*40].Addr, Device: device})
			require.NoError(t, err)
			require.Equal(t, device, s.Device)
		}
		e.signIn("alice@example.com", "198.51.100.8")
		e.signIn("alice@example.com", "2001:db8:7::1")
		// While under attack, an address that failed once waits a second.
		checked1, _ := e.try("alice@example.com", "typo", people.Client{Addr: "198.51.100.9"})
		require.True(t, checked1)
		_, wait := e.try("alice@example.com", password, people.Client{Addr: "198.51.100.9"})
		require.Equal(t, time.Second, wait)

		// The device is Alice's only: with Bob's account it is untrusted; and
		// it has its own free failures, then waits too.
		e.create("bob@example.com", people.RoleReviewer)
		for range people.DefaultMaxFailures {
			checked, _ := e.try("bob@example.com", "wrong password!", people.Client{Addr: "192.0.2.50", Device: device})
			require.True(t, checked)
		}
		_, wait = e.try("bob@example.com", password, people.Client{Addr: "192.0.2.50", Device: device})
		require.Equal(t, time.Second, wait)
		for range people.DefaultMaxFailures {
			checked, _ := e.try("alice@example.com", "wrong password!", people.Client{Addr: "192.0.2.60", Device: device})
			require.True(t, checked)
		}
		_, wait = e.try("alice@example.com", password, people.Client{Addr: "192.0.2.61", Device: device})
		require.Equal(t, time.Second, wait)
		// A forged device token is untrusted (the address is fresh: it is
		// let through and fails).
		checked1, _ = e.try("alice@example.com", "wrong", people.Client{Addr: "192.0.2.62", Device: strings.Repeat("A", 43)})
		require.True(t, checked1)

		// A token unused for the device lifetime is forgotten.
		e.clock.Advance(people.DefaultDeviceLifetime)
		s, _, err := e.people.SignIn(ctx, "alice@example.com", password, people.Client{Addr: "192.0.2.61", Device: device})
		require.NoError(t, err)
		require.NotEqual(t, device, s.Device)
		var n int
		require.NoError(t, e.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM people_devices`).Scan(&n))
		require.Equal(t, 1, n, "the expired devices are deleted")
	})
}

// TestSignInThrottledPerAddress: an address's failures on all accounts
// count together (an IPv6 client by its /64), and a success does not clear
// them.
func TestSignInThrottledPerAddress(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, people.Config{MaxAddressFailures: 3, BaseDelay: time.Minute, MaxDelay: time.Hour})
		e.create("alice@example.com", people.RoleAdministrator)
		e.create("bob@example.com", people.RoleReviewer)

		// One address, its port changing, tries three accounts.
		for i, email := range []string{"alice@example.com", "bob@example.com", "carol@example.com"} {
			checked, _ := e.try(email, "wrong password!", people.Client{Addr: fmt.Sprintf("192.0.2.7:%d", 50000+i)})
			require.True(t, checked)
		}
		_, wait := e.try("bob@example.com", password, people.Client{Addr: "192.0.2.7:50003"})
		require.Equal(t, time.Minute, wait)
		e.signIn("bob@example.com", "192.0.2.8")

		checked, _ := e.try("alice@example.com", "wrong password!", people.Client{Addr: "[2001:db8:1:2::1]:443"})
		require.True(t, checked)
		checked, _ = e.try("bob@example.com", "wrong password!", people.Client{Addr: "2001:db8:1:2::2"})
		require.True(t, checked)
		e.signIn("bob@example.com", "2001:db8:1:2:ffff::3")
		checked, _ = e.try("carol@example.com", "wrong password!", people.Client{Addr: "2001:db8:1:2::4"})
		require.True(t, checked)
		_, wait = e.try("alice@example.com", password, people.Client{Addr: "2001:db8:1:2::5"})
		require.Equal(t, time.Minute, wait)
		e.signIn("alice@example.com", "2001:db8:1:3::5")

		e.clock.Advance(time.Minute)
		e.signIn("alice@example.com", "192.0.2.7")
		e.signIn("alice@example.com", "2001:db8:1:2::1")
	})
}
