package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestVendorApp(t *testing.T) {
	t.Parallel()
	mux, err := newMux(newChatStore(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), "tok", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	get := func(path string) (*http.Response, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return resp, body
	}
	// Walk all conversations in pages of 7.
	seen := map[string]bool{}
	path := "/aiusage/conversations?limit=7"
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		resp, body := get(path)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		for _, c := range body["data"].([]any) {
			id := c.(map[string]any)["id"].(string)
			require.False(t, seen[id], "duplicate %s", id)
			seen[id] = true
		}
		if body["hasMore"] == false {
			require.Nil(t, body["nextCursor"])
			break
		}
		path = "/aiusage/conversations?limit=7&cursor=" + url.QueryEscape(body["nextCursor"].(string))
	}
	require.Len(t, seen, 25)

	resp, body := get("/aiusage/assistants/asst-contracts")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "Contract Reviewer", body["name"])

	resp, body = get("/aiusage/events")
	require.Equal(t, http.StatusNotImplemented, resp.StatusCode)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	require.EqualValues(t, 501, body["status"])

	resp, _ = http.Get(srv.URL + "/aiusage/conversations")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	_ = resp.Body.Close()
}
