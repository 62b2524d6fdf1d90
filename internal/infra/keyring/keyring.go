// Package keyring encrypts the secrets the service must read back (webhook
// signing secrets, source tokens, push secrets) before they are stored, with
// AES-256-GCM under a key held outside the database.
//
// A [Keyring] holds the current key, which seals, and older keys, which
// only open what they sealed, each under a short id. The id is stored beside
// each sealed value (a column of its row), so that a rotation can find the
// rows still sealed under an older key. Every value is bound to its place
// with a [Binding] (table, column, row id), used as GCM's additional data:
// a sealed value copied into another row or column does not open.
//
//	ring, err := keyring.ParseKeys(os.Getenv("AIUSAGE_SECRET_KEY"))
//	keyID, sealed, err := ring.Seal("whsec_...", keyring.Binding{Table: "reviewapi_webhooks", Column: "secret", Row: id})
//	// store keyID and sealed; later:
//	secret, err := ring.Open(keyID, sealed, keyring.Binding{Table: "reviewapi_webhooks", Column: "secret", Row: id})
//
// Keys are written as "ID:BASE64" or "BASE64" (32 bytes in standard or URL
// base64, padded or not), several separated by commas, spaces or new lines,
// the first being the current one; a key written without an id gets one
// derived from the key itself ([FingerprintID]). Lines starting with "#"
// are comments.
package keyring

import (
	"bufio"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// MaxIDLength is the longest key id.
const MaxIDLength = 64

// prefix starts every sealed value: the format's version.
const prefix = "v1."

const nonceSize = 12

// MaxSealedLength bounds what [Keyring.Open] decodes.
const MaxSealedLength = 64 << 10

// Errors of Open. Each is wrapped with the key id and binding at fault; none
// carries the value.
var (
	// ErrUnknownKey: the value is sealed under a key the keyring does not
	// hold (a key removed too early, or the wrong key file).
	ErrUnknownKey = errors.New("keyring: sealed under a key the keyring does not hold")
	// ErrMalformed: the value is not a sealed value of this package.
	ErrMalformed = errors.New("keyring: malformed sealed value")
	// ErrAuth: the value does not open under the key of its id: another key
	// of the same id, a corrupted value, or a value moved from another row.
	ErrAuth = errors.New("keyring: sealed value does not authenticate (wrong key, corrupted, or moved from another row)")
)

// Binding names the place a sealed value is stored; it is authenticated
// with the value, so a value opens only at the place it was sealed for.
type Binding struct {
	Table, Column, Row string
}

func (b Binding) String() string { return b.Table + "." + b.Column + " of row " + b.Row }

// aad returns the additional data of a value sealed under keyID at b. Each
// part is length-prefixed, so no two bindings share their bytes.
func (b Binding) aad(keyID string) []byte {
	var sb strings.Builder
	// The label is part of the stored format: values sealed under it must
	// keep opening.
	sb.WriteString("aiusage-secretbox-v1")
	for _, s := range []string{keyID, b.Table, b.Column, b.Row} {
		fmt.Fprintf(&sb, "\x00%d:%s", len(s), s)
	}
	return []byte(sb.String())
}

// Key is one key of a keyring.
type Key struct {
	// ID names the key in the rows it sealed: 1 to MaxIDLength characters
	// of A-Z, a-z, 0-9, '.', '_' and '-'.
	ID string
	// Secret is the AES-256 key.
	Secret [KeySize]byte
}

// Keyring seals with its current key and opens with any of its keys. It is
// safe for concurrent use.
type Keyring struct {
	current string
	aeads   map[string]cipher.AEAD
	keys    []Key
}

// New returns a keyring of keys, the first one current. It refuses an empty
// list, a malformed id and an id given twice.
func New(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("keyring: no key")
	}
	k := &Keyring{current: keys[0].ID, aeads: map[string]cipher.AEAD{}}
	for _, key := range keys {
		if err := checkID(key.ID); err != nil {
			return nil, err
		}
		if _, dup := k.aeads[key.ID]; dup {
			return nil, fmt.Errorf("keyring: key id %q given twice", key.ID)
		}
		block, err := aes.NewCipher(key.Secret[:])
		if err != nil {
			return nil, err
		}
		gcm, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		k.aeads[key.ID] = gcm
		k.keys = append(k.keys, key)
	}
	return k, nil
}

func checkID(id string) error {
	if id == "" || len(id) > MaxIDLength {
		return fmt.Errorf("keyring: key id %q: want 1 to %d characters", id, MaxIDLength)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("keyring: key id %q: only letters, digits, '.', '_' and '-'", id)
		}
	}
	return nil
}

// NewKey returns a fresh random key, its id derived from it.
func NewKey() Key {
	var k Key
	_, _ = rand.Read(k.Secret[:]) // never fails (crypto/rand)
	k.ID = FingerprintID(k.Secret)
	return k
}

