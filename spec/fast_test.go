package spec_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

// recordSchemas are the schemas of the records a consumer receives, each of
// which must have a fast path.
var recordSchemas = []string{"conversation", "assistant", "event", "usage-bucket"}

var modes = []struct {
	name string
	mode spec.Mode
}{{"strict", spec.Strict}, {"lenient", spec.Lenient}}

func TestRecordSchemasHaveFastPath(t *testing.T) {
	t.Parallel()
	for _, name := range recordSchemas {
		for _, m := range modes {
			c, err := spec.NewChecker(name, spec.WithMode(m.mode))
			require.NoError(t, err, "%s (%s)", name, m.name)
			require.Equal(t, name, c.Schema())
		}
	}
}

func TestNewCheckerRefuses(t *testing.T) {
	t.Parallel()
	for name, keyword := range map[string]string{
		"instruction-patch": "if",          // before anyOf of categoryId
		"webhook-list":      "uniqueItems", // events
		"organisation":      "format",      // uuid
		"list-envelope":     "",            // if/then/else, x-message: either may be met first
	} {
		_, err := spec.NewChecker(name)
		require.ErrorIs(t, err, spec.ErrNoFastPath, name)
		require.Contains(t, err.Error(), `"`+keyword, name)
		require.False(t, spec.Check(name, map[string]any{}), "%s has no fast path: Check must say no", name)
	}
	for _, name := range []string{"nope", "common", "../conversation"} {
		_, err := spec.NewChecker(name)
		require.ErrorIs(t, err, spec.ErrUnknownSchema, name)
		require.False(t, spec.Check(name, map[string]any{}))
	}
	var c *spec.Checker
	require.False(t, c.Check(map[string]any{}), "a nil Checker says no")
}

// fastSeeds returns the valid documents of the record schemas: the valid
// bases, the example files and the Go fixtures marshalled, by schema.
func fastSeeds(t testing.TB) map[string][][]byte {
	t.Helper()
	out := map[string][][]byte{}
	for _, name := range recordSchemas {
		out[name] = append(out[name], []byte(validBases[name]))
		files, err := filepath.Glob(filepath.Join("testdata", "examples", name+"*.json"))
		require.NoError(t, err)
		for _, f := range files {
			base := strings.TrimSuffix(filepath.Base(f), ".json")
			if s, _, _ := strings.Cut(base, "."); s != name {
				continue // conversation-list.json
			}
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			out[name] = append(out[name], b)
		}
	}
	for name, v := range map[string]any{
		"conversation": fullConversation(3), "assistant": fullAssistant(), "event": fullEvent(), "usage-bucket": fullUsageBucket(),
	} {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		out[name] = append(out[name], b)
	}
	for _, c := range conversationPage(20).Data {
		b, err := json.Marshal(c)
		require.NoError(t, err)
		out["conversation"] = append(out["conversation"], b)
	}
	return out
}

// mutationValues replace one value of a valid document at a time: the
// near misses of every keyword the record schemas use.
var mutationValues = []string{
	`null`, `true`, `0`, `-1`, `-0`, `1.5`, `1e300`, `-1e-300`, `9007199254740993`, `""`, `"x"`, `"é"`, `{}`, `[]`, `[1]`, `["x"]`, `{"id":1}`,
	`"2026-03-09T08:15:00Z"`, `"2026-03-09T08:15:00.123456789Z"`, `"2026-03-09T08:15:00.1234567890Z"`, `"2026-03-09T08:15:00+00:00"`,
	`"2026-03-09T08:15:00z"`, `"2026-03-09t08:15:00Z"`, `"2026-03-09 08:15:00Z"`, `"2026-02-29T08:15:00Z"`, `"2024-02-29T23:59:59Z"`,
	`"2026-13-09T08:15:00Z"`, `"2026-03-09T24:00:00Z"`, `"2026-03-09T08:60:00Z"`, `"2016-12-31T23:59:60Z"`, `"0000-02-29T00:00:00Z"`,
	`"2026-03-09T08:15:00.Z"`, `"2026-03-09T08:15:00"`,
	`"user"`, `"developer"`, `"Authentication"`, `"authentication"`, `"hour"`, `"week"`, `"team"`, `"builtin"`, `"uploaded"`,
}

