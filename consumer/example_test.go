package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http/httptest"
	"time"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// Sync a provider into a store, then read the copy back.
func Example() {
	ctx := context.Background()

	// A provider with two conversations, served over HTTP.
	src := memsource.New()
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, id := range []string{"c1", "c2"} {
		if err := src.UpsertConversation(ctx, "acme", spec.Conversation{ID: id, StartedAt: spec.NewTime(at), UpdatedAt: spec.NewTime(at)}); err != nil {
			log.Fatal(err)
		}
	}
	h, err := provider.NewHandler(src, provider.WithTokens(provider.Token{Secret: "s3cret", Tenant: "acme"}))
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	client, err := consumer.NewClient(consumer.ClientConfig{URL: srv.URL, Token: "s3cret"})
	if err != nil {
		log.Fatal(err)
	}
	store, err := sqlstore.Open(ctx, "sqlite::memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	poller, err := consumer.NewPoller(client, store, &consumer.Config{Source: "acme", Resources: []consumer.Resource{consumer.Conversations}})
	if err != nil {
		log.Fatal(err)
	}
	res, err := poller.SyncOnce(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored:", res.Records())
	_ = store.Export(ctx, "acme", consumer.Conversations, false, func(rec json.RawMessage) error {
		fmt.Println(string(rec))
		return nil
	})
	// Output:
	// stored: 2
	// {"id":"c1","startedAt":"2026-03-01T09:00:00.000Z","updatedAt":"2026-03-01T09:00:00.000Z"}
	// {"id":"c2","startedAt":"2026-03-01T09:00:00.000Z","updatedAt":"2026-03-01T09:00:00.000Z"}
}