// FingerprintID is the id of a key written without one: "k" and the first
// 12 hex digits of a SHA-256 of the key. It tells keys apart without
// revealing anything usable about them.
func FingerprintID(secret [KeySize]byte) string {
	// The label is part of the key file format: ids derived under it must not change.
	h := sha256.Sum256(append([]byte("aiusage-secretbox-key-id\x00"), secret[:]...))
	return "k" + hex.EncodeToString(h[:6])
}

// String writes k as a line of a key file: "ID:BASE64".
func (k Key) String() string {
	return k.ID + ":" + base64.StdEncoding.EncodeToString(k.Secret[:])
}

// ParseKeys parses keys written as the package documentation says, the
// first one current. Its errors never quote a key.
func ParseKeys(text string) (*Keyring, error) {
	var keys []Key
	sc := bufio.NewScanner(strings.NewReader(text))
	n := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, field := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			n++
			k, err := parseKey(field)
			if err != nil {
				return nil, fmt.Errorf("keyring: key %d: %w", n, err)
			}
			keys = append(keys, k)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("keyring: keys: %w", err)
	}
	if len(keys) == 0 {
		return nil, errors.New("keyring: no key given")
	}
	return New(keys...)
}

func parseKey(field string) (Key, error) {
	id, b64, hasID := strings.Cut(field, ":")
	if !hasID {
		b64, id = field, ""
	}
	var raw []byte
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(b64); err == nil {
			raw = b
			break
		}
	}
	if raw == nil {
		return Key{}, errors.New("not base64 (want ID:BASE64 or BASE64 of 32 bytes, e.g. from 'openssl rand -base64 32')")
	}
	if len(raw) != KeySize {
		return Key{}, fmt.Errorf("%d bytes, want %d (e.g. 'openssl rand -base64 32')", len(raw), KeySize)
	}
	var k Key
	copy(k.Secret[:], raw)
	k.ID = id
	if !hasID {
		k.ID = FingerprintID(k.Secret)
	}
	if err := checkID(k.ID); err != nil {
		return Key{}, err
	}
	return k, nil
}

// Current returns the id of the key that seals.
func (k *Keyring) Current() string { return k.current }

// Has reports whether the keyring holds the key id.
func (k *Keyring) Has(id string) bool {
	_, ok := k.aeads[id]
	return ok
}

// Keys returns the keys of the keyring, the current one first.
func (k *Keyring) Keys() []Key { return append([]Key(nil), k.keys...) }

// Seal encrypts plaintext for the place b under the current key, and
// returns the key's id and the sealed value (ASCII), both to be stored.
func (k *Keyring) Seal(plaintext string, b Binding) (keyID, sealed string, err error) {
	gcm := k.aeads[k.current]
	nonce := make([]byte, nonceSize, nonceSize+len(plaintext)+gcm.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", "", fmt.Errorf("keyring: nonce: %w", err)
	}
	out := gcm.Seal(nonce, nonce, []byte(plaintext), b.aad(k.current))
	return k.current, prefix + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open decrypts the value sealed under keyID for the place b. It returns
// an error wrapping [ErrUnknownKey], [ErrMalformed] or [ErrAuth], never a
// partial or empty secret in place of one that does not open.
func (k *Keyring) Open(keyID, sealed string, b Binding) (string, error) {
	gcm, ok := k.aeads[keyID]
	if !ok {
		return "", fmt.Errorf("%s: key id %q: %w", b, keyID, ErrUnknownKey)
	}
	raw, err := decode(sealed)
	if err != nil {
		return "", fmt.Errorf("%s: %w", b, err)
	}
	plain, err := gcm.Open(nil, raw[:nonceSize], raw[nonceSize:], b.aad(keyID))
	if err != nil {
		return "", fmt.Errorf("%s: key id %q: %w", b, keyID, ErrAuth)
	}
	return string(plain), nil
}

// decode returns nonce and ciphertext of a sealed value, checking its form.
func decode(sealed string) ([]byte, error) {
	if len(sealed) > MaxSealedLength {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(sealed), MaxSealedLength)
	}
	body, ok := strings.CutPrefix(sealed, prefix)
	if !ok {
		return nil, fmt.Errorf("%w: no %q prefix", ErrMalformed, prefix)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64url", ErrMalformed)
	}
	if len(raw) < nonceSize+16 {
		return nil, fmt.Errorf("%w: %d bytes, too short", ErrMalformed, len(raw))
	}
	return raw, nil
}

// Ephemeral returns a keyring of one fresh key held only in memory: what
// it seals cannot be read once the process ends. For tests, and for a
// database that itself lives only in memory.
func Ephemeral() *Keyring {
	k, err := New(NewKey())
	if err != nil {
		panic(err) // a fresh key always makes a keyring
	}
	return k
}
