package sso

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/netguard"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// auditResource is the resource type of the settings in the audit trail.
const auditResource = "sso"

// settingsTable and sessionsTable describe the sealed columns.
var (
	settingsTable = keyring.Table{Name: "sso_settings", ID: "org_id", KeyID: "secret_key_id", Columns: []string{"client_secret"}}
	sessionsTable = keyring.Table{Name: "sso_sessions", ID: "id", KeyID: "secret_key_id", Columns: []string{"refresh_token"}}
)

// MarshalJSON writes the time as the service does everywhere: UTC with
// milliseconds ([spec.Time]).
func (st Settings) MarshalJSON() ([]byte, error) {
	type plain Settings
	return json.Marshal(struct {
		plain
		UpdatedAt spec.Time `json:"updatedAt"`
	}{plain(st), spec.NewTime(st.UpdatedAt)})
}

// stored is a settings row with its sealed secret.
type stored struct {
	Settings
	secretKeyID sql.NullString
	secret      string // sealed
}

const settingsColumns = `org_id, issuer, client_id, client_secret, secret_key_id, scopes, role_claim, admin_values, reviewer_values, unmapped, required, version, updated_at`

// load returns the settings of orgID, or ErrNotConfigured.
func (s *Service) load(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, orgID string, lock string) (stored, error) {
	var st stored
	var scopes, admins, reviewers, unmapped string
	var required, updated int64
	err := q.QueryRowContext(ctx, `SELECT `+settingsColumns+` FROM sso_settings WHERE org_id = $1`+lock, orgID).Scan(
		&st.OrganisationID, &st.Issuer, &st.ClientID, &st.secret, &st.secretKeyID, &scopes, &st.RoleClaim, &admins, &reviewers,
		&unmapped, &required, &st.Version, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return st, ErrNotConfigured
	}
	if err != nil {
		return st, err
	}
	st.Unmapped, st.Required, st.UpdatedAt, st.HasClientSecret = Unmapped(unmapped), required != 0, time.UnixMilli(updated).UTC(), st.secret != ""
	for _, f := range []struct {
		raw string
		to  *[]string
	}{{scopes, &st.Scopes}, {admins, &st.AdministratorValues}, {reviewers, &st.ReviewerValues}} {
		if err := json.Unmarshal([]byte(f.raw), f.to); err != nil {
			return st, fmt.Errorf("sso: settings of organisation %s: %w", orgID, err)
		}
	}
	rows, err := q.QueryContext(ctx, `SELECT domain FROM sso_domains WHERE org_id = $1 ORDER BY domain`, orgID)
	if err != nil {
		return st, err
	}
	defer rows.Close()
	st.Domains = []string{}
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return st, err
		}
		st.Domains = append(st.Domains, d)
	}
	return st, rows.Err()
}

// clientSecret opens the stored client secret.
func (s *Service) clientSecret(st stored) (string, error) {
	if !st.secretKeyID.Valid {
		return "", fmt.Errorf("sso: client_secret of organisation %s: not encrypted", st.OrganisationID)
	}
	plain, err := s.cfg.Secrets.Open(st.secretKeyID.String, st.secret, settingsTable.Binding("client_secret", st.OrganisationID))
	if err != nil {
		return "", fmt.Errorf("sso: %w", err)
	}
	return plain, nil
}

// orgID returns orgID in its canonical form, or spec.ErrNotFound.
func (s *Service) orgID(ctx context.Context, orgID string) (string, error) {
	if id, ok := ident.CanonicalUUID(orgID); ok {
		_, err := s.cfg.Orgs.Organisation(ctx, id)
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, spec.ErrNotFound) {
			return "", err
		}
	}
	return "", &spec.Error{Kind: spec.ErrNotFound, Field: "organisationId", Detail: fmt.Sprintf("No organisation %s.", orgID)}
}

// Settings returns the organisation's settings, or [ErrNotConfigured].
func (s *Service) Settings(ctx context.Context, orgID string) (Settings, error) {
	st, err := s.load(ctx, s.db, strings.ToLower(orgID), "")
	return st.Settings, err
}

// settingsAudit is the settings as the audit trail records them after a
// change.
type settingsAudit struct {
	Settings
	ClientSecretChanged bool
}

// MarshalJSON writes the settings with clientSecretChanged.
func (a settingsAudit) MarshalJSON() ([]byte, error) {
	b, err := a.Settings.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["clientSecretChanged"], _ = json.Marshal(a.ClientSecretChanged)
	return json.Marshal(m)
}

