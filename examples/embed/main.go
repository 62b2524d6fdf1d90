// Command embed serves the AI usage data interface under /aiusage/ from an
// in-memory store. Replace exampleSource with your own provider.DataSource:
//
//	PROVIDER_TOKEN=s3cret PROVIDER_USAGE_TOKEN=metrics go run ./examples/embed
//	curl -H 'Authorization: Bearer s3cret' http://127.0.0.1:8080/aiusage/conversations
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	mySource, err := exampleSource()
	if err != nil {
		return err
	}
	h, err := provider.NewHandler(mySource, provider.WithTokens(
		provider.Token{Secret: os.Getenv("PROVIDER_TOKEN"), Tenant: "acme"}, // reads everything
		provider.Token{Secret: os.Getenv("PROVIDER_USAGE_TOKEN"), Tenant: "acme", Scopes: []string{provider.ScopeUsage}},
	))
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/aiusage/", http.StripPrefix("/aiusage", h))

	addr := os.Getenv("PROVIDER_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	ln, err := net.Listen("tcp", addr) // port 0 picks a free one
	if err != nil {
		return err
	}
	log.Printf("serving http://%s/aiusage/", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

// exampleSource stands for your own store: an assistant of the customer acme,
// three conversations with it, their usage and audit events, in memory.
func exampleSource() (provider.DataSource, error) {
	ctx, src := context.Background(), memsource.New()
	start := time.Now().Add(-time.Hour)
	asst := spec.Assistant{ID: "asst-1", Name: "Helper", Model: "gpt-4o", CreatedAt: spec.NewTime(start)}
	if err := src.UpsertAssistant(ctx, "acme", asst); err != nil {
		return nil, err
	}
	for i := 1; i <= 3; i++ {
		at, id := start.Add(time.Duration(i)*time.Minute), fmt.Sprintf("conv-%d", i)
		err := errors.Join(
			src.UpsertConversation(ctx, "acme", spec.Conversation{
				ID: id, StartedAt: spec.NewTime(at), Model: "gpt-4o",
				User: &spec.User{ID: "u1"}, Assistant: &spec.AssistantRef{ID: asst.ID, Name: asst.Name},
				Messages: []spec.Message{{ID: "m1", Role: spec.RoleUser, Content: "Hello", CreatedAt: spec.NewTime(at)}},
			}),
			src.RecordUsage(ctx, "acme", provider.UsageRecord{
				ID: id, At: at, ConversationID: id, UserID: "u1", AssistantID: asst.ID, Model: "gpt-4o",
				InputTokens: 100, OutputTokens: 20,
			}),
			src.AppendEvent(ctx, "acme", spec.Event{
				ID: "evt-" + id, OccurredAt: spec.NewTime(at), Type: "conversation.created",
				Category: spec.CategoryResourceLifecycle, Action: "Created",
			}),
		)
		if err != nil {
			return nil, err
		}
	}
	return src, nil
}
