package people

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aiusage/kit/internal/infra/sqldb"
)

// tokenBytes is the number of random bytes of a session token, and
// tokenLength the length of the token the client holds (base64url).
const (
	tokenBytes  = 32
	tokenLength = 43
)

// newToken returns a fresh session token.
func newToken() string {
	var b [tokenBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// hashToken is what the store keeps of a token. A token is 256 random bits,
// so a fast hash suffices: nobody can guess a preimage, and a lookup costs
// one SHA-256.
func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Kinds of the throttle's counts.
const (
	kindAccount = "account"
	kindAddress = "address"
)

// maxAddressLength bounds a client address stored as given (not an IP
// address); a longer one is stored as its digest.
const maxAddressLength = 100

// addressKey is what the throttle counts a client address under: an IP
// address without its port or zone (IPv4-mapped IPv6 as IPv4), an IPv6
// address as its /64 (what one subscriber usually holds), and anything else
// as given (its SHA-256 when long or not UTF-8). Empty is one address shared
// by every caller that gives none.
func addressKey(addr string) string {
	addr = strings.TrimSpace(addr)
	if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	if ip, err := netip.ParseAddr(addr); err == nil {
		ip = ip.WithZone("").Unmap()
		if ip.Is6() {
			p, _ := ip.Prefix(64) // 64 bits of an IPv6 address always make a prefix
			return p.String()
		}
		return ip.String()
	}
	if len(addr) > maxAddressLength || !utf8.ValidString(addr) || strings.ContainsRune(addr, 0) {
		h := sha256.Sum256([]byte(addr))
		return "sha256:" + hex.EncodeToString(h[:])
	}
	return addr
}

// errThrottled rolls back the counting of an attempt that is refused.
var errThrottled = errors.New("throttled")

// SignIn checks the email and password of a user and starts a session:
// always a new one, whatever sessions the user holds. clientAddr is the
// client's IP address (a port is ignored); failed sign-ins are counted per
// email and per client address, and once either count reaches MaxFailures
// in the current window SignIn returns a [*ThrottledError] without checking
// the password. An unknown email, a wrong password and a disabled user are
// all [ErrBadCredentials], after the same work. A successful sign-in clears
// the account's count, not the address's.
func (s *Store) SignIn(ctx context.Context, email, password, clientAddr string) (Session, User, error) {
	email, err := checkEmail(email)
	if err != nil {
		// No user has such an email: there is nothing to guess.
		return Session{}, User{}, ErrBadCredentials
	}
	addr := addressKey(clientAddr)
	now := s.now()
	window := time.UnixMilli(sqldb.FloorTo(now.UnixMilli(), s.cfg.FailureWindow.Milliseconds())).UTC()
	// The attempt counts as a failure from here until it succeeds, so that
	// attempts checked at once, in any process, cannot overrun the limit.
	if err := s.countAttempt(ctx, email, addr, window, now); err != nil {
		return Session{}, User{}, err
	}
	var hash string
	u, err := scanUser(s.db.QueryRowContext(ctx, `SELECT `+userColumns+`, password_hash FROM people_users WHERE email = $1`, email), &hash)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Session{}, User{}, err
	}
	if !found {
		hash = dummyHash()
	}
	ok := false
	if len(password) <= MaxPasswordBytes { // longer, it is nobody's password
		ok, err = verifyPassword(ctx, password, hash)
		if err != nil {
			return Session{}, User{}, fmt.Errorf("people: the password hash of user %s: %w", u.ID, err)
		}
	}
	if !ok || !found || u.DisabledAt != nil {
		return Session{}, User{}, ErrBadCredentials
	}
	sess, err := s.startSession(ctx, u, email, addr, window, now)
	if err != nil {
		return Session{}, User{}, err
	}
	return sess, u, nil
}

// countAttempt adds a sign-in to the counts of the account and of the
// client address in window, unless one of them has reached MaxFailures:
// then it counts nothing and returns a *ThrottledError.
func (s *Store) countAttempt(ctx context.Context, email, addr string, window, now time.Time) error {
	w := sqldb.Millis(window)
	// The counts of past windows are of no more use.
	if _, err := s.db.ExecContext(ctx, `DELETE FROM people_signin_failures WHERE window_start < $1`, w); err != nil && !sqldb.IsRetryable(err) {
		return err
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, c := range [...]struct{ kind, subject string }{{kindAccount, email}, {kindAddress, addr}} {
			var n int
			err := tx.QueryRowContext(ctx, `INSERT INTO people_signin_failures (kind, subject, window_start, count)
				VALUES ($1, $2, $3, 1)
				ON CONFLICT (kind, subject, window_start) DO UPDATE SET count = people_signin_failures.count + 1
				WHERE people_signin_failures.count < $4
				RETURNING count`, c.kind, c.subject, w, s.cfg.MaxFailures).Scan(&n)
			if errors.Is(err, sql.ErrNoRows) {
				return errThrottled // the count is at the limit: nothing returned, nothing changed
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errThrottled) {
		return &ThrottledError{RetryAfter: window.Add(s.cfg.FailureWindow).Sub(now)}
	}
	return err
}

// startSession starts a session of u, whose password was right, and takes
// the attempt back from the counts: the address's count loses it, the
// account's is cleared. It also deletes the user's sessions that have ended.
func (s *Store) startSession(ctx context.Context, u User, email, addr string, window, now time.Time) (Session, error) {
	sess := Session{Token: newToken(), UserID: u.ID, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(s.cfg.AbsoluteTimeout)}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// Locked, so that a user disabled meanwhile gets no session.
		var disabled sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT disabled_at FROM people_users WHERE id = $1`+s.forUpdate(), u.ID).Scan(&disabled)
		switch {
		case errors.Is(err, sql.ErrNoRows), err == nil && disabled.Valid:
			return ErrBadCredentials
		case err != nil:
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM people_sessions WHERE user_id = $1 AND (expires_at <= $2 OR last_seen_at <= $3)`,
			u.ID, sqldb.Millis(now), sqldb.Millis(now.Add(-s.cfg.IdleTimeout))); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO people_sessions (token_hash, user_id, created_at, last_seen_at, expires_at)
			VALUES ($1, $2, $3, $4, $5)`, hashToken(sess.Token), u.ID, sqldb.Millis(now), sqldb.Millis(now), sqldb.Millis(sess.ExpiresAt)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE people_signin_failures SET count = count - 1
			WHERE kind = $1 AND subject = $2 AND window_start = $3 AND count > 0`, kindAddress, addr, sqldb.Millis(window)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM people_signin_failures WHERE kind = $1 AND subject = $2`, kindAccount, email)
		return err
	})
	if err != nil {
		return Session{}, err
	}
	return sess, nil
}

// sessionUserColumns are userColumns of the users joined as u.
const sessionUserColumns = `u.id, u.org_id, u.email, u.name, u.role, u.created_at, u.disabled_at`

// touchInterval is how stale a session's LastSeenAt may grow before
// Authenticate writes it: a minute, or a quarter of the idle timeout when
// that is shorter.
func (s *Store) touchInterval() time.Duration { return min(time.Minute, s.cfg.IdleTimeout/4) }

// Authenticate returns the session of token and its user. A token that is
// unknown or signed out, or whose session has ended (unused for the idle
// timeout, past its absolute end, or its user disabled), is [ErrNoSession];
// an ended session is deleted. The session's LastSeenAt is moved to now when
// older than a minute, so the idle timeout counts from the last request
// within a minute. The session returned has no Token.
func (s *Store) Authenticate(ctx context.Context, token string) (Session, User, error) {
	if len(token) != tokenLength {
		return Session{}, User{}, ErrNoSession
	}
	digest := hashToken(token)
	var created, lastSeen, expires int64
	u, err := scanUser(s.db.QueryRowContext(ctx, `SELECT `+sessionUserColumns+`, s.created_at, s.last_seen_at, s.expires_at
		FROM people_sessions s JOIN people_users u ON u.id = s.user_id WHERE s.token_hash = $1`, digest),
		&created, &lastSeen, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Session{}, User{}, ErrNoSession
	case err != nil:
		return Session{}, User{}, err
	}
	now := s.now()
	ms := now.UnixMilli()
	if ms >= expires || ms >= lastSeen+s.cfg.IdleTimeout.Milliseconds() || u.DisabledAt != nil {
		if _, err := s.db.ExecContext(ctx, `DELETE FROM people_sessions WHERE token_hash = $1`, digest); err != nil {
			return Session{}, User{}, err
		}
		return Session{}, User{}, ErrNoSession
	}
	if ms-lastSeen >= s.touchInterval().Milliseconds() {
		if _, err := s.db.ExecContext(ctx, `UPDATE people_sessions SET last_seen_at = $1 WHERE token_hash = $2 AND last_seen_at < $1`,
			ms, digest); err != nil {
			return Session{}, User{}, err
		}
		lastSeen = ms
	}
	return Session{UserID: u.ID, CreatedAt: fromMillis(created), LastSeenAt: fromMillis(lastSeen), ExpiresAt: fromMillis(expires)}, u, nil
}

// SignOut ends the session of token: it is deleted, and the token is
// refused from then on, by every process. Signing out a token that is
// unknown or already signed out does nothing.
func (s *Store) SignOut(ctx context.Context, token string) error {
	if len(token) != tokenLength {
		return nil
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM people_sessions WHERE token_hash = $1`, hashToken(token))
	return err
}
