package people

import (
	"context"
	"errors"
	"time"

	"github.com/aiusage/kit/internal/app/org"
)

var errNotYet = errors.New("people: not implemented yet")

// TokenDigest returns what the store keeps of a session token (its SHA-256
// digest), for other packages to key their own rows of a session by.
func TokenDigest(token string) []byte { return hashToken(token) }

// ProvisionSSO creates or updates the user an identity provider signed in.
func (s *Store) ProvisionSSO(ctx context.Context, in SSOIdentity, actor org.Actor) (User, bool, error) {
	return User{}, false, errNotYet
}

// StartSSOSession starts a session for the user without a password.
func (s *Store) StartSSOSession(ctx context.Context, userID string) (Session, User, error) {
	return Session{}, User{}, errNotYet
}

// EndSession ends the session of token.
func (s *Store) EndSession(ctx context.Context, token string) error { return errNotYet }

// EndSessions ends every session of the user.
func (s *Store) EndSessions(ctx context.Context, userID string) error { return errNotYet }

// BreakGlass gives the user a one-time break-glass password.
func (s *Store) BreakGlass(ctx context.Context, orgID, userID, password string, until time.Time, actor org.Actor) (User, error) {
	return User{}, errNotYet
}
