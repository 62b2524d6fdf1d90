package provider_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

func ExampleNewHandler() {
	src := memsource.New()
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	_ = src.UpsertConversation(context.Background(), "acme", spec.Conversation{
		ID: "c1", StartedAt: spec.NewTime(at), UpdatedAt: spec.NewTime(at), Model: "gpt-4o",
	})
	h, err := provider.NewHandler(src, provider.WithTokens(provider.Token{Secret: "s3cret", Tenant: "acme"}))
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/aiusage/", http.StripPrefix("/aiusage", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/aiusage/conversations", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 200 {"data":[{"id":"c1","startedAt":"2026-03-01T09:00:00.000Z","updatedAt":"2026-03-01T09:00:00.000Z","model":"gpt-4o"}],"hasMore":false,"nextCursor":null}
}
