package people

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/argon2"
)

// hashParams are the parameters of argon2id.
type hashParams struct {
	memory  uint32 // KiB
	time    uint32 // passes
	threads uint8  // lanes
	saltLen uint32 // bytes
	keyLen  uint32 // bytes
}

// strongParams are the parameters of new hashes: 64 MiB, 3 passes, 2 lanes,
// a 16-byte salt and a 32-byte key (about 100 ms on one core of a small
// server).
var strongParams = hashParams{memory: 64 * 1024, time: 3, threads: 2, saltLen: 16, keyLen: 32}

// testParams cost well under a millisecond a hash: 64 KiB, 1 pass, 1
// lane. Full strength costs about 100 ms on one core, and several seconds
// under the race detector.
var testParams = hashParams{memory: 64, time: 1, threads: 1, saltLen: 16, keyLen: 32}

// params are the parameters HashStrong makes hashes with. Only the
// package's tests change them, to testParams.
var params = strongParams

// HashCost is the cost of the argon2id password hashes a [Store] makes. A
// stored hash names its own parameters, so hashes of either cost are
// verified alike.
type HashCost int

const (
	// HashStrong makes hashes of 64 MiB, 3 passes and 2 lanes: the
	// default, and the only cost for real passwords.
	HashStrong HashCost = iota
	// HashTest makes hashes of 64 KiB and 1 pass, which anyone can brute
	// force: for the tests of the packages that sign people in, which
	// make hundreds of hashes.
	HashTest
)

// params returns the parameters of new hashes of cost c.
func (c HashCost) params() hashParams {
	if c == HashTest {
		return testParams
	}
	return params
}

// Bounds of the parameters read back from a stored hash, so that a
// corrupted or planted one cannot make a sign-in take all the memory or
// time of the process.
const (
	maxMemory  = 1 << 20 // KiB: 1 GiB
	maxTime    = 64
	minSaltLen = 8
	maxSaltLen = 64
	minKeyLen  = 16
	maxKeyLen  = 64
	maxHashLen = 512 // bytes of the whole PHC string
)

// phcPrefix starts every hash of the store.
const phcPrefix = "$argon2id$v=19$"

// b64 is the base64 of the PHC string format: standard alphabet, no
// padding, and canonical (no stray bits in the last character).
var b64 = base64.RawStdEncoding.Strict()

// passwordHash is a parsed argon2id hash.
type passwordHash struct {
	params hashParams
	salt   []byte
	key    []byte
}

// String formats h in the PHC string format:
// $argon2id$v=19$m=65536,t=3,p=2$<salt>$<key>.
func (h passwordHash) String() string {
	return fmt.Sprintf("%sm=%d,t=%d,p=%d$%s$%s", phcPrefix, h.params.memory, h.params.time, h.params.threads,
		b64.EncodeToString(h.salt), b64.EncodeToString(h.key))
}

// errHashFormat is the error of a string that is not a hash of the store.
var errHashFormat = errors.New("people: not an argon2id hash in the PHC string format")

// parseHash parses a hash in the PHC string format, as String writes it,
// and checks its parameters against the bounds above. It never panics.
func parseHash(s string) (passwordHash, error) {
	var h passwordHash
	// base64 skips line breaks, which would make a second spelling of a hash.
	if len(s) > maxHashLen || !strings.HasPrefix(s, phcPrefix) || strings.ContainsAny(s, "\r\n") {
		return h, errHashFormat
	}
	parts := strings.Split(s[len(phcPrefix):], "$")
	if len(parts) != 3 {
		return h, errHashFormat
	}
	kv := strings.Split(parts[0], ",")
	if len(kv) != 3 {
		return h, errHashFormat
	}
	var vals [3]uint64
	for i, name := range []string{"m=", "t=", "p="} {
		digits, ok := strings.CutPrefix(kv[i], name)
		// Decimal digits only: no sign, no leading zero.
		if !ok || digits == "" || (digits[0] == '0' && len(digits) > 1) || strings.Trim(digits, "0123456789") != "" {
			return h, errHashFormat
		}
		v, err := strconv.ParseUint(digits, 10, 32)
		if err != nil {
			return h, errHashFormat
		}
		vals[i] = v
	}
	m, t, p := vals[0], vals[1], vals[2]
	if p < 1 || p > 255 || t < 1 || t > maxTime || m < 8*p || m > maxMemory {
		return h, fmt.Errorf("%w: parameters m=%d,t=%d,p=%d out of bounds", errHashFormat, m, t, p)
	}
	salt, err := b64.DecodeString(parts[1])
	if err != nil || len(salt) < minSaltLen || len(salt) > maxSaltLen {
		return h, fmt.Errorf("%w: bad salt", errHashFormat)
	}
	key, err := b64.DecodeString(parts[2])
	if err != nil || len(key) < minKeyLen || len(key) > maxKeyLen {
		return h, fmt.Errorf("%w: bad key", errHashFormat)
	}
	h.params = hashParams{memory: uint32(m), time: uint32(t), threads: uint8(p), saltLen: uint32(len(salt)), keyLen: uint32(len(key))}
	h.salt, h.key = salt, key
	return h, nil
}

// hashSlots bounds the argon2id computations running at once: each takes
// its memory parameter (64 MiB), so a burst of sign-ins must not take one
// each.
var hashSlots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

// derive computes argon2id of password with salt and p, waiting for a slot.
func derive(ctx context.Context, password string, salt []byte, p hashParams) ([]byte, error) {
	select {
	case hashSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-hashSlots }()
	return argon2.IDKey([]byte(password), salt, p.time, p.memory, p.threads, p.keyLen), nil
}

// hashPassword returns the PHC string of a new argon2id hash of password,
// with a random salt.
func hashPassword(ctx context.Context, password string, p hashParams) (string, error) {
	salt := make([]byte, p.saltLen)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails
	key, err := derive(ctx, password, salt, p)
	if err != nil {
		return "", err
	}
	return passwordHash{params: p, salt: salt, key: key}.String(), nil
}

// verifyPassword says whether password matches the stored hash, computed
// with the parameters the hash names and compared in constant time.
func verifyPassword(ctx context.Context, password, stored string) (bool, error) {
	h, err := parseHash(stored)
	if err != nil {
		return false, err
	}
	key, err := derive(ctx, password, h.salt, h.params)
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(key, h.key) == 1, nil
}

// dummyHashes are the hashes, by cost, a sign-in with an unknown email is
// checked against, so that it takes as long as one with a wrong password.
// Each is made on first use.
var dummyHashes = [...]func() string{HashStrong: dummyHashOf(HashStrong), HashTest: dummyHashOf(HashTest)}

func dummyHashOf(c HashCost) func() string {
	return sync.OnceValue(func() string {
		s, _ := hashPassword(context.Background(), "not the password of anyone", c.params()) // no context to end
		return s
	})
}

// dummyHash returns the dummy hash of cost c.
func dummyHash(c HashCost) string { return dummyHashes[c]() }
