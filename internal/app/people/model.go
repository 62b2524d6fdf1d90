package people

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/spec"
)

// Role is what a user may do in the dashboard.
type Role string

// Roles.
const (
	// RoleAdministrator manages the organisation: its people, keys, agents
	// and instructions.
	RoleAdministrator Role = "Administrator"
	// RoleReviewer decides the review tasks waiting for a person.
	RoleReviewer Role = "Reviewer"
)

// ParseRole checks a role name, which must be spelt exactly as a [Role].
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleAdministrator, RoleReviewer:
		return r, nil
	}
	return "", fmt.Errorf("role must be Administrator or Reviewer, got %q", s)
}

// Limits of the fields of a user.
const (
	// MinPasswordLength is the least number of characters of a password.
	MinPasswordLength = 12
	// MaxPasswordBytes bounds a password, in bytes of UTF-8.
	MaxPasswordBytes = 1024
	// MaxEmailLength bounds an email address, in bytes.
	MaxEmailLength = 254
	// MaxNameLength bounds a user's name, in characters.
	MaxNameLength = org.MaxNameLength
)

// User is a person of an organisation who signs in to the dashboard. It
// never holds the password or its hash.
type User struct {
	ID             string `json:"id"`
	OrganisationID string `json:"organisationId"`
	// Email is trimmed and lowercased; it names one user in the whole
	// service.
	Email      string     `json:"email"`
	Name       string     `json:"name"`
	Role       Role       `json:"role"`
	CreatedAt  time.Time  `json:"createdAt"`
	DisabledAt *time.Time `json:"disabledAt"` // nil: active
	// OneTimePasswordUntil is set while the user's password is a one-time
	// password (an invitation, or a reset by an Administrator or the
	// operator): it must be changed at the first sign-in, and it cannot be
	// signed in with from this time on. Nil for a password the user chose.
	OneTimePasswordUntil *time.Time `json:"oneTimePasswordUntil"`
	// SSO says the user is linked to a subject of the organisation's
	// identity provider (package sso): created or signed in through it.
	SSO bool `json:"sso"`
	// BreakGlassUntil is set when the operator gave the user a break-glass
	// password ([Store.BreakGlass]): until this time it signs in even while
	// the organisation requires single sign-on. Nil otherwise.
	BreakGlassUntil *time.Time `json:"breakGlassUntil"`
}

// MustChangePassword says whether the user holds a one-time password: a
// session of theirs may do nothing but change it.
func (u User) MustChangePassword() bool { return u.OneTimePasswordUntil != nil }

// MarshalJSON writes the times as the service does everywhere: UTC with
// milliseconds ([spec.Time]).
func (u User) MarshalJSON() ([]byte, error) {
	type plain User
	var disabled, oneTime, breakGlass *spec.Time
	if u.BreakGlassUntil != nil {
		breakGlass = spec.TimePtr(*u.BreakGlassUntil)
	}
	if u.DisabledAt != nil {
		disabled = spec.TimePtr(*u.DisabledAt)
	}
	if u.OneTimePasswordUntil != nil {
		oneTime = spec.TimePtr(*u.OneTimePasswordUntil)
	}
	return json.Marshal(struct {
		plain
		CreatedAt            spec.Time  `json:"createdAt"`
		DisabledAt           *spec.Time `json:"disabledAt"`
		OneTimePasswordUntil *spec.Time `json:"oneTimePasswordUntil"`
		BreakGlassUntil      *spec.Time `json:"breakGlassUntil"`
	}{plain(u), spec.NewTime(u.CreatedAt), disabled, oneTime, breakGlass})
}

// Actor returns the actor of the changes the user makes, for the audit
// trail.
func (u User) Actor() org.Actor {
	return org.Actor{Type: org.ActorUser, ID: u.ID, Name: u.Name}
}

// UserCreate is what an Administrator gives to create a user.
type UserCreate struct {
	OrganisationID string
	// Email is trimmed and lowercased; it must look like an address (one
	// @, something on each side, no spaces) of at most MaxEmailLength bytes.
	Email string
	// Name is 1 to MaxNameLength characters; empty, it is the part of the
	// email before the @.
	Name string
	Role Role
	// Password is at least MinPasswordLength characters and at most
	// MaxPasswordBytes bytes. Only its argon2id hash is kept.
	Password string
	// OneTime makes Password a one-time password (an invitation): the user
	// must change it at the first sign-in, and it expires after
	// Config.OneTimePasswordTTL.
	OneTime bool
}

