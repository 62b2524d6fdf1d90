package spec_test

import (
	"bytes"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/aiusage/kit/spec"
)

var (
	openAPIVersion  = regexp.MustCompile(`^3\.1\.[0-9]+$`)
	sourceSchemaRef = regexp.MustCompile(`^\.\./schemas/([a-z0-9-]+)\.json$`)
)

func parseYAML(t *testing.T, b []byte) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(b, &doc))
	require.Equal(t, yaml.DocumentNode, doc.Kind)
	require.Len(t, doc.Content, 1)
	root := doc.Content[0]
	require.Equal(t, yaml.MappingNode, root.Kind)
	return root
}

func yamlGet(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// yamlKeys calls fn for every mapping key of the tree with its value and the
// JSON pointer of the mapping that holds it.
func yamlKeys(n *yaml.Node, ptr string, fn func(ptr, key string, v *yaml.Node)) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			fn(ptr, k, v)
			yamlKeys(v, ptr+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), fn)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			yamlKeys(c, ptr+"/"+strconv.Itoa(i), fn)
		}
	case yaml.AliasNode:
		// Aliases point at nodes already walked.
	}
}

type yamlRef struct{ at, ref string }

func yamlRefs(root *yaml.Node) []yamlRef {
	var refs []yamlRef
	yamlKeys(root, "", func(ptr, key string, v *yaml.Node) {
		if key == "$ref" && v.Kind == yaml.ScalarNode {
			refs = append(refs, yamlRef{ptr, v.Value})
		}
	})
	return refs
}

// resolveLocal follows a local reference "#/a/b" in root.
func resolveLocal(root *yaml.Node, ref string) (*yaml.Node, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil, false
	}
	if frag == "" {
		return root, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false // an anchor: the kit's documents use none
	}
	n := root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		for n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		switch n.Kind {
		case yaml.MappingNode:
			if n = yamlGet(n, tok); n == nil {
				return nil, false
			}
		case yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.Content) {
				return nil, false
			}
			n = n.Content[i]
		default:
			return nil, false
		}
	}
	return n, true
}

func TestOpenAPIDocumentsList(t *testing.T) {
	t.Parallel()
	docs := spec.OpenAPIDocuments()
	require.Equal(t, []string{"organisation", "review", "usage"}, docs)
	for _, bad := range []string{"nope", "", "../schemas/conversation", "redocly"} {
		_, err := spec.OpenAPISource(bad)
		require.Error(t, err, bad)
		_, err = spec.OpenAPI(bad)
		require.Error(t, err, bad)
	}
}

func TestOpenAPISource(t *testing.T) {
	t.Parallel()
	for _, name := range spec.OpenAPIDocuments() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src, err := spec.OpenAPISource(name)
			require.NoError(t, err, "spec/openapi/%s.yaml", name)
			root := parseYAML(t, src)
			v := yamlGet(root, "openapi")
			require.NotNil(t, v, "no openapi field")
			require.Regexp(t, openAPIVersion, v.Value)
			require.NotNil(t, yamlGet(root, "info"), "no info")
			require.NotEmpty(t, yamlGet(yamlGet(root, "info"), "version").Value)
			require.True(t, yamlGet(root, "paths") != nil || yamlGet(root, "webhooks") != nil, "neither paths nor webhooks")

			refs := yamlRefs(root)
			require.NotEmpty(t, refs)
			external := 0
			for _, r := range refs {
				if strings.HasPrefix(r.ref, "#") {
					_, ok := resolveLocal(root, r.ref)
					require.True(t, ok, "%s: local $ref %q does not resolve", r.at, r.ref)
					continue
				}
				m := sourceSchemaRef.FindStringSubmatch(r.ref)
				require.NotNil(t, m, "%s: $ref %q is neither local nor ../schemas/NAME.json", r.at, r.ref)
				external++
				_, err := spec.SchemaJSON(m[1])
				require.NoError(t, err, "%s: $ref %q names no schema", r.at, r.ref)
				require.NotEqual(t, "common", m[1], "%s: refer to the schema that uses a common definition", r.at)
			}
			require.Positive(t, external, "the document uses no schema of spec/schemas")
		})
	}
}

func TestOpenAPIBundled(t *testing.T) {
	t.Parallel()
	for _, name := range spec.OpenAPIDocuments() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := spec.OpenAPI(name)
			require.NoError(t, err)
			root := parseYAML(t, b)
			require.Regexp(t, openAPIVersion, yamlGet(root, "openapi").Value)

			components := yamlGet(yamlGet(root, "components"), "schemas")
			require.NotNil(t, components, "no components/schemas")

			refs := yamlRefs(root)
			require.NotEmpty(t, refs)
			intoSchemas, intoDefs := 0, 0
			for _, r := range refs {
				require.True(t, strings.HasPrefix(r.ref, "#/"), "%s: $ref %q is not local", r.at, r.ref)
				n, ok := resolveLocal(root, r.ref)
				require.True(t, ok, "%s: $ref %q does not resolve", r.at, r.ref)
				require.Contains(t, []yaml.Kind{yaml.MappingNode, yaml.ScalarNode}, n.Kind, "%s: $ref %q is not a schema or object", r.at, r.ref)
				if strings.HasPrefix(r.ref, "#/components/schemas/") {
					intoSchemas++
					if strings.Contains(r.ref, "/$defs/") {
						intoDefs++
					}
				}
			}
			require.Positive(t, intoSchemas)
			require.Positive(t, intoDefs, "no reference into a bundled schema's $defs (common.json's timestamp, for one)")

			yamlKeys(root, "", func(ptr, key string, v *yaml.Node) {
				require.NotEqual(t, "$id", key, "$id at %s", ptr)
				if strings.HasPrefix(ptr, "/components/schemas") {
					require.NotEqual(t, "$schema", key, "$schema at %s", ptr)
				}
			})

			// Every schema the source names is bundled under its own name.
			src, err := spec.OpenAPISource(name)
			require.NoError(t, err)
			for _, r := range yamlRefs(parseYAML(t, src)) {
				if m := sourceSchemaRef.FindStringSubmatch(r.ref); m != nil {
					require.NotNil(t, yamlGet(components, m[1]), "components/schemas/%s missing", m[1])
				}
			}

			again, err := spec.OpenAPI(name)
			require.NoError(t, err)
			require.True(t, bytes.Equal(b, again), "OpenAPI(%s) is not deterministic", name)
		})
	}
}

// TestOpenAPIReachesEverySchema: every schema of spec/schemas is used by at
// least one OpenAPI document (directly or through another schema).
func TestOpenAPIReachesEverySchema(t *testing.T) {
	t.Parallel()
	used := map[string]bool{}
	for _, name := range spec.OpenAPIDocuments() {
		b, err := spec.OpenAPI(name)
		require.NoError(t, err)
		components := yamlGet(yamlGet(parseYAML(t, b), "components"), "schemas")
		require.NotNil(t, components)
		for i := 0; i+1 < len(components.Content); i += 2 {
			used[components.Content[i].Value] = true
		}
	}
	var unused []string
	for _, s := range spec.Schemas() {
		// The scheduled export's files are static documents, not operations
		// of an HTTP interface (docs/export.md).
		if strings.HasPrefix(s, "export-") {
			continue
		}
		if !used[s] {
			unused = append(unused, s)
		}
	}
	sort.Strings(unused)
	require.Empty(t, unused, "schemas no OpenAPI document uses")
	require.True(t, slices.ContainsFunc(spec.Schemas(), func(s string) bool { return used[s] }))
}
