package spec_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

// Example documents live in testdata/examples as NAME.json or
// NAME.VARIANT.json, NAME being the schema they are valid against.

// examplesWithExtensions may hold members their Go type does not carry.
var examplesWithExtensions = map[string]string{}

type example struct {
	file   string // base name
	schema string
	data   []byte
}

func loadExamples(t *testing.T) []example {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "examples", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out []example
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		base := strings.TrimSuffix(filepath.Base(f), ".json")
		schema, _, _ := strings.Cut(base, ".")
		out = append(out, example{file: base, schema: schema, data: b})
	}
	return out
}

func TestExamplesCoverEverySchema(t *testing.T) {
	t.Parallel()
	count := map[string]int{}
	for _, ex := range loadExamples(t) {
		require.Contains(t, spec.Schemas(), ex.schema, "%s names no schema", ex.file)
		count[ex.schema]++
	}
	for _, name := range spec.Schemas() {
		require.Positive(t, count[name], "no example of schema %s in testdata/examples", name)
	}
}

func TestExamplesValidate(t *testing.T) {
	t.Parallel()
	for _, ex := range loadExamples(t) {
		t.Run(ex.file, func(t *testing.T) {
			t.Parallel()
			for _, mode := range []spec.Mode{spec.Strict, spec.Lenient} {
				findings, err := spec.Validate(ex.schema, ex.data, spec.WithMode(mode))
				require.NoError(t, err)
				require.Empty(t, findings, "mode %d", mode)
			}
		})
	}
}

// TestExamplesRoundTrip decodes every example into its Go type, refusing
// unknown fields, and requires the re-encoded document to validate too.
func TestExamplesRoundTrip(t *testing.T) {
	t.Parallel()
	types := map[string]reflect.Type{}
	for _, p := range wirePairs() {
		types[p.schema] = p.typ
	}
	for _, ex := range loadExamples(t) {
		t.Run(ex.file, func(t *testing.T) {
			t.Parallel()
			typ, ok := types[ex.schema]
			require.True(t, ok, "no Go type for schema %s", ex.schema)
			v := reflect.New(typ)
			dec := json.NewDecoder(bytes.NewReader(ex.data))
			if _, ok := examplesWithExtensions[ex.file]; !ok {
				dec.DisallowUnknownFields()
			}
			require.NoError(t, dec.Decode(v.Interface()), "decoding into %s", typ)
			b, err := json.Marshal(v.Elem().Interface())
			require.NoError(t, err)
			findings, err := spec.Validate(ex.schema, b)
			require.NoError(t, err)
			require.Empty(t, findings, "re-encoded: %s", b)
		})
	}
}

// Fields and enum values may be added at any time: unknown fields of the
// usage-data records are accepted, and unknown values of an extensible enum
// are a warning in Strict mode and nothing in Lenient mode.
func TestUnknownFieldsAccepted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ schema, doc string }{
		{"conversation", `{"id":"c1","startedAt":"2026-03-09T08:15:00Z","sentiment":"positive","user":{"id":"u1","locale":"de-DE"},
			"messages":[{"id":"m1","role":"user","content":"hi","tokens":3,"citations":[{"url":"https://example.com"}]}],
			"usage":{"inputTokens":3,"cachedInputTokens":1},"assistant":{"id":"a","version":7},"tools":[{"id":"t","schema":{}}],
			"attachments":[{"id":"f","sizeBytes":12}]}`},
		{"assistant", `{"id":"a1","createdAt":"2026-03-09T08:15:00Z","temperatureLocked":true,"skills":[{"id":"s","enabled":true}],
			"connectors":[{"id":"c","lastSyncAt":"yesterday"}],"knowledge":[{"id":"k","chunks":42}],"usage":{"conversationCount":1,"messageCount":9}}`},
		{"event", `{"id":"e1","occurredAt":"2026-03-09T08:15:00Z","severity":"high","actor":{"type":"user","ip":"203.0.113.7"},"target":{"kind":"file","path":"/a"}}`},
		{"usage-bucket", `{"startAt":"2026-03-09T00:00:00Z","dimensions":{"model":"m","region":"eu"},"metrics":{"requests":1,"cacheHits":3}}`},
		{"conversation-list", `{"data":[{"id":"c1","startedAt":"2026-03-09T08:15:00Z","x":1}],"hasMore":false,"nextCursor":null,"total":1}`},
		{"problem", `{"type":"about:blank","title":"Conflict","status":409,"agentId":"a","agentName":"EU"}`},
	} {
		t.Run(tc.schema, func(t *testing.T) {
			for _, mode := range []spec.Mode{spec.Strict, spec.Lenient} {
				findings, err := spec.Validate(tc.schema, []byte(tc.doc), spec.WithMode(mode))
				require.NoError(t, err)
				require.Empty(t, findings, "%s, mode %d", tc.schema, mode)
			}
		})
	}
}

func TestUnknownEnumValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, schema, doc, ptr string
	}{
		{"message role developer", "conversation", `{"id":"c1","startedAt":"2026-03-09T08:15:00Z","messages":[{"role":"user"},{"role":"developer","content":"x"}]}`, "/messages/1/role"},
		{"attachment kind linked", "conversation", `{"id":"c1","startedAt":"2026-03-09T08:15:00Z","attachments":[{"id":"a","kind":"linked"}]}`, "/attachments/0/kind"},
		{"event category Billing", "event", `{"id":"e1","occurredAt":"2026-03-09T08:15:00Z","category":"Billing"}`, "/category"},
		{"event action Archived", "event", `{"id":"e1","occurredAt":"2026-03-09T08:15:00Z","action":"Archived"}`, "/action"},
		{"actor type bot", "event", `{"id":"e1","occurredAt":"2026-03-09T08:15:00Z","actor":{"type":"bot"}}`, "/actor/type"},
		{"visibility domain", "assistant", `{"id":"a1","createdAt":"2026-03-09T08:15:00Z","visibility":"domain"}`, "/visibility"},
		{"skill type workflow", "assistant", `{"id":"a1","createdAt":"2026-03-09T08:15:00Z","skills":[{"type":"workflow"}]}`, "/skills/0/type"},
		{"granularity week", "usage-bucket", `{"startAt":"2026-03-09T00:00:00Z","granularity":"week"}`, "/granularity"},
		{"in a list", "event-list", `{"data":[{"id":"e1","occurredAt":"2026-03-09T08:15:00Z","category":"Billing"}],"hasMore":false}`, "/data/0/category"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			findings, err := spec.Validate(tc.schema, []byte(tc.doc))
			require.NoError(t, err)
			require.Len(t, findings, 1, "%v", findings)
			f := findings[0]
			require.Equal(t, tc.ptr, f.Pointer)
			require.Equal(t, spec.LevelWarning, f.Level)
			require.Equal(t, "enum", f.Keyword)
			require.Contains(t, f.Message, "later versions may add it")
			require.True(t, spec.Valid(findings))
			require.Contains(t, f.String(), ": warning: ")

			strict, err := spec.Validate(tc.schema, []byte(tc.doc), spec.WithMode(spec.Strict))
			require.NoError(t, err)
			require.Equal(t, findings, strict, "Strict is the default")

			lenient, err := spec.Validate(tc.schema, []byte(tc.doc), spec.WithMode(spec.Lenient))
			require.NoError(t, err)
			require.Empty(t, lenient)
		})
	}

	// A warning does not hide an error beside it.
	findings, err := spec.Validate("event", []byte(`{"id":"e1","occurredAt":"2026-03-09T08:15:00+01:00","category":"Billing"}`), spec.WithMode(spec.Lenient))
	require.NoError(t, err)
	require.Len(t, findings, 1)
	require.Equal(t, "/occurredAt", findings[0].Pointer)
	require.False(t, spec.Valid(findings))
}

func TestClosedEnumValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, schema, doc, ptr string
	}{
		{"instruction action Deny", "instruction-create", `{"agentType":"DataProtection","title":"t","trigger":{"type":"Regex","pattern":"x"},"action":"Deny","criticality":"Low"}`, "/action"},
		{"review task status done", "review-task", `{"id":"` + taskID + `","status":"done","createdAt":"2026-03-09T09:58:00.000Z"}`, "/status"},
		{"trigger type Keyword", "trigger", `{"type":"Keyword"}`, "/type"},
		{"webhook event", "webhook-delivery", `{"type":"task.deleted","timestamp":"2026-03-09T09:58:00.000Z","data":{"id":"` + taskID + `","status":"pending","createdAt":"2026-03-09T09:58:00.000Z"}}`, "/type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, mode := range []spec.Mode{spec.Strict, spec.Lenient} {
				findings, err := spec.Validate(tc.schema, []byte(tc.doc), spec.WithMode(mode))
				require.NoError(t, err)
				require.Len(t, findings, 1, "%v", findings)
				require.Equal(t, tc.ptr, findings[0].Pointer)
				require.Equal(t, spec.LevelError, findings[0].Level)
				require.Equal(t, "enum", findings[0].Keyword)
				require.False(t, spec.Valid(findings))
			}
		})
	}
}

func TestTitleLengthCountsCharacters(t *testing.T) {
	t.Parallel()
	doc := func(title string) []byte {
		return []byte(`{"agentType":"DataProtection","title":` + jsonString(title) + `,"trigger":{"type":"Semantic","text":"x"},"action":"Allow","criticality":"Low"}`)
	}
	for _, tc := range []struct {
		name  string
		title string
		valid bool
	}{
		{"200 é", strings.Repeat("é", 200), true}, // 400 bytes
		{"201 é", strings.Repeat("é", 201), false},
		{"200 emoji", strings.Repeat("😀", 200), true}, // 800 bytes, 200 code points
		{"200 x", strings.Repeat("x", 200), true},
		{"201 x", strings.Repeat("x", 201), false},
		{"1 x", "x", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			findings, err := spec.Validate("instruction-create", doc(tc.title))
			require.NoError(t, err)
			require.Equal(t, tc.valid, spec.Valid(findings), "title of %d bytes: %v", len(tc.title), findings)
		})
	}
}
