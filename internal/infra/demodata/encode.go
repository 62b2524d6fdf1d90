package demodata

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Identifiers are built from bijective mixes of an index, so they are unique
// by construction and still look random.

// mix32 is a bijection on uint32 (the lowbias32 finaliser).
func mix32(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}

// mix64 is a bijection on uint64 (the splitmix64 finaliser).
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// newRand returns a PCG generator for one stream of the dataset of seed.
func newRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(mix64(seed^0x5eed5eed5eed5eed), mix64(stream+0x9e3779b97f4a7c15)))
}

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// appendTimeID appends a ULID-like identifier: ten Crockford base32
// characters of the unix millisecond ms, then seven of the 32-bit unique
// value u. Identifiers with distinct u are distinct.
func appendTimeID(b []byte, ms int64, u uint32) []byte {
	for i := 9; i >= 0; i-- {
		b = append(b, crockford[(uint64(ms)>>(5*uint(i)))&31])
	}
	for i := 6; i >= 0; i-- {
		b = append(b, crockford[(uint64(u)>>(5*uint(i)))&31])
	}
	return b
}

func timeID(prefix string, ms int64, u uint32) string {
	b := make([]byte, 0, len(prefix)+17)
	b = append(b, prefix...)
	return string(appendTimeID(b, ms, u))
}

// hexID returns prefix followed by the eight hex digits of u.
func hexID(prefix string, u uint32) string {
	const digits = "0123456789abcdef"
	b := make([]byte, len(prefix)+8)
	copy(b, prefix)
	for i := 0; i < 8; i++ {
		b[len(prefix)+7-i] = digits[u&15]
		u >>= 4
	}
	return string(b)
}

// sha256Of returns "sha256:" and the hex SHA-256 of the parts joined.
func sha256Of(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	return "sha256:" + hex.EncodeToString(h.Sum(sum[:0]))
}

// obj builds a JSON object from alternating keys and values, in the order
// given, so the bytes are deterministic. Values may be string, int, int64,
// float64, bool, []string, json.RawMessage or nil (skipped with its key).
func obj(kv ...any) json.RawMessage {
	b := make([]byte, 0, 64+16*len(kv))
	return json.RawMessage(appendObj(b, kv...))
}

func appendObj(b []byte, kv ...any) []byte {
	b = append(b, '{')
	first := true
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, kv[i].(string))
		b = append(b, ':')
		b = appendValue(b, kv[i+1])
	}
	return append(b, '}')
}

func appendValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		return appendString(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case float64:
		return strconv.AppendFloat(b, v, 'f', -1, 64)
	case bool:
		return strconv.AppendBool(b, v)
	case []string:
		b = append(b, '[')
		for i, s := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		return append(b, ']')
	case json.RawMessage:
		return append(b, v...)
	}
	panic("demodata: unsupported JSON value")
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	const digits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', digits[c>>4], digits[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// slug lowercases s and keeps letters and digits, joining runs of anything
// else with one hyphen.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	return b.String()
}

// pick returns a random element of xs.
func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// between returns a uniform integer in [lo, hi]; hi < lo gives lo.
func between(r *rand.Rand, lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + r.Int64N(hi-lo+1)
}

// weighted returns an index drawn with the given weights (their total is sum).
func weighted(r *rand.Rand, weights []int, sum int) int {
	x := r.IntN(sum)
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}

func sumInts(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}
