package mcp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSourceBoundsAnswers: an MCP endpoint answering with a huge body (an
// error's, which mcp-go reads whole, or a result's) is read no further than
// the bounds, and the error does not carry the body.
func TestSourceBoundsAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for range 160 { // 10 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	_, err := NewSource(context.Background(), srv.URL+"/mcp", "t")
	require.Error(t, err)
	require.Less(t, len(err.Error()), 8<<10, "the error carries at most the bounded body")

	b := &limitedBody{ReadCloser: io.NopCloser(strings.NewReader(strings.Repeat("y", 100))), left: 10}
	got, err := io.ReadAll(b)
	require.ErrorIs(t, err, errBodyTooLarge)
	require.Len(t, got, 10)
}
