package schemacheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ErrUnsupported is returned by [Compile] for a schema that uses a keyword
// (or a form of one) the checker does not implement.
var ErrUnsupported = errors.New("schema has no fast check")

// Loader returns the JSON of the schema whose $id is url, or an error when
// url is not a schema the checker may read.
type Loader func(url string) ([]byte, error)

// Compile compiles the schema whose $id is url, reading it and the schemas
// it refers to with load. The error wraps [ErrUnsupported] when the schema,
// or one it refers to, uses a keyword the checker does not implement.
func Compile(url string, load Loader) (*Checker, error) {
	c := &compiler{load: load, docs: map[string]any{}, nodes: map[string]*node{}}
	root, err := c.compile(url, "")
	if err != nil {
		return nil, err
	}
	return &Checker{root: root}, nil
}

// compiler compiles schemas into nodes.
type compiler struct {
	load  Loader
	docs  map[string]any   // schema URL -> decoded schema
	nodes map[string]*node // URL#pointer -> node, so that $ref cycles end
}

// annotations are keywords with no effect on validation.
var annotations = map[string]bool{"title": true, "description": true, "$comment": true, "default": true, "examples": true, "$defs": true}

func (c *compiler) doc(url string) (any, error) {
	if d, ok := c.docs[url]; ok {
		return d, nil
	}
	b, err := c.load(url)
	if err != nil {
		return nil, fmt.Errorf("%w: $ref to %s: %v", ErrUnsupported, url, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var d any
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("schema %s: %w", url, err)
	}
	c.docs[url] = d
	return d, nil
}

// compile returns the node of the subschema at JSON pointer ptr of the
// schema at url.
func (c *compiler) compile(url, ptr string) (*node, error) {
	loc := url + "#" + ptr
	if n, ok := c.nodes[loc]; ok {
		return n, nil
	}
	d, err := c.doc(url)
	if err != nil {
		return nil, err
	}
	v, ok := ResolvePointer(d, ptr)
	if !ok {
		return nil, fmt.Errorf("%w: %s does not resolve", ErrUnsupported, loc)
	}
	n := &node{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	c.nodes[loc] = n
	switch s := v.(type) {
	case bool:
		n.never = !s
		return n, nil
	case map[string]any:
		if err := c.fill(n, url, ptr, s); err != nil {
			return nil, err
		}
		return n, nil
	}
	return nil, fmt.Errorf("%w: %s is not a schema", ErrUnsupported, loc)
}

// fill compiles the keywords of schema object s, at ptr of the schema at
// url, into n, in the order of their names, so that a schema is refused
// for the same keyword every time.
func (c *compiler) fill(n *node, url, ptr string, s map[string]any) error {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ok, err := c.keyword(n, url, ptr, k, s[k])
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: keyword %q at %s#%s is not supported in this form", ErrUnsupported, k, url, ptr)
		}
	}
	return nil
}

// keyword compiles keyword k of value v into n. It reports false for a
// keyword, or a form of one, the checker does not implement, and returns the
// error of a subschema that does not compile.
func (c *compiler) keyword(n *node, url, ptr, k string, v any) (bool, error) {
	at := ptr + "/" + escapePointer(k)
	switch k {
	case "$schema":
		return ptr == "" && v == "https://json-schema.org/draft/2020-12/schema", nil
	case "$id":
		return ptr == "" && v == url, nil
	case "x-extensible-enum":
		b, ok := v.(bool)
		n.extensible = b && plainPointer(ptr)
		return ok, nil
	case "type":
		return setType(n, v), nil
	case "enum":
		return setEnum(n, v), nil
	case "const":
		switch v.(type) {
		case string, bool, nil:
			n.hasConst, n.constVal = true, v
			return true, nil
		}
		return false, nil
	case "minLength", "maxLength", "minItems", "maxItems":
		return setCount(n, k, v), nil
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		return setBound(n, k, v), nil
	case "pattern":
		return setPattern(n, v), nil
	case "format":
		// The library asserts formats (Compiler.AssertFormat).
		n.dateTime = v == "date-time"
		return n.dateTime, nil
	case "required":
		list, ok := stringList(v)
		n.required = list
		return ok, nil
	case "properties":
		return c.properties(n, url, at, v)
	case "additionalProperties", "items":
		return c.subschema(n, url, at, k, v)
	case "allOf":
		return c.allOf(n, url, at, v)
	case "$ref":
		return c.ref(n, url, v)
	}
	// Anything else, x-message included: x-message replaces every finding
	// below it with one error, so an extensible enum below it is no longer
	// silent in Lenient mode.
	return annotations[k], nil
}

