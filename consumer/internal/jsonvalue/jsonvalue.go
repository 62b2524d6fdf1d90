// Package jsonvalue decodes a JSON document into the value json.Unmarshal
// into an any produces (map[string]any, []any, string, float64, bool, nil),
// in about half its time: the consumer decodes every record it receives
// before checking it.
//
// [Decode] is a drop-in for json.Unmarshal into an any on valid UTF-8: where
// its own decoder cannot be sure to agree with encoding/json (a syntax
// error, a number out of range, nesting over 10000 levels), it hands the
// document to json.Unmarshal, for its value or its error. FuzzDecode holds
// it to that.
package jsonvalue

import (
	"encoding/json"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Decode returns what json.Unmarshal of raw into an any returns, value and
// error. raw must be valid UTF-8 (the caller checks it first): the decoder
// keeps the bytes of a string as they are, where encoding/json would replace
// invalid bytes with U+FFFD.
func Decode(raw []byte) (any, error) {
	if v, ok := decodeFast(raw); ok {
		return v, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// decodeFast decodes raw, which must be valid UTF-8, into exactly the value
// json.Unmarshal into an any produces. It reports false when it cannot, for
// a document json.Unmarshal may reject or may read otherwise.
func decodeFast(raw []byte) (any, bool) {
	d := decoders.Get().(*valueDecoder)
	d.data, d.pos, d.depth = raw, 0, 0
	v, ok := d.value()
	if ok {
		d.skipSpace()
		ok = d.pos == len(d.data)
	}
	clear(d.members[:cap(d.members)])
	clear(d.elems[:cap(d.elems)])
	d.data, d.members, d.elems = nil, d.members[:0], d.elems[:0]
	decoders.Put(d)
	if !ok {
		return nil, false
	}
	return v, true
}

var decoders = sync.Pool{New: func() any { return new(valueDecoder) }}

// maxDepth is encoding/json's limit of nesting.
const maxDepth = 10000

type member struct {
	name  string
	value any
}

// valueDecoder holds the members and elements of the open objects and
// arrays as stacks, so that each map and slice is made once at its final
// size.
type valueDecoder struct {
	data    []byte
	pos     int
	depth   int
	members []member
	elems   []any
	buf     []byte // unescaped strings
	// names holds member names already seen, by this decoder and the
	// records it decoded before, to share one string rather than make one
	// per member of every record.
	names map[string]string
}

// Bounds of valueDecoder.names.
const (
	maxNames      = 512
	maxNameLength = 64
)

// name reads a member name, like str.
func (d *valueDecoder) name() (string, bool) {
	start := d.pos + 1
	for i := start; i < len(d.data) && i-start <= maxNameLength; i++ {
		switch c := d.data[i]; {
		case c == '"':
			if s, ok := d.names[string(d.data[start:i])]; ok {
				d.pos = i + 1
				return s, true
			}
			s, ok := d.str()
			if ok && len(d.names) < maxNames {
				if d.names == nil {
					d.names = make(map[string]string)
				}
				d.names[s] = s
			}
			return s, ok
		case c == '\\' || c < 0x20:
			return d.str()
		}
	}
	return d.str()
}

func (d *valueDecoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *valueDecoder) value() (any, bool) {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return nil, false
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		s, ok := d.str()
		return s, ok
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, false
}

func (d *valueDecoder) literal(lit string) bool {
	if len(d.data)-d.pos < len(lit) || string(d.data[d.pos:d.pos+len(lit)]) != lit {
		return false
	}
	d.pos += len(lit)
	return true
}

// next reads what follows a member or an element: a comma (end false) or
// the closing byte (end true); ok is false for anything else.
func (d *valueDecoder) next(closing byte) (end, ok bool) {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return false, false
	}
	c := d.data[d.pos]
	d.pos++
	return c == closing, c == closing || c == ','
}

func (d *valueDecoder) object() (any, bool) {
	if d.depth++; d.depth > maxDepth {
		return nil, false
	}
	d.pos++ // {
	start := len(d.members)
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		d.depth--
		return map[string]any{}, true
	}
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, false
		}
		name, ok := d.name()
		if !ok {
			return nil, false
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, false
		}
		d.pos++
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		d.members = append(d.members, member{name, v})
		if end, ok := d.next('}'); !ok {
			return nil, false
		} else if end {
			break
		}
	}
	ms := d.members[start:]
	m := make(map[string]any, len(ms))
	for _, e := range ms {
		m[e.name] = e.value // the last of repeated names wins, as in encoding/json
	}
	clear(ms)
	d.members = d.members[:start]
	d.depth--
	return m, true
}

