package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/adapters/openwebui/webui"
	"github.com/aiusage/kit/conformance"
	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

const tenant = "openwebui"

// sampleDSN creates the sample Open WebUI database, ending at end, on a
// fresh database of dialect d and returns what --db takes for it: a SQLite
// file path or a PostgreSQL URL.
func sampleDSN(t *testing.T, d sqldb.Dialect, end time.Time) string {
	t.Helper()
	dsn := filepath.Join(t.TempDir(), "webui.db")
	if d == sqldb.Postgres {
		dsn = sqldbtest.URL(t, d)
	}
	db, dialect, err := webui.OpenDB(t.Context(), dsn, false)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, webui.CreateSample(t.Context(), db, dialect, webui.SampleConfig{End: end}))
	return dsn
}

// openSample opens the sample read-only as the command does.
func openSample(t *testing.T, dsn string) *webui.Source {
	t.Helper()
	src, err := webui.Open(t.Context(), dsn, webui.Config{Tenant: tenant})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, src.Close()) })
	return src
}

// startServer serves src as main does, on a free port of 127.0.0.1, with
// three credentials: one that reads everything, one without read:usage,
// and one of another tenant. It returns the base URL.
func startServer(t *testing.T, src provider.DataSource) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tokens := []provider.Token{
		{Name: "full", Secret: "owui-full", Tenant: tenant},
		{Name: "no-usage", Secret: "owui-no-usage", Tenant: tenant,
			Scopes: []string{provider.ScopeConversations, provider.ScopeAssistants, provider.ScopeEvents}},
		{Name: "other", Secret: "other-full", Tenant: "other"},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, src, tokens, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return "http://" + ln.Addr().String()
}

// TestConformance runs the full conformance suite against the command's
// server over the sample database, on SQLite and on PostgreSQL. Open WebUI
// keeps no tombstones, so the suite's deleted-conversation checks find none
// to look at.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			base := startServer(t, openSample(t, sampleDSN(t, d, time.Now().UTC().Truncate(time.Hour))))
			conformance.Test(t, conformance.Config{
				BaseURL:          base,
				Token:            "owui-full",
				UsagelessToken:   "owui-no-usage",
				OtherTenantToken: "other-full",
				MaxRate:          5000,
			})
		})
	}
}

// TestRunCreatesSample runs the command as `--create-sample` does on a
// missing file, checks the one line it logs when ready, and reads a
// conversation through it.
func TestRunCreatesSample(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "webui.db")
	url, seen, stop := startRun(t, "--db", path, "--token", "T", "--addr", "127.0.0.1:0", "--create-sample")
	require.Contains(t, seen, "sample Open WebUI database created")
	c, err := consumer.NewClient(consumer.ClientConfig{URL: url, Token: "T"})
	require.NoError(t, err)
	p, err := c.Fetch(t.Context(), consumer.Conversations, consumer.Query{Limit: 5})
	require.NoError(t, err)
	require.Len(t, p.Records, 5)
	stop()

	// A second start leaves the existing file alone.
	_, seen, stop = startRun(t, "--db", path, "--token", "T", "--addr", "127.0.0.1:0", "--create-sample")
	require.NotContains(t, seen, "sample Open WebUI database created")
	stop()

	require.Error(t, run(t.Context(), []string{"--db", filepath.Join(t.TempDir(), "none.db"), "--token", "T"}, newLineWriter()),
		"without --create-sample a missing file is an error, not an empty database")
}

// startRun runs the command with args until the returned stop is called,
// and returns the base URL of its ready line and what it logged up to it.
func startRun(t *testing.T, args ...string) (url, logged string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	logs := newLineWriter()
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, logs) }()
	var b strings.Builder
	for url == "" {
		select {
		case line := <-logs.lines:
			b.WriteString(line + "\n")
			if strings.Contains(line, "Open WebUI provider serving") {
				_, rest, _ := strings.Cut(line, "url=")
				url, _, _ = strings.Cut(rest, " ")
			}
		case err := <-done:
			cancel()
			t.Fatalf("the command ended before it was ready: %v\n%s", err, b.String())
		}
	}
	return url, b.String(), func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// lineWriter hands the lines written to it to a channel.
type lineWriter struct {
	lines chan string
	buf   string
}

