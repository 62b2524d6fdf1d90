package sso

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/aiusage/kit/internal/app/org"
)

// refusal is what a failure is about, for its texts, log line and audit
// record.
type refusal struct {
	orgID   string // "" before the state was valid: nothing is audited
	issuer  string
	client  string
	email   string
	userID  string
	claim   string // the claim missing
	domains []string
	st      Settings
}

// fail returns the Failure of reason about r, with detail for the log,
// logs it and, once the state was valid (r.orgID set), audits it.
func (s *Service) fail(ctx context.Context, reason Reason, r refusal, detail string) *Failure {
	f := &Failure{Reason: reason, Status: http.StatusForbidden, Detail: detail}
	iss := r.issuer
	if iss == "" {
		iss = "your identity provider"
	}
	switch reason {
	case ReasonState:
		f.Status = http.StatusBadRequest
		f.Message = stateMessage
	case ReasonIdPError:
		f.Status = http.StatusBadRequest
		f.Message = "Your identity provider did not sign you in."
		f.Advice = fmt.Sprintf("Tell your identity provider's administrator that %s refused the sign-in to this service (answer: %s); you may need to be assigned to the application.",
			iss, clip(detail, 200))
	case ReasonUnreachable:
		f.Status = http.StatusBadGateway
		f.Message = fmt.Sprintf("Your identity provider (%s) cannot be reached right now. Try again in a few minutes.", iss)
		f.Advice = fmt.Sprintf("If it persists, tell your identity provider's administrator that %s does not answer this service (its discovery, token or keys endpoint).", iss)
	case ReasonClient:
		f.Status = http.StatusBadGateway
		f.Message = "Your identity provider refused this service's client id or secret."
		f.Advice = fmt.Sprintf("Tell your identity provider's administrator: the client secret configured for %s in the dashboard's Settings → Single sign-on does not match the application's; an Administrator must enter the current one.", iss)
	case ReasonCode:
		f.Status = http.StatusBadRequest
		f.Message = "Your identity provider refused the sign-in code: it was already used, has expired, or belongs to another sign-in. Start again from the sign-in page."
	case ReasonToken:
		f.Message = "The answer of your identity provider could not be verified (its signature, issuer, audience, time or nonce), so it was not trusted. Start again from the sign-in page."
		f.Advice = fmt.Sprintf("If it happens again, tell your identity provider's administrator that ID tokens from %s for client %s fail verification: check the signing keys, the client id and the clock.", iss, r.client)
	case ReasonClaimMissing:
		f.Message = fmt.Sprintf("Your identity provider did not send the %s claim, which this service needs.", r.claim)
		f.Advice = fmt.Sprintf("Tell your identity provider's administrator: the application of this service must receive the %s claim, in the ID token or from UserInfo.", r.claim)
	case ReasonEmailUnverified:
		f.Message = fmt.Sprintf("Your identity provider says your email address %s is not verified.", r.email)
		f.Advice = "Verify your email address at your identity provider, or ask its administrator to."
	case ReasonDomain:
		f.Message = fmt.Sprintf("Your identity provider signed you in as %s, whose domain this organisation does not sign in with.", r.email)
		f.Advice = fmt.Sprintf("Sign in at your identity provider with your address at %s, or ask an Administrator to add the domain in Settings → Single sign-on.", strings.Join(r.domains, ", "))
	case ReasonNoRole:
		f.Message = "Your identity provider does not give you a role in this service."
		f.Advice = fmt.Sprintf("Tell your identity provider's administrator: to use this service you must have, in the %s claim, one of %s (Administrator) or %s (Reviewer).",
			r.st.RoleClaim, listOr(r.st.AdministratorValues), listOr(r.st.ReviewerValues))
	case ReasonDisabled:
		f.Message = fmt.Sprintf("The account %s is disabled in this service.", r.email)
		f.Advice = "Ask an Administrator of your organisation in this dashboard."
	case ReasonOtherOrg:
		f.Message = fmt.Sprintf("The address %s is an account of another organisation in this service.", r.email)
		f.Advice = "Ask the operator of this service to remove or rename the other account."
	case ReasonSubject:
		f.Message = fmt.Sprintf("The account %s is linked to another identity at your identity provider.", r.email)
		f.Advice = "Ask the operator of this service: the account must be removed and created again by signing in."
	case ReasonNotConfigured:
		f.Message = "Single sign-on is not configured (any more) for this email's domain."
		f.Advice = "Sign in with your password, or ask an Administrator to connect your identity provider in Settings → Single sign-on."
	}
	switch reason {
	case ReasonIdPError, ReasonUnreachable, ReasonClient, ReasonToken, ReasonClaimMissing, ReasonNoRole:
		f.ForIdP = true
	}
	s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "sso: sign-in refused", slog.String("reason", string(reason)), slog.String("org", r.orgID),
		slog.String("issuer", r.issuer), slog.String("email", r.email), slog.String("detail", detail))
	if r.orgID != "" {
		id := r.userID
		if id == "" {
			id = r.email
		}
		after := map[string]string{"reason": string(reason), "email": r.email, "detail": clip(detail, 500)}
		if err := s.cfg.Orgs.RecordAudit(ctx, r.orgID, org.Actor{Type: org.ActorIdP, Name: r.issuer}, AuditRefused, "user", id, nil, after); err != nil {
			s.cfg.Logger.Error("sso: cannot audit a refused sign-in", "org", r.orgID, "error", err.Error())
		}
	}
	return f
}

// stateMessage is the Message of a callback whose state is unknown, used,
// expired, or not this browser's.
const stateMessage = "This sign-in was already completed, took too long, or did not start here. Start again from the sign-in page."

// ForeignState is the Failure of a callback whose state is not the one
// this browser started with (the caller keeps the state it gave the IdP
// in a cookie and compares): someone else's sign-in, sent to this browser
// to sign it in as them (login CSRF). Nothing is audited: the state was not
// used.
func ForeignState(detail string) *Failure {
	return &Failure{Reason: ReasonState, Status: http.StatusBadRequest, Message: stateMessage, Detail: detail}
}

// clip cuts s to n bytes (on a rune boundary) for a message or record.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// listOr writes values as "a, b or c", or "(none)".
func listOr(values []string) string {
	switch len(values) {
	case 0:
		return "(none)"
	case 1:
		return fmt.Sprintf("%q", values[0])
	}
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