func (d *valueDecoder) array() (any, bool) {
	if d.depth++; d.depth > maxDepth {
		return nil, false
	}
	d.pos++ // [
	start := len(d.elems)
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		d.depth--
		return []any{}, true
	}
	for {
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		d.elems = append(d.elems, v)
		if end, ok := d.next(']'); !ok {
			return nil, false
		} else if end {
			break
		}
	}
	es := d.elems[start:]
	a := make([]any, len(es))
	copy(a, es)
	clear(es)
	d.elems = d.elems[:start]
	d.depth--
	return a, true
}

// str reads the string at d.pos (a quote). The bytes of raw are valid
// UTF-8, so those between two quotes are too, and are kept as they are.
func (d *valueDecoder) str() (string, bool) {
	start := d.pos + 1
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			d.pos = i + 1
			return string(d.data[start:i]), true
		case c == '\\':
			return d.unescape(start, i)
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

// unescape reads a string with escapes, from start; the first backslash is
// at i. Lone or unpaired surrogates become U+FFFD, as in encoding/json.
func (d *valueDecoder) unescape(start, i int) (string, bool) {
	b := append(d.buf[:0], d.data[start:i]...)
	for i < len(d.data) {
		c := d.data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			d.buf = b
			return string(b), true
		case c < 0x20:
			return "", false
		case c != '\\':
			b = append(b, c)
			i++
			continue
		}
		if i+1 >= len(d.data) {
			return "", false
		}
		switch e := d.data[i+1]; e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := hex4(d.data[i:])
			if r < 0 {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if dec := utf16.DecodeRune(r, hex4(d.data[i:])); dec != unicode.ReplacementChar {
					i += 6
					b = utf8.AppendRune(b, dec)
					continue
				}
				r = unicode.ReplacementChar
			}
			b = utf8.AppendRune(b, r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	return "", false
}

// hex4 returns the rune of the escape \uXXXX at the start of s, or -1.
func hex4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// number reads a JSON number into the float64 strconv.ParseFloat makes of
// it, as encoding/json does; a whole number of at most 15 digits is exact
// in a float64 and converted directly.
func (d *valueDecoder) number() (any, bool) {
	start, i := d.pos, d.pos
	neg := d.data[i] == '-'
	if neg {
		i++
	}
	digitsStart := i
	var n int64
	for i < len(d.data) && d.data[i] >= '0' && d.data[i] <= '9' {
		n = n*10 + int64(d.data[i]-'0')
		i++
	}
	nd := i - digitsStart
	if nd == 0 || nd > 1 && d.data[digitsStart] == '0' {
		return nil, false
	}
	whole := true
	if i < len(d.data) && d.data[i] == '.' {
		whole = false
		i++
		j := i
		for i < len(d.data) && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
		}
		if i == j {
			return nil, false
		}
	}
	if i < len(d.data) && (d.data[i] == 'e' || d.data[i] == 'E') {
		whole = false
		i++
		if i < len(d.data) && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		j := i
		for i < len(d.data) && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
		}
		if i == j {
			return nil, false
		}
	}
	d.pos = i
	if whole && nd <= 15 {
		f := float64(n)
		if neg {
			f = -f // -0 too
		}
		return f, true
	}
	f, err := strconv.ParseFloat(string(d.data[start:i]), 64)
	if err != nil {
		return nil, false
	}
	return f, true
}