// mutations returns doc with every value (and every member) replaced by
// each of mutationValues, deleted, or joined by an unknown member.
func mutations(t testing.TB, doc []byte) [][]byte {
	t.Helper()
	var root any
	require.NoError(t, json.Unmarshal(doc, &root))
	var out [][]byte
	emit := func() {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(root))
		out = append(out, bytes.TrimSpace(buf.Bytes()))
	}
	var walk func(v any)
	walk = func(v any) {
		switch c := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(c))
			for k := range c {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				old := c[k]
				for _, m := range mutationValues {
					var nv any
					require.NoError(t, json.Unmarshal([]byte(m), &nv))
					c[k] = nv
					emit()
				}
				delete(c, k)
				emit()
				c[k] = old
				walk(old)
			}
			c["zzUnknown"] = "x"
			emit()
			delete(c, "zzUnknown")
		case []any:
			for i, e := range c {
				for _, m := range []string{`null`, `"x"`, `{}`, `{"role":"developer"}`} {
					var nv any
					require.NoError(t, json.Unmarshal([]byte(m), &nv))
					c[i] = nv
					emit()
				}
				c[i] = e
				walk(e)
			}
		}
	}
	walk(root)
	return out
}

// agree checks that the fast checker never accepts what the library
// rejects. With complete also set, it checks the converse: the checker is
// meant to be exact for documents decoded into float64 numbers.
func agree(t *testing.T, schema string, doc any, complete bool) {
	t.Helper()
	for _, m := range modes {
		fast := spec.Check(schema, doc, spec.WithMode(m.mode))
		findings, err := spec.ValidateValue(schema, doc, spec.WithMode(m.mode))
		if err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		if fast && len(findings) > 0 {
			t.Fatalf("%s (%s): the fast check accepts what the library reports: %v\ndocument: %#v", schema, m.name, findings, doc)
		}
		if complete && !fast && len(findings) == 0 {
			t.Fatalf("%s (%s): the fast check rejects what the library accepts: %#v", schema, m.name, doc)
		}
	}
}

