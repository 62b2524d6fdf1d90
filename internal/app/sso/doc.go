// Package sso signs the people of an organisation in through its identity
// provider (OpenID Connect: Microsoft Entra ID, Okta, Google Workspace,
// Keycloak), in the service's SQLite or PostgreSQL database.
//
//	svc, err := sso.New(ctx, sso.Config{DB: db, Orgs: orgs, People: peopleStore, Secrets: ring}) // applies the migrations
//	// The sign-in page, with an email whose domain is covered:
//	to, err := svc.Begin(ctx, email, next, publicURL+sso.CallbackPath) // 303 to `to`
//	// GET /signin/sso/callback:
//	sess, user, next, err := svc.Complete(ctx, r.URL.Query(), publicURL+sso.CallbackPath)
//	// Every request of a signed-in session, after people.Store.Authenticate:
//	err = svc.Check(ctx, token) // people.ErrNoSession: the IdP no longer admits the user
//
// Each organisation's Administrator sets its [Settings]: the issuer URL,
// the client id and secret (sealed with the service's keyring like the
// other secrets, bound to its row; [Service.ResealSecrets] reseals it and
// the refresh tokens), the email domains it covers (a domain signs in to
// one organisation in the whole service), the scopes, and how a person gets
// a role: a claim (default groups; a string or an array of strings, read
// from the ID token, else from UserInfo) whose values mean Administrator
// (it wins) or Reviewer, and what happens to a person with none
// ([UnmappedRefuse] by default, or [UnmappedReviewer]). [Service.SetSettings]
// fetches the issuer's discovery document before saving. Every change is
// in the organisation's audit trail without the secret.
//
// The sign-in is the authorization code flow with PKCE (S256), state and
// nonce (golang.org/x/oauth2 and github.com/coreos/go-oidc/v3). Begin keeps
// the state's digest, the nonce, the PKCE verifier, the email, the path to
// come back to and the settings' version in the database, for
// Config.StateTTL, so the callback may reach any process; Complete uses
// the state once (a replayed callback, a tampered or expired state is
// [ReasonState]), exchanges the code, and verifies the ID token: its
// signature against the provider's keys, the issuer, the audience (the
// client id), the nonce, and its expiry, issue and not-before times within
// Config.ClockSkew (default 2 min, at most 5 min). The email must be
// verified (email_verified not false) and of a covered domain. The first
// sign-in creates the user with the mapped role (just in time, without a
// password); later ones update name and role; a disabled user, a user of
// another organisation or one linked to another subject is refused.
// Discovery documents are kept for five minutes per issuer; a failed fetch
// is not kept.
//
// Every request to an identity provider goes through the netguard
// transport: loopback and private addresses are refused, and issuers must
// be https, unless Config.AllowPrivate (--allow-private-idp). Each request
// is bounded by Config.Timeout.
//
// Every failure a person should see is a [*Failure] with a [Reason], an
// HTTP status, a Message saying what went wrong and Advice saying what to
// tell the identity provider's administrator; its Detail (the IdP's answer,
// the verifier's error) goes only to Config.Logger, where every failure is
// logged. Every refusal after the state was valid is audited
// [AuditRefused] with its reason; a sign-in [AuditSignedIn]; user.created
// and user.role_changed come from package people with the actor
// {Type: org.ActorIdP, Name: issuer}.
//
// [Service.Check] asks the provider again about a session every
// Config.RecheckEvery (default 5 min) with the refresh token it gave
// (sealed in the database): a refused refresh (invalid_grant), claims that
// no longer give a role, or a disabled user end the session
// ([AuditSessionEnded]); a changed role or name is applied; a refresh
// answer without an ID token keeps the role; a provider that cannot be
// reached keeps the session and is asked again at the next request. A
// session without a refresh token (ask for offline_access where the
// provider needs it) ends at its idle or absolute timeout.
//
// "Require single sign-on" ([Service.SetRequired]) may be turned on only
// with a session that an Administrator of the organisation started through
// single sign-on under the current settings, so that nobody locks the
// organisation out; then people.Store.SignIn refuses passwords
// (people.ErrSSORequired, through people.Config.SSORequired = [Service.Required])
// except the operator's break-glass password (people.Store.BreakGlass).
// While required, the issuer, client id and domains cannot change and the
// settings cannot be deleted.
package sso