func setType(n *node, v any) bool {
	switch t := v.(type) {
	case string:
		n.types = typeNames[t]
	case []any:
		for _, e := range t {
			name, _ := e.(string)
			if typeNames[name] == 0 {
				return false
			}
			n.types |= typeNames[name]
		}
	}
	return n.types != 0
}

func setEnum(n *node, v any) bool {
	list, ok := stringList(v)
	n.enum = list
	return ok
}

// stringList returns v as a list of strings, and false when it is not one.
func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func setCount(n *node, k string, v any) bool {
	num, ok := v.(json.Number)
	i, err := strconv.Atoi(string(num))
	if !ok || err != nil || i < 0 {
		return false
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
	return true
}

// setBound sets a bound of numbers: only integer bounds exact in a float64
// (see checkFloat).
func setBound(n *node, k string, v any) bool {
	num, ok := v.(json.Number)
	i, err := strconv.ParseInt(string(num), 10, 64)
	if !ok || err != nil || i > 1<<53 || i < -(1<<53) {
		return false
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
	return true
}

func setPattern(n *node, v any) bool {
	p, ok := v.(string)
	if !ok {
		return false
	}
	switch p {
	case timestampPattern:
		n.patterns = append(n.patterns, matchTimestamp)
	case timestampMillisPattern:
		n.patterns = append(n.patterns, matchTimestampMillis)
	default:
		re, err := regexp.Compile(p)
		if err != nil {
			return false
		}
		n.patterns = append(n.patterns, re.MatchString)
	}
	return true
}

// properties compiles the subschema of each property at ptr, in the order of
// their names.
func (c *compiler) properties(n *node, url, ptr string, v any) (bool, error) {
	props, ok := v.(map[string]any)
	if !ok {
		return false, nil
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	n.props = make(map[string]*node, len(props))
	for _, name := range names {
		p, err := c.compile(url, ptr+"/"+escapePointer(name))
		if err != nil {
			return false, err
		}
		n.props[name] = p
		n.propList = append(n.propList, namedNode{name, p})
	}
	return true, nil
}

// subschema compiles additionalProperties or items (k), at ptr.
func (c *compiler) subschema(n *node, url, ptr, k string, v any) (bool, error) {
	switch v.(type) {
	case bool, map[string]any:
	default:
		return false, nil // items as an array is not 2020-12
	}
	sub, err := c.compile(url, ptr)
	if err != nil {
		return false, err
	}
	if k == "items" {
		n.items = sub
	} else {
		n.additional = sub
	}
	return true, nil
}

func (c *compiler) allOf(n *node, url, ptr string, v any) (bool, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return false, nil
	}
	for i := range list {
		sub, err := c.compile(url, ptr+"/"+strconv.Itoa(i))
		if err != nil {
			return false, err
		}
		n.all = append(n.all, sub)
	}
	return true, nil
}

// ref compiles a $ref: to a JSON pointer in the schema at url or in another
// schema, by absolute URL or by a name relative to url's directory. Anchors
// and percent-encoded pointers are not supported.
func (c *compiler) ref(n *node, url string, v any) (bool, error) {
	ref, ok := v.(string)
	if !ok {
		return false, nil
	}
	file, frag, _ := strings.Cut(ref, "#")
	target := url
	if file != "" {
		if strings.Contains(file, ":") || strings.HasPrefix(file, "/") {
			target = file
		} else {
			target = url[:strings.LastIndex(url, "/")+1] + file
		}
	}
	if frag != "" && !strings.HasPrefix(frag, "/") || strings.Contains(frag, "%") {
		return false, nil
	}
	sub, err := c.compile(target, frag)
	if err != nil {
		return false, err
	}
	n.all = append(n.all, sub)
	return true, nil
}

// plainPointer reports whether the library writes the schema location ptr
// as it is. It percent-encodes each token (url.PathEscape), while package
// spec recognises an extensible enum by its plain pointer: an extensible
// enum at a location that needs encoding is not recognised, and its unknown
// values are reported as errors, so the checker must refuse them too.
func plainPointer(ptr string) bool {
	for _, tok := range strings.Split(ptr, "/") {
		if url.PathEscape(tok) != tok {
			return false
		}
	}
	return true
}

// ResolvePointer returns the value at RFC 6901 pointer ptr ("" is the whole
// document) in doc, a document decoded into any, and false when there is
// none. spec.ResolvePointer is this function (spec imports this package,
// not the reverse).
func ResolvePointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	v := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