// Session is a signed-in user's session.
type Session struct {
	// Token is what the client presents to [Store.Authenticate]: 32 random
	// bytes, base64url without padding. Only [Store.SignIn] returns it; the
	// store keeps its SHA-256 digest.
	Token      string
	UserID     string
	CreatedAt  time.Time
	LastSeenAt time.Time
	// ExpiresAt is the absolute end of the session, CreatedAt plus the
	// absolute timeout; it ends earlier when unused for the idle timeout.
	ExpiresAt time.Time
	// Device is the device token for the client to keep (a cookie) and
	// present at its next sign-in to this account ([Client].Device): the
	// one it presented while still valid, else a new one. Only
	// [Store.SignIn] returns it; the store keeps its SHA-256 digest.
	Device string
}

// Client is who asks to sign in, as [Store.SignIn] counts failures.
type Client struct {
	// Addr is the client's IP address (a port is ignored): its own, or the
	// one a trusted proxy names (the HTTP layer's client address).
	Addr string
	// Device is the device token the client holds from an earlier sign-in
	// to the account ([Session].Device), or "". A valid one makes the
	// client trusted: its failures are counted for it alone.
	Device string
}

// Audit actions of the people of an organisation.
const (
	AuditUserCreated     = "user.created"
	AuditUserRoleChanged = "user.role_changed"
	AuditUserDisabled    = "user.disabled"
	// AuditUserPasswordChanged: a user changed their own password.
	AuditUserPasswordChanged = "user.password_changed"
	// AuditUserPasswordReset: an Administrator or the operator gave a user
	// a new password (a one-time one, or, by the operator, a chosen one),
	// ending the user's sessions.
	AuditUserPasswordReset = "user.password_reset"
	// AuditUserBreakGlass: the operator gave a user a break-glass password
	// ([Store.BreakGlass]), ending the user's sessions.
	AuditUserBreakGlass = "user.break_glass"
)

// auditResource is the resource type of users in the audit trail.
const auditResource = "user"

// ErrBadCredentials is the one error of a sign-in with an unknown email, a
// wrong password, or the password of a disabled user: a caller cannot tell
// them apart. It is of kind spec.ErrUnauthorized.
var ErrBadCredentials = fmt.Errorf("people: the email or the password is wrong: %w", spec.ErrUnauthorized)

// ErrNoSession is the error of [Store.Authenticate] with a token that is
// unknown, signed out, or whose session ended (idle, absolute timeout, user
// disabled). It is of kind spec.ErrUnauthorized.
var ErrNoSession = fmt.Errorf("people: no such session, or it has ended; sign in again: %w", spec.ErrUnauthorized)

// ErrOneTimePasswordExpired is the error of [Store.SignIn] with the right
// one-time password after it expired: only an Administrator (or the
// operator) can give a new one. It is of kind spec.ErrUnauthorized.
var ErrOneTimePasswordExpired = fmt.Errorf("people: the one-time password has expired; ask an Administrator of the organisation for a new one: %w", spec.ErrUnauthorized)

// ThrottledError is the error of [Store.SignIn] (and of
// [Store.ChangePassword]) when the client has used up its free failures and
// the delay after its last failure has not passed: the password was not
// checked, and the attempt was not counted.
type ThrottledError struct {
	// RetryAfter is how long the client must wait before its next attempt.
	RetryAfter time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("people: too many failed sign-ins; retry in %d seconds", int64((e.RetryAfter+time.Second-1)/time.Second))
}

// ErrSSORequired is the error of [Store.SignIn] with the right password of
// a user whose organisation requires single sign-on (Config.SSORequired),
// unless the user holds a break-glass password still valid. It is of kind
// spec.ErrForbidden.
var ErrSSORequired = fmt.Errorf("people: this organisation requires single sign-on; sign in through its identity provider: %w", spec.ErrForbidden)

// Errors of [Store.ProvisionSSO], each of kind spec.ErrForbidden.
var (
	// ErrUserDisabled: the user with the identity's email is disabled.
	ErrUserDisabled = fmt.Errorf("people: the user is disabled: %w", spec.ErrForbidden)
	// ErrOtherOrganisation: the identity's email names a user of another
	// organisation.
	ErrOtherOrganisation = fmt.Errorf("people: the email is a user of another organisation: %w", spec.ErrForbidden)
	// ErrSubjectMismatch: the user with the identity's email is linked to
	// another subject (or another issuer) of an identity provider.
	ErrSubjectMismatch = fmt.Errorf("people: the user is linked to another identity provider subject: %w", spec.ErrForbidden)
)

// SSOIdentity is a person an organisation's identity provider signed in,
// as [Store.ProvisionSSO] takes it.
type SSOIdentity struct {
	OrganisationID string
	// Issuer and Subject name the person at the identity provider (the ID
	// token's iss and sub); the pair links one user.
	Issuer  string
	Subject string
	// Email is the person's verified email, normalised as every email.
	Email string
	// Name is the person's name; empty, the part of the email before the @.
	Name string
	// Role is the role the provider's claims map to.
	Role Role
}