// checkDiscovery fetches the issuer's discovery document through the guard
// and returns an error naming the issuer, in words a person can act on.
func (s *Service) checkDiscovery(ctx context.Context, issuer string) error {
	policy := netguard.Policy{AllowPrivate: s.cfg.AllowPrivate}
	if s.cfg.HTTPClient == nil { // the guard's own check, for a clear message before any request
		if err := netguard.CheckURL(ctx, issuer, policy, nil); err != nil {
			s.cfg.Logger.Warn("sso: issuer refused", "issuer", issuer, "detail", err.Error())
			return spec.Invalid("issuer", "The issuer %s cannot be used: it must be a public https URL that this service can reach.", issuer)
		}
	}
	_, err := s.fetchProvider(ctx, issuer)
	if err == nil {
		return nil
	}
	s.cfg.Logger.Warn("sso: discovery failed", "issuer", issuer, "detail", err.Error())
	var mismatch *oidc.IssuerMismatchError
	switch {
	case errors.As(err, &mismatch):
		return spec.Invalid("issuer", "The identity provider at this URL names its issuer %q; enter exactly that as the issuer.", mismatch.Discovered)
	case errors.Is(err, netguard.ErrForbiddenAddress):
		return spec.Invalid("issuer", "The issuer %s cannot be used: it must be a public https URL that this service can reach.", issuer)
	}
	return spec.Invalid("issuer", "No OpenID provider answered at %s/.well-known/openid-configuration; check the issuer URL your identity provider gives for this application, and that it can be reached from this service.",
		strings.TrimSuffix(issuer, "/"))
}

// SetSettings validates (spec.Invalid naming the field: issuer, clientId,
// clientSecret, domains, scopes, roleClaim, administratorValues,
// reviewerValues, unmapped), fetches the issuer's discovery document
// through the guard (unreachable or not an OpenID provider:
// spec.Invalid("issuer", ...) with a message a person can act on), refuses
// a domain another organisation covers (spec.ErrConflict naming it), and
// while Required refuses a change of issuer, client id or domains
// (spec.ErrConflict: "turn off Require single sign-on first"). Audited
// [AuditSettingsSet] (before and after without the secret; after says
// whether the secret changed). Settings equal to the stored ones change
// nothing and record nothing; any change increments Version.
func (s *Service) SetSettings(ctx context.Context, orgID string, in SettingsInput, actor org.Actor) (Settings, error) {
	orgID, err := s.orgID(ctx, orgID)
	if err != nil {
		return Settings{}, err
	}
	f, err := checkInput(in, s.cfg.AllowPrivate)
	if err != nil {
		return Settings{}, err
	}
	before, err := s.load(ctx, s.db, orgID, "")
	configured := err == nil
	if err != nil && !errors.Is(err, ErrNotConfigured) {
		return Settings{}, err
	}
	if in.ClientSecret == "" && !before.HasClientSecret {
		return Settings{}, spec.Invalid("clientSecret", "The client secret is required: copy it from your identity provider's application.")
	}
	if err := s.checkDiscovery(ctx, f.Issuer); err != nil {
		return Settings{}, err
	}
	var out Settings
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		cur, err := s.load(ctx, tx, orgID, s.forUpdate())
		if err != nil && !errors.Is(err, ErrNotConfigured) {
			return err
		}
		if configured != (err == nil) || cur.Version != before.Version {
			return spec.Errorf(spec.ErrConflict, "The single sign-on settings were changed meanwhile; reload them and try again.")
		}
		if cur.Required && (cur.Issuer != f.Issuer || cur.ClientID != f.ClientID || !slices.Equal(cur.Domains, f.Domains)) {
			return spec.Errorf(spec.ErrConflict, "While Require single sign-on is on, the issuer, client id and domains cannot change: turn off Require single sign-on first.")
		}
		secretChanged := false
		keyID, sealed := cur.secretKeyID, cur.secret
		if in.ClientSecret != "" {
			old := ""
			if configured {
				if old, err = s.clientSecret(cur); err != nil {
					return err
				}
			}
			if old != in.ClientSecret {
				secretChanged = true
				var id string
				if id, sealed, err = s.cfg.Secrets.Seal(in.ClientSecret, settingsTable.Binding("client_secret", orgID)); err != nil {
					return fmt.Errorf("sso: %w", err)
				}
				keyID = sql.NullString{String: id, Valid: true}
			}
		}
		next := Settings{OrganisationID: orgID, Issuer: f.Issuer, ClientID: f.ClientID, HasClientSecret: true, Domains: f.Domains, Scopes: f.Scopes,
			RoleClaim: f.RoleClaim, AdministratorValues: f.AdministratorValues, ReviewerValues: f.ReviewerValues, Unmapped: f.Unmapped,
			Required: cur.Required, Version: cur.Version, UpdatedAt: cur.UpdatedAt}
		if configured && !secretChanged && sameSettings(cur.Settings, next) {
			out = cur.Settings
			return nil
		}
		// The domains first: another organisation's is a conflict naming it.
		var taken []string
		rows, err := tx.QueryContext(ctx, `SELECT domain FROM sso_domains WHERE org_id <> $1 ORDER BY domain`, orgID)
		if err != nil {
			return err
		}
		for rows.Next() {
			var d string
			if err := rows.Scan(&d); err != nil {
				rows.Close()
				return err
			}
			if slices.Contains(f.Domains, d) {
				taken = append(taken, d)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(taken) > 0 {
			return domainConflict(taken)
		}
		now := s.now()
		next.Version, next.UpdatedAt = cur.Version+1, now
		scopes, _ := json.Marshal(next.Scopes)
		admins, _ := json.Marshal(next.AdministratorValues)
		reviewers, _ := json.Marshal(next.ReviewerValues)
		if configured {
			_, err = tx.ExecContext(ctx, `UPDATE sso_settings SET issuer = $1, client_id = $2, client_secret = $3, secret_key_id = $4, scopes = $5,
				role_claim = $6, admin_values = $7, reviewer_values = $8, unmapped = $9, version = $10, updated_at = $11 WHERE org_id = $12`,
				next.Issuer, next.ClientID, sealed, keyID, string(scopes), next.RoleClaim, string(admins), string(reviewers), string(next.Unmapped),
				next.Version, sqldb.Millis(now), orgID)
		} else {
			_, err = tx.ExecContext(ctx, `INSERT INTO sso_settings (`+settingsColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0, $11, $12)`,
				orgID, next.Issuer, next.ClientID, sealed, keyID, string(scopes), next.RoleClaim, string(admins), string(reviewers), string(next.Unmapped),
				next.Version, sqldb.Millis(now))
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM sso_domains WHERE org_id = $1`, orgID); err != nil {
			return err
		}
		for _, d := range next.Domains {
			if _, err := tx.ExecContext(ctx, `INSERT INTO sso_domains (domain, org_id) VALUES ($1, $2)`, d, orgID); err != nil {
				if sqldb.IsUniqueViolation(err) {
					return domainConflict([]string{d})
				}
				return err
			}
		}
		var prev any
		if configured {
			prev = cur.Settings
		}
		out = next
		return s.cfg.Orgs.RecordAuditTx(ctx, tx, orgID, now, actor, AuditSettingsSet, auditResource, orgID, prev,
			settingsAudit{Settings: next, ClientSecretChanged: secretChanged})
	})
	if err != nil {
		return Settings{}, err
	}
	return out, nil
}

