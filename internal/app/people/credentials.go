package people

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// NewOneTimePassword returns a random password for an invitation or a reset:
// crypto/rand.Text, 26 characters of base32 carrying 130 bits.
func NewOneTimePassword() string { return rand.Text() }

// nullMillis is t in Unix milliseconds, or NULL when t is nil.
func nullMillis(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: sqldb.Millis(*t), Valid: true}
}

// DeviceLifetime returns how long a device token stays valid after its last
// sign-in (Config.DeviceLifetime).
func (s *Store) DeviceLifetime() time.Duration { return s.cfg.DeviceLifetime }

// MaxDelay returns the longest a throttled sign-in waits (Config.MaxDelay).
func (s *Store) MaxDelay() time.Duration { return s.cfg.MaxDelay }

// OneTimePasswordTTL returns how long a one-time password may be signed in
// with (Config.OneTimePasswordTTL).
func (s *Store) OneTimePasswordTTL() time.Duration { return s.cfg.OneTimePasswordTTL }

// ChangePassword changes the password of the user signed in with the
// session token to next, once current is the password they hold: the
// password they chose or their one-time password (a session started before
// it expired may still change it). next must pass the rules of every
// password (spec.ErrInvalid naming newPassword) and differ from current. A
// wrong current password is spec.ErrInvalid naming currentPassword; after
// MaxFailures of them, each further attempt waits a growing delay after the
// last one (as at sign-in); one made sooner is a [*ThrottledError] without
// checking.
//
// The user's other sessions end (they are deleted); the session of token
// stays. A one-time password stops being one. The change is recorded in the
// audit trail, the user as its actor, never with a password or its hash.
func (s *Store) ChangePassword(ctx context.Context, token, current, next string) (User, error) {
	_, u, err := s.Authenticate(ctx, token)
	if err != nil {
		return User{}, err
	}
	if current == "" {
		return User{}, invalid("currentPassword", "is required")
	}
	if err := checkPassword(next); err != nil {
		var he *spec.Error
		if errors.As(err, &he) && len(he.Fields) == 1 {
			return User{}, invalid("newPassword", "%s", he.Fields[0].Message)
		}
		return User{}, err
	}
	if next == current {
		return User{}, invalid("newPassword", "must differ from the current password")
	}
	now := s.now()
	err = s.throttle(ctx, now, func(*sql.Tx) ([]count, error) { return []count{{kindChange, u.ID, s.cfg.MaxFailures}}, nil })
	if err != nil {
		return User{}, err
	}
	var stored string
	if err := s.db.QueryRowContext(ctx, `SELECT password_hash FROM people_users WHERE id = $1`, u.ID).Scan(&stored); err != nil {
		return User{}, err
	}
	ok := false
	if stored != "" && len(current) <= MaxPasswordBytes { // '': no password (an identity provider's user)
		if ok, err = verifyPassword(ctx, current, stored); err != nil {
			return User{}, fmt.Errorf("people: the password hash of user %s: %w", u.ID, err)
		}
	}
	if !ok {
		return User{}, invalid("currentPassword", "is wrong")
	}
	hash, err := hashPassword(ctx, next, s.cfg.HashCost.params())
	if err != nil {
		return User{}, err
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		before, err := scanUser(tx.QueryRowContext(ctx, `SELECT `+userColumns+` FROM people_users WHERE id = $1`+s.forUpdate(), u.ID))
		if err != nil {
			return err
		}
		if before.DisabledAt != nil {
			return ErrNoSession
		}
		// The hash checked must still be the one stored: of two changes at
		// once, the second is refused rather than lost.
		res, err := tx.ExecContext(ctx, `UPDATE people_users SET password_hash = $1, one_time_until = NULL WHERE id = $2 AND password_hash = $3`,
			hash, u.ID, stored)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return errors.Join(err, fieldError(spec.ErrConflict, "The password was changed meanwhile; sign in again.", "currentPassword", "changed meanwhile"))
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM people_sessions WHERE user_id = $1 AND token_hash <> $2`, u.ID, hashToken(token)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM people_signin_counts WHERE kind = $1 AND subject = $2`, kindChange, u.ID); err != nil {
			return err
		}
		u = before
		u.OneTimePasswordUntil = nil
		return s.orgs.RecordAuditTx(ctx, tx, u.OrganisationID, now, u.Actor(), AuditUserPasswordChanged, auditResource, u.ID, before, u)
	})
	if err != nil {
		return User{}, err
	}
	return u, nil
}

// ResetPassword gives the organisation's user userID the password: a
// one-time one when oneTime (the user must change it at the first sign-in,
// and it expires after OneTimePasswordTTL), else one the user keeps (the
// operator's recovery). The password must pass the rules of every password
// (spec.ErrInvalid naming password). Every session of the user ends (they
// are deleted). A disabled user is spec.ErrConflict; a user of another
// organisation spec.ErrNotFound. The change is recorded in the audit trail,
// never with a password or its hash.
func (s *Store) ResetPassword(ctx context.Context, orgID, userID, password string, oneTime bool, actor org.Actor) (User, error) {
	if err := checkPassword(password); err != nil {
		return User{}, err
	}
	return s.replacePassword(ctx, orgID, userID, password, actor, AuditUserPasswordReset, func(u *User, now time.Time) {
		u.OneTimePasswordUntil = nil
		if oneTime {
			until := now.Add(s.cfg.OneTimePasswordTTL)
			u.OneTimePasswordUntil = &until
		}
	})
}

// replacePassword gives the organisation's user userID the password (whose
// rules the caller checked), with edit setting the user's one-time and
// break-glass times, ends every session of the user and records action in
// the audit trail, never with the password or its hash. A disabled user is
// spec.ErrConflict; a user of another organisation spec.ErrNotFound.
func (s *Store) replacePassword(ctx context.Context, orgID, userID, password string, actor org.Actor, action string, edit func(u *User, now time.Time)) (User, error) {
	orgID, userID = strings.ToLower(orgID), strings.ToLower(userID)
	if _, err := s.User(ctx, orgID, userID); err != nil {
		return User{}, err
	}
	// Hashed outside the transaction, which would otherwise hold SQLite's
	// write lock for the time of the hash.
	hash, err := hashPassword(ctx, password, s.cfg.HashCost.params())
	if err != nil {
		return User{}, err
	}
	now := s.now()
	var u User
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		before, err := scanUser(tx.QueryRowContext(ctx, `SELECT `+userColumns+` FROM people_users WHERE id = $1 AND org_id = $2`+s.forUpdate(), userID, orgID))
		if errors.Is(err, sql.ErrNoRows) {
			return userNotFound("id", userID)
		}
		if err != nil {
			return err
		}
		if before.DisabledAt != nil {
			return fieldError(spec.ErrConflict, fmt.Sprintf("%s is disabled; a disabled user cannot sign in, whatever the password.", before.Email),
				"id", "the user is disabled")
		}
		u = before
		edit(&u, now)
		if _, err := tx.ExecContext(ctx, `UPDATE people_users SET password_hash = $1, one_time_until = $2, break_glass_until = $3 WHERE id = $4`,
			hash, nullMillis(u.OneTimePasswordUntil), nullMillis(u.BreakGlassUntil), u.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM people_sessions WHERE user_id = $1`, u.ID); err != nil {
			return err
		}
		return s.orgs.RecordAuditTx(ctx, tx, orgID, now, actor, action, auditResource, u.ID, before, u)
	})
	if err != nil {
		return User{}, err
	}
	return u, nil
}
