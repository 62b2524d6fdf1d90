package conformance_test

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
)

// --- cursors

type refCursor struct {
	Endpoint string `json:"e"`
	Tenant   string `json:"t"`
	Filters  string `json:"f"`
	Ms       int64  `json:"ms"`
	Key      string `json:"k"`
	Start    int64  `json:"s,omitempty"`
	End      int64  `json:"x,omitempty"`
	Nonce    string `json:"n,omitempty"`
	Sig      string `json:"sig,omitempty"` // dPlainCursor only
}

func (p *refProvider) mac(b []byte) []byte {
	m := hmac.New(sha256.New, p.key)
	m.Write(b)
	return m.Sum(nil)[:16]
}

// keystream XORs b with a stream derived from the key and iv.
func (p *refProvider) keystream(iv, b []byte) {
	var block [32]byte
	for i := range b {
		if i%32 == 0 {
			var ctr [8]byte
			binary.BigEndian.PutUint64(ctr[:], uint64(i/32))
			block = sha256.Sum256(slices.Concat(p.key, iv, ctr[:]))
		}
		b[i] ^= block[i%32]
	}
}

func (p *refProvider) seal(c refCursor) string {
	if p.has(dNonRetrySafe) {
		var n [8]byte
		rand.Read(n[:])
		c.Nonce = hex.EncodeToString(n[:])
	}
	plain, _ := json.Marshal(c)
	if p.has(dPlainCursor) {
		c.Sig = base64.RawURLEncoding.EncodeToString(p.mac(plain))
		b, _ := json.Marshal(c)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	tag := p.mac(plain)
	p.keystream(tag, plain)
	return base64.RawURLEncoding.EncodeToString(append(tag, plain...))
}

var errMalformed = errors.New("malformed")

func (p *refProvider) open(s string) (refCursor, error) {
	var c refCursor
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, errMalformed
	}
	if p.has(dPlainCursor) {
		if json.Unmarshal(raw, &c) != nil {
			return c, errMalformed
		}
		sig := c.Sig
		c.Sig = ""
		plain, _ := json.Marshal(c)
		if !hmac.Equal([]byte(sig), []byte(base64.RawURLEncoding.EncodeToString(p.mac(plain)))) {
			return c, errMalformed
		}
		return c, nil
	}
	if len(raw) < 17 {
		return c, errMalformed
	}
	tag, plain := raw[:16], slices.Clone(raw[16:])
	p.keystream(tag, plain)
	if !hmac.Equal(tag, p.mac(plain)) || json.Unmarshal(plain, &c) != nil {
		return c, errMalformed
	}
	return c, nil
}

// readCursor opens the cursor of a request and checks its binding. A nil
// cursor means the first page.
func (p *refProvider) readCursor(q refParams, endpoint, tenant, filters string) (*refCursor, error) {
	s, ok, err := q.get("cursor")
	if err != nil || !ok {
		return nil, err
	}
	c, err := p.open(s)
	if err != nil {
		if p.has(dMalformedFirstPage) {
			return nil, nil
		}
		return nil, invalid("cursor", "is malformed; send nextCursor exactly as received")
	}
	if c.Endpoint != endpoint && !p.has(dEndpointUnbound) {
		return nil, invalid("cursor", "was issued by another endpoint")
	}
	if c.Tenant != tenant && !p.has(dCursorAuthority) {
		return nil, invalid("cursor", "was issued to another credential")
	}
	if c.Filters != filters && !p.has(dFilterUnbound) {
		return nil, invalid("cursor", "was issued for other filters; send the same filters with the cursor")
	}
	if c.Nonce != "" {
		p.mu.Lock()
		used := p.used[c.Nonce]
		p.used[c.Nonce] = true
		p.mu.Unlock()
		if used {
			return nil, invalid("cursor", "has expired")
		}
	}
	return &c, nil
}
