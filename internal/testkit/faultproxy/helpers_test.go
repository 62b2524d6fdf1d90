package faultproxy

import (
	"compress/gzip"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func rngFor(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }

func writeGzip(t *testing.T, w io.Writer, s string) {
	t.Helper()
	zw := gzip.NewWriter(w)
	_, err := io.WriteString(zw, s)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
}
