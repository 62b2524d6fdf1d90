package sqlsource_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/sqlsource"
	"github.com/aiusage/kit/spec"
)

func Example() {
	ctx := context.Background()
	src, err := sqlsource.Open(ctx, "sqlite::memory:") // applies the migrations
	if err != nil {
		panic(err)
	}
	defer src.Close() // closes the database too

	at := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	err = src.WriteBatch(ctx, func(w provider.Writer) error {
		for i, model := range []string{"gpt-4o", "claude-sonnet-4", "gpt-4o"} {
			id := fmt.Sprintf("conv-%d", i)
			c := spec.Conversation{ID: id, StartedAt: spec.NewTime(at), UpdatedAt: spec.NewTime(at), Model: model}
			if err := w.UpsertConversation(ctx, "acme", c); err != nil {
				return err
			}
			u := provider.UsageRecord{ID: id + "-1", At: at, ConversationID: id, UserID: "u1", Model: model, InputTokens: 100}
			if err := w.RecordUsage(ctx, "acme", u); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		panic(err)
	}

	page, err := src.ListConversationsRaw(ctx, provider.ConversationQuery{Tenant: "acme", Limit: 2})
	if err != nil {
		panic(err)
	}
	for _, r := range page.Items {
		fmt.Println(string(r.JSON))
	}
	fmt.Println("hasMore:", page.HasMore)

	usage, err := src.Usage(ctx, provider.UsageQuery{
		Tenant: "acme", Start: at.Truncate(24 * time.Hour), End: at.Truncate(24 * time.Hour).Add(24 * time.Hour),
		Granularity: spec.GranularityDay, GroupBy: []string{spec.DimensionModel}, Limit: 10,
	})
	if err != nil {
		panic(err)
	}
	for _, b := range usage.Items {
		fmt.Println(*b.Dimensions.Model, b.Metrics.Requests, b.Metrics.InputTokens)
	}
	// Output:
	// {"id":"conv-0","startedAt":"2026-03-01T09:30:00.000Z","updatedAt":"2026-03-01T09:30:00.000Z","model":"gpt-4o"}
	// {"id":"conv-1","startedAt":"2026-03-01T09:30:00.000Z","updatedAt":"2026-03-01T09:30:00.000Z","model":"claude-sonnet-4"}
	// hasMore: true
	// claude-sonnet-4 1 100
	// gpt-4o 2 200
}

// New takes a database/sql pool you opened and keep: here a SQLite file
// through modernc.org/sqlite, with the settings New expects.
func ExampleNew() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sqlsource-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	dsn := filepath.Join(dir, "provider.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		panic(err)
	}
	defer db.Close() // yours to close, after the Source

	src, err := sqlsource.New(ctx, db, sqlsource.SQLite) // applies the migrations
	if err != nil {
		panic(err)
	}
	defer src.Close() // leaves db open

	at := spec.NewTime(time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC))
	if err := src.UpsertConversation(ctx, "acme", spec.Conversation{ID: "conv-1", StartedAt: at, UpdatedAt: at}); err != nil {
		panic(err)
	}
	page, err := src.ListConversations(ctx, provider.ConversationQuery{Tenant: "acme", Limit: 10})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(page.Items), page.Items[0].ID)
	// Output:
	// 1 conv-1
}

// A Source serves the usage data interface through [provider.NewHandler],
// with the cursor key it keeps in its database, so that every process
// serving from that database continues the others' cursors. A vendor
// writes as things happen.
func Example_handler() {
	ctx := context.Background()
	src, err := sqlsource.Open(ctx, "sqlite::memory:")
	if err != nil {
		panic(err)
	}
	defer src.Close()

	key, err := src.CursorKey(ctx) // shared by every process on this database
	if err != nil {
		panic(err)
	}
	h, err := provider.NewHandler(src, provider.WithCursorKey(key), provider.WithTokens(provider.Token{Secret: "s3cret", Tenant: "acme"}))
	if err != nil {
		panic(err)
	}

	// As things happen:
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	err = src.UpsertConversation(ctx, "acme", spec.Conversation{ID: "c1", StartedAt: spec.NewTime(at), UpdatedAt: spec.NewTime(at), Model: "gpt-4o"})
	if err != nil {
		panic(err)
	}
	err = src.RecordUsage(ctx, "acme", provider.UsageRecord{ID: "req-1", At: at, ConversationID: "c1", Model: "gpt-4o", InputTokens: 120})
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
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 200 {"data":[{"id":"c1","startedAt":"2026-03-01T09:00:00.000Z","updatedAt":"2026-03-01T09:00:00.000Z","model":"gpt-4o"}],"hasMore":false,"nextCursor":null}
}
