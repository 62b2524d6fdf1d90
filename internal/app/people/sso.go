package people

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// MaxBreakGlass is the longest a break-glass password may sign in for
// ([Store.BreakGlass]).
const MaxBreakGlass = 24 * time.Hour

// TokenDigest returns what the store keeps of a session token, its SHA-256
// digest, for other packages (package sso) to key their own rows about a
// session by: people_sessions.token_hash.
func TokenDigest(token string) []byte { return hashToken(token) }

// checkSSORequired returns [ErrSSORequired] when u's organisation requires
// single sign-on and u holds no break-glass time ahead of now.
func (s *Store) checkSSORequired(ctx context.Context, u User, now time.Time) error {
	if s.cfg.SSORequired == nil {
		return nil
	}
	if u.BreakGlassUntil != nil && now.Before(*u.BreakGlassUntil) {
		return nil
	}
	required, err := s.cfg.SSORequired(ctx, u.OrganisationID)
	if err != nil {
		return fmt.Errorf("people: whether organisation %s requires single sign-on: %w", u.OrganisationID, err)
	}
	if required {
		return ErrSSORequired
	}
	return nil
}

// ssoName returns the name an identity provider gives, made fit for a
// user: control characters dropped, trimmed, cut to MaxNameLength
// characters; empty, the part of the email before the @.
func ssoName(name, email string) (string, error) {
	name = strings.ToValidUTF8(name, "")
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > MaxNameLength {
		name = strings.TrimSpace(string([]rune(name)[:MaxNameLength]))
	}
	return checkName(name, email)
}

// ProvisionSSO creates or updates the user an organisation's identity
// provider signed in (just in time), and returns it, and whether it was
// created.
//
// The user is found by in.Email (an email names one user in the whole
// service), else by the pair in.Issuer and in.Subject (the provider changed
// the person's email: the user's email follows). A user found is linked to
// the pair, given the name and role, and a change of role is recorded
// ([AuditUserRoleChanged], actor the given one, normally the provider); a
// user not found is created without a password ([AuditUserCreated]). A
// disabled user is [ErrUserDisabled], a user of another organisation
// [ErrOtherOrganisation], a user linked to another pair
// [ErrSubjectMismatch]; the fields are checked as everywhere (spec.ErrInvalid
// naming them).
func (s *Store) ProvisionSSO(ctx context.Context, in SSOIdentity, actor org.Actor) (User, bool, error) {
	email, err := checkEmail(in.Email)
	if err != nil {
		return User{}, false, err
	}
	name, err := ssoName(in.Name, email)
	if err != nil {
		return User{}, false, err
	}
	if err := checkRole(in.Role); err != nil {
		return User{}, false, err
	}
	if in.Issuer == "" || in.Subject == "" {
		return User{}, false, invalid("subject", "and its issuer are required")
	}
	orgID, err := s.organisation(ctx, in.OrganisationID)
	if err != nil {
		return User{}, false, err
	}
	var u User
	var created bool
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		var issuer, subject sql.NullString
		found, err := scanUser(tx.QueryRowContext(ctx, `SELECT `+userColumns+`, sso_issuer, sso_subject FROM people_users WHERE email = $1`+s.forUpdate(), email),
			&issuer, &subject)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// The provider may have changed the person's email.
			found, err = scanUser(tx.QueryRowContext(ctx, `SELECT `+userColumns+`, sso_issuer, sso_subject FROM people_users
				WHERE sso_issuer = $1 AND sso_subject = $2`+s.forUpdate(), in.Issuer, in.Subject), &issuer, &subject)
			if errors.Is(err, sql.ErrNoRows) {
				u = User{ID: uuid.NewString(), OrganisationID: orgID, Email: email, Name: name, Role: in.Role, CreatedAt: now, SSO: true}
				created = true
				if _, err := tx.ExecContext(ctx, `INSERT INTO people_users
					(id, org_id, email, name, role, password_hash, created_at, sso_issuer, sso_subject) VALUES ($1, $2, $3, $4, $5, '', $6, $7, $8)`,
					u.ID, u.OrganisationID, u.Email, u.Name, string(u.Role), sqldb.Millis(now), in.Issuer, in.Subject); err != nil {
					return err
				}
				return s.orgs.RecordAuditTx(ctx, tx, orgID, now, actor, AuditUserCreated, auditResource, u.ID, nil, u)
			}
		}
		if err != nil {
			return err
		}
		switch {
		case found.OrganisationID != orgID:
			return ErrOtherOrganisation
		case found.DisabledAt != nil:
			return ErrUserDisabled
		case (issuer.Valid || subject.Valid) && (issuer.String != in.Issuer || subject.String != in.Subject):
			return ErrSubjectMismatch
		}
		u = found
		u.Email, u.Name, u.Role, u.SSO = email, name, in.Role, true
		if _, err := tx.ExecContext(ctx, `UPDATE people_users SET email = $1, name = $2, role = $3, sso_issuer = $4, sso_subject = $5 WHERE id = $6`,
			u.Email, u.Name, string(u.Role), in.Issuer, in.Subject, u.ID); err != nil {
			if sqldb.IsUniqueViolation(err) {
				return ErrSubjectMismatch // the pair is another user's
			}
			return err
		}
		if found.Role != u.Role {
			return s.orgs.RecordAuditTx(ctx, tx, orgID, now, actor, AuditUserRoleChanged, auditResource, u.ID, found, u)
		}
		return nil
	})
	if err != nil {
		return User{}, false, err
	}
	return u, created, nil
}

