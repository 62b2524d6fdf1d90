package sso

import (
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

//go:embed migrations
var migrationFS embed.FS

// Component is the name under which the package's migrations are recorded.
const Component = "sso"

// Migrations returns the package's embedded migrations (one directory per
// dialect), for readiness checks with [sqldb.DB.MigrationsApplied].
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err) // the directory is embedded
	}
	return sub
}

// CallbackPath is the path of the redirect URI to register at an identity
// provider: the absolute redirect URI is the service's public URL followed
// by it. It is a contract: changing it breaks every configured provider.
const CallbackPath = "/signin/sso/callback"

// Audit actions of single sign-on, recorded in the organisation's trail.
const (
	// AuditSettingsSet: an Administrator (or the operator) set the
	// organisation's OpenID Connect settings (resource type "sso"; before
	// and after without the secret, after with clientSecretChanged).
	AuditSettingsSet = "sso.settings.set"
	// AuditSettingsDeleted: the settings were deleted (resource type "sso").
	AuditSettingsDeleted = "sso.settings.deleted"
	// AuditRequiredSet: "Require single sign-on" was turned on or off
	// (resource type "sso"; before and after {"required": bool}).
	AuditRequiredSet = "sso.required.set"
	// AuditSignedIn: a person signed in through the identity provider
	// (resource type "user").
	AuditSignedIn = "sso.signed_in"
	// AuditRefused: a sign-in was refused after its state was valid
	// (resource type "user": the user id if known, else the email; after
	// holds reason, email and detail, never tokens).
	AuditRefused = "sso.refused"
	// AuditSessionEnded: a session ended because the identity provider no
	// longer admits its user (resource type "user").
	AuditSessionEnded = "sso.session_ended"
)

// Defaults and bounds of [Config].
const (
	DefaultTimeout      = 10 * time.Second
	DefaultClockSkew    = 2 * time.Minute
	MaxClockSkew        = 5 * time.Minute
	DefaultStateTTL     = 10 * time.Minute
	DefaultRecheckEvery = 5 * time.Minute
)

// Config configures a [Service]. DB, Orgs, People and Secrets are required;
// every other field has the default its comment gives.
type Config struct {
	// DB is the service's database, shared with Orgs and People.
	DB *sqldb.DB
	// Orgs records changes and sign-ins in the organisations' audit trails.
	Orgs *org.Store
	// People keeps the users the identity providers sign in, and their
	// sessions.
	People *people.Store
	// Secrets seals the client secrets and refresh tokens stored.
	Secrets *keyring.Keyring
	// AllowPrivate lets issuers be http URLs on loopback or private
	// networks (--allow-private-idp). Default false: https and public
	// addresses only.
	AllowPrivate bool
	// HTTPClient makes every request to an identity provider. Default: a
	// client over netguard's transport (its policy from AllowPrivate) with
	// Timeout.
	HTTPClient *http.Client
	// Timeout bounds each request to an identity provider. Default 10 s.
	Timeout time.Duration
	// ClockSkew is how far an ID token's expiry and issue time may be off
	// the service's clock. Default 2 min; more than 5 min is refused.
	ClockSkew time.Duration
	// StateTTL is how long a started sign-in may take. Default 10 min.
	StateTTL time.Duration
	// RecheckEvery is how often a session asks the identity provider
	// again ([Service.Check]). Default 5 min.
	RecheckEvery time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives a line for every failure of a sign-in and every
	// unreachable identity provider. Default: discards.
	Logger *slog.Logger
}

// Unmapped says what happens to a person the identity provider admits
// whose role claim maps to no role.
type Unmapped string

// Values of [Unmapped].
const (
	// UnmappedRefuse refuses the sign-in (the default).
	UnmappedRefuse Unmapped = "refuse"
	// UnmappedReviewer admits the person as a Reviewer.
	UnmappedReviewer Unmapped = "Reviewer"
)

