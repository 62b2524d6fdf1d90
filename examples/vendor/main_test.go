package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/conformance"
)

// TestVendorApp starts the vendor's application as main does, on a free port
// of 127.0.0.1, and runs the conformance suite against its /aiusage/ mount:
// every check is a subtest. The vendor's credentials give the suite all it
// needs: a token of acme that reads everything, one of acme without
// read:usage (the reviewer's) and one of a second customer, globex. What the
// toy store lacks is skipped: /usage and /events (501), records sharing an
// updatedAt (PAGE-03) and deleted conversations (REC-04).
func TestVendorApp(t *testing.T) {
	t.Parallel()
	base := startVendorApp(t)

	conformance.Test(t, conformance.Config{
		BaseURL:          base + "/aiusage",
		Token:            "acme-full",
		UsagelessToken:   "acme-reviewer",
		OtherTenantToken: "globex-full",
		MaxRate:          5000,
	})

	// What the suite does not look at: the toy store holds no usage metrics
	// and no audit events, which the handler answers with 501 problems (the
	// suite skips those resources), and the vendor's own routes live beside
	// the mount.
	for _, path := range []string{"/aiusage/events", "/aiusage/usage"} {
		resp, body := get(t, base+path, "acme-full")
		require.Equal(t, http.StatusNotImplemented, resp.StatusCode, path)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"), path)
		var problem struct{ Status int }
		require.NoError(t, json.Unmarshal(body, &problem), path)
		require.Equal(t, http.StatusNotImplemented, problem.Status, path)
	}
	resp, body := get(t, base+"/", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "the vendor's own application\n", string(body))
}

// startVendorApp serves the vendor's application until the test ends and
// returns its base URL.
func startVendorApp(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, ln, newChatStore(time.Now()), credentials("acme-full", "acme-reviewer", "globex-full"), slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, url, token string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}
