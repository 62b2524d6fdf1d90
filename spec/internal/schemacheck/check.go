// Package schemacheck is a fast, sound check of a document against one of
// the kit's JSON Schemas (draft 2020-12): compiled from the schema's own JSON
// into a small tree of checks for exactly the keywords the record schemas
// use, it answers "valid", which the library (jsonschema/v6, as package spec
// runs it) would confirm, or "ask the library". Package spec asks it before
// the library in ValidateValue: a record that passes costs a few
// microseconds instead of the library's tens, and every finding still comes
// from the library.
//
// [Compile] refuses, with [ErrUnsupported], any schema with another keyword
// (or another form of one), so that a schema change can never make the check
// unsound. FuzzCheck holds it to the library.
package schemacheck

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Checker is the compiled check of one schema. It is safe for concurrent
// use.
type Checker struct {
	root *node
}

// Check reports whether inst, a document decoded into any by encoding/json
// (numbers as float64 or json.Number), certainly matches the schema: when it
// returns true, the library's validation reports nothing, or in lenient mode
// nothing but values outside an enum marked x-extensible-enum. It may
// report false for a document the library accepts (a json.Number with a
// fraction or exponent, a timestamp with an offset). A nil Checker reports
// false.
func (c *Checker) Check(inst any, lenient bool) bool {
	if c == nil {
		return false
	}
	return c.root.check(inst, lenient)
}

// jsonType is a set of JSON Schema types.
type jsonType uint8

const (
	tNull jsonType = 1 << iota
	tBoolean
	tNumber
	tInteger
	tString
	tArray
	tObject
)

var typeNames = map[string]jsonType{
	"null": tNull, "boolean": tBoolean, "number": tNumber, "integer": tInteger,
	"string": tString, "array": tArray, "object": tObject,
}

// node is one compiled subschema. Every check but the type, const and enum
// applies only to values of its kind, as in JSON Schema.
type node struct {
	never bool     // the schema false
	types jsonType // 0: any type

	hasConst bool
	constVal any // string, bool or nil

	enum       []string // nil: no enum
	extensible bool     // x-extensible-enum

	// strings
	minLength, maxLength int // -1: none
	patterns             []func(string) bool
	dateTime             bool

	// numbers: bounds are integers of at most 2^53, exact in a float64
	minimum, maximum, exclMinimum, exclMaximum *float64

	// objects
	props      map[string]*node
	propList   []namedNode // props, sorted by name
	required   []string
	additional *node // nil: any

	// arrays
	items              *node
	minItems, maxItems int // -1: none

	all []*node // $ref and allOf
}

type namedNode struct {
	name string
	node *node
}

func (n *node) check(v any, lenient bool) bool {
	if n.never {
		return false
	}
	if n.types != 0 && !n.typeOK(v) {
		return false
	}
	if n.hasConst && !n.constOK(v) {
		return false
	}
	if n.enum != nil {
		s, ok := v.(string)
		if !ok || !contains(n.enum, s) {
			// The library stops at the first failing of type, const and
			// enum, so a value outside an extensible enum fails its
			// subschema with that one finding, which Lenient drops (Strict
			// makes it a warning: not "no findings").
			return n.extensible && lenient
		}
	}
	if !n.checkKind(v, lenient) {
		return false
	}
	for _, s := range n.all {
		if !s.check(v, lenient) {
			return false
		}
	}
	return true
}

func (n *node) constOK(v any) bool {
	switch c := n.constVal.(type) {
	case string:
		s, ok := v.(string)
		return ok && s == c
	case bool:
		b, ok := v.(bool)
		return ok && b == c
	}
	return v == nil
}