// Settings is an organisation's OpenID Connect configuration, without its
// secret.
type Settings struct {
	OrganisationID string `json:"organisationId"`
	// Issuer is the provider's issuer URL, from which discovery starts.
	Issuer   string `json:"issuer"`
	ClientID string `json:"clientId"`
	// HasClientSecret says a client secret is stored (it is never shown).
	HasClientSecret bool `json:"hasClientSecret"`
	// Domains are the email domains the provider covers, lowercased and
	// sorted; a domain is covered by one organisation in the service.
	Domains []string `json:"domains"`
	// Scopes always start with "openid"; default openid email profile.
	Scopes []string `json:"scopes"`
	// RoleClaim is the claim whose values give the role; default "groups".
	RoleClaim string `json:"roleClaim"`
	// AdministratorValues are the claim values that give Administrator.
	AdministratorValues []string `json:"administratorValues"`
	// ReviewerValues are the claim values that give Reviewer.
	ReviewerValues []string `json:"reviewerValues"`
	// Unmapped is what happens to a person with no mapped role.
	Unmapped Unmapped `json:"unmapped"`
	// Required says passwords no longer sign the organisation's people in
	// (except a break-glass password).
	Required bool `json:"required"`
	// Version is 1 for the first settings, +1 on every change of them (not
	// of Required).
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// SettingsInput is what an Administrator gives to set the settings.
type SettingsInput struct {
	Issuer   string
	ClientID string
	// ClientSecret "" keeps the stored one; it is required when none is
	// stored.
	ClientSecret string
	Domains      []string
	// Scopes nil is the default, openid email profile; "openid" is added
	// first when missing.
	Scopes []string
	// RoleClaim "" is "groups".
	RoleClaim           string
	AdministratorValues []string
	ReviewerValues      []string
	// Unmapped "" is UnmappedRefuse.
	Unmapped Unmapped
}

// ErrNotConfigured is the error of an organisation without settings. It is
// of kind spec.ErrNotFound.
var ErrNotConfigured = fmt.Errorf("sso: single sign-on is not configured for this organisation: %w", spec.ErrNotFound)

// Route is where an email's sign-in goes: found when its domain is covered.
type Route struct {
	OrganisationID string
	// Required says the organisation requires single sign-on.
	Required bool
}

// Reason is why a sign-in failed, as audited and logged.
type Reason string

// Reasons of a [Failure].
const (
	ReasonState           Reason = "state"              // unknown, used or expired state (tampered, replayed, too slow)
	ReasonIdPError        Reason = "idp_error"          // the IdP sent error=... to the callback
	ReasonUnreachable     Reason = "idp_unreachable"    // discovery, token or keys endpoint down / 5xx / timeout
	ReasonClient          Reason = "client_rejected"    // invalid_client: wrong client id or secret
	ReasonCode            Reason = "code_rejected"      // invalid_grant: a used, expired or foreign code
	ReasonToken           Reason = "token_invalid"      // signature, issuer, audience, expiry, nonce
	ReasonClaimMissing    Reason = "claim_missing"      // no email, or the role claim absent
	ReasonEmailUnverified Reason = "email_unverified"   // email_verified is false
	ReasonDomain          Reason = "domain_not_covered" // the email's domain is not in the settings' domains
	ReasonNoRole          Reason = "no_role"            // role claim values map to no role, Unmapped = refuse
	ReasonDisabled        Reason = "user_disabled"      // the user was disabled in the dashboard
	ReasonOtherOrg        Reason = "other_organisation" // the email is a user of another organisation
	ReasonSubject         Reason = "subject_mismatch"   // the account is linked to another IdP subject
	ReasonNotConfigured   Reason = "not_configured"     // no settings (any more) for the domain
)

// Failure is every error of Begin and Complete a person should see as a
// page.
type Failure struct {
	Reason Reason
	// Status is the page's HTTP status: 400 (state, idp_error), 502
	// (unreachable, client_rejected), 403 (refusals).
	Status int
	// Message is for the person: what went wrong.
	Message string
	// Advice is what to do about it, and whom to tell: the IdP's
	// administrator when ForIdP, else the person themselves, an
	// Administrator of the organisation or the service's operator, as the
	// sentence says. "" when there is nothing to do but start again
	// (state, code).
	Advice string
	// ForIdP says that the Advice is for the identity provider's
	// administrator: the IdP answered in a way only they can change.
	ForIdP bool
	// Detail is for the log line only: the IdP's answer, the verifier's
	// error.
	Detail string
}

// Error returns the reason and the message (never the detail).
func (f *Failure) Error() string { return "sso: " + string(f.Reason) + ": " + f.Message }
