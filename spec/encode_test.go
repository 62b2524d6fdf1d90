package spec

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRequiredArraysNeverNull(t *testing.T) {
	t.Parallel()
	cases := []struct {
		schema string
		v      any
		want   string
	}{
		{"instruction-list", InstructionList{Page: 1, PageSize: 20}, `"items":[]`},
		{"review-task-list", ReviewTaskList{Limit: 20}, `"data":[]`},
		{"webhook-list", WebhookList{}, `"data":[]`},
	}
	for _, tc := range cases {
		t.Run(tc.schema, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			require.NoError(t, err)
			require.Contains(t, string(b), tc.want)
			f, err := Validate(tc.schema, b)
			require.NoError(t, err)
			require.Empty(t, f, "%s: %s", tc.schema, b)
		})
	}
	b, err := json.Marshal(Instruction{ID: "x"})
	require.NoError(t, err)
	require.Contains(t, string(b), `"usedBy":[]`)
	b, err = json.Marshal(Webhook{ID: "x"})
	require.NoError(t, err)
	require.Contains(t, string(b), `"events":[]`)
}

func TestProblemExtensions(t *testing.T) {
	t.Parallel()
	p := Problem{Type: "about:blank", Title: "Conflict", Status: 409, Detail: "agent full",
		Extensions: map[string]any{"agent": map[string]any{"id": "a1", "name": "Support"}}}
	b, err := json.Marshal(p)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"about:blank","title":"Conflict","status":409,"detail":"agent full","agent":{"id":"a1","name":"Support"}}`, string(b))
	f, err := Validate("problem", b)
	require.NoError(t, err)
	require.Empty(t, f)
	var back Problem
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, p, back)

	_, err = json.Marshal(Problem{Type: "about:blank", Title: "x", Status: 400, Extensions: map[string]any{"status": 1}})
	require.Error(t, err)
}
