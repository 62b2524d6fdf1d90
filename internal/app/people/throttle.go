package people

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/internal/infra/sqldb"
)

// Kinds of the throttle's counts.
const (
	// kindAccount counts an account's failures from clients without a
	// trusted device (subject: the email). Past MaxAccountFailures it only
	// narrows each address's free failures on the account to one; it
	// delays nobody by itself.
	kindAccount = "account"
	// kindAddress counts a client address's failures, on any account, when
	// it has no trusted device (subject: the address key).
	kindAddress = "address"
	// kindPair counts the failures of one client address on one account
	// (subject: email, space, address key).
	kindPair = "pair"
	// kindDevice counts the failures of one trusted device (subject: the
	// hex digest of its token).
	kindDevice = "device"
	// kindChange counts a user's wrong current passwords when changing it
	// (subject: the user id).
	kindChange = "change"
)

// maxAddressLength bounds a client address stored as given (not an IP
// address); a longer one is stored as its digest.
const maxAddressLength = 100

// addressKey is what the throttle counts a client address under: an IP
// address without its port or zone (IPv4-mapped IPv6 as IPv4), an IPv6
// address as its /64 (what one subscriber usually holds), and anything else
// as given (its SHA-256 when long or not UTF-8). Empty is one address shared
// by every caller that gives none.
//
// The key of an IP address is ident.AddressKey's, by which the server counts
// a client's connections; it is never longer than maxAddressLength.
func addressKey(addr string) string {
	addr = ident.AddressKey(strings.TrimSpace(addr))
	if len(addr) > maxAddressLength || !utf8.ValidString(addr) || strings.ContainsRune(addr, 0) {
		h := sha256.Sum256([]byte(addr))
		return "sha256:" + hex.EncodeToString(h[:])
	}
	return addr
}

// throttled rolls back the counting of an attempt that is refused; wait is
// how long the client must wait.
type throttled struct{ wait time.Duration }

func (e *throttled) Error() string { return "throttled" }

// attempt is one sign-in being counted.
type attempt struct {
	email, addr string
	// device is the digest of the client's device token when it is a valid
	// one of the account (a trusted device), else nil.
	device []byte
}

// count is one of the throttle's counts an attempt adds to, with its free
// failures (0: it never delays).
type count struct {
	kind, subject string
	free          int
}

// counts returns the counts the attempt adds to. A trusted device counts
// only for itself; any other client for its address on the account, for
// its address, and for the account, whose count narrows the first one's
// free failures to one once it reaches MaxAccountFailures (underAttack).
func (s *Store) counts(a attempt, underAttack bool) []count {
	if a.device != nil {
		return []count{{kindDevice, hex.EncodeToString(a.device), s.cfg.MaxFailures}}
	}
	pair := s.cfg.MaxFailures
	if underAttack {
		pair = 1
	}
	return []count{
		{kindPair, a.email + " " + a.addr, pair},
		{kindAddress, a.addr, s.cfg.MaxAddressFailures},
		{kindAccount, a.email, 0},
	}
}

// delay is how long a count waits after its last failure once it holds
// over failures beyond its free ones: BaseDelay doubled over times, at most
// MaxDelay.
func (s *Store) delay(over int64) time.Duration {
	d := s.cfg.BaseDelay
	for range min(over, 64) {
		if d >= s.cfg.MaxDelay {
			break
		}
		d *= 2
	}
	return min(d, s.cfg.MaxDelay)
}

// forgetBefore is the Unix millisecond at or before which a count's last
// failure is too old to matter: the count starts afresh.
func (s *Store) forgetBefore(now time.Time) int64 {
	return sqldb.Millis(now.Add(-s.cfg.FailureWindow))
}

// countAttempt adds a sign-in to its counts, unless one of them is still
// waiting after its last failure: then it counts nothing and returns a
// *ThrottledError with the longest wait.
func (s *Store) countAttempt(ctx context.Context, a attempt, now time.Time) error {
	old := s.forgetBefore(now)
	// The counts forgotten are of no more use.
	if _, err := s.db.ExecContext(ctx, `DELETE FROM people_signin_counts WHERE last_at <= $1`, old); err != nil && !sqldb.IsRetryable(err) {
		return err
	}
	return s.throttle(ctx, now, func(tx *sql.Tx) ([]count, error) {
		if a.device != nil {
			return s.counts(a, false), nil
		}
		var n int
		err := tx.QueryRowContext(ctx, `SELECT count FROM people_signin_counts WHERE kind = $1 AND subject = $2 AND last_at > $3`,
			kindAccount, a.email, old).Scan(&n)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return s.counts(a, n >= s.cfg.MaxAccountFailures), nil
	})
}

// throttle adds one to each of the counts that pick returns, in one
// transaction, or to none when one of them is still waiting: then it
// returns a *ThrottledError with the longest wait. Each count's row stays
// locked until the transaction ends, so that attempts checked at once, in
// any process, see each other's counts.
func (s *Store) throttle(ctx context.Context, now time.Time, pick func(*sql.Tx) ([]count, error)) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		cs, err := pick(tx)
		if err != nil {
			return err
		}
		var wait time.Duration
		for _, c := range cs {
			w, err := s.addCount(ctx, tx, c, now)
			if err != nil {
				return err
			}
			wait = max(wait, w)
		}
		if wait > 0 {
			return &throttled{wait}
		}
		return nil
	})
	var th *throttled
	if errors.As(err, &th) {
		return &ThrottledError{RetryAfter: th.wait}
	}
	return err
}

// addCount adds one to the count c and returns how long the attempt must
// still wait, by the count as it was before: 0 while it held fewer than
// c.free failures or its delay since the last one has passed.
func (s *Store) addCount(ctx context.Context, tx *sql.Tx, c count, now time.Time) (time.Duration, error) {
	var n, prev int64
	err := tx.QueryRowContext(ctx, `INSERT INTO people_signin_counts (kind, subject, count, last_at, prev_at)
		VALUES ($1, $2, 1, $3, 0)
		ON CONFLICT (kind, subject) DO UPDATE SET
			count = CASE WHEN people_signin_counts.last_at <= $4 THEN 1 ELSE people_signin_counts.count + 1 END,
			prev_at = CASE WHEN people_signin_counts.last_at <= $4 THEN 0 ELSE people_signin_counts.last_at END,
			last_at = $3
		RETURNING count, prev_at`, c.kind, c.subject, sqldb.Millis(now), s.forgetBefore(now)).Scan(&n, &prev)
	if err != nil {
		return 0, err
	}
	before := n - 1
	if c.free == 0 || before < int64(c.free) {
		return 0, nil
	}
	until := fromMillis(prev).Add(s.delay(before - int64(c.free)))
	return max(until.Sub(now), 0), nil
}

// takeBack takes a successful attempt back from its counts, in tx: the
// first one (the address's or the device's own count on the account) is
// cleared, the others lose the attempt.
func (s *Store) takeBack(ctx context.Context, tx *sql.Tx, a attempt) error {
	for i, c := range s.counts(a, false) {
		q := `UPDATE people_signin_counts SET count = count - 1 WHERE kind = $1 AND subject = $2 AND count > 0`
		if i == 0 {
			q = `DELETE FROM people_signin_counts WHERE kind = $1 AND subject = $2`
		}
		if _, err := tx.ExecContext(ctx, q, c.kind, c.subject); err != nil {
			return err
		}
	}
	return nil
}
