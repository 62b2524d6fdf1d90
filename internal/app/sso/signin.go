package sso

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// MaxNextLength bounds the path a sign-in comes back to.
const MaxNextLength = 2048

// safeNext returns next when it is a path of this service ("/..." but not
// "//..." nor "/\..."), else "/".
func safeNext(next string) string {
	if next == "" || len(next) > MaxNextLength || next[0] != '/' || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") ||
		hasControl(next) {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.IsAbs() || u.Host != "" {
		return "/"
	}
	return next
}

// oauthConfig is the OAuth 2.0 client of the settings.
func oauthConfig(p *oidc.Provider, st Settings, secret, redirectURL string) *oauth2.Config {
	return &oauth2.Config{ClientID: st.ClientID, ClientSecret: secret, Endpoint: p.Endpoint(), RedirectURL: redirectURL, Scopes: st.Scopes}
}

// Begin starts a sign-in for email at its organisation's IdP and returns
// the URL to send the browser to. It stores state, nonce and the PKCE
// verifier in the database (the callback may reach another process), to be
// used once within Config.StateTTL, and prunes the expired ones. next is the
// path of this service to come back to ("/" when it is not one);
// redirectURL the absolute URL of [CallbackPath] registered at the IdP. An
// email whose domain no settings cover, and an IdP that cannot be reached,
// are a [*Failure].
func (s *Service) Begin(ctx context.Context, email, next, redirectURL string) (string, error) {
	if u, err := url.Parse(redirectURL); err != nil || !u.IsAbs() || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("sso: the redirect URL %q is not an absolute http(s) URL", redirectURL)
	}
	email = strings.ToLower(strings.TrimSpace(email))
	route, ok, err := s.Lookup(ctx, email)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", s.fail(ctx, ReasonNotConfigured, refusal{email: email}, "no settings cover the domain of "+email)
	}
	st, err := s.load(ctx, s.db, route.OrganisationID, "")
	if err != nil {
		return "", err
	}
	p, err := s.provider(ctx, st.Issuer)
	if err != nil {
		return "", s.fail(ctx, ReasonUnreachable, refusal{issuer: st.Issuer, email: email}, "discovery: "+err.Error())
	}
	secret, err := s.clientSecret(st)
	if err != nil {
		return "", err
	}
	state, nonce, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	now := s.now()
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM sso_states WHERE expires_at <= $1`, sqldb.Millis(now)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO sso_states (state_hash, org_id, version, nonce, verifier, email, next_path, redirect_url, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, digest(state), st.OrganisationID, st.Version, nonce, verifier, email, safeNext(next), redirectURL,
			sqldb.Millis(now.Add(s.cfg.StateTTL)))
		return err
	})
	if err != nil {
		return "", err
	}
	return oauthConfig(p, st.Settings, secret, redirectURL).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("login_hint", email)), nil
}

// started is a sign-in Begin stored.
type started struct {
	orgID, nonce, verifier, email, next, redirectURL string
	version, expires                                 int64
}

// take uses the state once: its row is deleted as it is read, so that of
// two callbacks with it (in any processes) one at most finds it.
func (s *Service) take(ctx context.Context, state string) (started, bool, error) {
	var b started
	if state == "" || len(state) > 256 {
		return b, false, nil
	}
	err := s.db.QueryRowContext(ctx, `DELETE FROM sso_states WHERE state_hash = $1
		RETURNING org_id, version, nonce, verifier, email, next_path, redirect_url, expires_at`, digest(state)).Scan(
		&b.orgID, &b.version, &b.nonce, &b.verifier, &b.email, &b.next, &b.redirectURL, &b.expires)
	if errors.Is(err, sql.ErrNoRows) {
		return b, false, nil
	}
	return b, err == nil, err
}

// classifyTokenError maps an error of the token endpoint to a reason.
func classifyTokenError(err error) Reason {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		switch {
		case re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client":
			return ReasonClient
		case re.ErrorCode == "invalid_grant":
			return ReasonCode
		case re.Response != nil && re.Response.StatusCode >= 500:
			return ReasonUnreachable
		case re.Response != nil && re.Response.StatusCode == 401:
			return ReasonClient
		case re.ErrorCode != "":
			return ReasonIdPError
		}
		return ReasonUnreachable
	}
	return ReasonUnreachable
}

// isKeysError says whether a verifier's error is the key set's fetch
// failing (go-oidc does not wrap it).
func isKeysError(err error) bool {
	m := err.Error()
	return strings.Contains(m, "fetching keys") || strings.Contains(m, "get keys failed")
}

// verify checks an ID token: signature, issuer and audience by go-oidc,
// the times here within Config.ClockSkew, and the nonce when want is not
// "". It returns the token and its claims.
func (s *Service) verify(ctx context.Context, p *oidc.Provider, st Settings, raw, nonce string) (*oidc.IDToken, map[string]any, Reason, error) {
	v := p.VerifierContext(s.clientContext(ctx), &oidc.Config{ClientID: st.ClientID, SkipExpiryCheck: true})
	tok, err := v.Verify(ctx, raw)
	if err != nil {
		if isKeysError(err) {
			return nil, nil, ReasonUnreachable, fmt.Errorf("keys: %w", err)
		}
		return nil, nil, ReasonToken, err
	}
	now, skew := s.cfg.Now(), s.cfg.ClockSkew
	var times struct {
		NotBefore *float64 `json:"nbf"`
	}
	claims := map[string]any{}
	if err := tok.Claims(&claims); err != nil {
		return nil, nil, ReasonToken, err
	}
	_ = tok.Claims(&times)
	switch {
	case tok.Expiry.IsZero():
		return nil, nil, ReasonToken, errors.New("the ID token has no expiry (exp)")
	case now.After(tok.Expiry.Add(skew)):
		return nil, nil, ReasonToken, fmt.Errorf("the ID token expired at %s, more than the clock skew %s before now (%s)",
			tok.Expiry.UTC().Format(time.RFC3339), skew, now.UTC().Format(time.RFC3339))
	case !tok.IssuedAt.IsZero() && tok.IssuedAt.After(now.Add(skew)):
		return nil, nil, ReasonToken, fmt.Errorf("the ID token was issued at %s, more than the clock skew %s after now (%s)",
			tok.IssuedAt.UTC().Format(time.RFC3339), skew, now.UTC().Format(time.RFC3339))
	case times.NotBefore != nil && time.Unix(int64(*times.NotBefore), 0).After(now.Add(skew)):
		return nil, nil, ReasonToken, fmt.Errorf("the ID token is not valid before %s, more than the clock skew after now", time.Unix(int64(*times.NotBefore), 0).UTC().Format(time.RFC3339))
	case nonce != "" && tok.Nonce != nonce:
		return nil, nil, ReasonToken, errors.New("the ID token's nonce is not the one of this sign-in (a replayed code?)")
	}
	return tok, claims, "", nil
}

// identity is what the claims say of a person.
type identity struct {
	email, name string
	role        people.Role
}

// claimString returns claims[name] when it is a non-empty string.
func claimString(claims map[string]any, name string) string {
	v, _ := claims[name].(string)
	return strings.TrimSpace(v)
}

// ClaimValues returns the values of a role claim: a string (one value) or
// an array of strings (others skipped), and whether the claim is present.
func ClaimValues(v any) ([]string, bool) {
	switch v := v.(type) {
	case nil:
		return nil, false
	case string:
		if v = strings.TrimSpace(v); v == "" {
			return nil, true
		}
		return []string{v}, true
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, strings.TrimSpace(s))
			}
		}
		return out, true
	case []string:
		return v, true
	}
	return nil, true
}

// MapRole returns the role st gives a person whose role claim holds
// values (present says whether the claim was there at all): Administrator
// for a value in AdministratorValues (it wins), Reviewer for one in
// ReviewerValues, else Reviewer when Unmapped is UnmappedReviewer. The
// reason is ReasonClaimMissing or ReasonNoRole when there is none.
func MapRole(st Settings, values []string, present bool) (people.Role, Reason) {
	for _, v := range values {
		if slices.Contains(st.AdministratorValues, v) {
			return people.RoleAdministrator, ""
		}
	}
	for _, v := range values {
		if slices.Contains(st.ReviewerValues, v) {
			return people.RoleReviewer, ""
		}
	}
	switch {
	case st.Unmapped == UnmappedReviewer:
		return people.RoleReviewer, ""
	case !present:
		return "", ReasonClaimMissing
	}
	return "", ReasonNoRole
}

// emailVerifiedFalse says whether claims say email_verified false (a bool
// or the string "false").
func emailVerifiedFalse(claims map[string]any) bool {
	switch v := claims["email_verified"].(type) {
	case bool:
		return !v
	case string:
		return strings.EqualFold(v, "false")
	}
	return false
}

// Complete finishes the sign-in from the callback's query (state, code, or
// error/error_description): it uses the state once, exchanges the code with
// the PKCE verifier, verifies the ID token (signature, issuer, audience,
// expiry within ClockSkew, nonce), maps email, name and role (from the ID
// token, else from UserInfo), creates or updates the user (JIT), starts a
// people session, and returns it with the `next` path given to Begin. The
// token exchange uses the redirect URL given to Begin (redirectURL is
// accepted for symmetry; the IdP compares the one of the authorization).
// Every failure a person should see is a [*Failure]; every refusal after
// the state was valid is audited [AuditRefused], and the sign-in
// [AuditSignedIn].
func (s *Service) Complete(ctx context.Context, query url.Values, redirectURL string) (people.Session, people.User, string, error) {
	b, ok, err := s.take(ctx, query.Get("state"))
	if err != nil {
		return people.Session{}, people.User{}, "", err
	}
	now := s.now()
	if !ok || now.UnixMilli() >= b.expires {
		detail := "unknown or already used state"
		if ok {
			detail = "the sign-in started too long ago (state expired)"
		}
		return people.Session{}, people.User{}, "", s.fail(ctx, ReasonState, refusal{email: b.email}, detail)
	}
	_ = redirectURL
	r := refusal{orgID: b.orgID, email: b.email}
	stored, err := s.load(ctx, s.db, b.orgID, "")
	if errors.Is(err, ErrNotConfigured) {
		return people.Session{}, people.User{}, "", s.fail(ctx, ReasonNotConfigured, r, "the settings were deleted during the sign-in")
	}
	if err != nil {
		return people.Session{}, people.User{}, "", err
	}
	st := stored.Settings
	r.issuer, r.client, r.st, r.domains = st.Issuer, st.ClientID, st, st.Domains
	if st.Version != b.version {
		return people.Session{}, people.User{}, "", s.fail(ctx, ReasonState, r, fmt.Sprintf("the settings changed during the sign-in (version %d, now %d)", b.version, st.Version))
	}
	if e := query.Get("error"); e != "" {
		return people.Session{}, people.User{}, "", s.fail(ctx, ReasonIdPError, r, clip(e+": "+query.Get("error_description"), 300))
	}
	code := query.Get("code")
	if code == "" {
		return people.Session{}, people.User{}, "", s.fail(ctx, ReasonIdPError, r, "the callback has neither a code nor an error")
	}
	p, err := s.provider(ctx, st.Issuer)
	if err != nil {
		return people.Session{}, people.User{}, "", s.fail(ctx, ReasonUnreachable, r, "discovery: "+err.Error())
	}
	secret, err := s.clientSecret(stored)
	if err != nil {
		return people.Session{}, people.User{}, "", err
	}
	cctx := s.clientContext(ctx)
	if s.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(cctx, s.cfg.Timeout)
		defer cancel()
	}
	oc := oauthConfig(p, st, secret, b.redirectURL)
	tok, err := oc.Exchange(cctx, code, oauth2.VerifierOption(b.verifier))
	if err != nil {
		return people.Session{}, people.User{}, "", s.fail(ctx, classifyTokenError(err), r, "token: "+err.Error())
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return people.Session{}, people.User{}, "", s.fail(ctx, ReasonToken, r, "the token response has no id_token (is openid among the scopes?)")
	}
	idt, claims, reason, err := s.verify(cctx, p, st, raw, b.nonce)
	if err != nil {
		return people.Session{}, people.User{}, "", s.fail(ctx, reason, r, "id token: "+err.Error())
	}
	// What the ID token lacks, UserInfo may say.
	if claimString(claims, "email") == "" || claims[st.RoleClaim] == nil {
		if info, err := p.UserInfo(cctx, oauth2.StaticTokenSource(tok)); err == nil && info.Subject == idt.Subject {
			var more map[string]any
			if info.Claims(&more) == nil {
				for k, v := range more {
					if _, ok := claims[k]; !ok {
						claims[k] = v
					}
				}
			}
		} else if err != nil {
			s.cfg.Logger.Warn("sso: userinfo failed", "issuer", st.Issuer, "detail", err.Error())
		}
	}
	id, reason, detail := s.identify(st, claims, &r)
	if reason != "" {
		return people.Session{}, people.User{}, "", s.fail(ctx, reason, r, detail)
	}
	actor := org.Actor{Type: org.ActorIdP, Name: st.Issuer}
	u, created, err := s.cfg.People.ProvisionSSO(ctx, people.SSOIdentity{OrganisationID: st.OrganisationID, Issuer: st.Issuer, Subject: idt.Subject,
		Email: id.email, Name: id.name, Role: id.role}, actor)
	if reason := provisionReason(err); reason != "" {
		r.claim = "email" // spec.ErrInvalid: the email is not one
		return people.Session{}, people.User{}, "", s.fail(ctx, reason, r, err.Error())
	}
	if err != nil {
		return people.Session{}, people.User{}, "", err
	}
	r.userID = u.ID
	sess, u, err := s.cfg.People.StartSSOSession(ctx, u.ID)
	if errors.Is(err, people.ErrUserDisabled) {
		return people.Session{}, people.User{}, "", s.fail(ctx, ReasonDisabled, r, err.Error())
	}
	if err != nil {
		return people.Session{}, people.User{}, "", err
	}
	if err := s.recordSession(ctx, sess, u, st, idt.Subject, tok.RefreshToken, created); err != nil {
		_ = s.cfg.People.EndSession(ctx, sess.Token)
		return people.Session{}, people.User{}, "", err
	}
	return sess, u, b.next, nil
}

// identify maps the claims to a person, or says why not (r gets the email
// and the claim missing).
func (s *Service) identify(st Settings, claims map[string]any, r *refusal) (identity, Reason, string) {
	var id identity
	id.email = strings.ToLower(claimString(claims, "email"))
	if id.email == "" {
		r.claim = "email"
		return id, ReasonClaimMissing, "no email claim in the ID token nor from UserInfo"
	}
	r.email = id.email
	if emailVerifiedFalse(claims) {
		return id, ReasonEmailUnverified, "email_verified is false"
	}
	at := strings.LastIndexByte(id.email, '@')
	if at < 1 || !slices.Contains(st.Domains, id.email[at+1:]) {
		return id, ReasonDomain, fmt.Sprintf("the domain of %s is not among %v", id.email, st.Domains)
	}
	values, present := ClaimValues(claims[st.RoleClaim])
	role, reason := MapRole(st, values, present)
	if reason != "" {
		r.claim = st.RoleClaim
		return id, reason, fmt.Sprintf("claim %s = %s", st.RoleClaim, claimJSON(claims[st.RoleClaim]))
	}
	id.role = role
	id.name = claimString(claims, "name")
	if id.name == "" {
		id.name = claimString(claims, "preferred_username")
	}
	return id, "", ""
}

// claimJSON writes a claim's value for a log line, cut short.
func claimJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return clip(string(b), 300)
}

// provisionReason maps a refusal of people.ProvisionSSO to its reason.
func provisionReason(err error) Reason {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, people.ErrUserDisabled):
		return ReasonDisabled
	case errors.Is(err, people.ErrOtherOrganisation):
		return ReasonOtherOrg
	case errors.Is(err, people.ErrSubjectMismatch):
		return ReasonSubject
	case errors.Is(err, spec.ErrInvalid):
		return ReasonClaimMissing
	}
	return ""
}

// signedInAudit is the record of a sign-in.
type signedInAudit struct {
	Email   string      `json:"email"`
	Name    string      `json:"name"`
	Role    people.Role `json:"role"`
	Subject string      `json:"subject"`
	Created bool        `json:"created"`
}

// recordSession keeps the SSO session of sess (its refresh token sealed)
// and audits the sign-in.
func (s *Service) recordSession(ctx context.Context, sess people.Session, u people.User, st Settings, subject, refresh string, created bool) error {
	id := uuid.NewString()
	var keyID, sealed sql.NullString
	if refresh != "" {
		k, v, err := s.cfg.Secrets.Seal(refresh, sessionsTable.Binding("refresh_token", id))
		if err != nil {
			return fmt.Errorf("sso: %w", err)
		}
		keyID, sealed = sql.NullString{String: k, Valid: true}, sql.NullString{String: v, Valid: true}
	}
	now := s.now()
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sso_sessions (id, token_hash, org_id, user_id, version, issuer, subject, refresh_token, secret_key_id, checked_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, id, people.TokenDigest(sess.Token), st.OrganisationID, u.ID, st.Version, st.Issuer, subject,
			sealed, keyID, sqldb.Millis(now)); err != nil {
			return err
		}
		return s.cfg.Orgs.RecordAuditTx(ctx, tx, st.OrganisationID, now, org.Actor{Type: org.ActorIdP, Name: st.Issuer}, AuditSignedIn, "user", u.ID, nil,
			signedInAudit{Email: u.Email, Name: u.Name, Role: u.Role, Subject: subject, Created: created})
	})
}
