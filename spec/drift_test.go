package spec_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

// wirePair ties a schema to the Go type that carries it on the wire, with
// fully populated values of that type.
type wirePair struct {
	schema string
	typ    reflect.Type
	values []any
	// goOnly lists the paths of Go fields the schema intentionally lacks.
	goOnly []string
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

func wirePairs() []wirePair {
	fullConvList := spec.List[spec.Conversation]{Data: []spec.Conversation{fullConversation(0), fullConversation(1)}, HasMore: true, NextCursor: cursor("Y29udl8wMDAwMDE")}
	return []wirePair{
		{schema: "conversation", typ: typeOf[spec.Conversation](), values: []any{fullConversation(0)}},
		// estimatedCost and dailyCost are metrics the kit's collected views
		// add, which the interface's schema leaves open (its metrics take
		// any member).
		{schema: "usage-bucket", typ: typeOf[spec.UsageBucket](), values: []any{fullUsageBucket()},
			goOnly: []string{"/metrics/estimatedCost", "/metrics/dailyCost"}},
		{schema: "assistant", typ: typeOf[spec.Assistant](), values: []any{fullAssistant()}},
		{schema: "event", typ: typeOf[spec.Event](), values: []any{fullEvent()}},
		{schema: "conversation-list", typ: typeOf[spec.List[spec.Conversation]](), values: []any{fullConvList}},
		{schema: "usage-list", typ: typeOf[spec.List[spec.UsageBucket]](), values: []any{spec.List[spec.UsageBucket]{Data: []spec.UsageBucket{fullUsageBucket()}, HasMore: true, NextCursor: cursor("dXNhZ2UtMg")}},
			goOnly: []string{"/data/*/metrics/estimatedCost", "/data/*/metrics/dailyCost"}},
		{schema: "assistant-list", typ: typeOf[spec.List[spec.Assistant]](), values: []any{spec.List[spec.Assistant]{Data: []spec.Assistant{fullAssistant()}, HasMore: true, NextCursor: cursor("YXNzdC0y")}}},
		{schema: "event-list", typ: typeOf[spec.List[spec.Event]](), values: []any{spec.List[spec.Event]{Data: []spec.Event{fullEvent()}, HasMore: true, NextCursor: cursor("ZXZ0LTI")}}},
		{schema: "list-envelope", typ: typeOf[spec.List[json.RawMessage]](), values: []any{spec.List[json.RawMessage]{Data: []json.RawMessage{json.RawMessage(`{"id":"rec_1"}`)}, HasMore: true, NextCursor: cursor("b3BhcXVl")}}},
		{schema: "problem", typ: typeOf[spec.Problem](), values: []any{fullProblem()}},
		{schema: "organisation", typ: typeOf[spec.Organisation](), values: []any{fullOrganisation()}},
		{schema: "organisation-list", typ: typeOf[[]spec.Organisation](), values: []any{[]spec.Organisation{fullOrganisation()}}},
		{schema: "agent", typ: typeOf[spec.Agent](), values: []any{fullAgent()}},
		{schema: "agent-list", typ: typeOf[[]spec.Agent](), values: []any{[]spec.Agent{fullAgent(), {ID: agentID2, Name: "Data protection agent (US)", Type: spec.AgentTypeDataProtection, InstructionCount: 100}}}},
		{schema: "trigger", typ: typeOf[spec.Trigger](), values: anys(fullTriggers())},
		{schema: "instruction", typ: typeOf[spec.Instruction](), values: anys(fullInstructions())},
		{schema: "instruction-create", typ: typeOf[spec.InstructionCreate](), values: anys(fullInstructionCreates())},
		{schema: "instruction-patch", typ: typeOf[spec.InstructionPatch](), values: anys(fullInstructionPatches())},
		{schema: "instruction-list", typ: typeOf[spec.InstructionList](), values: []any{fullInstructionList()}},
		{schema: "review-task", typ: typeOf[spec.ReviewTask](), values: []any{fullReviewTask()}},
		{schema: "review-task-create", typ: typeOf[spec.ReviewTaskCreate](), values: []any{fullReviewTaskCreate()}},
		{schema: "review-task-list", typ: typeOf[spec.ReviewTaskList](), values: []any{fullReviewTaskList()}},
		// A listed webhook never shows its secret: the only difference between
		// webhook.json and the Go type.
		{schema: "webhook", typ: typeOf[spec.Webhook](), values: []any{fullWebhook()}, goOnly: []string{"/secret"}},
		// Nor does the answer of its creation carry the failure count.
		{schema: "webhook-created", typ: typeOf[spec.Webhook](), values: []any{fullWebhookCreated()}, goOnly: []string{"/consecutiveFailures"}},
		{schema: "webhook-create", typ: typeOf[spec.WebhookCreate](), values: []any{fullWebhookCreate()}},
		{schema: "webhook-list", typ: typeOf[spec.WebhookList](), values: []any{spec.WebhookList{Data: []spec.Webhook{fullWebhook()}}}, goOnly: []string{"/data/*/secret"}},
		{schema: "webhook-delivery", typ: typeOf[spec.WebhookDelivery](), values: []any{fullWebhookDelivery()}},
		{schema: "review-error", typ: typeOf[spec.ReviewError](), values: []any{fullReviewError()}},
		{schema: "export-manifest", typ: typeOf[spec.ExportManifest](), values: []any{fullExportManifest()}},
		{schema: "export-index", typ: typeOf[spec.ExportIndex](), values: []any{fullExportIndex()}},
		{schema: "push-delivery", typ: typeOf[spec.PushDelivery](), values: []any{fullPushDelivery()}},
	}
}

func anys[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

func TestWirePairsCoverEverySchema(t *testing.T) {
	t.Parallel()
	var paired []string
	for _, p := range wirePairs() {
		paired = append(paired, p.schema)
	}
	sort.Strings(paired)
	require.Equal(t, spec.Schemas(), paired, "every schema needs a Go type in wirePairs, and every pair an existing schema")
}

// --- walking the schemas ---

// snode is a subschema together with the file it lives in, so that relative
// $refs resolve.
type snode struct {
	file string
	v    map[string]any
}

type schemaSet map[string]any // file name -> decoded schema

func loadSchemaFiles(t *testing.T) schemaSet {
	t.Helper()
	set := schemaSet{}
	fsys := spec.SchemaFS()
	entries, err := fs.ReadDir(fsys, ".")
	require.NoError(t, err)
	for _, e := range entries {
		b, err := fs.ReadFile(fsys, e.Name())
		require.NoError(t, err)
		var v any
		require.NoError(t, json.Unmarshal(b, &v), e.Name())
		set[e.Name()] = v
	}
	return set
}

// resolve follows $ref (another file, or a fragment of the current one).
func (s schemaSet) resolve(t *testing.T, from, ref string) snode {
	t.Helper()
	file, frag, _ := strings.Cut(ref, "#")
	if file == "" {
		file = from
	}
	v, ok := s[file]
	require.Truef(t, ok, "%s: $ref %q names no schema file", from, ref)
	if frag != "" {
		for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			m, ok := v.(map[string]any)
			require.Truef(t, ok, "%s: $ref %q does not resolve", from, ref)
			v, ok = m[tok]
			require.Truef(t, ok, "%s: $ref %q does not resolve", from, ref)
		}
	}
	m, ok := v.(map[string]any)
	require.Truef(t, ok, "%s: $ref %q is not an object schema", from, ref)
	return snode{file: file, v: m}
}

// expand returns n and every subschema that applies to the same instance:
// $ref targets, allOf, anyOf, oneOf, then and else (not if: it is a condition,
// not a declaration). base reports whether the subschema always applies
// (n itself, $ref, allOf), which is what makes its "required" unconditional.
func (s schemaSet) expand(t *testing.T, n snode, base bool, visit func(n snode, base bool)) {
	t.Helper()
	visit(n, base)
	if ref, ok := n.v["$ref"].(string); ok {
		s.expand(t, s.resolve(t, n.file, ref), base, visit)
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		subs, _ := n.v[kw].([]any)
		for _, sub := range subs {
			if m, ok := sub.(map[string]any); ok {
				s.expand(t, snode{n.file, m}, base && kw == "allOf", visit)
			}
		}
	}
	for _, kw := range []string{"then", "else"} {
		if m, ok := n.v[kw].(map[string]any); ok {
			s.expand(t, snode{n.file, m}, false, visit)
		}
	}
}

// level is what the schemas say about one instance location.
type level struct {
	props       map[string][]snode // property -> the subschemas that describe it
	items       []snode
	required    map[string]bool // unconditional
	condRequire map[string]bool // required only under then/else
}

func (s schemaSet) level(t *testing.T, nodes []snode) level {
	t.Helper()
	l := level{props: map[string][]snode{}, required: map[string]bool{}, condRequire: map[string]bool{}}
	for _, n := range nodes {
		s.expand(t, n, true, func(n snode, base bool) {
			// A conditional branch declares properties only when it is a
			// closed shape of its own (as trigger's then-branches); otherwise
			// it only constrains properties declared elsewhere (as
			// instruction's then on allowRedaction), and counting it would
			// hide a property missing from the schema's properties.
			declares := base || n.v["additionalProperties"] == false
			if props, ok := n.v["properties"].(map[string]any); ok && declares {
				for name, p := range props {
					m, _ := p.(map[string]any) // a boolean schema (true) only names the property
					if _, seen := l.props[name]; !seen {
						l.props[name] = nil
					}
					if m != nil {
						l.props[name] = append(l.props[name], snode{n.file, m})
					}
				}
			}
			if it, ok := n.v["items"].(map[string]any); ok {
				l.items = append(l.items, snode{n.file, it})
			}
			req, _ := n.v["required"].([]any)
			for _, r := range req {
				if base {
					l.required[r.(string)] = true
				} else {
					l.condRequire[r.(string)] = true
				}
			}
		})
	}
	return l
}

// --- walking the Go types ---

var (
	timeType = reflect.TypeFor[spec.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// goLeaf reports whether the drift walk stops at t: timestamps, raw JSON,
// maps, interfaces, Nullable and scalars.
func goLeaf(t reflect.Type) bool {
	if t == timeType || t == rawType || strings.HasPrefix(t.Name(), "Nullable[") && t.PkgPath() == timeType.PkgPath() {
		return true
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Slice, reflect.Array, reflect.Pointer:
		return false
	}
	return true
}

type goField struct {
	name    string // Go field name
	typ     reflect.Type
	omitted bool // omitempty or omitzero
}

// jsonFields returns the JSON properties of struct type t, as encoding/json
// sees them (embedded structs are flattened, "-" is skipped).
func jsonFields(t reflect.Type) map[string]goField {
	out := map[string]goField{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					out[k] = v
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		omitted := false
		for _, o := range strings.Split(opts, ",") {
			omitted = omitted || o == "omitempty" || o == "omitzero"
		}
		out[name] = goField{name: f.Name, typ: f.Type, omitted: omitted}
	}
	return out
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// drift compares the Go type and the schema at one location and returns a
// message per difference.
type drift struct {
	t       *testing.T
	s       schemaSet
	schema  string
	goOnly  []string
	out     []string
	visited int // object levels compared, so that the test cannot pass vacuously
}

func (d *drift) walk(path string, gt reflect.Type, nodes []snode) {
	d.t.Helper()
	gt = deref(gt)
	l := d.s.level(d.t, nodes)
	if goLeaf(gt) {
		return
	}
	switch gt.Kind() {
	case reflect.Slice, reflect.Array:
		if len(l.items) == 0 {
			if goLeaf(deref(gt.Elem())) {
				return // an array of anything, such as list-envelope's data
			}
			d.out = append(d.out, fmt.Sprintf("%s %s: Go has a slice of %s, the schema declares no items", d.schema, pathOr(path), gt.Elem()))
			return
		}
		d.walk(path+"/*", gt.Elem(), l.items)
	case reflect.Struct:
		d.visited++
		fields := jsonFields(gt)
		for name, f := range fields {
			p := path + "/" + name
			if _, ok := l.props[name]; !ok {
				if !slices.Contains(d.goOnly, p) {
					d.out = append(d.out, fmt.Sprintf("%s %s: Go field %s.%s is missing from the schema", d.schema, p, gt.Name(), f.name))
				}
				continue
			}
			d.walk(p, f.typ, l.props[name])
		}
		for name := range l.props {
			if _, ok := fields[name]; !ok {
				d.out = append(d.out, fmt.Sprintf("%s %s: schema property is missing from the Go type %s", d.schema, path+"/"+name, gt))
			}
		}
	}
}

func pathOr(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

func TestDriftGoTypesAndSchemas(t *testing.T) {
	t.Parallel()
	set := loadSchemaFiles(t)
	for _, p := range wirePairs() {
		t.Run(p.schema, func(t *testing.T) {
			t.Parallel()
			d := &drift{t: t, s: set, schema: p.schema, goOnly: p.goOnly}
			d.walk("", p.typ, []snode{set.resolve(t, p.schema+".json", "")})
			sort.Strings(d.out)
			require.Empty(t, d.out, "Go type %s and schema %s differ", p.typ, p.schema)
			require.Positive(t, d.visited, "no object level was compared")
		})
	}
}

// TestDriftDetectsDifferences makes sure the walk is not vacuous: a schema
// with a property removed, and one with a property added, are both reported
// with the path.
func TestDriftDetectsDifferences(t *testing.T) {
	t.Parallel()
	set := loadSchemaFiles(t)
	clone := func(s schemaSet) schemaSet {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		var out schemaSet
		require.NoError(t, json.Unmarshal(b, &out))
		return out
	}
	run := func(s schemaSet, schema string, typ reflect.Type) []string {
		d := &drift{t: t, s: s, schema: schema}
		d.walk("", typ, []snode{s.resolve(t, schema+".json", "")})
		return d.out
	}

	removed := clone(set)
	msgs := removed["conversation.json"].(map[string]any)["properties"].(map[string]any)["messages"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)
	delete(msgs, "createdAt")
	out := run(removed, "conversation", typeOf[spec.Conversation]())
	require.Len(t, out, 1)
	require.Contains(t, out[0], "/messages/*/createdAt")
	require.Contains(t, out[0], "Message.CreatedAt")

	// In a shared definition reached through $ref, seen from a list.
	removed = clone(set)
	delete(removed["common.json"].(map[string]any)["$defs"].(map[string]any)["user"].(map[string]any)["properties"].(map[string]any), "groups")
	out = run(removed, "conversation-list", typeOf[spec.List[spec.Conversation]]())
	require.Len(t, out, 1)
	require.Contains(t, out[0], "/data/*/user/groups")

	// A property that only a conditional constraint mentions is missing.
	removed = clone(set)
	delete(removed["instruction.json"].(map[string]any)["properties"].(map[string]any), "allowRedaction")
	out = run(removed, "instruction", typeOf[spec.Instruction]())
	require.Len(t, out, 1)
	require.Contains(t, out[0], "/allowRedaction: Go field Instruction.AllowRedaction is missing from the schema")

	added := clone(set)
	added["trigger.json"].(map[string]any)["allOf"].([]any)[1].(map[string]any)["then"].(map[string]any)["properties"].(map[string]any)["flags"] = map[string]any{"type": "string"}
	out = run(added, "instruction", typeOf[spec.Instruction]())
	require.Len(t, out, 1)
	require.Contains(t, out[0], "/trigger/flags")
	require.Contains(t, out[0], "missing from the Go type")
}

// --- populated values ---

// TestFullValuesValidate marshals fully populated values of every wire type
// and requires no finding at all in Strict mode.
func TestFullValuesValidate(t *testing.T) {
	t.Parallel()
	for _, p := range wirePairs() {
		t.Run(p.schema, func(t *testing.T) {
			t.Parallel()
			require.NotEmpty(t, p.values)
			for i, v := range p.values {
				require.Equal(t, p.typ, reflect.TypeOf(v), "value %d", i)
				b, err := json.Marshal(v)
				require.NoError(t, err)
				findings, err := spec.Validate(p.schema, b, spec.WithMode(spec.Strict))
				require.NoError(t, err)
				require.Empty(t, findings, "value %d: %s", i, b)
			}
		})
	}
}

// TestFullValuesSetEveryField checks that the values of each type, between
// them, set every field (so that the test above covers every property).
func TestFullValuesSetEveryField(t *testing.T) {
	t.Parallel()
	for _, p := range wirePairs() {
		t.Run(p.schema, func(t *testing.T) {
			t.Parallel()
			want := map[string]bool{}
			fieldPaths(p.typ, "", want)
			got := map[string]bool{}
			for _, v := range p.values {
				setPaths(reflect.ValueOf(v), "", got)
			}
			var missing []string
			for path := range want {
				if !got[path] && !slices.Contains(p.goOnly, path) {
					missing = append(missing, path)
				}
			}
			sort.Strings(missing)
			require.Empty(t, missing, "fields never set by the values of %s", p.typ)
			for _, path := range p.goOnly {
				require.False(t, got[path], "%s must not be set for schema %s", path, p.schema)
			}
		})
	}
}

// fieldPaths lists every field path of t ("/messages/*/role"), including
// fields the JSON encoding skips (such as Parameters.Extra, by Go name).
func fieldPaths(t reflect.Type, path string, out map[string]bool) {
	t = deref(t)
	if goLeaf(t) {
		return
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		fieldPaths(t.Elem(), path+"/*", out)
	case reflect.Struct:
		for f := range t.Fields() {
			if !f.IsExported() {
				continue
			}
			p := path + "/" + fieldName(f)
			out[p] = true
			fieldPaths(f.Type, p, out)
		}
	}
}

func fieldName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" || name == "-" {
		return f.Name
	}
	return name
}

// setPaths records the field paths that hold a non-zero value in v.
func setPaths(v reflect.Value, path string, out map[string]bool) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if goLeaf(v.Type()) {
		return
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			setPaths(v.Index(i), path+"/*", out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			p := path + "/" + fieldName(f)
			if !v.Field(i).IsZero() {
				out[p] = true
			}
			setPaths(v.Field(i), p, out)
		}
	}
}

// --- required properties ---

// requiredExceptions are the properties a schema requires that the Go type
// may omit, keyed by Go type and field, each with the reason. Everything else
// a schema requires, at any level (including under then/else), must be a Go
// field without omitempty or omitzero.
var requiredExceptions = map[string]string{
	// One Go type serves webhook.json (listings, no secret) and
	// webhook-created.json (the answer of POST /webhooks, with the secret):
	// Secret is omitempty so that listings leave it out, and the creation
	// handler must set it.
	"Webhook.Secret": "required by webhook-created only; listings must leave it out",
	// The trigger's then-branches require the one field of its type. Trigger
	// carries all three and omits the two that do not apply; an empty value of
	// the one that applies fails minLength/minItems anyway.
	"Trigger.Text":    "required only for a Semantic trigger",
	"Trigger.Pattern": "required only for a Regex trigger",
	"Trigger.Values":  "required only for a StringMatch trigger",
	// A full set has no previous set to follow and no lower bound; an
	// increment has both, which the writer sets and the schema's if/then
	// requires.
	"ExportManifest.Previous": "required only for an increment",
	"ExportManifest.From":     "required only for an increment",
}

func TestRequiredPropertiesNeverOmitted(t *testing.T) {
	t.Parallel()
	set := loadSchemaFiles(t)
	used := map[string]bool{}
	checked := 0
	for _, p := range wirePairs() {
		var problems []string
		var check func(path string, gt reflect.Type, nodes []snode)
		check = func(path string, gt reflect.Type, nodes []snode) {
			gt = deref(gt)
			if goLeaf(gt) {
				return
			}
			l := set.level(t, nodes)
			switch gt.Kind() {
			case reflect.Slice, reflect.Array:
				check(path+"/*", gt.Elem(), l.items)
				return
			case reflect.Struct:
			default:
				return
			}
			fields := jsonFields(gt)
			required := map[string]bool{}
			for name := range l.required {
				required[name] = true
			}
			for name := range l.condRequire {
				required[name] = true
			}
			for name := range required {
				checked++
				f, ok := fields[name]
				switch {
				case !ok:
					problems = append(problems, fmt.Sprintf("%s %s/%s: required, but %s has no such field", p.schema, path, name, gt))
				case f.omitted:
					key := gt.Name() + "." + f.name
					if _, ok := requiredExceptions[key]; ok {
						used[key] = true
						continue
					}
					problems = append(problems, fmt.Sprintf("%s %s/%s: required, but %s is omitempty/omitzero", p.schema, path, name, key))
				}
			}
			for name, f := range fields {
				if nodes, ok := l.props[name]; ok {
					check(path+"/"+name, f.typ, nodes)
				}
			}
		}
		check("", p.typ, []snode{set.resolve(t, p.schema+".json", "")})
		sort.Strings(problems)
		require.Empty(t, problems)
	}
	require.Greater(t, checked, 50, "too few required properties were checked")
	for key := range requiredExceptions {
		require.True(t, used[key], "requiredExceptions[%q] is no longer needed: remove it", key)
	}
}
