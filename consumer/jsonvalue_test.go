package consumer

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// sameValue reports whether a and b, decoded JSON values, are equal, telling
// -0 from 0 (reflect.DeepEqual does not).
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) || x == nil || y == nil {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) || x == nil || y == nil {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case string, bool, nil:
		return a == b
	}
	return false
}

// FuzzDecodeValue holds decodeValue to its promise: whenever it decodes a
// document, json.Unmarshal decodes it too, to the same value.
func FuzzDecodeValue(f *testing.F) {
	for _, raws := range demoRecords(f) {
		f.Add([]byte(raws[0]))
	}
	for _, s := range []string{
		``, ` `, `null`, `true`, `false`, `nul`, `truex`, `0`, `-0`, `-`, `01`, `1.`, `.5`, `1e`, `1e+`, `1E-7`, `-12.5e3`, `123456789012345`,
		`1234567890123456`, `12345678901234567890`, `9999999999999999999`, `9007199254740993`, `1e400`, `-1e400`, `4.9e-325`, `0.1`, `[]`, `[ ]`, `[1,]`, `[,1]`, `{}`,
		` { } `, `{"a":1,}`, `{"a" 1}`, `{"a":1,"a":2}`, `{"a":{"b":[1,{"c":null}]}}`, `[1] x`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u20AC"`,
		`"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ude00\ud83d"`, `"\ud83d\ud83d\ude00"`, `"\x"`, `"\u12"`, `"\u12g4"`,
		"\"a\tb\"", `"é"`, `"unterminated`, `"a\`, "\"\u2028\"", `{"id":"c1","n":[1,2.5,-3,{"k":"v"}],"ok":true,"no":null}`, `{"a\u0062":1,"ab":2,"ab\"":3}`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 100) + strings.Repeat("]", 100),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !utf8.Valid(raw) {
			return // parseRecord checks this first
		}
		got, ok := decodeValue(raw)
		var want any
		err := json.Unmarshal(raw, &want)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("decodeValue decodes %q, json.Unmarshal says %v", raw, err)
		}
		if !sameValue(got, want) {
			t.Fatalf("decodeValue(%q) = %#v, json.Unmarshal %#v", raw, got, want)
		}
	})
}

// TestDecodeValueDecodes: decodeValue does not leave realistic records
// (nor common escapes) to json.Unmarshal.
func TestDecodeValueDecodes(t *testing.T) {
	t.Parallel()
	docs := []string{`{"a":"\u00e9\n\ud83d\ude00","b":[1,-0,2.5e-3,1e300],"c":{},"d":[],"e":null,"f":true}`}
	for _, raws := range demoRecords(t) {
		for _, r := range raws {
			docs = append(docs, string(r))
		}
	}
	for _, doc := range docs {
		got, ok := decodeValue([]byte(doc))
		if !ok {
			t.Fatalf("decodeValue refuses %s", doc)
		}
		var want any
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		if !sameValue(got, want) {
			t.Fatalf("decodeValue(%s) = %#v, json.Unmarshal %#v", doc, got, want)
		}
	}
}
