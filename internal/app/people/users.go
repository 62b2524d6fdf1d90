package people

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// invalid returns an error of kind spec.ErrInvalid naming field.
func invalid(field, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	return fieldError(spec.ErrInvalid, fmt.Sprintf("The %s %s.", field, msg), field, "%s", msg)
}

// fieldError returns an error of kind with detail, naming one field with
// its message.
func fieldError(kind error, detail, field, format string, a ...any) *spec.Error {
	return &spec.Error{Kind: kind, Detail: detail, Fields: []spec.ProblemField{{Field: field, Message: fmt.Sprintf(format, a...)}}}
}

// normaliseEmail trims and lowercases an email address.
func normaliseEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// checkEmail returns the email address, normalised, or an error of kind
// spec.ErrInvalid naming the field email.
func checkEmail(s string) (string, error) {
	if !utf8.ValidString(s) { // checked first: lowercasing would replace the bad bytes
		return "", invalid("email", "must be UTF-8")
	}
	email := normaliseEmail(s)
	switch {
	case email == "":
		return "", invalid("email", "is required")
	case len(email) > MaxEmailLength:
		return "", invalid("email", "is %d bytes long, at most %d", len(email), MaxEmailLength)
	case strings.IndexFunc(email, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "", invalid("email", "must not hold spaces or control characters")
	case strings.Count(email, "@") != 1:
		return "", invalid("email", "must hold exactly one @, as in alice@example.com")
	}
	local, domain, _ := strings.Cut(email, "@")
	if local == "" || domain == "" {
		return "", invalid("email", "needs a name before the @ and a domain after it, as in alice@example.com")
	}
	return email, nil
}

// checkName returns the name of a user with the normalised email: trimmed,
// or the part of the email before the @ when empty (cut to MaxNameLength
// characters).
func checkName(name, email string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		local, _, _ := strings.Cut(email, "@")
		if utf8.RuneCountInString(local) > MaxNameLength {
			local = string([]rune(local)[:MaxNameLength])
		}
		name = local
	}
	switch {
	case !utf8.ValidString(name):
		return "", invalid("name", "must be UTF-8")
	case utf8.RuneCountInString(name) > MaxNameLength:
		return "", invalid("name", "is %d characters, at most %d", utf8.RuneCountInString(name), MaxNameLength)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", invalid("name", "must not hold control characters")
	}
	return name, nil
}

// checkRole refuses a role that is not a [Role].
func checkRole(r Role) error {
	if r == "" {
		return invalid("role", "is required: Administrator or Reviewer")
	}
	if _, err := ParseRole(string(r)); err != nil {
		return invalid("role", "%v", err)
	}
	return nil
}

// checkPassword refuses a password that is too short or too long. The
// message never shows the password.
func checkPassword(p string) error {
	if n := utf8.RuneCountInString(p); n < MinPasswordLength {
		return invalid("password", "is %d characters, at least %d", n, MinPasswordLength)
	}
	if len(p) > MaxPasswordBytes {
		return invalid("password", "is %d bytes, at most %d", len(p), MaxPasswordBytes)
	}
	return nil
}

// organisation returns the id of the organisation orgID in lowercase, or an
// error of kind spec.ErrNotFound naming organisationId.
func (s *Store) organisation(ctx context.Context, orgID string) (string, error) {
	id, ok := ident.CanonicalUUID(orgID)
	if ok {
		_, err := s.orgs.Organisation(ctx, id)
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, spec.ErrNotFound) {
			return "", err
		}
	}
	return "", fieldError(spec.ErrNotFound, fmt.Sprintf("No organisation %s.", orgID), "organisationId", "no such organisation")
}

// CreateUser creates a user of the organisation c.OrganisationID, records
// it in the organisation's audit trail, and returns it. Every field is
// checked first (spec.ErrInvalid naming it); an unknown organisation is
// spec.ErrNotFound, an email already taken in the service spec.ErrConflict.
func (s *Store) CreateUser(ctx context.Context, c UserCreate, actor org.Actor) (User, error) {
	email, err := checkEmail(c.Email)
	if err != nil {
		return User{}, err
	}
	name, err := checkName(c.Name, email)
	if err != nil {
		return User{}, err
	}
	if err := checkRole(c.Role); err != nil {
		return User{}, err
	}
	if err := checkPassword(c.Password); err != nil {
		return User{}, err
	}
	org, err := s.organisation(ctx, c.OrganisationID)
	if err != nil {
		return User{}, err
	}
	// Hashed outside the transaction, which would otherwise hold SQLite's
	// write lock for the time of the hash.
	hash, err := hashPassword(ctx, c.Password, s.cfg.HashCost.params())
	if err != nil {
		return User{}, err
	}
	now := s.now()
	u := User{ID: uuid.NewString(), OrganisationID: org, Email: email, Name: name, Role: c.Role, CreatedAt: now}
	if c.OneTime {
		until := now.Add(s.cfg.OneTimePasswordTTL)
		u.OneTimePasswordUntil = &until
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO people_users
			(id, org_id, email, name, role, password_hash, created_at, one_time_until) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			u.ID, u.OrganisationID, u.Email, u.Name, string(u.Role), hash, sqldb.Millis(now), nullMillis(u.OneTimePasswordUntil)); err != nil {
			if sqldb.IsUniqueViolation(err) {
				return fieldError(spec.ErrConflict, fmt.Sprintf("A user with email %s already exists; an email names one user in the whole service.", email),
					"email", "already taken")
			}
			return err
		}
		return s.orgs.RecordAuditTx(ctx, tx, org, now, actor, AuditUserCreated, auditResource, u.ID, nil, u)
	})
	if err != nil {
		return User{}, err
	}
	return u, nil
}

