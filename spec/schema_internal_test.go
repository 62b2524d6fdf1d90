package spec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRecordSchemasHaveFastCheck: ValidateValue confirms a valid record of
// each record schema without the library.
func TestRecordSchemasHaveFastCheck(t *testing.T) {
	t.Parallel()
	r, err := load()
	require.NoError(t, err)
	for _, name := range []string{"conversation", "assistant", "event", "usage-bucket"} {
		require.NotNil(t, r.fast[name], name)
	}
}
