package spec

import (
	"bytes"
	"embed"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed openapi/usage.yaml openapi/organisation.yaml openapi/review.yaml
var openapiFS embed.FS

// OpenAPIDocuments lists the names of the OpenAPI 3.1 documents: usage (the AI
// usage data interface), organisation and review.
func OpenAPIDocuments() []string { return []string{"organisation", "review", "usage"} }

// OpenAPISource returns OpenAPI document name as written in spec/openapi,
// whose schemas are relative references to ../schemas/NAME.json.
func OpenAPISource(name string) ([]byte, error) {
	b, err := openapiFS.ReadFile("openapi/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("spec: unknown OpenAPI document %q (known: %s)", name, strings.Join(OpenAPIDocuments(), ", "))
	}
	return b, nil
}

var (
	sourceRef = regexp.MustCompile(`^\.\./schemas/([a-z0-9-]+)\.json$`)
	schemaRef = regexp.MustCompile(`^([a-z0-9-]+)\.json(#.*)?$`)
)

// OpenAPI returns OpenAPI document name bundled into one self-contained YAML
// document: every schema it uses, directly or through other schemas, is copied
// under components/schemas (without $id and $schema) and every reference
// points inside the document.
func OpenAPI(name string) ([]byte, error) {
	src, err := OpenAPISource(name)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("spec: OpenAPI document %s: %w", name, err)
	}
	needed := map[string]bool{}
	rewriteRefs(&doc, func(ref string) (string, bool) {
		m := sourceRef.FindStringSubmatch(ref)
		if m == nil {
			return "", false
		}
		needed[m[1]] = true
		return "#/components/schemas/" + m[1], true
	})
	schemas := map[string]*yaml.Node{}
	for queue := keys(needed); len(queue) > 0; {
		n := queue[0]
		queue = queue[1:]
		if schemas[n] != nil {
			continue
		}
		b, err := SchemaJSON(n)
		if err != nil {
			return nil, fmt.Errorf("spec: OpenAPI document %s: %w", name, err)
		}
		var s yaml.Node
		if err := yaml.Unmarshal(b, &s); err != nil {
			return nil, err
		}
		root := s.Content[0]
		deleteKeys(root, "$id", "$schema")
		rewriteRefs(root, func(ref string) (string, bool) {
			m := schemaRef.FindStringSubmatch(ref)
			if m == nil {
				return "", false
			}
			if schemas[m[1]] == nil {
				queue = append(queue, m[1])
			}
			return "#/components/schemas/" + m[1] + strings.TrimPrefix(m[2], "#"), true
		})
		setStyle(root)
		schemas[n] = root
	}
	top := doc.Content[0]
	components := mapValue(top, "components")
	if components == nil {
		components = &yaml.Node{Kind: yaml.MappingNode}
		top.Content = append(top.Content, scalar("components"), components)
	}
	list := mapValue(components, "schemas")
	if list == nil {
		list = &yaml.Node{Kind: yaml.MappingNode}
		components.Content = append(components.Content, scalar("schemas"), list)
	}
	for _, n := range keys(schemas) {
		if mapValue(list, n) != nil {
			return nil, fmt.Errorf("spec: OpenAPI document %s already defines components/schemas/%s", name, n)
		}
		list.Content = append(list.Content, scalar(n), schemas[n])
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

func rewriteRefs(n *yaml.Node, rewrite func(string) (string, bool)) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k, v := n.Content[i], n.Content[i+1]; k.Value == "$ref" && v.Kind == yaml.ScalarNode {
				if r, ok := rewrite(v.Value); ok {
					v.Value = r
				}
			}
		}
	}
	for _, c := range n.Content {
		rewriteRefs(c, rewrite)
	}
}

func deleteKeys(m *yaml.Node, names ...string) {
	out := m.Content[:0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		drop := false
		for _, n := range names {
			drop = drop || m.Content[i].Value == n
		}
		if !drop {
			out = append(out, m.Content[i], m.Content[i+1])
		}
	}
	m.Content = out
}

// setStyle turns JSON flow style into YAML block style, for readability.
func setStyle(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style = 0
	}
	if n.Kind == yaml.ScalarNode && n.Style == yaml.DoubleQuotedStyle {
		n.Style = 0
	}
	for _, c := range n.Content {
		setStyle(c)
	}
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
