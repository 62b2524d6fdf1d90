package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/provider"
)

func Example() {
	ctx := context.Background()
	store, err := sqlstore.Open(ctx, "sqlite::memory:") // applies the migrations
	if err != nil {
		panic(err)
	}
	defer store.Close() // closes the database too

	now := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	lease := consumer.Lease{Source: "acme", Resource: consumer.Conversations, Owner: "poller-1", Now: now, Expires: now.Add(time.Minute)}
	if ok, err := store.AcquireLease(ctx, lease); err != nil || !ok {
		panic(fmt.Sprint(ok, err))
	}
	body := `{"id":"c1","startedAt":"2026-03-01T09:00:00.000Z","updatedAt":"2026-03-01T09:10:00.000Z","x-vendor":1}`
	err = store.SavePage(ctx, consumer.PageWrite{
		Lease: lease,
		Records: []consumer.Record{{
			ID: "c1", Time: now.Add(-20 * time.Minute), StartedAt: now.Add(-30 * time.Minute), JSON: json.RawMessage(body),
		}},
		Checkpoint: consumer.Checkpoint{Run: 1, InProgress: true, Cursor: "next", Pages: 1, Records: 1},
	})
	if err != nil {
		panic(err)
	}

	// The collected view serves the record as received, tenant = source.
	page, err := store.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "acme", Limit: 10})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(page.Items[0].JSON))

	status, err := store.Status(ctx)
	if err != nil {
		panic(err)
	}
	for _, s := range status {
		fmt.Println(s.Source, s.Resource, s.Records, s.Checkpoint.Cursor)
	}
	// Output:
	// {"id":"c1","startedAt":"2026-03-01T09:00:00.000Z","updatedAt":"2026-03-01T09:10:00.000Z","x-vendor":1}
	// acme conversations 1 next
}

// New takes a database/sql pool you opened and keep: here a SQLite file
// through modernc.org/sqlite, with the settings New expects.
func ExampleNew() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sqlstore-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	dsn := filepath.Join(dir, "consumer.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		panic(err)
	}
	defer db.Close() // yours to close, after the Store

	store, err := sqlstore.New(ctx, db, sqlstore.SQLite) // applies the migrations
	if err != nil {
		panic(err)
	}
	defer store.Close() // leaves db open

	now := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	lease := consumer.Lease{Source: "acme", Resource: consumer.Events, Owner: "poller-1", Now: now, Expires: now.Add(time.Minute)}
	ok, err := store.AcquireLease(ctx, lease)
	if err != nil {
		panic(err)
	}
	holder, _, err := store.LeaseHolder(ctx, "acme", consumer.Events)
	if err != nil {
		panic(err)
	}
	fmt.Println(ok, holder.Owner)
	// Output:
	// true poller-1
}

// What a Store collected from a source is served again, as received,
// through [provider.NewHandler]: the tenant is the source's name.
func Example_collectedView() {
	ctx := context.Background()
	store, err := sqlstore.Open(ctx, "sqlite::memory:")
	if err != nil {
		panic(err)
	}
	defer store.Close()

	// A consumer.Poller fills the store: consumer.NewPoller(source, store, &consumer.Config{...}).
	now := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	lease := consumer.Lease{Source: "acme", Resource: consumer.Conversations, Owner: "poller-1", Now: now, Expires: now.Add(time.Minute)}
	if ok, err := store.AcquireLease(ctx, lease); err != nil || !ok {
		panic(fmt.Sprint(ok, err))
	}
	body := `{"id":"c1","startedAt":"2026-03-01T09:00:00.000Z","updatedAt":"2026-03-01T09:10:00.000Z"}`
	err = store.SavePage(ctx, consumer.PageWrite{
		Lease:      lease,
		Records:    []consumer.Record{{ID: "c1", Time: now.Add(-20 * time.Minute), StartedAt: now.Add(-30 * time.Minute), JSON: json.RawMessage(body)}},
		Checkpoint: consumer.Checkpoint{Run: 1, InProgress: true, Pages: 1, Records: 1},
	})
	if err != nil {
		panic(err)
	}

	h, err := provider.NewHandler(store, provider.WithTokens(provider.Token{Secret: "s3cret", Tenant: "acme"}))
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/conversations", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(got))
	// Output:
	// 200 {"data":[{"id":"c1","startedAt":"2026-03-01T09:00:00.000Z","updatedAt":"2026-03-01T09:10:00.000Z"}],"hasMore":false,"nextCursor":null}
}
