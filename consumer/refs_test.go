package consumer

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRefsOf checks that refsOf reads what decoding the JSON with
// encoding/json into a struct reads (what a store does without Refs), or
// returns nil.
func TestRefsOf(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{}`,
		`{"user":{"id":"u1"},"assistant":{"id":"a1"}}`,
		`{"user":{"id":"u1"}}`,
		`{"user":null,"assistant":{"id":"a1"}}`,
		`{"user":{"id":7},"assistant":{"id":["a"]}}`,
		`{"user":"u1","assistant":{"id":"a1"}}`,
		`{"user":{"id":"u1"},"assistant":3}`,
		`{"user":{"id":"u1"},"User":{"id":"u2"}}`,
		`{"USER":{"ID":"u2"}}`,
		`{"user":{"Id":"u2"}}`,
		`{"user":{"id":"u1"},"user":{"id":"u2"}}`,
		`{"user":{"name":"x"},"assistant":{"id":""}}`,
	} {
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(raw), &obj), raw)
		r := refsOf(obj)
		if r == nil {
			continue
		}
		var c struct {
			User      struct{ ID any } `json:"user"`
			Assistant struct{ ID any } `json:"assistant"`
		}
		var want Refs
		if json.Unmarshal([]byte(raw), &c) == nil {
			want.UserID, _ = c.User.ID.(string)
			want.AssistantID, _ = c.Assistant.ID.(string)
		}
		require.Equal(t, want, *r, raw)
	}
}