func newLineWriter() *lineWriter { return &lineWriter{lines: make(chan string, 100)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf += string(p)
	for {
		line, rest, ok := strings.Cut(w.buf, "\n")
		if !ok {
			break
		}
		w.buf = rest
		select {
		case w.lines <- line:
		default:
		}
	}
	return len(p), nil
}

// TestConsumerSync syncs the provider into the service's store over HTTP,
// then deletes a chat as Open WebUI does (the row goes, no tombstone) and
// shows that the consumer's periodic full re-pull turns it into a tombstone
// in its store.
func TestConsumerSync(t *testing.T) {
	t.Parallel()
	end := time.Now().UTC().Truncate(time.Hour)
	dsn := sampleDSN(t, sqldb.SQLite, end)
	src := openSample(t, dsn)
	base := startServer(t, src)

	store, err := sqlstore.Open(t.Context(), sqldbtest.URL(t, sqldb.SQLite))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	client, err := consumer.NewClient(consumer.ClientConfig{URL: base, Token: "owui-full"})
	require.NoError(t, err)
	now := end.Add(30 * time.Minute)
	poller, err := consumer.NewPoller(client, store, &consumer.Config{Source: "openwebui", Now: func() time.Time { return now }})
	require.NoError(t, err)
	res, err := poller.SyncOnce(t.Context())
	require.NoError(t, err)

	want := walkAll(t, src)
	byRes := map[consumer.Resource]int{}
	for _, r := range res.Resources {
		require.NoError(t, r.Err, r.Resource)
		byRes[r.Resource] = r.Records
	}
	require.Equal(t, len(want), byRes[consumer.Conversations])
	require.Positive(t, byRes[consumer.Assistants])
	require.Positive(t, byRes[consumer.Events])

	got, err := store.ListConversations(t.Context(), provider.ConversationQuery{Tenant: "openwebui", Limit: 1000})
	require.NoError(t, err)
	require.Len(t, got.Items, len(want))
	stored := map[string]spec.Conversation{}
	for _, c := range got.Items {
		stored[c.ID] = c
	}
	require.Equal(t, want["chat-branches"].Messages, stored["chat-branches"].Messages)
	require.Equal(t, want["chat-assistant"].Usage, stored["chat-assistant"].Usage)

	// Open WebUI deletes a chat's rows outright.
	db, _, err := webui.OpenDB(t.Context(), dsn, false)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `DELETE FROM chat_file WHERE chat_id = 'chat-assistant'`)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `DELETE FROM chat WHERE id = 'chat-assistant'`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	now = now.Add(25 * time.Hour) // past the poller's FullEvery (24h): a full re-pull
	_, err = poller.SyncOnce(t.Context())
	require.NoError(t, err)
	got, err = store.ListConversations(t.Context(), provider.ConversationQuery{Tenant: "openwebui", Limit: 1000})
	require.NoError(t, err)
	var deleted []string
	for _, c := range got.Items {
		if c.Deleted() {
			deleted = append(deleted, c.ID)
		}
	}
	require.Equal(t, []string{"chat-assistant"}, deleted)
}

// walkAll lists every conversation of the source by id.
func walkAll(t *testing.T, src *webui.Source) map[string]spec.Conversation {
	t.Helper()
	out := map[string]spec.Conversation{}
	q := provider.ConversationQuery{Tenant: tenant, Limit: 7}
	for {
		p, err := src.ListConversations(t.Context(), q)
		require.NoError(t, err)
		for _, c := range p.Items {
			_, dup := out[c.ID]
			require.False(t, dup, "conversation %s listed twice", c.ID)
			out[c.ID] = c
		}
		if !p.HasMore {
			return out
		}
		k := provider.ConversationKey(&p.Items[len(p.Items)-1])
		q.After = &k
	}
}

// TestMCP reads a conversation over MCP (streamable HTTP at /mcp, with the
// same token) and checks it is the record REST serves.
func TestMCP(t *testing.T) {
	t.Parallel()
	base := startServer(t, openSample(t, sampleDSN(t, sqldb.SQLite, time.Now().UTC().Truncate(time.Hour))))
	c, err := client.NewStreamableHttpClient(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer owui-full"}))
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { _ = c.Close() })
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcpgo.Implementation{Name: "openwebui-test", Version: "1"}
	_, err = c.Initialize(t.Context(), init)
	require.NoError(t, err)

	req := mcpgo.CallToolRequest{}
	req.Params.Name = "get_conversation"
	req.Params.Arguments = map[string]any{"id": "chat-branches"}
	res, err := c.CallTool(t.Context(), req)
	require.NoError(t, err)
	require.False(t, res.IsError)
	got, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var viaMCP spec.Conversation
	require.NoError(t, json.Unmarshal(got, &viaMCP))

	rest, err := consumer.NewClient(consumer.ClientConfig{URL: base, Token: "owui-full"})
	require.NoError(t, err)
	viaREST, err := rest.GetConversation(t.Context(), "chat-branches")
	require.NoError(t, err)
	require.Equal(t, viaREST, viaMCP)
	require.Len(t, viaMCP.Messages, 4)
}

func TestRedact(t *testing.T) {
	t.Parallel()
	require.Equal(t, "postgres://u:xxxxx@h/db", redact("postgres://u:secret@h/db"))
	require.Equal(t, "webui.db", redact("webui.db"))
}
