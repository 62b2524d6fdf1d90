package provider

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"slices"
	"strings"
)

// Scopes of a credential. A credential that lists none may read everything.
const (
	ScopeConversations = "read:conversations"
	ScopeUsage         = "read:usage"
	ScopeAssistants    = "read:assistants"
	ScopeEvents        = "read:events"
)

// Scopes lists every scope.
var Scopes = []string{ScopeConversations, ScopeUsage, ScopeAssistants, ScopeEvents}

// Principal is an authenticated credential: the tenant whose data it reads
// and its scopes (none means all).
type Principal struct {
	// Name identifies the credential in logs (never the secret).
	Name   string
	Tenant string
	Scopes []string
}

// Allows reports whether p holds scope: it lists it, or lists none.
func (p *Principal) Allows(scope string) bool {
	return len(p.Scopes) == 0 || slices.Contains(p.Scopes, scope)
}

type principalKey struct{}

// PrincipalFrom returns the principal the Handler authenticated for ctx.
func PrincipalFrom(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok
}

// Authenticator turns the credential of a request into a Principal. It
// returns an error wrapping [ErrUnauthorized] for an unknown credential; any
// other error is a 500 (or 503 for [ErrUnavailable]). It must be safe for
// concurrent use and compare secrets in constant time.
type Authenticator interface {
	Authenticate(ctx context.Context, credential string) (*Principal, error)
}

// Token is a static credential for [WithTokens].
type Token struct {
	// Secret is the token's value, as sent by the client.
	Secret string
	// Tenant whose data the token reads. Empty is the default tenant "".
	Tenant string
	// Scopes of the token; none means all.
	Scopes []string
	// Name identifies the token in logs; the default is "token-N".
	Name string
}

// ParseToken parses the command-line form SECRET[=SCOPE,SCOPE...], for
// example "s3cret=read:usage,read:events". Unknown scopes are an error.
func ParseToken(s string) (Token, error) {
	secret, scopes, hasScopes := strings.Cut(s, "=")
	if secret == "" {
		return Token{}, fmt.Errorf("token %q: empty secret", s)
	}
	t := Token{Secret: secret}
	if hasScopes {
		for _, sc := range strings.Split(scopes, ",") {
			sc = strings.TrimSpace(sc)
			if !slices.Contains(Scopes, sc) {
				return Token{}, fmt.Errorf("token scope %q: want one of %s", sc, strings.Join(Scopes, ", "))
			}
			if !slices.Contains(t.Scopes, sc) {
				t.Scopes = append(t.Scopes, sc)
			}
		}
	}
	return t, nil
}

// StaticTokens is an Authenticator over a fixed list of tokens. Secrets are
// kept as SHA-256 digests and compared in constant time.
type StaticTokens struct {
	tokens []staticToken
}

type staticToken struct {
	digest [32]byte
	p      Principal
}

// NewStaticTokens returns an Authenticator accepting tokens. Empty or
// duplicate secrets are an error.
func NewStaticTokens(tokens ...Token) (*StaticTokens, error) {
	s := &StaticTokens{}
	seen := map[[32]byte]bool{}
	for i, t := range tokens {
		if t.Secret == "" {
			return nil, fmt.Errorf("provider: token %d has an empty secret", i+1)
		}
		d := sha256.Sum256([]byte(t.Secret))
		if seen[d] {
			return nil, fmt.Errorf("provider: token %d repeats the secret of another token", i+1)
		}
		seen[d] = true
		for _, sc := range t.Scopes {
			if !slices.Contains(Scopes, sc) {
				return nil, fmt.Errorf("provider: token %d: unknown scope %q", i+1, sc)
			}
		}
		name := t.Name
		if name == "" {
			name = fmt.Sprintf("token-%d", i+1)
		}
		s.tokens = append(s.tokens, staticToken{digest: d, p: Principal{Name: name, Tenant: t.Tenant, Scopes: slices.Clone(t.Scopes)}})
	}
	return s, nil
}

// Authenticate implements [Authenticator]. Every token is compared, so the
// time taken does not depend on which one matches.
func (s *StaticTokens) Authenticate(_ context.Context, credential string) (*Principal, error) {
	d := sha256.Sum256([]byte(credential))
	var found *Principal
	for i := range s.tokens {
		if subtle.ConstantTimeCompare(d[:], s.tokens[i].digest[:]) == 1 {
			p := s.tokens[i].p
			found = &p
		}
	}
	if found == nil || credential == "" {
		return nil, ErrUnauthorized
	}
	return found, nil
}
