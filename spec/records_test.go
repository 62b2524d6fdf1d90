package spec_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

// TestValidateRecordNearMisses sets one value of a record per case, near the
// edge of one keyword, and says whether the record is valid in each mode.
func TestValidateRecordNearMisses(t *testing.T) {
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
				require.Equal(t, m.valid, len(findings) == 0, "findings %v for %s", findings, raw)
			}
			// Strict mode reports an unknown extensible value as a warning
			// only: the document stays valid.
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
