package export_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/export"
	"github.com/aiusage/kit/consumer/sqlstore"
	provexport "github.com/aiusage/kit/provider/export"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// Sync a store from the sets a provider exported to a directory: the
// Source takes the place of the REST client under a consumer.Poller.
func Example() {
	ctx := context.Background()

	// A provider's export: one full set of two conversations.
	dir, err := os.MkdirTemp("", "export")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	vendor := memsource.New()
	for _, id := range []string{"c1", "c2"} {
		if err := vendor.UpsertConversation(ctx, "acme", spec.Conversation{ID: id, StartedAt: spec.NewTime(at), UpdatedAt: spec.NewTime(at)}); err != nil {
			log.Fatal(err)
		}
	}
	x, err := provexport.New(vendor, provexport.Config{Dir: dir, Tenant: "acme"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := x.Write(ctx, provexport.Full); err != nil {
		log.Fatal(err)
	}

	// The consumer: the export's directory (or https:// address) as its source.
	src, err := export.New(export.Config{URL: dir})
	if err != nil {
		log.Fatal(err)
	}
	store, err := sqlstore.Open(ctx, "sqlite::memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	poller, err := consumer.NewPoller(src, store, &consumer.Config{Source: "vendor", Resources: []consumer.Resource{consumer.Conversations}})
	if err != nil {
		log.Fatal(err)
	}
	res, err := poller.SyncOnce(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored:", res.Records())
	_ = store.Export(ctx, "vendor", consumer.Conversations, false, func(rec json.RawMessage) error {
		fmt.Println(string(rec))
		return nil
	})
	// Output:
	// stored: 2
	// {"id":"c1","startedAt":"2026-03-01T09:00:00.000Z","updatedAt":"2026-03-01T09:00:00.000Z"}
	// {"id":"c2","startedAt":"2026-03-01T09:00:00.000Z","updatedAt":"2026-03-01T09:00:00.000Z"}
}
