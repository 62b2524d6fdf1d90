package otlpwire

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"

	"github.com/aiusage/kit/spec"
)

// rewriteIDs rewrites, in place, the value of every traceId, spanId and
// parentSpanId member of the JSON text b from hexadecimal (either case) to
// base64, which protojson reads for bytes: it would read hex as base64
// without an error and make garbage of it. It returns b shortened (base64 is
// shorter than hex), or a *spec.Error of kind spec.ErrInvalid naming the id
// that is no hexadecimal of its size. A string followed by a colon is a key
// in any valid JSON; b not being valid JSON is left to protojson to say. An id
// key is judged wherever it is, in an unknown field too, which protojson
// then discards: OTLP has no other use for the names.
func rewriteIDs(b []byte) ([]byte, error) {
	w, i := 0, 0
	for i < len(b) {
		if b[i] != '"' {
			b[w] = b[i]
			w, i = w+1, i+1
			continue
		}
		end := stringEnd(b, i)
		size, field := idKey(b[i:end]) // before the copy, which may overwrite it
		w += copy(b[w:], b[i:end])
		i = end
		if size == 0 {
			continue
		}
		j := skipSpace(b, i)
		if j >= len(b) || b[j] != ':' {
			continue
		}
		j = skipSpace(b, j+1)
		if j >= len(b) || b[j] != '"' {
			continue // null or no string: protojson judges it
		}
		w += copy(b[w:], b[i:j])
		i = j
		end = stringEnd(b, i)
		var id [16]byte
		n, err := hexID(b[i:end], id[:size], field, i)
		if err != nil {
			return nil, err
		}
		b[w] = '"'
		base64.StdEncoding.Encode(b[w+1:], id[:n])
		w += 1 + base64.StdEncoding.EncodedLen(n)
		b[w] = '"'
		w++
		i = end
	}
	return b[:w], nil
}

// stringEnd returns the index after the JSON string starting at b[i], a
// quote: after its closing quote, or len(b) when it has none.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipSpace returns the index of the first byte at or after i that is no
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// idKey returns the size in bytes and the name of the id whose key is the
// quoted JSON string q, or 0 when q names no id. Both the lowerCamelCase keys
// of OTLP and the field names protojson also reads are ids.
func idKey(q []byte) (int, string) {
	if len(q) < 2 || len(q) > 64 || q[len(q)-1] != '"' {
		return 0, ""
	}
	raw := q[1 : len(q)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		var k string
		if json.Unmarshal(q, &k) != nil {
			return 0, ""
		}
		raw = []byte(k)
	}
	switch string(raw) {
	case "traceId", "trace_id":
		return 16, "traceId"
	case "spanId", "span_id":
		return 8, "spanId"
	case "parentSpanId", "parent_span_id":
		return 8, "parentSpanId"
	}
	return 0, ""
}

// hexID decodes the quoted JSON string q, at byte offset off of the body,
// into id: the hexadecimal of exactly len(id) bytes, or the empty string
// (an id that is not set). It returns the number of bytes decoded.
func hexID(q, id []byte, field string, off int) (int, error) {
	if len(q) < 2 || q[len(q)-1] != '"' {
		return 0, spec.Invalid(field, "at byte %d is not a JSON string", off)
	}
	raw := q[1 : len(q)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		var s string
		if json.Unmarshal(q, &s) != nil {
			return 0, spec.Invalid(field, "at byte %d is not a JSON string", off)
		}
		raw = []byte(s)
	}
	switch {
	case len(raw) == 0:
		return 0, nil
	case len(raw) != 2*len(id):
		return 0, spec.Invalid(field, "must be %d hexadecimal digits, got %d characters at byte %d: %q",
			2*len(id), len(raw), off, cut(string(raw)))
	}
	if _, err := hex.Decode(id, raw); err != nil {
		return 0, spec.Invalid(field, "must be %d hexadecimal digits, got %q at byte %d", 2*len(id), cut(string(raw)), off)
	}
	return len(id), nil
}
