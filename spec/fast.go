package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// ErrNoFastPath is returned by [NewChecker] for a schema that uses a keyword
// (or a form of one) the fast checker does not implement.
var ErrNoFastPath = errors.New("spec: schema has no fast path")

// Checker is a fast validator for one embedded schema in one [Mode], compiled
// from the schema's JSON into a small tree of checks. It implements only the
// keywords the record schemas use and refuses at compile time any schema with
// another one.
//
// Its answer is sound, not complete: Check reports true only when
// [ValidateValue] with the same mode would return no findings at all (in
// [Strict] mode, not even a warning), and it may report false for a document
// the library accepts (a number written as json.Number with a fraction or
// exponent, for example). Callers use it as a filter: on true the document is
// valid; on false they call [ValidateValue] for the findings. Checker never
// produces findings itself, so every message comes from the library.
//
// A Checker is safe for concurrent use.
type Checker struct {
	name    string
	root    *fnode
	lenient bool
}

// NewChecker compiles schema schemaName for [Checker.Check] in the mode of
// opts ([Strict] by default). The error wraps [ErrUnknownSchema] for a schema
// that does not exist and [ErrNoFastPath] for one that uses a keyword the
// checker does not implement.
func NewChecker(schemaName string, opts ...ValidateOption) (*Checker, error) {
	cfg := validateConfig{mode: Strict}
	for _, o := range opts {
		o(&cfg)
	}
	if schemaName == "common" {
		return nil, fmt.Errorf("%w %q", ErrUnknownSchema, schemaName)
	}
	if _, err := SchemaJSON(schemaName); err != nil {
		return nil, err
	}
	fc := &fastCompiler{docs: map[string]any{}, nodes: map[string]*fnode{}}
	root, err := fc.compile(SchemaBaseURL+schemaName+".json", "")
	if err != nil {
		return nil, fmt.Errorf("spec: fast check of schema %s: %w", schemaName, err)
	}
	return &Checker{name: schemaName, root: root, lenient: cfg.mode == Lenient}, nil
}

// Check reports whether inst, a document decoded into any by encoding/json
// (numbers as float64 or json.Number), certainly matches the schema: when it
// returns true, [ValidateValue] would return no findings. A nil Checker
// reports false.
func (c *Checker) Check(inst any) bool {
	if c == nil {
		return false
	}
	return c.root.check(inst, c.lenient)
}

// Schema returns the name of the schema c checks.
func (c *Checker) Schema() string { return c.name }

var checkers sync.Map // checkerKey -> *Checker (nil when the schema has no fast path)

type checkerKey struct {
	name string
	mode Mode
}

