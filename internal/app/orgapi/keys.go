package orgapi

import (
	"crypto/rand"
	"crypto/sha256"
	"strings"
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