// domainConflict is the error of domains another organisation covers.
func domainConflict(domains []string) error {
	return &spec.Error{Kind: spec.ErrConflict, Field: "domains",
		Detail: fmt.Sprintf("The email domain %s is already covered by another organisation's single sign-on; a domain signs in to one organisation.", strings.Join(domains, ", "))}
}

// sameSettings says whether a and b configure the same (Version and time
// aside).
func sameSettings(a, b Settings) bool {
	return a.Issuer == b.Issuer && a.ClientID == b.ClientID && slices.Equal(a.Domains, b.Domains) && slices.Equal(a.Scopes, b.Scopes) &&
		a.RoleClaim == b.RoleClaim && slices.Equal(a.AdministratorValues, b.AdministratorValues) &&
		slices.Equal(a.ReviewerValues, b.ReviewerValues) && a.Unmapped == b.Unmapped
}

// DeleteSettings deletes the organisation's settings, its domains, its
// sign-ins in progress and its records of SSO sessions: the sessions stay,
// as password sessions do, until they end (idle or absolute timeout), but
// the identity provider is no longer asked about them. While Required it is
// spec.ErrConflict; without settings [ErrNotConfigured]. Audited
// [AuditSettingsDeleted].
func (s *Service) DeleteSettings(ctx context.Context, orgID string, actor org.Actor) error {
	orgID = strings.ToLower(orgID)
	return s.inTx(ctx, func(tx *sql.Tx) error {
		cur, err := s.load(ctx, tx, orgID, s.forUpdate())
		if err != nil {
			return err
		}
		if cur.Required {
			return spec.Errorf(spec.ErrConflict, "Single sign-on is required for this organisation: turn off Require single sign-on first, then delete the settings.")
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM sso_settings WHERE org_id = $1`, orgID); err != nil {
			return err
		}
		return s.cfg.Orgs.RecordAuditTx(ctx, tx, orgID, s.now(), actor, AuditSettingsDeleted, auditResource, orgID, cur.Settings, nil)
	})
}

// requiredAudit is the record of a change of Required.
type requiredAudit struct {
	Required bool `json:"required"`
}

// SetRequired turns "Require single sign-on" on or off. On: sessionToken
// must be a live session that an Administrator of orgID started through SSO
// under the current Version (else a *spec.Error of kind spec.ErrConflict
// saying to sign in through the IdP first). Off: anyone the caller lets (the
// dashboard: Administrators; the CLI: the operator with sessionToken "").
// Without settings it is [ErrNotConfigured]; setting the value held changes
// nothing and records nothing. Audited [AuditRequiredSet].
func (s *Service) SetRequired(ctx context.Context, orgID string, required bool, sessionToken string, actor org.Actor) error {
	orgID = strings.ToLower(orgID)
	if _, err := s.Settings(ctx, orgID); err != nil {
		return err
	}
	if required {
		_, u, err := s.cfg.People.Authenticate(ctx, sessionToken)
		ok := err == nil && u.OrganisationID == orgID && u.Role == people.RoleAdministrator
		if err != nil && !errors.Is(err, people.ErrNoSession) {
			return err
		}
		if ok {
			if ok, err = s.ViaSSO(ctx, orgID, sessionToken); err != nil {
				return err
			}
		}
		if !ok {
			return spec.Errorf(spec.ErrConflict, "Sign in through your identity provider first (Test sign-in, as an Administrator), then require single sign-on: this proves the settings work, so that nobody is locked out.")
		}
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		cur, err := s.load(ctx, tx, orgID, s.forUpdate())
		if err != nil || cur.Required == required {
			return err
		}
		flag := 0
		if required {
			flag = 1
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sso_settings SET required = $1 WHERE org_id = $2`, flag, orgID); err != nil {
			return err
		}
		return s.cfg.Orgs.RecordAuditTx(ctx, tx, orgID, s.now(), actor, AuditRequiredSet, auditResource, orgID,
			requiredAudit{cur.Required}, requiredAudit{required})
	})
}

