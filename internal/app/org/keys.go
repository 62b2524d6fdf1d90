package org

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// SecretPrefix starts every API key secret.
const SecretPrefix = "aiu_"

// secretRandomLen is the number of random base62 characters after the prefix:
// 46 characters carry about 274 bits, and the whole secret is 50 characters.
const secretRandomLen = 46

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newSecret returns a fresh API key secret: SecretPrefix and 46 random
// base62 characters, uniformly drawn (bytes of 248 and above are rejected, so
// no character is more likely than another).
func newSecret() string {
	var sb strings.Builder
	sb.Grow(len(SecretPrefix) + secretRandomLen)
	sb.WriteString(SecretPrefix)
	var buf [64]byte
	for n := 0; n < secretRandomLen; {
		_, _ = rand.Read(buf[:]) // crypto/rand.Read never fails
		for _, b := range buf {
			if b >= 248 { // 248 = 4*62: keep the draw uniform
				continue
			}
			sb.WriteByte(base62[b%62])
			if n++; n == secretRandomLen {
				break
			}
		}
	}
	return sb.String()
}

// hashSecret is what the store keeps of a secret. A secret is 274 random bits,
// so a fast hash suffices: nobody can guess a preimage, and a lookup costs one
// SHA-256.
func hashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// last4 is what listings show of a secret.
func last4(secret string) string {
	if len(secret) < 4 {
		return secret
	}
	return secret[len(secret)-4:]
}

// CreateKey creates an API key and returns it with its secret, which is not
// kept: only its SHA-256 digest and last four characters are. n must pass
// its Validate, and its expiry be in the future.
func (s *Store) CreateKey(ctx context.Context, n KeyCreate, actor Actor) (CreatedKey, error) {
	if err := n.Validate(); err != nil {
		return CreatedKey{}, err
	}
	if n.Type == "" {
		n.Type = KeyTypeIngestion
	}
	org, err := s.Organisation(ctx, n.OrganisationID)
	if err != nil {
		return CreatedKey{}, err
	}
	now := s.Now()
	var expires any
	k := CreatedKey{Secret: newSecret()}
	k.APIKey = APIKey{ID: uuid.NewString(), OrganisationID: org.ID, Name: n.Name, Type: n.Type,
		Last4: last4(k.Secret), CreatedAt: spec.NewTime(now)}
	if !n.NoExpiry && n.ExpiresAt == nil {
		t := DefaultExpiry(now)
		n.ExpiresAt = &t
	}
	if n.ExpiresAt != nil {
		if err := checkExpiry(*n.ExpiresAt, now); err != nil {
			return CreatedKey{}, err
		}
		k.ExpiresAt = spec.TimePtr(*n.ExpiresAt)
		expires = sqldb.Millis(k.ExpiresAt.Time)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO orgapi_api_keys
			(id, org_id, name, type, secret_hash, last4, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			k.ID, org.ID, k.Name, string(k.Type), hashSecret(k.Secret), k.Last4, sqldb.Millis(now), expires); err != nil {
			return err
		}
		return s.audit(ctx, tx, org.ID, now, actor, AuditKeyCreated, "key", k.ID, nil, k.APIKey)
	})
	return k, err
}

const keyColumns = `id, org_id, name, type, last4, created_at, expires_at, revoked_at`

func scanKey(row interface{ Scan(...any) error }) (APIKey, error) {
	var k APIKey
	var typ string
	var created int64
	var expires, revoked sql.NullInt64
	if err := row.Scan(&k.ID, &k.OrganisationID, &k.Name, &typ, &k.Last4, &created, &expires, &revoked); err != nil {
		return k, err
	}
	k.Type, k.CreatedAt = KeyType(typ), spec.NewTime(fromMillis(created))
	if expires.Valid {
		k.ExpiresAt = spec.TimePtr(fromMillis(expires.Int64))
	}
	if revoked.Valid {
		k.RevokedAt = spec.TimePtr(fromMillis(revoked.Int64))
	}
	return k, nil
}