func FuzzFastCheck(f *testing.F) {
	seeds := fastSeeds(f)
	for _, name := range recordSchemas {
		for _, s := range seeds[name] {
			f.Add(s)
		}
		// The mutations of the small valid bases: every keyword's near
		// misses, a few thousand inputs that run in the normal test run.
		for _, m := range mutations(f, []byte(validBases[name])) {
			f.Add(m)
		}
	}
	for _, s := range []string{`null`, `[]`, `{}`, `{"id":"x","startedAt":"2026-01-02T03:04:05Z","messages":[{"role":7}]}`,
		`{"startAt":"2026-01-02T03:04:05Z","metrics":{"requests":1.0,"cost":-0}}`, `{"id":"\u0000","occurredAt":"2026-01-02T03:04:05Z"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var doc any
		if json.Unmarshal(data, &doc) != nil {
			return
		}
		var withNumbers any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&withNumbers); err != nil {
			t.Fatalf("UseNumber: %v", err)
		}
		for _, schema := range recordSchemas {
			agree(t, schema, doc, true)
			agree(t, schema, withNumbers, false)
		}
	})
}

// TestFastCheckAcceptsValidSeeds makes sure the fast path is taken on
// realistic records: every valid seed passes it, in both modes.
func TestFastCheckAcceptsValidSeeds(t *testing.T) {
	t.Parallel()
	n := 0
	for name, docs := range fastSeeds(t) {
		for _, b := range docs {
			var doc any
			require.NoError(t, json.Unmarshal(b, &doc))
			findings, err := spec.ValidateValue(name, doc)
			require.NoError(t, err)
			require.Empty(t, findings, "%s: a seed is not valid: %s", name, b)
			for _, m := range modes {
				require.True(t, spec.Check(name, doc, spec.WithMode(m.mode)), "%s (%s): %s", name, m.name, b)
			}
			n++
		}
	}
	require.GreaterOrEqual(t, n, 30)
}

// TestFastCheckNearMisses sets one value per case, near the edge of one
// keyword, and says what the library decides in each mode; the fast checker
// must decide the same.
func TestFastCheckNearMisses(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 5000)
	for _, tc := range []struct {
		name, base, ptr, raw string // raw "" deletes
		strict, lenient      bool   // valid in each mode
	}{
		{"id wrong type", "conversation", "/id", `42`, false, false},
		{"id empty", "conversation", "/id", `""`, false, false},
		{"id one character", "conversation", "/id", `"é"`, true, true},
		{"id very long", "conversation", "/id", jsonString(long), true, true},
		{"missing required id", "conversation", "/id", "", false, false},
		{"missing required startedAt", "conversation", "/startedAt", "", false, false},
		{"missing optional updatedAt", "conversation", "/updatedAt", "", true, true},
		{"unknown member is allowed", "conversation", "/vendorField", `{"a":1}`, true, true},
		{"metadata not an object", "conversation", "/metadata", `[]`, false, false},
		{"null where not nullable", "conversation", "/model", `null`, false, false},
		{"null user", "conversation", "/user", `null`, false, false},
		{"known role", "conversation", "/messages/0/role", `"system"`, true, true},
		{"unknown role", "conversation", "/messages/0/role", `"developer"`, false, true},
		{"role wrong case", "conversation", "/messages/0/role", `"User"`, false, true},
		{"role not a string", "conversation", "/messages/0/role", `1`, false, false},
		{"role null", "conversation", "/messages/0/role", `null`, false, false},
		{"unknown attachment kind", "conversation", "/attachments/0/kind", `"linked"`, false, true},
		{"message not an object", "conversation", "/messages/1", `"hi"`, false, false},
		{"groups item not a string", "conversation", "/user/groups/0", `1`, false, false},
		{"timestamp with millis", "conversation", "/startedAt", `"2026-03-09T08:15:00.123Z"`, true, true},
		{"timestamp with nanos", "conversation", "/startedAt", `"2026-03-09T08:15:00.123456789Z"`, true, true},
		{"timestamp ten fraction digits", "conversation", "/startedAt", `"2026-03-09T08:15:00.1234567891Z"`, false, false},
		{"timestamp with offset", "conversation", "/startedAt", `"2026-03-09T08:15:00+00:00"`, false, false},
		{"timestamp lowercase z", "conversation", "/startedAt", `"2026-03-09T08:15:00z"`, false, false},
		{"timestamp lowercase t", "conversation", "/startedAt", `"2026-03-09t08:15:00Z"`, false, false},
		{"timestamp space", "conversation", "/updatedAt", `"2026-03-09 08:15:00Z"`, false, false},
		{"timestamp February 29th 2026", "conversation", "/messages/0/createdAt", `"2026-02-29T08:15:00Z"`, false, false},
		{"timestamp February 29th 2024", "conversation", "/messages/0/createdAt", `"2024-02-29T08:15:00Z"`, true, true},
		{"timestamp hour 24", "conversation", "/startedAt", `"2026-03-09T24:00:00Z"`, false, false},
		{"timestamp leap second", "conversation", "/startedAt", `"2016-12-31T23:59:60Z"`, false, false},
		{"timestamp year 0", "conversation", "/startedAt", `"0000-01-01T00:00:00Z"`, true, true},
		{"timestamp number", "conversation", "/startedAt", `1767225600`, false, false},
		{"negative tokens", "conversation", "/usage/inputTokens", `-1`, false, false},
		{"zero tokens", "conversation", "/usage/inputTokens", `0`, true, true},
		{"negative zero tokens", "conversation", "/usage/inputTokens", `-0`, true, true},
		{"whole float tokens", "conversation", "/usage/inputTokens", `12.0`, true, true},
		{"fractional tokens", "conversation", "/usage/inputTokens", `12.5`, false, false},
		{"huge tokens", "conversation", "/usage/inputTokens", `1e300`, true, true},
		{"tiny negative cost", "conversation", "/usage/cost", `-1e-300`, false, false},
		{"cost as string", "conversation", "/usage/cost", `"0.1"`, false, false},
		{"negative maxTokens", "conversation", "/parameters/maxTokens", `-5`, false, false},
		{"temperature negative allowed", "conversation", "/parameters/temperature", `-5`, true, true},
		{"unknown visibility", "assistant", "/visibility", `"tenant"`, false, true},
		{"unknown skill type", "assistant", "/skills/0/type", `"agent"`, false, true},
		{"negative sizeBytes", "assistant", "/knowledge/0/sizeBytes", `-1`, false, false},
		{"missing createdAt", "assistant", "/createdAt", "", false, false},
		{"bad lastUsedAt", "assistant", "/usage/lastUsedAt", `"2026-03-01T00:00:00+01:00"`, false, false},
		{"unknown category", "event", "/category", `"Billing"`, false, true},
		{"unknown action", "event", "/action", `"Archived"`, false, true},
		{"unknown actor type", "event", "/actor/type", `"robot"`, false, true},
		{"category not a string", "event", "/category", `7`, false, false},
		{"payload not an object", "event", "/payload", `"x"`, false, false},
		{"missing occurredAt", "event", "/occurredAt", "", false, false},
		{"unknown granularity", "usage-bucket", "/granularity", `"week"`, false, true},
		{"granularity null", "usage-bucket", "/granularity", `null`, false, false},
		{"dimension not a string", "usage-bucket", "/dimensions/model", `1`, false, false},
		{"fractional requests", "usage-bucket", "/metrics/requests", `1.5`, false, false},
		{"negative cost", "usage-bucket", "/metrics/cost", `-0.5`, false, false},
		{"missing startAt", "usage-bucket", "/startAt", "", false, false},
		{"metrics an array", "usage-bucket", "/metrics", `[]`, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var raw []byte
			if tc.raw == "" {
				raw = []byte(edit(t, tc.base, tc.ptr, ""))
			} else {
				raw = []byte(editOrAdd(t, validBases[tc.base], tc.ptr, tc.raw))
			}
			var doc any
			require.NoError(t, json.Unmarshal(raw, &doc))
			for _, m := range []struct {
				opt   spec.ValidateOption
				valid bool
			}{{spec.WithMode(spec.Strict), tc.strict}, {spec.WithMode(spec.Lenient), tc.lenient}} {
				findings, err := spec.ValidateValue(tc.base, doc, m.opt)
				require.NoError(t, err)
				require.Equal(t, m.valid, len(findings) == 0, "library findings %v for %s", findings, raw)
				require.Equal(t, m.valid, spec.Check(tc.base, doc, m.opt), "fast check of %s", raw)
			}
			// Strict mode reports an unknown extensible value as a warning
			// only: the document stays valid, the fast check still says no.
			if !tc.strict && tc.lenient {
				findings, _ := spec.ValidateValue(tc.base, doc)
				require.True(t, spec.Valid(findings))
			}
		})
	}
}

// editOrAdd is editDoc that also adds a member the document lacks.
func editOrAdd(t testing.TB, src, ptr, raw string) string {
	t.Helper()
	doc := decodeJSON(t, src)
	parentPtr := ptr[:strings.LastIndex(ptr, "/")]
	parent, ok := spec.ResolvePointer(doc, parentPtr)
	require.True(t, ok, "no parent for %s", ptr)
	if m, ok := parent.(map[string]any); ok {
		if _, exists := m[ptr[len(parentPtr)+1:]]; !exists {
			m[ptr[len(parentPtr)+1:]] = decodeJSON(t, raw)
			b, err := json.Marshal(doc)
			require.NoError(t, err)
			return string(b)
		}
	}
	return editDoc(t, src, ptr, raw)
}

// TestFastCheckRejectsInvalidDocuments runs the invalid documents of the
// record schemas past the fast checker: it rejects every one.
func TestFastCheckRejectsInvalidDocuments(t *testing.T) {
	t.Parallel()
	n := 0
	for _, tc := range invalidCases(t) {
		schema, doc := tc.schema, tc.doc
		if doc == "" {
			at := tc.at
			if at == "" {
				at = tc.ptr
			}
			doc = edit(t, tc.base, at, tc.raw)
		}
		if schema == "" {
			schema = schemaOfBase(tc.base)
		}
		if _, err := spec.NewChecker(schema); errors.Is(err, spec.ErrNoFastPath) {
			continue
		}
		for _, v := range []any{decodeJSON(t, doc), decodePlain(t, doc)} {
			for _, m := range modes {
				require.False(t, spec.Check(schema, v, spec.WithMode(m.mode)), "%s (%s): %s", tc.name, m.name, doc)
			}
		}
		n++
	}
	require.GreaterOrEqual(t, n, 20)
}

func decodePlain(t testing.TB, s string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v))
	return v
}

// TestFastCheckNumbers covers json.Number, which the checker handles
// conservatively: never accepting what the library rejects.
func TestFastCheckNumbers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		num  string
		fast bool // the checker's answer; the library accepts whenever it does
	}{
		{"0", true}, {"12", true}, {"-0", true}, {"9007199254740993", true}, {"1e3", false}, {"12.0", false},
		{"-1", false}, {"0.0000000000000000000000000001", false}, {"-0.0000000000000000000000000001", false}, {"1.5", false},
	} {
		doc := decodeJSON(t, `{"startAt":"2026-03-09T00:00:00Z","metrics":{"requests":`+tc.num+`}}`)
		require.Equal(t, tc.fast, spec.Check("usage-bucket", doc), tc.num)
		findings, err := spec.ValidateValue("usage-bucket", doc)
		require.NoError(t, err)
		if tc.fast {
			require.Empty(t, findings, tc.num)
		}
		// cost is a number: bounds without the integer requirement.
		doc = decodeJSON(t, `{"startAt":"2026-03-09T00:00:00Z","metrics":{"cost":`+tc.num+`}}`)
		findings, err = spec.ValidateValue("usage-bucket", doc)
		require.NoError(t, err)
		if spec.Check("usage-bucket", doc) {
			require.Empty(t, findings, "cost %s", tc.num)
		}
	}
}
