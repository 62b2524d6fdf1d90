package spec_test

import (
	"encoding/json"
	"io/fs"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

func TestSchemasListEveryFileButCommon(t *testing.T) {
	t.Parallel()
	entries, err := fs.ReadDir(spec.SchemaFS(), ".")
	require.NoError(t, err)
	var want []string
	for _, e := range entries {
		require.True(t, strings.HasSuffix(e.Name(), ".json"), e.Name())
		if name := strings.TrimSuffix(e.Name(), ".json"); name != "common" {
			want = append(want, name)
		}
	}
	sort.Strings(want)
	require.Greater(t, len(want), 20)
	got := spec.Schemas()
	require.NotEmpty(t, got, "Schemas() is empty: the schemas do not compile")
	require.Equal(t, want, got)
	require.True(t, sort.StringsAreSorted(got))
	require.NotContains(t, got, "common")

	// The slice is a copy.
	got[0] = "changed"
	require.NotEqual(t, "changed", spec.Schemas()[0])
}

func TestEverySchemaCompilesAndValidates(t *testing.T) {
	t.Parallel()
	for _, name := range spec.Schemas() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// A schema that did not compile is unknown to Validate; any
			// compiled schema answers findings (or none) for a document.
			_, err := spec.Validate(name, []byte(`{}`))
			require.NoError(t, err)
			_, err = spec.Validate(name, []byte(`[]`))
			require.NoError(t, err)
		})
	}
}

func TestSchemaIDs(t *testing.T) {
	t.Parallel()
	fsys := spec.SchemaFS()
	entries, err := fs.ReadDir(fsys, ".")
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".json")
		b, err := spec.SchemaJSON(name)
		require.NoError(t, err, name)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(b, &doc), name)
		require.Equal(t, "https://schemas.aiusage.dev/v1/"+e.Name(), doc["$id"], name)
		require.Equal(t, spec.SchemaBaseURL+e.Name(), doc["$id"], name)
		require.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"], name)
		if name != "common" {
			require.NotEmpty(t, doc["title"], "%s has no title", name)
		}
		// No $id below the root: every subschema is addressed through its
		// file, which the OpenAPI bundler relies on.
		require.Empty(t, nestedIDs(doc, ""), name)
	}
}

func nestedIDs(v any, ptr string) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if k == "$id" && ptr != "" {
				out = append(out, ptr)
			}
			if k == "$id" && ptr == "" {
				continue
			}
			out = append(out, nestedIDs(c, ptr+"/"+k)...)
		}
	case []any:
		for _, c := range v {
			out = append(out, nestedIDs(c, ptr+"/*")...)
		}
	}
	return out
}

func TestSchemaJSONUnknown(t *testing.T) {
	t.Parallel()
	_, err := spec.SchemaJSON("nope")
	require.ErrorIs(t, err, spec.ErrUnknownSchema)
	_, err = spec.SchemaJSON("../openapi/usage")
	require.ErrorIs(t, err, spec.ErrUnknownSchema)
}

func TestValidateErrors(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "nope", "common", "conversation.json", "Conversation", "../schemas/conversation"} {
		findings, err := spec.Validate(name, []byte(`{"id":"c1","startedAt":"2026-01-02T03:04:05Z"}`))
		require.ErrorIs(t, err, spec.ErrUnknownSchema, "schema %q", name)
		require.Nil(t, findings)
	}
	for _, data := range []string{"", "{", `{"id":}`, "nul", `{"id":"c1"} {}`, `{"id":"c1",}`, "\xff", `{"a":1}x`} {
		findings, err := spec.Validate("conversation", []byte(data))
		require.ErrorIs(t, err, spec.ErrInvalidJSON, "data %q", data)
		require.NotErrorIs(t, err, spec.ErrUnknownSchema)
		require.Nil(t, findings)
	}
	// A valid JSON value of the wrong type is not an error but a finding.
	findings, err := spec.Validate("conversation", []byte(`"text"`))
	require.NoError(t, err)
	require.False(t, spec.Valid(findings))
	require.Equal(t, "", findings[0].Pointer)
	require.Equal(t, "type", findings[0].Keyword)
}

