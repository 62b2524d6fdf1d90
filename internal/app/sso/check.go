package sso

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"golang.org/x/oauth2"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/sqldb"
)

// Reasons a session ends, in the record of [AuditSessionEnded].
const (
	endRefused  = "refresh_refused"  // the IdP refused the refresh token (invalid_grant)
	endNoRole   = "no_role"          // the claims give no role any more
	endDisabled = "user_disabled"    // the user was disabled
	endRefusal  = "refused"          // the user can no longer be provisioned (another subject, organisation)
	endIssuer   = "issuer_changed"   // the settings name another issuer
	endEmail    = "email_unverified" // the email is no longer verified or covered
)

// ssoSession is a row of sso_sessions.
type ssoSession struct {
	id, orgID, userID, issuer, subject string
	version, checkedAt                 int64
	refresh, keyID                     sql.NullString
}

// Check is called on every dashboard request of a signed-in session (after
// people.Store.Authenticate accepted it). For an SSO session whose last
// check is older than Config.RecheckEvery it asks the IdP again with a
// refresh-token grant (oauth2's TokenSource): refused (invalid_grant), or
// the claims of the new ID token no longer give a role, or the user is
// disabled → the session is deleted, audited [AuditSessionEnded], and Check
// returns people.ErrNoSession. A changed role or name is applied (audited
// user.role_changed). A refresh answer without an ID token says nothing of
// the claims: the role is kept. An IdP that cannot be reached (network,
// 5xx, timeout) or that refuses this service's client keeps the session
// (logged) and is asked again at the next request. A session the IdP gave
// no refresh token cannot be asked about and ends at its idle or absolute
// timeout (ask for the offline_access scope where the IdP needs it). Not an
// SSO session, or checked recently: nil, without a network request. Of
// several processes, one asks at a time.
func (s *Service) Check(ctx context.Context, sessionToken string) error {
	var x ssoSession
	err := s.db.QueryRowContext(ctx, `SELECT id, org_id, user_id, issuer, subject, version, checked_at, refresh_token, secret_key_id
		FROM sso_sessions WHERE token_hash = $1`, people.TokenDigest(sessionToken)).Scan(
		&x.id, &x.orgID, &x.userID, &x.issuer, &x.subject, &x.version, &x.checkedAt, &x.refresh, &x.keyID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	now := s.now()
	if now.UnixMilli()-x.checkedAt < s.cfg.RecheckEvery.Milliseconds() {
		return nil
	}
	// Claimed: another request (or process) finding it checked asks nothing.
	res, err := s.db.ExecContext(ctx, `UPDATE sso_sessions SET checked_at = $1 WHERE id = $2 AND checked_at = $3`, sqldb.Millis(now), x.id, x.checkedAt)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	// retry gives the check back, to be made at the next request.
	retry := func(msg string, err error) error {
		s.cfg.Logger.Warn("sso: "+msg+"; the session is kept and checked again at its next request", "org", x.orgID, "issuer", x.issuer,
			"user", x.userID, "detail", err.Error())
		_, uerr := s.db.ExecContext(ctx, `UPDATE sso_sessions SET checked_at = $1 WHERE id = $2 AND checked_at = $3`, x.checkedAt, x.id, sqldb.Millis(now))
		return uerr
	}
	stored, err := s.load(ctx, s.db, x.orgID, "")
	if err != nil {
		return err // ErrNotConfigured cannot be: the row goes with the settings
	}
	st := stored.Settings
	if st.Issuer != x.issuer {
		return s.end(ctx, sessionToken, x, endIssuer, "the settings name the issuer "+st.Issuer)
	}
	u, err := s.cfg.People.User(ctx, x.orgID, x.userID)
	if err != nil {
		return err
	}
	if u.DisabledAt != nil {
		return s.end(ctx, sessionToken, x, endDisabled, "the user is disabled")
	}
	if !x.refresh.Valid {
		return nil
	}
	refresh, err := s.cfg.Secrets.Open(x.keyID.String, x.refresh.String, sessionsTable.Binding("refresh_token", x.id))
	if err != nil {
		return fmt.Errorf("sso: %w", err)
	}
	p, err := s.provider(ctx, st.Issuer)
	if err != nil {
		return retry("the identity provider cannot be reached", err)
	}
	secret, err := s.clientSecret(stored)
	if err != nil {
		return err
	}
	cctx := s.clientContext(ctx)
	if s.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(cctx, s.cfg.Timeout)
		defer cancel()
	}
	tok, err := oauthConfig(p, st, secret, "").TokenSource(cctx, &oauth2.Token{RefreshToken: refresh, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		if classifyTokenError(err) == ReasonCode {
			return s.end(ctx, sessionToken, x, endRefused, err.Error())
		}
		return retry("the identity provider did not refresh the session", err)
	}
	if tok.RefreshToken != "" && tok.RefreshToken != refresh {
		k, v, err := s.cfg.Secrets.Seal(tok.RefreshToken, sessionsTable.Binding("refresh_token", x.id))
		if err != nil {
			return fmt.Errorf("sso: %w", err)
		}
		if _, err := s.db.ExecContext(ctx, `UPDATE sso_sessions SET refresh_token = $1, secret_key_id = $2 WHERE id = $3`, v, k, x.id); err != nil {
			return err
		}
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil // nothing said of the claims: the role stays
	}
	idt, claims, reason, err := s.verify(cctx, p, st, raw, "")
	if reason == ReasonUnreachable {
		return retry("the identity provider's keys cannot be fetched", err)
	}
	if err != nil {
		return s.end(ctx, sessionToken, x, string(ReasonToken), err.Error())
	}
	if idt.Subject != x.subject {
		return s.end(ctx, sessionToken, x, string(ReasonToken), "the refreshed ID token is of subject "+idt.Subject)
	}
	if claimString(claims, "email") == "" {
		claims["email"] = u.Email // a refreshed token may omit it
	}
	var r refusal
	id, reason, detail := s.identify(st, claims, &r)
	switch reason {
	case "":
	case ReasonNoRole, ReasonClaimMissing:
		return s.end(ctx, sessionToken, x, endNoRole, detail)
	default:
		return s.end(ctx, sessionToken, x, endEmail, detail)
	}
	_, _, err = s.cfg.People.ProvisionSSO(ctx, people.SSOIdentity{OrganisationID: x.orgID, Issuer: x.issuer, Subject: x.subject,
		Email: id.email, Name: id.name, Role: id.role}, org.Actor{Type: org.ActorIdP, Name: x.issuer})
	switch provisionReason(err) {
	case "":
		return err
	case ReasonDisabled:
		return s.end(ctx, sessionToken, x, endDisabled, err.Error())
	default:
		return s.end(ctx, sessionToken, x, endRefusal, err.Error())
	}
}

// sessionEndedAudit is the record of a session the IdP no longer vouches
// for.
type sessionEndedAudit struct {
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// end deletes the session of token, audits why, and returns
// people.ErrNoSession.
func (s *Service) end(ctx context.Context, token string, x ssoSession, reason, detail string) error {
	s.cfg.Logger.Info("sso: session ended: the identity provider no longer admits its user", "org", x.orgID, "user", x.userID,
		"reason", reason, "detail", detail)
	if err := s.cfg.People.EndSession(ctx, token); err != nil {
		return err
	}
	if err := s.cfg.Orgs.RecordAudit(ctx, x.orgID, org.Actor{Type: org.ActorIdP, Name: x.issuer}, AuditSessionEnded, "user", x.userID, nil,
		sessionEndedAudit{Reason: reason, Detail: clip(detail, 500)}); err != nil {
		return err
	}
	return people.ErrNoSession
}
