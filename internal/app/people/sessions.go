package people

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

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

// SignIn checks the email and password of a user and starts a session:
// always a new one, whatever sessions the user holds.
//
// Failed sign-ins are counted so that guessing is slow and an attacker
// cannot keep the owner out. A client whose c.Device is a valid device token
// of the account (its browser signed in to it before) is trusted: its
// failures count for that device alone, MaxFailures of them free. Any other
// client has MaxFailures free failures on the account from its address (one
// once the account is under attack, see Config.MaxAccountFailures), and
// MaxAddressFailures on all accounts. Past them, each further attempt waits
// a growing delay after the last failure (Config.BaseDelay, doubled with
// every failure, at most Config.MaxDelay); an attempt made before its delay
// has passed gets a [*ThrottledError] saying how long to wait, without the
// password being checked, and does not count.
//
// An unknown email, a wrong password, a disabled user and a user without a
// password (created by an identity provider) are all [ErrBadCredentials],
// after the same work; the right one-time password past its expiry is
// [ErrOneTimePasswordExpired]; the right password of a user whose
// organisation requires single sign-on (Config.SSORequired) is
// [ErrSSORequired], unless the user's break-glass time
// ([User.BreakGlassUntil]) is still ahead. A successful sign-in takes
// its attempt back from the counts, clears those of its address (or
// device) on the account, and returns in Session.Device the device token
// for the client to keep.
func (s *Store) SignIn(ctx context.Context, email, password string, c Client) (Session, User, error) {
	email, err := checkEmail(email)
	if err != nil {
		// No user has such an email: there is nothing to guess.
		return Session{}, User{}, ErrBadCredentials
	}
	now := s.now()
	a := attempt{email: email, addr: addressKey(c.Addr)}
	if a.device, err = s.trustedDevice(ctx, c.Device, email, now); err != nil {
		return Session{}, User{}, err
	}
	// The attempt counts as a failure from here until it succeeds, so that
	// attempts checked at once, in any process, cannot overrun the limit.
	if err := s.countAttempt(ctx, a, now); err != nil {
		return Session{}, User{}, err
	}
	var hash string
	u, err := scanUser(s.db.QueryRowContext(ctx, `SELECT `+userColumns+`, password_hash FROM people_users WHERE email = $1`, email), &hash)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Session{}, User{}, err
	}
	// A user created by an identity provider has no password (''): it is
	// checked against the dummy hash too, and fails.
	hasPassword := found && hash != ""
	if !hasPassword {
		hash = dummyHash(s.cfg.HashCost)
	}
	ok := false
	if len(password) <= MaxPasswordBytes { // longer, it is nobody's password
		ok, err = verifyPassword(ctx, password, hash)
		if err != nil {
			return Session{}, User{}, fmt.Errorf("people: the password hash of user %s: %w", u.ID, err)
		}
	}
	if !ok || !hasPassword || u.DisabledAt != nil {
		return Session{}, User{}, ErrBadCredentials
	}
	if u.OneTimePasswordUntil != nil && !now.Before(*u.OneTimePasswordUntil) {
		return Session{}, User{}, ErrOneTimePasswordExpired
	}
	if err := s.checkSSORequired(ctx, u, now); err != nil {
		return Session{}, User{}, err
	}
	sess, err := s.startSession(ctx, u, a, now)
	if err != nil {
		return Session{}, User{}, err
	}
	if a.device != nil {
		sess.Device = c.Device // still valid: the client keeps it
	}
	return sess, u, nil
}

// trustedDevice returns the digest of token when it is a device token of
// the account email, used within DeviceLifetime; else nil.
func (s *Store) trustedDevice(ctx context.Context, token, email string, now time.Time) ([]byte, error) {
	if len(token) != tokenLength {
		return nil, nil
	}
	digest := hashToken(token)
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM people_devices d JOIN people_users u ON u.id = d.user_id
		WHERE d.token_hash = $1 AND u.email = $2 AND d.last_used_at > $3`,
		digest, email, sqldb.Millis(now.Add(-s.cfg.DeviceLifetime))).Scan(&n)
	if err != nil || n == 0 {
		return nil, err
	}
	return digest, nil
}

// startSession starts a session of u, whose password was right, and takes
// the attempt back from the counts: the counts of its address (or device)
// on the account are cleared, the others lose the attempt. It keeps the
// client's device token (or makes one) and deletes the user's sessions that
// have ended and devices beyond DeviceLifetime and MaxDevicesPerUser.
func (s *Store) startSession(ctx context.Context, u User, a attempt, now time.Time) (Session, error) {
	sess := Session{Token: newToken(), UserID: u.ID, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(s.cfg.AbsoluteTimeout)}
	device := a.device
	if device == nil {
		sess.Device = newToken()
		device = hashToken(sess.Device)
	}
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
		if err := s.takeBack(ctx, tx, a); err != nil {
			return err
		}
		if a.device != nil {
			_, err = tx.ExecContext(ctx, `UPDATE people_devices SET last_used_at = $1 WHERE token_hash = $2`, sqldb.Millis(now), device)
		} else {
			_, err = tx.ExecContext(ctx, `INSERT INTO people_devices (token_hash, user_id, created_at, last_used_at) VALUES ($1, $2, $3, $3)`,
				device, u.ID, sqldb.Millis(now))
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM people_devices WHERE user_id = $1 AND (last_used_at <= $2 OR token_hash NOT IN
			(SELECT token_hash FROM people_devices WHERE user_id = $1 ORDER BY last_used_at DESC, token_hash LIMIT $3))`,
			u.ID, sqldb.Millis(now.Add(-s.cfg.DeviceLifetime)), MaxDevicesPerUser)
		return err
	})
	if err != nil {
		return Session{}, err
	}
	return sess, nil
}

// sessionUserColumns are userColumns of the users joined as u.
const sessionUserColumns = `u.id, u.org_id, u.email, u.name, u.role, u.created_at, u.disabled_at, u.one_time_until, u.sso_subject IS NOT NULL, u.break_glass_until`

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
