package spec

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestOpenAPIExamplesValidate checks every example of a request or response
// body in the OpenAPI documents against the schema the body references.
// (Redocly cannot resolve references relative to a schema's $id, so its own
// example rule is off; this test does that job.)
func TestOpenAPIExamplesValidate(t *testing.T) {
	t.Parallel()
	total := 0
	for _, name := range OpenAPIDocuments() {
		src, err := OpenAPISource(name)
		require.NoError(t, err)
		var doc yaml.Node
		require.NoError(t, yaml.Unmarshal(src, &doc))
		oaexWalkMedia(doc.Content[0], name, func(where, schema string, example *yaml.Node) {
			total++
			body, err := json.Marshal(oaexValue(example))
			require.NoError(t, err, where)
			findings, err := Validate(schema, body)
			require.NoError(t, err, where)
			require.Empty(t, findings, "%s: example does not validate against %s: %s", where, schema, body)
		})
	}
	// The documents carry dozens of examples; fewer means the walk broke.
	require.Greater(t, total, 40, "examples found")
}

// oaexWalkMedia finds every media type object (a mapping with a schema that is
// a whole-file reference) and calls fn for its example and each of its
// examples.
func oaexWalkMedia(n *yaml.Node, where string, fn func(where, schema string, example *yaml.Node)) {
	if n.Kind == yaml.MappingNode {
		if s := mapValue(n, "schema"); s != nil {
			if ref := mapValue(s, "$ref"); ref != nil && strings.HasPrefix(ref.Value, "../schemas/") {
				schema := strings.TrimSuffix(strings.TrimPrefix(ref.Value, "../schemas/"), ".json")
				if ex := mapValue(n, "example"); ex != nil {
					fn(where+"/example", schema, ex)
				}
				if exs := mapValue(n, "examples"); exs != nil && exs.Kind == yaml.MappingNode {
					for i := 0; i+1 < len(exs.Content); i += 2 {
						if v := mapValue(exs.Content[i+1], "value"); v != nil {
							fn(where+"/examples/"+exs.Content[i].Value, schema, v)
						}
					}
				}
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			oaexWalkMedia(n.Content[i+1], where+"/"+n.Content[i].Value, fn)
		}
		return
	}
	for i, c := range n.Content {
		oaexWalkMedia(c, fmt.Sprintf("%s/%d", where, i), fn)
	}
}

// oaexValue converts a YAML node to the value JSON would hold, keeping
// scalars such as timestamps as the exact text written.
func oaexValue(n *yaml.Node) any {
	switch n.Kind {
	case yaml.AliasNode:
		return oaexValue(n.Alias)
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = oaexValue(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		a := []any{}
		for _, c := range n.Content {
			a = append(a, oaexValue(c))
		}
		return a
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!int", "!!float":
			return json.Number(n.Value)
		case "!!bool":
			return n.Value == "true"
		case "!!null":
			return nil
		}
		return n.Value
	}
	return nil
}