// checkKind applies the checks of v's kind.
func (n *node) checkKind(v any, lenient bool) bool {
	switch x := v.(type) {
	case string:
		return n.checkString(x)
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0) && n.checkFloat(x)
	case json.Number:
		return n.checkNumber(x)
	case map[string]any:
		return n.checkObject(x, lenient)
	case []any:
		if n.minItems >= 0 && len(x) < n.minItems || n.maxItems >= 0 && len(x) > n.maxItems {
			return false
		}
		if n.items != nil {
			for _, e := range x {
				if !n.items.check(e, lenient) {
					return false
				}
			}
		}
		return true
	case nil, bool:
		return true
	}
	return false // not a value encoding/json produces
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func (n *node) typeOK(v any) bool {
	var t jsonType
	switch x := v.(type) {
	case nil:
		t = tNull
	case bool:
		t = tBoolean
	case string:
		t = tString
	case []any:
		t = tArray
	case map[string]any:
		t = tObject
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
		t = tNumber
		// The library's integer is a number whose shortest decimal form is
		// whole; a float64 equal to its truncation always prints as one.
		if x == math.Trunc(x) {
			t |= tInteger
		}
	case json.Number:
		t = tNumber
		if isIntegerLiteral(string(x)) {
			t |= tInteger
		}
	default:
		return false
	}
	return n.types&t != 0
}

// isIntegerLiteral reports whether s is a JSON number without fraction or
// exponent. Others (1.0, 1e2) may be integers too; the checker leaves them to
// the library.
func isIntegerLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return s != "" && digits(s)
}

func (n *node) checkString(s string) bool {
	if n.minLength >= 0 || n.maxLength >= 0 {
		l := utf8.RuneCountInString(s)
		if n.minLength >= 0 && l < n.minLength || n.maxLength >= 0 && l > n.maxLength {
			return false
		}
	}
	if n.dateTime && !isDateTimeZ(s) {
		return false
	}
	for _, p := range n.patterns {
		if !p(s) {
			return false
		}
	}
	return true
}

// checkFloat checks the bounds of x. Bounds are integers exact in a float64,
// so comparing x itself agrees with the library, which compares the shortest
// decimal form of x exactly: that form lies strictly between the neighbours
// of x, so it is on the same side of an integer bound as x.
func (n *node) checkFloat(x float64) bool {
	return (n.minimum == nil || x >= *n.minimum) &&
		(n.maximum == nil || x <= *n.maximum) &&
		(n.exclMinimum == nil || x > *n.exclMinimum) &&
		(n.exclMaximum == nil || x < *n.exclMaximum)
}

// checkNumber checks the bounds of a json.Number, which the library compares
// exactly as a decimal. An integer literal within 2^53 is exact as a
// float64; any other literal passes only when its nearest float64 is strictly
// inside every bound (the literal lies between that float's neighbours).
func (n *node) checkNumber(num json.Number) bool {
	if n.minimum == nil && n.maximum == nil && n.exclMinimum == nil && n.exclMaximum == nil {
		return true
	}
	x, err := strconv.ParseFloat(string(num), 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return false
	}
	if isIntegerLiteral(string(num)) && math.Abs(x) <= 1<<53 {
		return n.checkFloat(x)
	}
	return (n.minimum == nil || x > *n.minimum) &&
		(n.maximum == nil || x < *n.maximum) &&
		(n.exclMinimum == nil || x > *n.exclMinimum) &&
		(n.exclMaximum == nil || x < *n.exclMaximum)
}

func (n *node) checkObject(obj map[string]any, lenient bool) bool {
	for _, r := range n.required {
		if _, ok := obj[r]; !ok {
			return false
		}
	}
	if n.additional == nil {
		// Members without a schema are not checked: look up the
		// properties, cheaper than ranging over the map.
		for _, p := range n.propList {
			if v, ok := obj[p.name]; ok && !p.node.check(v, lenient) {
				return false
			}
		}
		return true
	}
	for name, v := range obj {
		p := n.props[name]
		if p == nil {
			p = n.additional
		}
		if !p.check(v, lenient) {
			return false
		}
	}
	return true
}
