package provider

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"
)

// Cursors are opaque: AES-256-GCM over a small binary payload, base64url
// without padding. The payload carries the endpoint, a digest of the tenant
// and of the filters of the request that issued it, and the keyset position
// (for /usage also the resolved range). Sealing makes a cursor tamper-evident
// and unreadable, so clients cannot build or edit one.

const (
	cursorVersion = 1
	// maxCursorLen bounds the cursor a client may send: enough for the
	// longest id (MaxIDLength) or four long usage dimensions. AES-GCM rejects
	// anything the provider did not seal, whatever its length.
	maxCursorLen = 16 << 10
)

// endpoint identifies the list a cursor belongs to.
type endpoint byte

const (
	endpointConversations endpoint = 1 + iota
	endpointAssistants
	endpointEvents
	endpointUsage
)

func (e endpoint) path() string {
	switch e {
	case endpointConversations:
		return "/conversations"
	case endpointAssistants:
		return "/assistants"
	case endpointEvents:
		return "/events"
	case endpointUsage:
		return "/usage"
	}
	return "?"
}

// cursor is the decoded content of a cursor.
type cursor struct {
	endpoint endpoint
	tenant   [8]byte  // digest of the tenant
	filters  [12]byte // digest of the filters
	key      Key      // lists: the last record served
	// usage only
	usageKey   UsageKey
	start, end time.Time
}

var (
	errCursorMalformed = errors.New("malformed cursor")
)

type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

func tenantDigest(tenant string) (d [8]byte) {
	s := sha256.Sum256([]byte("tenant\x00" + tenant))
	copy(d[:], s[:])
	return d
}

// filterDigest digests the canonical form of a request's filters: the
// parameter names and values, in a fixed order.
func filterDigest(parts ...string) (d [12]byte) {
	h := sha256.New()
	for _, p := range parts {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		h.Write([]byte(p))
	}
	copy(d[:], h.Sum(nil))
	return d
}

func (s *sealer) seal(c cursor) string {
	b := make([]byte, 0, 64+len(c.key.ID))
	b = append(b, cursorVersion, byte(c.endpoint))
	b = append(b, c.tenant[:]...)
	b = append(b, c.filters[:]...)
	if c.endpoint == endpointUsage {
		b = binary.AppendVarint(b, c.start.UnixMilli())
		b = binary.AppendVarint(b, c.end.UnixMilli())
		b = binary.AppendVarint(b, c.usageKey.Start.UnixMilli())
		for _, v := range []string{c.usageKey.Model, c.usageKey.AssistantID, c.usageKey.UserID, c.usageKey.Department} {
			b = appendString(b, v)
		}
	} else {
		b = binary.AppendVarint(b, c.key.Time.UnixMilli())
		b = appendString(b, c.key.ID)
	}
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(b)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, b, nil))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// open decodes a cursor; any defect is errCursorMalformed.
func (s *sealer) open(text string) (cursor, error) {
	var c cursor
	if text == "" || len(text) > maxCursorLen {
		return c, errCursorMalformed
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(text)
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return c, errCursorMalformed
	}
	ns := s.aead.NonceSize()
	b, err := s.aead.Open(nil, raw[:ns], raw[ns:], nil)
	if err != nil {
		return c, errCursorMalformed
	}
	r := reader{b: b}
	if r.byte() != cursorVersion {
		return c, errCursorMalformed
	}
	c.endpoint = endpoint(r.byte())
	copy(c.tenant[:], r.bytes(len(c.tenant)))
	copy(c.filters[:], r.bytes(len(c.filters)))
	if c.endpoint == endpointUsage {
		c.start = r.millis()
		c.end = r.millis()
		c.usageKey.Start = r.millis()
		c.usageKey.Model = r.string()
		c.usageKey.AssistantID = r.string()
		c.usageKey.UserID = r.string()
		c.usageKey.Department = r.string()
	} else {
		c.key.Time = r.millis()
		c.key.ID = r.string()
	}
	if r.err || len(r.b) != 0 || c.endpoint < endpointConversations || c.endpoint > endpointUsage {
		return cursor{}, errCursorMalformed
	}
	return c, nil
}

// reader decodes a payload; err records a short read.
type reader struct {
	b   []byte
	err bool
}

func (r *reader) byte() byte {
	if len(r.b) < 1 {
		r.err = true
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) bytes(n int) []byte {
	if len(r.b) < n {
		r.err = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) millis() time.Time {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = true
		return time.Time{}
	}
	r.b = r.b[n:]
	return time.UnixMilli(v).UTC()
}

func (r *reader) string() string {
	l, n := binary.Uvarint(r.b)
	if n <= 0 || l > uint64(len(r.b)-n) {
		r.err = true
		return ""
	}
	v := string(r.b[n : n+int(l)])
	r.b = r.b[n+int(l):]
	return v
}
