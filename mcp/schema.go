package mcp

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/aiusage/kit/spec"
)

// schemaRef matches the references of the embedded schemas: a whole file
// ("conversation.json") or a definition in one ("common.json#/$defs/user").
var schemaRef = regexp.MustCompile(`^([a-z0-9-]+)\.json(?:#/\$defs/([A-Za-z0-9_-]+))?$`)

// annotationKeys may differ between a root schema and the file its $ref
// names: the root's wins. Any other keyword both define is an error.
var annotationKeys = map[string]bool{"title": true, "description": true}

// OutputSchema returns schema name of spec/ (for example "conversation-list")
// as one self-contained JSON Schema, fit for a tool's outputSchema:
//
//   - every schema it references, directly or not, is copied under $defs
//     (a whole file as $defs/FILE, a definition of common.json as
//     $defs/NAME) and every $ref points inside the document;
//   - a $ref at the root is merged into the root, so that the root itself
//     says "type": "object" and lists the properties, as MCP clients expect;
//   - $schema, $id and the kit's x- keywords are dropped, and an enum marked
//     x-extensible-enum is turned into a description: later versions of the
//     specification may add values, and a client validating structured
//     content must accept them.
//
// The result uses only keywords that draft 2020-12 and draft-07 validators
// read alike.
func OutputSchema(name string) (json.RawMessage, error) {
	b := &bundler{defs: map[string]any{}, origin: map[string]string{}}
	root, err := b.file(name)
	if err != nil {
		return nil, err
	}
	root, err = b.mergeRootRef(root)
	if err != nil {
		return nil, fmt.Errorf("mcp: schema %s: %w", name, err)
	}
	if err := b.rewrite(root); err != nil {
		return nil, fmt.Errorf("mcp: schema %s: %w", name, err)
	}
	for len(b.queue) > 0 {
		ref := b.queue[0]
		b.queue = b.queue[1:]
		if err := b.rewrite(b.defs[ref]); err != nil {
			return nil, fmt.Errorf("mcp: schema %s: %w", name, err)
		}
	}
	if t, ok := root["type"]; !ok || t != "object" {
		return nil, fmt.Errorf("mcp: schema %s: the root is not of type object", name)
	}
	if len(b.defs) > 0 {
		if _, ok := root["$defs"]; ok {
			return nil, fmt.Errorf("mcp: schema %s: the root already has $defs", name)
		}
		root["$defs"] = b.defs
	}
	return json.Marshal(root)
}

type bundler struct {
	defs   map[string]any    // $defs of the bundle
	origin map[string]string // def name -> the reference it was made from
	queue  []string          // defs whose references are still to rewrite
}

// file returns embedded schema name, decoded, without $schema and $id.
func (b *bundler) file(name string) (map[string]any, error) {
	raw, err := spec.SchemaJSON(name)
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("mcp: schema %s: %w", name, err)
	}
	delete(m, "$schema")
	delete(m, "$id")
	return m, nil
}

// mergeRootRef replaces a whole-file $ref at the root by that file's
// keywords, merged with the root's own.
func (b *bundler) mergeRootRef(root map[string]any) (map[string]any, error) {
	ref, ok := root["$ref"].(string)
	if !ok {
		return root, nil
	}
	m := schemaRef.FindStringSubmatch(ref)
	if m == nil || m[2] != "" {
		return nil, fmt.Errorf("root $ref %q is not a whole schema", ref)
	}
	base, err := b.file(m[1])
	if err != nil {
		return nil, err
	}
	base, err = b.mergeRootRef(base)
	if err != nil {
		return nil, err
	}
	delete(root, "$ref")
	delete(base, "$defs") // none of the embedded schemas but common.json has any
	return merge(base, root, "")
}

// merge returns base with over's keywords added: objects merge key by key
// (so "properties" of both apply), annotations of over win, and any other
// keyword both give differently is an error.
func merge(base, over map[string]any, path string) (map[string]any, error) {
	for k, v := range over {
		old, ok := base[k]
		if !ok {
			base[k] = v
			continue
		}
		om, ok1 := old.(map[string]any)
		nm, ok2 := v.(map[string]any)
		switch {
		case ok1 && ok2:
			mm, err := merge(om, nm, path+"/"+k)
			if err != nil {
				return nil, err
			}
			base[k] = mm
		case annotationKeys[k]:
			base[k] = v
		default:
			a, _ := json.Marshal(old)
			c, _ := json.Marshal(v)
			if string(a) != string(c) {
				return nil, fmt.Errorf("keyword %s%s is given twice, differently", path, "/"+k)
			}
		}
	}
	return base, nil
}

// rewrite points the references inside v at $defs, adding what they name,
// and drops the kit's x- keywords.
func (b *bundler) rewrite(v any) error {
	switch v := v.(type) {
	case map[string]any:
		if v["x-extensible-enum"] == true {
			if values, ok := v["enum"].([]any); ok {
				known := make([]string, len(values))
				for i, x := range values {
					known[i] = fmt.Sprint(x)
				}
				note := "Known values: " + strings.Join(known, ", ") + "; later versions of the specification may add others."
				if d, ok := v["description"].(string); ok && d != "" {
					note = d + " " + note
				}
				v["description"] = note
				delete(v, "enum")
			}
		}
		for k := range v {
			if strings.HasPrefix(k, "x-") {
				delete(v, k)
			}
		}
		if ref, ok := v["$ref"].(string); ok {
			target, err := b.def(ref)
			if err != nil {
				return err
			}
			v["$ref"] = "#/$defs/" + target
		}
		for k, child := range v {
			if k == "$ref" {
				continue
			}
			if err := b.rewrite(child); err != nil {
				return err
			}
		}
	case []any:
		for _, child := range v {
			if err := b.rewrite(child); err != nil {
				return err
			}
		}
	}
	return nil
}

// def returns the name under $defs of the schema ref names, adding it.
func (b *bundler) def(ref string) (string, error) {
	m := schemaRef.FindStringSubmatch(ref)
	if m == nil {
		return "", fmt.Errorf("$ref %q is not a reference to an embedded schema", ref)
	}
	file, def := m[1], m[2]
	name := file
	if def != "" {
		name = def
	}
	if prev, ok := b.origin[name]; ok {
		if prev != ref {
			return "", fmt.Errorf("$ref %q and %q would share $defs/%s", prev, ref, name)
		}
		return name, nil
	}
	s, err := b.file(file)
	if err != nil {
		return "", err
	}
	var target map[string]any
	if def == "" {
		if _, has := s["$defs"]; has {
			return "", fmt.Errorf("$ref %q names a schema with $defs of its own", ref)
		}
		target = s
	} else {
		defs, _ := s["$defs"].(map[string]any)
		target, _ = defs[def].(map[string]any)
		if target == nil {
			return "", fmt.Errorf("$ref %q names no definition", ref)
		}
	}
	b.origin[name] = ref
	b.defs[name] = target
	b.queue = append(b.queue, name)
	return name, nil
}

// outputSchemaNames are the spec/ schemas of the tools' structured content.
var outputSchemaNames = []string{"conversation-list", "conversation", "assistant-list", "assistant", "event-list", "usage-list"}

// outputSchemas bundles every output schema once.
var outputSchemas = sync.OnceValues(func() (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for _, n := range outputSchemaNames {
		s, err := OutputSchema(n)
		if err != nil {
			return nil, err
		}
		out[n] = s
	}
	return out, nil
})
