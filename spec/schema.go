package spec

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/aiusage/kit/spec/internal/schemacheck"
)

// SchemaBaseURL is the base of every schema's absolute $id.
const SchemaBaseURL = "https://schemas.aiusage.dev/v1/"

//go:embed schemas/*.json
var schemaFS embed.FS

// SchemaFS returns the embedded JSON Schemas, one file NAME.json per schema.
func SchemaFS() fs.FS {
	sub, _ := fs.Sub(schemaFS, "schemas")
	return sub
}

// listSchemas maps a record schema to the schema of its list envelope.
var listSchemas = map[string]string{
	"conversation": "conversation-list",
	"assistant":    "assistant-list",
	"event":        "event-list",
	"usage-bucket": "usage-list",
}

// ListSchema returns the name of the list-envelope schema whose items are
// records of schema name, and false when name has none.
func ListSchema(name string) (string, bool) {
	l, ok := listSchemas[name]
	return l, ok
}

// Level is the severity of a [Finding].
type Level string

const (
	// LevelError makes a document invalid.
	LevelError Level = "error"
	// LevelWarning reports something a later version of the specification may
	// allow, such as an enum value this version does not know.
	LevelWarning Level = "warning"
)

// Finding is one problem of a validated document.
type Finding struct {
	// Pointer is the RFC 6901 JSON pointer of the failing value ("" is the
	// whole document). For a missing or unknown property it points at the
	// property itself.
	Pointer string `json:"pointer"`
	Level   Level  `json:"level"`
	Message string `json:"message"`
	// Keyword is the JSON Schema keyword that failed, for example "required".
	Keyword string `json:"keyword"`
}

func (f Finding) String() string {
	if f.Level == LevelWarning {
		return f.Pointer + ": warning: " + f.Message
	}
	return f.Pointer + ": " + f.Message
}

// Valid reports whether findings hold no error (warnings are allowed).
func Valid(findings []Finding) bool {
	for _, f := range findings {
		if f.Level == LevelError {
			return false
		}
	}
	return true
}

// Mode decides how values outside an extensible enum are reported. The
// schemas mark such enums with "x-extensible-enum": true: the AI usage data
// specification lets later versions add values.
type Mode int

const (
	// Strict reports a value outside an extensible enum as a warning. The
	// conformance suite uses it.
	Strict Mode = iota
	// Lenient accepts values outside an extensible enum silently. The consumer
	// uses it: it keeps unknown values.
	Lenient
)

// ValidateOption configures [Validate].
type ValidateOption func(*validateConfig)

type validateConfig struct{ mode Mode }

// WithMode sets the enum mode; the default is [Strict].
func WithMode(m Mode) ValidateOption { return func(c *validateConfig) { c.mode = m } }

// ErrUnknownSchema is returned for a schema name that does not exist.
var ErrUnknownSchema = errors.New("spec: unknown schema")

// ErrInvalidJSON is returned when the document is not JSON.
var ErrInvalidJSON = errors.New("spec: invalid JSON")

type registry struct {
	schemas    map[string]*jsonschema.Schema
	fast       map[string]*schemacheck.Checker // the schemas with a fast check
	extensible map[string]bool                 // schema location -> enum is extensible
	messages   map[string]string               // schema location -> x-message
	timestamps map[string]bool                 // schema location -> timestamp (true: millis)
	names      []string
}

var (
	regOnce sync.Once
	reg     *registry
	regErr  error
)

func load() (*registry, error) {
	regOnce.Do(func() { reg, regErr = compile() })
	return reg, regErr
}

func compile() (*registry, error) {
	r := &registry{
		schemas:    map[string]*jsonschema.Schema{},
		fast:       map[string]*schemacheck.Checker{},
		extensible: map[string]bool{},
		messages:   map[string]string{},
		timestamps: map[string]bool{},
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noRemote{})
	entries, err := fs.ReadDir(schemaFS, "schemas")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".json")
		b, err := schemaFS.ReadFile(path.Join("schemas", e.Name()))
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("spec: schema %s: %w", name, err)
		}
		id := SchemaBaseURL + e.Name()
		if m, _ := doc.(map[string]any); m == nil || m["$id"] != id {
			return nil, fmt.Errorf("spec: schema %s: $id must be %s", name, id)
		}
		if err := c.AddResource(id, doc); err != nil {
			return nil, fmt.Errorf("spec: schema %s: %w", name, err)
		}
		r.annotate(id, "", doc)
		if name != "common" {
			r.names = append(r.names, name)
		}
	}
	for _, name := range r.names {
		s, err := c.Compile(SchemaBaseURL + name + ".json")
		if err != nil {
			return nil, fmt.Errorf("spec: schema %s: %w", name, err)
		}
		r.schemas[name] = s
		if fc, err := schemacheck.Compile(SchemaBaseURL+name+".json", embedded); err == nil {
			r.fast[name] = fc
		}
	}
	r.timestamps[SchemaBaseURL+"common.json#/$defs/timestamp"] = false
	r.timestamps[SchemaBaseURL+"common.json#/$defs/timestampMillis"] = true
	sort.Strings(r.names)
	return r, nil
}

// annotate records the kit's x- keywords of every subschema by location.
func (r *registry) annotate(id, ptr string, v any) {
	switch v := v.(type) {
	case map[string]any:
		loc := id + "#" + ptr
		if v["x-extensible-enum"] == true {
			r.extensible[loc] = true
		}
		if m, ok := v["x-message"].(string); ok {
			r.messages[loc] = m
		}
		for k, child := range v {
			r.annotate(id, ptr+"/"+escapePointer(k), child)
		}
	case []any:
		for i, child := range v {
			r.annotate(id, ptr+"/"+strconv.Itoa(i), child)
		}
	}
}

