// Command openwebui serves the data of an Open WebUI installation (its
// SQLite file webui.db, or its PostgreSQL database) through the AI usage data
// interface, over REST and over MCP (streamable HTTP, at /mcp), read-only.
//
//	go run ./adapters/openwebui --db webui.db --token T --create-sample
//	curl -H 'Authorization: Bearer T' http://127.0.0.1:8092/conversations
//
// --create-sample first creates a sample database at --db when the file does
// not exist (for a PostgreSQL URL: when it has no chat table). The mapping
// of Open WebUI's tables is described in README.md beside this file.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aiusage/kit/adapters/openwebui/webui"
	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/provider"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "openwebui:", err)
		os.Exit(1)
	}
}

// run parses the flags, prepares the database and serves until ctx ends.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fl := flag.NewFlagSet("openwebui", flag.ContinueOnError)
	fl.SetOutput(stderr)
	db := fl.String("db", "", "the Open WebUI database: a SQLite file (webui.db) or a postgres:// URL (required)")
	token := fl.String("token", "", "the bearer token that reads everything (required)")
	addr := fl.String("addr", "127.0.0.1:8092", "address to listen on (port 0 picks one)")
	tenant := fl.String("tenant", "openwebui", "the tenant name the installation's data is served under")
	createSample := fl.Bool("create-sample", false, "create a sample Open WebUI database at --db first, when there is none")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *db == "" || *token == "" {
		return errors.New("--db and --token are required")
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if *createSample {
		created, err := webui.EnsureSample(ctx, *db)
		if err != nil {
			return err
		}
		if created {
			log.Info("sample Open WebUI database created", "db", redact(*db))
		}
	}
	src, err := webui.Open(ctx, *db, webui.Config{Tenant: *tenant})
	if err != nil {
		return err
	}
	defer src.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	tokens := []provider.Token{{Name: "openwebui", Secret: *token, Tenant: *tenant}}
	return serve(ctx, ln, src, tokens, log)
}

// redact hides the password of a database URL, for logs.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return dsn
}

// serve serves src over REST at the root and over MCP at /mcp on ln until
// ctx ends, logging one line with the base address once it accepts
// requests.
func serve(ctx context.Context, ln net.Listener, src provider.DataSource, tokens []provider.Token, log *slog.Logger) error {
	// REST and MCP seal cursors with one key, so a cursor from one works on
	// the other. A real deployment keeps the key across restarts.
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		_ = ln.Close()
		return err
	}
	m, err := mcp.NewServer(src, mcp.WithCursorKey(key))
	if err != nil {
		_ = ln.Close()
		return err
	}
	h, err := provider.NewHandler(src, provider.WithTokens(tokens...), provider.WithLogger(log), provider.WithCursorKey(key),
		provider.WithMount("/mcp", m.HTTPHandler()))
	if err != nil {
		_ = ln.Close()
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	log.Info("Open WebUI provider serving", "url", "http://"+ln.Addr().String(), "mcp", "http://"+ln.Addr().String()+"/mcp")
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	<-stopped
	return nil
}