// StartSSOSession starts a session of the user userID, whom an identity
// provider just signed in: without a password, without the throttle and
// without a device token. A disabled or unknown user is [ErrUserDisabled]
// or spec.ErrNotFound. The session returned holds its Token.
func (s *Store) StartSSOSession(ctx context.Context, userID string) (Session, User, error) {
	now := s.now()
	sess := Session{Token: newToken(), UserID: strings.ToLower(userID), CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(s.cfg.AbsoluteTimeout)}
	var u User
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		u, err = scanUser(tx.QueryRowContext(ctx, `SELECT `+userColumns+` FROM people_users WHERE id = $1`+s.forUpdate(), sess.UserID))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fieldError(spec.ErrNotFound, fmt.Sprintf("No user with id %s.", userID), "id", "no such user")
		case err != nil:
			return err
		case u.DisabledAt != nil:
			return ErrUserDisabled
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM people_sessions WHERE user_id = $1 AND (expires_at <= $2 OR last_seen_at <= $3)`,
			u.ID, sqldb.Millis(now), sqldb.Millis(now.Add(-s.cfg.IdleTimeout))); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO people_sessions (token_hash, user_id, created_at, last_seen_at, expires_at)
			VALUES ($1, $2, $3, $3, $4)`, hashToken(sess.Token), u.ID, sqldb.Millis(now), sqldb.Millis(sess.ExpiresAt))
		return err
	})
	if err != nil {
		return Session{}, User{}, err
	}
	return sess, u, nil
}

// EndSession ends the session of token at once (it is deleted): the token
// is refused from then on, by every process. An unknown token does nothing.
func (s *Store) EndSession(ctx context.Context, token string) error { return s.SignOut(ctx, token) }

// EndSessions ends every session of the user userID at once (they are
// deleted).
func (s *Store) EndSessions(ctx context.Context, userID string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM people_sessions WHERE user_id = $1`, strings.ToLower(userID))
	return err
}

// BreakGlass gives the organisation's user userID a break-glass password:
// a one-time password (the user must change it at the first sign-in) that
// signs in even while the organisation requires single sign-on, until
// until, which must be ahead of now by at most [MaxBreakGlass]
// (spec.ErrInvalid naming until). The password must pass the rules of every
// password (spec.ErrInvalid naming password). The user's sessions end. A
// disabled user is spec.ErrConflict, a user of another organisation
// spec.ErrNotFound. Recorded as [AuditUserBreakGlass], never with the
// password or its hash.
func (s *Store) BreakGlass(ctx context.Context, orgID, userID, password string, until time.Time, actor org.Actor) (User, error) {
	if err := checkPassword(password); err != nil {
		return User{}, err
	}
	now := s.now()
	until = until.UTC().Truncate(time.Millisecond)
	if !until.After(now) || until.Sub(now) > MaxBreakGlass {
		return User{}, invalid("until", "must be after now and at most %s from now", MaxBreakGlass)
	}
	return s.replacePassword(ctx, orgID, userID, password, actor, AuditUserBreakGlass, func(u *User, _ time.Time) {
		u.OneTimePasswordUntil, u.BreakGlassUntil = &until, &until
	})
}
