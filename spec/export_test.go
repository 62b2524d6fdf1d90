package spec_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

func TestExportSetID(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 9, 10, 15, 0, 123_456_789, time.FixedZone("CET", 3600))
	id := spec.ExportSetID(42, at)
	require.Equal(t, "000000000042-20260309T091500123Z", id)
	require.NoError(t, spec.CheckExportSetID(id))
	// Ids sort as their sequences do.
	require.Less(t, spec.ExportSetID(9, at.Add(time.Hour)), spec.ExportSetID(10, at))
	for _, bad := range []string{"", "42", "../000000000042-20260309T091500123Z", "000000000042-20260309T091500123Z/", "000000000042-20260309T0915001Z"} {
		require.Error(t, spec.CheckExportSetID(bad), "%q", bad)
	}
}