// Required reports whether orgID requires SSO (false when not configured).
// people.Config.SSORequired uses it.
func (s *Service) Required(ctx context.Context, orgID string) (bool, error) {
	var required int64
	err := s.db.QueryRowContext(ctx, `SELECT required FROM sso_settings WHERE org_id = $1`, strings.ToLower(orgID)).Scan(&required)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return required != 0, err
}

// ViaSSO reports whether the session of token was started through SSO
// under orgID's current settings (their current Version).
func (s *Service) ViaSSO(ctx context.Context, orgID, sessionToken string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sso_sessions x JOIN sso_settings st ON st.org_id = x.org_id
		WHERE x.token_hash = $1 AND x.org_id = $2 AND x.version = st.version`, people.TokenDigest(sessionToken), strings.ToLower(orgID)).Scan(&n)
	return n > 0, err
}

// Lookup returns where email's sign-in goes, and whether its domain is
// covered by an organisation's settings. An email that is not one is not
// covered.
func (s *Service) Lookup(ctx context.Context, email string) (Route, bool, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	at := strings.LastIndexByte(email, '@')
	if at < 1 || at == len(email)-1 {
		return Route{}, false, nil
	}
	var r Route
	var required int64
	err := s.db.QueryRowContext(ctx, `SELECT d.org_id, st.required FROM sso_domains d JOIN sso_settings st ON st.org_id = d.org_id WHERE d.domain = $1`,
		email[at+1:]).Scan(&r.OrganisationID, &required)
	if errors.Is(err, sql.ErrNoRows) {
		return Route{}, false, nil
	}
	if err != nil {
		return Route{}, false, err
	}
	r.Required = required != 0
	return r, true, nil
}

// ResealSecrets seals under the current key of Config.Secrets every client
// secret and refresh token sealed under an older key, and returns how many
// rows it changed. See [keyring.Table.Reseal]: an interrupted run is
// resumed by running it again.
func (s *Service) ResealSecrets(ctx context.Context) (int, error) {
	n, err := settingsTable.Reseal(ctx, s.db.DB, s.cfg.Secrets)
	if err != nil {
		return n, err
	}
	m, err := sessionsTable.Reseal(ctx, s.db.DB, s.cfg.Secrets)
	return n + m, err
}

// SecretKeyIDs counts the rows holding sealed secrets (settings and SSO
// sessions with a refresh token) by the id of the key that sealed them.
func (s *Service) SecretKeyIDs(ctx context.Context) (map[string]int, error) {
	a, err := settingsTable.KeyIDs(ctx, s.db.DB)
	if err != nil {
		return nil, err
	}
	b, err := sessionsTable.KeyIDs(ctx, s.db.DB)
	if err != nil {
		return nil, err
	}
	for k, n := range b {
		a[k] += n
	}
	return a, nil
}