// Check is [Checker.Check] with a checker compiled once per schema and mode
// and kept: it reports true only when [ValidateValue] of schemaName with the
// same options would return no findings. It reports false for an unknown
// schema or one without a fast path.
func Check(schemaName string, inst any, opts ...ValidateOption) bool {
	cfg := validateConfig{mode: Strict}
	for _, o := range opts {
		o(&cfg)
	}
	k := checkerKey{schemaName, cfg.mode}
	c, ok := checkers.Load(k)
	if !ok {
		ch, err := NewChecker(schemaName, opts...)
		if err != nil {
			ch = nil
		}
		c, _ = checkers.LoadOrStore(k, ch)
	}
	return c.(*Checker).Check(inst)
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

// fnode is one compiled subschema. Every check but the type, const and enum
// applies only to values of its kind, as in JSON Schema.
type fnode struct {
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
	props      map[string]*fnode
	propList   []namedNode // props, sorted by name
	required   []string
	additional *fnode // nil: any

	// arrays
	items              *fnode
	minItems, maxItems int // -1: none

	all []*fnode // $ref and allOf
}

func (n *fnode) check(v any, lenient bool) bool {
	if n.never {
		return false
	}
	if n.types != 0 && !n.typeOK(v) {
		return false
	}
	if n.hasConst {
		switch c := n.constVal.(type) {
		case string:
			if s, ok := v.(string); !ok || s != c {
				return false
			}
		case bool:
			if b, ok := v.(bool); !ok || b != c {
				return false
			}
		case nil:
			if v != nil {
				return false
			}
		}
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
	switch x := v.(type) {
	case string:
		if !n.checkString(x) {
			return false
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || !n.checkFloat(x) {
			return false
		}
	case json.Number:
		if !n.checkNumber(x) {
			return false
		}
	case map[string]any:
		if !n.checkObject(x, lenient) {
			return false
		}
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
	case nil, bool:
	default:
		return false // not a value encoding/json produces
	}
	for _, s := range n.all {
		if !s.check(v, lenient) {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func (n *fnode) typeOK(v any) bool {
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
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (n *fnode) checkString(s string) bool {
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
func (n *fnode) checkFloat(x float64) bool {
	return (n.minimum == nil || x >= *n.minimum) &&
		(n.maximum == nil || x <= *n.maximum) &&
		(n.exclMinimum == nil || x > *n.exclMinimum) &&
		(n.exclMaximum == nil || x < *n.exclMaximum)
}

// checkNumber checks the bounds of a json.Number, which the library compares
// exactly as a decimal. An integer literal within 2^53 is exact as a
// float64; any other literal passes only when its nearest float64 is strictly
// inside every bound (the literal lies between that float's neighbours).
func (n *fnode) checkNumber(num json.Number) bool {
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

func (n *fnode) checkObject(obj map[string]any, lenient bool) bool {
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

// isDateTimeZ reports whether s is a date-time the library's date-time
// format accepts, in the only form the checker knows:
// YYYY-MM-DD, T or t, hh:mm:ss, an optional fraction, Z, with the date valid
// (as time.Parse checks it) and no leap second. Offsets and a lowercase z,
// which the format accepts too, are left to the library.
func isDateTimeZ(s string) bool {
	if len(s) < 20 || s[len(s)-1] != 'Z' {
		return false
	}
	if !digits(s[0:4]) || s[4] != '-' || !digits(s[5:7]) || s[7] != '-' || !digits(s[8:10]) ||
		(s[10] != 'T' && s[10] != 't') ||
		!digits(s[11:13]) || s[13] != ':' || !digits(s[14:16]) || s[16] != ':' || !digits(s[17:19]) {
		return false
	}
	if rest := s[19 : len(s)-1]; rest != "" && (rest[0] != '.' || len(rest) < 2 || !digits(rest[1:])) {
		return false
	}
	year, month, day := num(s[0:4]), num(s[5:7]), num(s[8:10])
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) {
		return false
	}
	return num(s[11:13]) <= 23 && num(s[14:16]) <= 59 && num(s[17:19]) <= 59
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func num(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// The patterns of common.json's timestamp and timestampMillis, matched by
// hand: a regular expression costs more than the rest of a record's check.
// TestTimestampPatternMatchers checks them against regexp.
const (
	timestampPattern       = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9](\.[0-9]{1,9})?Z$`
	timestampMillisPattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9]\.[0-9]{3}Z$`
)

func matchTimestamp(s string) bool {
	if len(s) < 20 || !timestampPrefix(s) || s[len(s)-1] != 'Z' {
		return false
	}
	frac := s[19 : len(s)-1]
	return frac == "" || frac[0] == '.' && len(frac) >= 2 && len(frac) <= 10 && digits(frac[1:])
}

func matchTimestampMillis(s string) bool {
	return len(s) == 24 && timestampPrefix(s) && s[19] == '.' && digits(s[20:23]) && s[23] == 'Z'
}

// timestampPrefix matches [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9]
// at the start of s, which has at least 19 bytes.
func timestampPrefix(s string) bool {
	return digits(s[0:4]) && s[4] == '-' && digits(s[5:7]) && s[7] == '-' && digits(s[8:10]) && s[10] == 'T' &&
		digits(s[11:13]) && s[13] == ':' && digits(s[14:16]) && s[16] == ':' && s[17] >= '0' && s[17] <= '5' && digits(s[18:19])
}

// plainPointer reports whether the library writes the schema location ptr
// as it is. It percent-encodes each token (url.PathEscape), while
// registry.extensible is keyed by the plain pointer: an extensible enum at
// a location that needs encoding is not recognised by ValidateValue, which
// reports its unknown values as errors, so the checker must too.
func plainPointer(ptr string) bool {
	for _, tok := range strings.Split(ptr, "/") {
		if url.PathEscape(tok) != tok {
			return false
		}
	}
	return true
}

type namedNode struct {
	name string
	node *fnode
}

// fastCompiler compiles schemas into fnodes.
type fastCompiler struct {
	docs  map[string]any    // schema URL -> decoded schema
	nodes map[string]*fnode // URL#pointer -> node, so that $ref cycles end
}

// annotations are keywords with no effect on validation.
var annotations = map[string]bool{"title": true, "description": true, "$comment": true, "default": true, "examples": true, "$defs": true}

func (fc *fastCompiler) doc(url string) (any, error) {
	if d, ok := fc.docs[url]; ok {
		return d, nil
	}
	name, ok := strings.CutPrefix(url, SchemaBaseURL)
	if !ok || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%w: $ref to %s, not an embedded schema", ErrNoFastPath, url)
	}
	b, err := schemaFS.ReadFile("schemas/" + name)
	if err != nil {
		return nil, fmt.Errorf("%w: $ref to %s, not an embedded schema", ErrNoFastPath, url)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var d any
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	fc.docs[url] = d
	return d, nil
}

// compile returns the node of the subschema at JSON pointer ptr of the
// schema at url.
func (fc *fastCompiler) compile(url, ptr string) (*fnode, error) {
	loc := url + "#" + ptr
	if n, ok := fc.nodes[loc]; ok {
		return n, nil
	}
	d, err := fc.doc(url)
	if err != nil {
		return nil, err
	}
	v, ok := ResolvePointer(d, ptr)
	if !ok {
		return nil, fmt.Errorf("%w: %s does not resolve", ErrNoFastPath, loc)
	}
	n := &fnode{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	fc.nodes[loc] = n
	switch s := v.(type) {
	case bool:
		n.never = !s
		return n, nil
	case map[string]any:
		if err := fc.fill(n, url, ptr, s); err != nil {
			return nil, err
		}
		return n, nil
	}
	return nil, fmt.Errorf("%w: %s is not a schema", ErrNoFastPath, loc)
}

func (fc *fastCompiler) fill(n *fnode, url, ptr string, s map[string]any) error {
	loc := url + "#" + ptr
	refuse := func(k string) error {
		return fmt.Errorf("%w: keyword %q at %s is not supported in this form", ErrNoFastPath, k, loc)
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the same refusal every time
	for _, k := range keys {
		v := s[k]
		at := ptr + "/" + escapePointer(k)
		switch {
		case annotations[k]:
		case k == "$schema":
			if ptr != "" || v != "https://json-schema.org/draft/2020-12/schema" {
				return refuse(k)
			}
		case k == "$id":
			if ptr != "" || v != url {
				return refuse(k)
			}
		case k == "x-extensible-enum":
			b, ok := v.(bool)
			if !ok {
				return refuse(k)
			}
			n.extensible = b && plainPointer(ptr)
		case k == "type":
			switch t := v.(type) {
			case string:
				if typeNames[t] == 0 {
					return refuse(k)
				}
				n.types = typeNames[t]
			case []any:
				for _, e := range t {
					name, _ := e.(string)
					if typeNames[name] == 0 {
						return refuse(k)
					}
					n.types |= typeNames[name]
				}
				if n.types == 0 {
					return refuse(k)
				}
			default:
				return refuse(k)
			}
		case k == "enum":
			list, ok := v.([]any)
			if !ok {
				return refuse(k)
			}
			n.enum = make([]string, 0, len(list))
			for _, e := range list {
				str, ok := e.(string)
				if !ok {
					return refuse(k)
				}
				n.enum = append(n.enum, str)
			}
		case k == "const":
			switch v.(type) {
			case string, bool, nil:
				n.hasConst, n.constVal = true, v
			default:
				return refuse(k)
			}
		case k == "minLength", k == "maxLength", k == "minItems", k == "maxItems":
			num, ok := v.(json.Number)
			i, err := strconv.Atoi(string(num))
			if !ok || err != nil || i < 0 {
				return refuse(k)
			}
			switch k {
			case "minLength":
				n.minLength = i
			case "maxLength":
				n.maxLength = i
			case "minItems":
				n.minItems = i
			default:
				n.maxItems = i
			}
		case k == "minimum", k == "maximum", k == "exclusiveMinimum", k == "exclusiveMaximum":
			// Only integer bounds exact in a float64: see checkFloat.
			num, ok := v.(json.Number)
			i, err := strconv.ParseInt(string(num), 10, 64)
			if !ok || err != nil || i > 1<<53 || i < -(1<<53) {
				return refuse(k)
			}
			f := float64(i)
			switch k {
			case "minimum":
				n.minimum = &f
			case "maximum":
				n.maximum = &f
			case "exclusiveMinimum":
				n.exclMinimum = &f
			default:
				n.exclMaximum = &f
			}
		case k == "pattern":
			p, ok := v.(string)
			if !ok {
				return refuse(k)
			}
			switch p {
			case timestampPattern:
				n.patterns = append(n.patterns, matchTimestamp)
			case timestampMillisPattern:
				n.patterns = append(n.patterns, matchTimestampMillis)
			default:
				re, err := regexp.Compile(p)
				if err != nil {
					return refuse(k)
				}
				n.patterns = append(n.patterns, re.MatchString)
			}
		case k == "format":
			// The library asserts formats (Compiler.AssertFormat).
			if v != "date-time" {
				return refuse(k)
			}
			n.dateTime = true
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return refuse(k)
			}
			names := make([]string, 0, len(props))
			for name := range props {
				names = append(names, name)
			}
			sort.Strings(names) // the same refusal every time
			n.props = make(map[string]*fnode, len(props))
			for _, name := range names {
				p, err := fc.compile(url, at+"/"+escapePointer(name))
				if err != nil {
					return err
				}
				n.props[name] = p
				n.propList = append(n.propList, namedNode{name, p})
			}
		case k == "required":
			list, ok := v.([]any)
			if !ok {
				return refuse(k)
			}
			for _, e := range list {
				str, ok := e.(string)
				if !ok {
					return refuse(k)
				}
				n.required = append(n.required, str)
			}
		case k == "additionalProperties", k == "items":
			switch v.(type) {
			case bool, map[string]any:
			default:
				return refuse(k) // items as an array is not 2020-12
			}
			sub, err := fc.compile(url, at)
			if err != nil {
				return err
			}
			if k == "items" {
				n.items = sub
			} else {
				n.additional = sub
			}
		case k == "allOf":
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return refuse(k)
			}
			for i := range list {
				sub, err := fc.compile(url, at+"/"+strconv.Itoa(i))
				if err != nil {
					return err
				}
				n.all = append(n.all, sub)
			}
		case k == "$ref":
			ref, ok := v.(string)
			if !ok {
				return refuse(k)
			}
			file, frag, _ := strings.Cut(ref, "#")
			target := url
			if file != "" {
				if strings.Contains(file, ":") || strings.HasPrefix(file, "/") {
					target = file
				} else {
					target = SchemaBaseURL + file
				}
			}
			if frag != "" && !strings.HasPrefix(frag, "/") {
				return refuse(k) // an anchor
			}
			if strings.Contains(frag, "%") {
				return refuse(k) // percent-encoded pointer
			}
			sub, err := fc.compile(target, frag)
			if err != nil {
				return err
			}
			n.all = append(n.all, sub)
		default:
			// Anything else, x-message included: x-message replaces every
			// finding below it with one error, so an extensible enum below
			// it is no longer silent in Lenient mode.
			return refuse(k)
		}
	}
	return nil
}