const userColumns = `id, org_id, email, name, role, created_at, disabled_at, one_time_until, sso_subject IS NOT NULL, break_glass_until`

func scanUser(row interface{ Scan(...any) error }, more ...any) (User, error) {
	var u User
	var role string
	var created int64
	var disabled, oneTime, breakGlass sql.NullInt64
	if err := row.Scan(append([]any{&u.ID, &u.OrganisationID, &u.Email, &u.Name, &role, &created, &disabled, &oneTime, &u.SSO, &breakGlass}, more...)...); err != nil {
		return u, err
	}
	if breakGlass.Valid {
		t := fromMillis(breakGlass.Int64)
		u.BreakGlassUntil = &t
	}
	u.Role, u.CreatedAt = Role(role), fromMillis(created)
	if disabled.Valid {
		t := fromMillis(disabled.Int64)
		u.DisabledAt = &t
	}
	if oneTime.Valid {
		t := fromMillis(oneTime.Int64)
		u.OneTimePasswordUntil = &t
	}
	return u, nil
}

// Users returns the organisation's users, oldest first, disabled ones
// included. An unknown organisation is spec.ErrNotFound.
func (s *Store) Users(ctx context.Context, orgID string) ([]User, error) {
	org, err := s.organisation(ctx, orgID)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+userColumns+` FROM people_users WHERE org_id = $1 ORDER BY created_at, id`, org)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// userNotFound is the error of a user that is not the organisation's.
func userNotFound(field, value string) error {
	return fieldError(spec.ErrNotFound, fmt.Sprintf("No user with %s %s in this organisation.", field, value), field, "no such user in this organisation")
}

// User returns one user of the organisation, or an error of kind
// spec.ErrNotFound: a user of another organisation is not found either.
func (s *Store) User(ctx context.Context, orgID, userID string) (User, error) {
	u, err := scanUser(s.db.QueryRowContext(ctx, `SELECT `+userColumns+` FROM people_users WHERE id = $1 AND org_id = $2`,
		strings.ToLower(userID), strings.ToLower(orgID)))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return User{}, userNotFound("id", userID)
	case err != nil:
		return User{}, err
	}
	return u, nil
}

// UserByEmail returns the user with the email, of whichever organisation (an
// email names one user in the whole service), or an error of kind
// spec.ErrNotFound. It is for the operator's tools, which name people by
// their email.
func (s *Store) UserByEmail(ctx context.Context, email string) (User, error) {
	email = normaliseEmail(email)
	u, err := scanUser(s.db.QueryRowContext(ctx, `SELECT `+userColumns+` FROM people_users WHERE email = $1`, email))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return User{}, fieldError(spec.ErrNotFound, fmt.Sprintf("No user with email %s.", email), "email", "no such user")
	case err != nil:
		return User{}, err
	}
	return u, nil
}

// SetRole gives the organisation's user userID the role, records the change
// in the audit trail, and returns the user. Giving the role the user holds
// changes nothing and records nothing.
func (s *Store) SetRole(ctx context.Context, orgID, userID string, role Role, actor org.Actor) (User, error) {
	if err := checkRole(role); err != nil {
		return User{}, err
	}
	orgID, userID = strings.ToLower(orgID), strings.ToLower(userID)
	var u User
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		u, err = scanUser(tx.QueryRowContext(ctx, `SELECT `+userColumns+` FROM people_users WHERE id = $1 AND org_id = $2`+s.forUpdate(), userID, orgID))
		if errors.Is(err, sql.ErrNoRows) {
			return userNotFound("id", userID)
		}
		if err != nil || u.Role == role {
			return err
		}
		before := u
		u.Role = role
		if _, err := tx.ExecContext(ctx, `UPDATE people_users SET role = $1 WHERE id = $2`, string(role), u.ID); err != nil {
			return err
		}
		return s.orgs.RecordAuditTx(ctx, tx, orgID, s.now(), actor, AuditUserRoleChanged, auditResource, u.ID, before, u)
	})
	if err != nil {
		return User{}, err
	}
	return u, nil
}

// DisableUser disables the organisation's user with the email and ends its
// sessions at once (they are deleted): it can no longer sign in, and its
// next request is refused. The change is recorded in the audit trail.
// Disabling a disabled user changes nothing and returns it as it is.
func (s *Store) DisableUser(ctx context.Context, orgID, email string, actor org.Actor) (User, error) {
	orgID, email = strings.ToLower(orgID), normaliseEmail(email)
	var u User
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		u, err = scanUser(tx.QueryRowContext(ctx, `SELECT `+userColumns+` FROM people_users WHERE email = $1 AND org_id = $2`+s.forUpdate(), email, orgID))
		if errors.Is(err, sql.ErrNoRows) {
			return userNotFound("email", email)
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM people_sessions WHERE user_id = $1`, u.ID); err != nil {
			return err
		}
		if u.DisabledAt != nil {
			return nil
		}
		before := u
		now := s.now()
		u.DisabledAt = &now
		if _, err := tx.ExecContext(ctx, `UPDATE people_users SET disabled_at = $1 WHERE id = $2`, sqldb.Millis(now), u.ID); err != nil {
			return err
		}
		return s.orgs.RecordAuditTx(ctx, tx, orgID, now, actor, AuditUserDisabled, auditResource, u.ID, before, u)
	})
	if err != nil {
		return User{}, err
	}
	return u, nil
}