func TestValidateValue(t *testing.T) {
	t.Parallel()
	var doc any
	require.NoError(t, json.Unmarshal([]byte(`{"id":"c1","startedAt":"2026-01-02T03:04:05Z","usage":{"inputTokens":12}}`), &doc))
	findings, err := spec.ValidateValue("conversation", doc)
	require.NoError(t, err)
	require.Empty(t, findings)

	// json.Number, as from a Decoder with UseNumber.
	dec := json.NewDecoder(strings.NewReader(`{"id":"c1","startedAt":"2026-01-02T03:04:05Z","usage":{"inputTokens":1.5}}`))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&doc))
	findings, err = spec.ValidateValue("conversation", doc)
	require.NoError(t, err)
	require.Len(t, findings, 1)
	require.Equal(t, "/usage/inputTokens", findings[0].Pointer)

	_, err = spec.ValidateValue("nope", doc)
	require.ErrorIs(t, err, spec.ErrUnknownSchema)
}

func TestValid(t *testing.T) {
	t.Parallel()
	require.True(t, spec.Valid(nil))
	require.True(t, spec.Valid([]spec.Finding{{Pointer: "/a", Level: spec.LevelWarning}}))
	require.False(t, spec.Valid([]spec.Finding{{Pointer: "/a", Level: spec.LevelWarning}, {Pointer: "/b", Level: spec.LevelError}}))
}

func TestFindingString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "/id: must not be empty", spec.Finding{Pointer: "/id", Level: spec.LevelError, Message: "must not be empty"}.String())
	require.Equal(t, "/role: warning: unknown", spec.Finding{Pointer: "/role", Level: spec.LevelWarning, Message: "unknown"}.String())
}

func TestFindingsSortedAndUnique(t *testing.T) {
	t.Parallel()
	doc := `{"id":5,"startedAt":"yesterday","messages":[{"role":"user","content":1},{"role":"tool","createdAt":"2026-13-01T00:00:00Z"}],"usage":{"inputTokens":-1,"cost":"free"}}`
	findings, err := spec.Validate("conversation", []byte(doc))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(findings), 6)
	seen := map[spec.Finding]bool{}
	for i, f := range findings {
		require.False(t, seen[f], "duplicate finding %v", f)
		seen[f] = true
		if i > 0 {
			require.LessOrEqual(t, findings[i-1].Pointer, f.Pointer)
		}
		require.NotEmpty(t, f.Message)
		require.NotEmpty(t, f.Keyword)
		require.Equal(t, spec.LevelError, f.Level)
	}
}

func TestTimestampFindingMessage(t *testing.T) {
	t.Parallel()
	// Every way a timestamp can be wrong yields exactly one finding at the
	// timestamp, with the message of CheckTimestamp.
	for _, v := range []string{"2026-01-02T03:04:05+02:00", "2026-01-02 03:04:05Z", "2026-01-02T03:04:05z", "2026-01-02"} {
		doc := `{"id":"c1","startedAt":"` + v + `"}`
		findings, err := spec.Validate("conversation", []byte(doc))
		require.NoError(t, err)
		require.Len(t, findings, 1, v)
		require.Equal(t, "/startedAt", findings[0].Pointer)
		require.Equal(t, "format", findings[0].Keyword)
		require.Equal(t, spec.CheckTimestamp(v).Error(), findings[0].Message, v)
	}
	findings, err := spec.Validate("organisation-list", []byte(`[{"id":"`+orgID+`","name":"N"}]`))
	require.NoError(t, err)
	require.Empty(t, findings)
	findings, err = spec.Validate("webhook", []byte(`{"id":"`+webhookID+`","url":"https://h.example.com/","events":["task.created"],"createdAt":"2026-01-02T03:04:05Z"}`))
	require.NoError(t, err)
	require.Len(t, findings, 1)
	require.Equal(t, spec.CheckTimestampMillis("2026-01-02T03:04:05Z").Error(), findings[0].Message)
}

func TestValidateConcurrent(t *testing.T) {
	t.Parallel()
	page, err := json.Marshal(conversationPage(5))
	require.NoError(t, err)
	done := make(chan []spec.Finding)
	for range 8 {
		go func() {
			f, _ := spec.Validate("conversation-list", page)
			done <- f
		}()
	}
	for range 8 {
		require.Empty(t, <-done)
	}
}

func TestListSchema(t *testing.T) {
	t.Parallel()
	for record, list := range map[string]string{
		"conversation": "conversation-list",
		"assistant":    "assistant-list",
		"event":        "event-list",
		"usage-bucket": "usage-list",
	} {
		got, ok := spec.ListSchema(record)
		require.True(t, ok, record)
		require.Equal(t, list, got)
		require.Contains(t, spec.Schemas(), got)
	}
	for _, name := range []string{"instruction", "review-task", "webhook", "nope", ""} {
		got, ok := spec.ListSchema(name)
		require.False(t, ok, name)
		require.Empty(t, got)
	}
}