// embedded returns the embedded schema whose $id is url.
func embedded(url string) ([]byte, error) {
	name, ok := strings.CutPrefix(url, SchemaBaseURL)
	if !ok || strings.Contains(name, "/") {
		return nil, fmt.Errorf("spec: schema %s is not embedded", url)
	}
	return schemaFS.ReadFile("schemas/" + name)
}

// noRemote refuses to fetch anything: every schema is embedded.
type noRemote struct{}

func (noRemote) Load(url string) (any, error) {
	return nil, fmt.Errorf("spec: schema %s is not embedded and will not be fetched", url)
}

// Schemas returns the names of the embedded schemas, sorted. "common", which
// only holds shared definitions, is not one of them.
func Schemas() []string {
	r, err := load()
	if err != nil {
		return nil
	}
	return append([]string(nil), r.names...)
}

// SchemaJSON returns the JSON text of schema name.
func SchemaJSON(name string) ([]byte, error) {
	b, err := schemaFS.ReadFile("schemas/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownSchema, name)
	}
	return b, nil
}

// Validate validates the JSON document data against schema schemaName and
// returns its findings, sorted by pointer. The error is non-nil only when the
// schema does not exist ([ErrUnknownSchema]) or data is not JSON
// ([ErrInvalidJSON]). Use [Valid] to tell whether the findings hold an error.
//
// Beyond JSON Schema, Validate checks that every timestamp is RFC 3339 in UTC
// with an uppercase Z ([CheckTimestamp]), and reports a value outside an
// extensible enum as a warning ([Strict], the default) or not at all
// ([Lenient]).
func Validate(schemaName string, data []byte, opts ...ValidateOption) ([]Finding, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, jsonErrorText(err))
	}
	return ValidateValue(schemaName, inst, opts...)
}

// ValidateValue is [Validate] for an already decoded document, as produced by
// encoding/json into an any (numbers may be float64 or json.Number).
func ValidateValue(schemaName string, inst any, opts ...ValidateOption) ([]Finding, error) {
	cfg := validateConfig{mode: Strict}
	for _, o := range opts {
		o(&cfg)
	}
	r, err := load()
	if err != nil {
		return nil, err
	}
	s, ok := r.schemas[schemaName]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownSchema, schemaName, strings.Join(r.names, ", "))
	}
	if r.fast[schemaName].Check(inst, cfg.mode == Lenient) {
		return nil, nil // the library would find nothing either
	}
	err = s.Validate(inst)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	var out []Finding
	r.collect(ve, inst, cfg, &out)
	return dedupe(out), nil
}

var printer = message.NewPrinter(language.English)

func (r *registry) collect(ve *jsonschema.ValidationError, inst any, cfg validateConfig, out *[]Finding) {
	ptr := pointer(ve.InstanceLocation)
	loc := ve.SchemaURL
	if isTS, ok := r.timestamps[loc]; ok {
		// One clear message for every way a timestamp can be wrong.
		check := CheckTimestamp
		if isTS {
			check = CheckTimestampMillis
		}
		msg := "must be an RFC 3339 timestamp in UTC with Z"
		if s, ok := lookup(inst, ve.InstanceLocation).(string); ok {
			if err := check(s); err != nil {
				msg = err.Error()
			}
		}
		*out = append(*out, Finding{Pointer: ptr, Level: LevelError, Message: msg, Keyword: "format"})
		return
	}
	if msg, ok := r.messages[loc]; ok {
		*out = append(*out, Finding{Pointer: ptr, Level: LevelError, Message: msg, Keyword: keyword(ve.ErrorKind)})
		return
	}
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			r.collect(c, inst, cfg, out)
		}
		return
	}
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		for _, p := range k.Missing {
			*out = append(*out, Finding{Pointer: ptr + "/" + escapePointer(p), Level: LevelError,
				Message: fmt.Sprintf("required property %q is missing", p), Keyword: "required"})
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			*out = append(*out, Finding{Pointer: ptr + "/" + escapePointer(p), Level: LevelError,
				Message: fmt.Sprintf("unknown property %q is not allowed", p), Keyword: "additionalProperties"})
		}
	case *kind.Enum:
		f := Finding{Pointer: ptr, Level: LevelError, Message: k.LocalizedString(printer), Keyword: "enum"}
		if r.extensible[loc] {
			if cfg.mode == Lenient {
				return
			}
			f.Level = LevelWarning
			f.Message = fmt.Sprintf("%v is not a value known to this version of the specification (%s); later versions may add it",
				display(k.Got), strings.TrimPrefix(k.LocalizedString(printer), "value must be one of "))
		}
		*out = append(*out, f)
	default:
		*out = append(*out, Finding{Pointer: ptr, Level: LevelError, Message: ve.ErrorKind.LocalizedString(printer), Keyword: keyword(ve.ErrorKind)})
	}
}

func keyword(k jsonschema.ErrorKind) string { return strings.Join(k.KeywordPath(), "/") }

func display(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func dedupe(fs []Finding) []Finding {
	seen := map[Finding]bool{}
	out := fs[:0]
	for _, f := range fs {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

// ResolvePointer returns the value at RFC 6901 pointer ptr ("" is the whole
// document) in doc, a document decoded into any (as by encoding/json), and
// false when there is none.
func ResolvePointer(doc any, ptr string) (any, bool) { return schemacheck.ResolvePointer(doc, ptr) }

func lookup(v any, tokens []string) any {
	for _, t := range tokens {
		switch c := v.(type) {
		case map[string]any:
			v = c[t]
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapePointer(t))
	}
	return b.String()
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func jsonErrorText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v at byte %d", se, se.Offset)
	}
	return err.Error()
}