// Keys returns the organisation's keys, oldest first, revoked and expired
// ones included.
func (s *Store) Keys(ctx context.Context, orgID string) ([]APIKey, error) {
	if _, err := s.Organisation(ctx, orgID); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+keyColumns+` FROM orgapi_api_keys WHERE org_id = $1 ORDER BY created_at, id`, strings.ToLower(orgID))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []APIKey{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeKey revokes the organisation's key keyID at once; the next request
// with it is refused (by another process sharing the database, within its
// key cache time: [WithKeyCacheTTL]). Revoking a revoked key changes nothing and returns it
// as it is.
func (s *Store) RevokeKey(ctx context.Context, orgID, keyID string, actor Actor) (APIKey, error) {
	orgID, keyID = strings.ToLower(orgID), strings.ToLower(keyID)
	var k APIKey
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		k, err = scanKey(tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM orgapi_api_keys WHERE id = $1 AND org_id = $2`+s.forUpdate(), keyID, orgID))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("key %s of organisation %s: %w", keyID, orgID, spec.ErrNotFound)
		}
		if err != nil || k.RevokedAt != nil {
			return err
		}
		before := k
		now := s.Now()
		k.RevokedAt = spec.TimePtr(now)
		if _, err := tx.ExecContext(ctx, `UPDATE orgapi_api_keys SET revoked_at = $1 WHERE id = $2`, sqldb.Millis(now), k.ID); err != nil {
			return err
		}
		return s.audit(ctx, tx, orgID, now, actor, AuditKeyRevoked, "key", k.ID, before, k)
	})
	if err == nil {
		s.keys.clear()
	}
	return k, err
}

// maxSecretLength bounds what Authenticate hashes; real secrets are 50
// characters.
const maxSecretLength = 256

// Authenticate returns the principal of an API key secret. A secret that is
// unknown, revoked or expired is an error of kind spec.ErrUnauthorized, the same
// for all three; a valid key that is not of type API is spec.ErrForbidden.
//
// What it reads of a key (found or not) is reused for the store's key cache
// time (WithKeyCacheTTL, default [DefaultKeyCacheTTL]): a burst of requests
// with one key costs one lookup. Expiry is checked at every call; a
// revocation made with this store has effect on the next request, one made
// by another process within the cache time.
//
// With a revoked or expired key the principal is returned too (KeyID,
// OrganisationID, KeyName; no Type), beside the error, so that callers can
// report on the key's organisation (the review-task API's rate-limit headers)
// or log the key; an unknown secret returns an empty principal. A caller must
// therefore treat any error as a refusal, whatever the principal holds.
//
// It records the key's use as one of the organisation API
// ([UseOrganisationAPI]); [Store.AuthenticateFor] names another API.
func (s *Store) Authenticate(ctx context.Context, secret string) (Principal, error) {
	return s.authenticate(ctx, secret, KeyTypeAPI, UseOrganisationAPI)
}

// AuthenticateFor is [Store.Authenticate] for a request to the API use
// (the review-task API, MCP): the key's last use ([Store.KeysLastUsed])
// names that API. Like every authentication of a valid key, it writes the
// last use at most once per [LastUseInterval] per key, across the processes
// sharing the database.
func (s *Store) AuthenticateFor(ctx context.Context, secret string, use KeyUse) (Principal, error) {
	return s.authenticate(ctx, secret, KeyTypeAPI, use)
}

// AuthenticateIngestion returns the principal of an Ingestion key secret,
// for the telemetry endpoint: the mirror of [Store.Authenticate]. A secret
// that is missing, unknown, revoked or expired is spec.ErrUnauthorized, the
// same for all; a valid key of type API is spec.ErrForbidden. It shares
// Authenticate's key cache, so a revocation made with this store has effect
// on the next request, one made by another process within the cache time,
// and the principal of a revoked or expired key comes with its error as
// there.
func (s *Store) AuthenticateIngestion(ctx context.Context, secret string) (Principal, error) {
	return s.authenticate(ctx, secret, KeyTypeIngestion, UseTelemetry)
}

// authenticate returns the principal of secret if it is a valid key of
// type want, and notes its use through the API use.
func (s *Store) authenticate(ctx context.Context, secret string, want KeyType, use KeyUse) (Principal, error) {
	if secret == "" || len(secret) > maxSecretLength {
		return Principal{}, spec.ErrUnauthorized
	}
	digest := sha256.Sum256([]byte(secret))
	now := s.Now()
	k, ok, gen := s.keys.get(digest, now)
	if !ok {
		var err error
		if k, err = s.lookupKey(ctx, digest[:]); err != nil {
			return Principal{}, err
		}
		s.keys.put(digest, k, now, gen)
	}
	p, err := k.principal(now, want)
	if err == nil {
		s.noteUse(ctx, p.KeyID, use, now)
	}
	return p, err
}

// storedKey is what Authenticate reads of a key, found or not.
type storedKey struct {
	found   bool
	p       Principal // without Type
	typ     KeyType
	expires int64 // Unix milliseconds; 0: none
	revoked bool
}

// lookupKey reads the key whose secret has the SHA-256 digest.
func (s *Store) lookupKey(ctx context.Context, digest []byte) (storedKey, error) {
	var k storedKey
	var typ string
	var stored []byte
	var expires, revoked sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT id, org_id, name, type, secret_hash, expires_at, revoked_at
		FROM orgapi_api_keys WHERE secret_hash = $1`, digest).
		Scan(&k.p.KeyID, &k.p.OrganisationID, &k.p.KeyName, &typ, &stored, &expires, &revoked)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return storedKey{}, nil
	case err != nil:
		return storedKey{}, err
	case subtle.ConstantTimeCompare(stored, digest) != 1:
		return storedKey{}, nil
	}
	k.found, k.typ, k.revoked = true, KeyType(typ), revoked.Valid
	if expires.Valid {
		k.expires = expires.Int64
	}
	return k, nil
}

// principal is the answer for the key k at now, where a key of type want
// is required.
func (k storedKey) principal(now time.Time, want KeyType) (Principal, error) {
	switch {
	case !k.found:
		return Principal{}, spec.ErrUnauthorized
	case k.revoked || k.expires != 0 && now.UnixMilli() >= k.expires:
		return k.p, spec.ErrUnauthorized
	}
	p := k.p
	p.Type = k.typ
	switch {
	case p.Type == want:
		return p, nil
	case want == KeyTypeIngestion:
		return p, &spec.Error{Kind: spec.ErrForbidden, Detail: "API keys cannot send telemetry; use a key of type Ingestion."}
	}
	return p, &spec.Error{Kind: spec.ErrForbidden, Detail: "Ingestion keys cannot use this API; use a key of type API."}
}

// KeyCreators returns, for each key of the organisation, the name of who
// created it, as the audit trail records it.
func (s *Store) KeyCreators(ctx context.Context, orgID string) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT resource_id, actor_name FROM orgapi_audit
		WHERE org_id = $1 AND action = $2`, strings.ToLower(orgID), AuditKeyCreated)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		out[id] = name
	}
	return out, rows.Err()
}
