package otlpwire

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGzipBomb sends a small gzip body that inflates to 64 times the limit:
// it is answered 413, and the handler allocates less than 4 times the limit
// on the way. It runs alone (no t.Parallel), as TotalAlloc counts the
// allocations of the whole process.
func TestGzipBomb(t *testing.T) {
	const limit = 1 << 20
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	require.NoError(t, err)
	zeros := make([]byte, 1<<20)
	for range 64 {
		_, err := zw.Write(zeros)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	bomb := buf.Bytes()
	require.Less(t, len(bomb), limit/2, "the bomb is small")

	h := newHandler(t, Logs, Config{MaxBytes: limit})
	for _, ct := range []string{typeProtobuf, typeJSON} {
		req := httptest.NewRequest(http.MethodPost, "/v1/logs", bytes.NewReader(bomb))
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Content-Encoding", "gzip")
		rec := httptest.NewRecorder()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		h.ServeHTTP(rec, req)
		runtime.ReadMemStats(&after)
		require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
		require.Contains(t, rpcStatus(t, rec).Message, "after decompression")
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d bytes allocated for a limit of %d", ct, alloc, limit)
		require.Less(t, alloc, uint64(4*limit))
	}
}
