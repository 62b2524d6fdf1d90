// Command vendor is a software vendor's application that embeds the aiusage
// provider: it serves its own AI usage data, kept in a toy store of its own,
// under /aiusage/ beside its other routes.
//
//	go run ./examples/vendor -addr 127.0.0.1:8090
//	curl -H 'Authorization: Bearer demo-token' http://127.0.0.1:8090/aiusage/conversations
//
// The vendor has two customers, acme and globex, and has issued three
// credentials: -token reads all of acme's data, -reviewer-token only acme's
// conversations and assistants (no usage metrics), -globex-token all of
// globex's. Each credential sees its own customer's data only.
//
// The toy store keeps conversations and assistants; it has no usage metrics or
// audit events, so it answers provider.ErrUnsupported for them and the
// handler answers 501 on /usage and /events.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "address to listen on (port 0 picks one)")
	token := flag.String("token", "demo-token", "the credential of the customer acme: reads everything")
	reviewerToken := flag.String("reviewer-token", "demo-reviewer-token", "a credential of acme that reads conversations and assistants only")
	globexToken := flag.String("globex-token", "demo-globex-token", "the credential of the customer globex")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Error("listen", "error", err)
		os.Exit(1)
	}
	log.Info("vendor app serving", "url", "http://"+ln.Addr().String()+"/aiusage/")
	if err := serve(ctx, ln, newChatStore(time.Now()), credentials(*token, *reviewerToken, *globexToken), log); err != nil {
		log.Error("serve", "error", err)
		os.Exit(1)
	}
}

// credentials are the tokens the vendor has issued to its customers. A real
// vendor keeps them in its database and lets each customer create, limit
// and revoke its own.
func credentials(acme, acmeReviewer, globex string) []provider.Token {
	return []provider.Token{
		{Name: "acme", Secret: acme, Tenant: "acme"},
		{Name: "acme-reviewer", Secret: acmeReviewer, Tenant: "acme", Scopes: []string{provider.ScopeConversations, provider.ScopeAssistants}},
		{Name: "globex", Secret: globex, Tenant: "globex"},
	}
}

// serve serves the vendor's application on ln until ctx ends, then lets the
// requests in flight finish.
func serve(ctx context.Context, ln net.Listener, store *chatStore, tokens []provider.Token, log *slog.Logger) error {
	mux, err := newMux(store, tokens, log)
	if err != nil {
		_ = ln.Close()
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	<-stopped
	return nil
}

// newMux is the vendor's router: its own routes, and the AI usage data
// interface mounted under /aiusage/.
func newMux(store *chatStore, tokens []provider.Token, log *slog.Logger) (*http.ServeMux, error) {
	h, err := provider.NewHandler(store, provider.WithTokens(tokens...), provider.WithLogger(log))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/aiusage/", http.StripPrefix("/aiusage", h))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "the vendor's own application")
	})
	return mux, nil
}

// chatStore is the vendor's own store: a few chats and assistants per
// customer, kept in memory. A real vendor reads its database here.
type chatStore struct {
	mu            sync.RWMutex
	conversations map[string][]spec.Conversation // by tenant, sorted by key
	assistants    map[string][]spec.Assistant
}

func newChatStore(now time.Time) *chatStore {
	s := &chatStore{conversations: map[string][]spec.Conversation{}, assistants: map[string][]spec.Assistant{}}
	base := now.UTC().Truncate(time.Hour).Add(-24 * time.Hour)
	s.addCustomer("acme", "Legal", base, 25,
		spec.Assistant{
			ID: "asst-contracts", Name: "Contract Reviewer", Status: "active", Visibility: spec.VisibilityTeam, Model: "gpt-4o",
			Skills: []spec.Skill{{ID: "sk-search", Name: "Clause search", Type: spec.SkillFunction}},
		},
		spec.Assistant{ID: "asst-nda", Name: "NDA Drafter", Status: "active", Visibility: spec.VisibilityPrivate, Model: "gpt-4o-mini"},
		spec.Assistant{ID: "asst-translate", Name: "Legal Translator", Status: "active", Visibility: spec.VisibilityOrganisation, Model: "gpt-4o"})
	s.addCustomer("globex", "Claims", base, 4,
		spec.Assistant{ID: "asst-claims", Name: "Claims Summariser", Status: "active", Visibility: spec.VisibilityOrganisation, Model: "gpt-4o-mini"})
	return s
}

// addCustomer gives tenant its assistants, created an hour apart from base,
// and n chats with them, ten minutes apart. Ids are unique across customers,
// as a database's keys are.
func (s *chatStore) addCustomer(tenant, department string, base time.Time, n int, assistants ...spec.Assistant) {
	for i, a := range assistants {
		at := spec.NewTime(base.Add(time.Duration(i) * time.Hour))
		a.CreatedAt, a.UpdatedAt = at, at
		s.assistants[tenant] = append(s.assistants[tenant], a)
	}
	for i := range n {
		a := assistants[i%len(assistants)]
		at := base.Add(time.Duration(i) * 10 * time.Minute)
		s.conversations[tenant] = append(s.conversations[tenant], spec.Conversation{
			ID: fmt.Sprintf("chat-%s-%03d", tenant, i), StartedAt: spec.NewTime(at), UpdatedAt: spec.NewTime(at.Add(2 * time.Minute)),
			User:      &spec.User{ID: fmt.Sprintf("%s-u%d", tenant, i%4), Department: department},
			Assistant: &spec.AssistantRef{ID: a.ID, Name: a.Name},
			Model:     a.Model, ModelProvider: "openai",
			Messages: []spec.Message{
				{ID: "m1", Role: spec.RoleUser, Content: "Summarise clause 7.", CreatedAt: spec.NewTime(at)},
				{ID: "m2", Role: spec.RoleAssistant, Content: "Clause 7 limits liability to fees paid.", CreatedAt: spec.NewTime(at.Add(time.Minute))},
			},
			Usage: &spec.TokenUsage{InputTokens: 120, OutputTokens: 40, TotalTokens: 160, Cost: 0.0011},
		})
	}
}

// page applies the keyset contract of provider.DataSource to a sorted slice:
// skip up to After, keep what passes the filter, stop after limit.
func page[T any](items []T, key func(*T) provider.Key, after *provider.Key, keep func(*T) bool, limit int) provider.Page[T] {
	start := 0
	if after != nil {
		start = sort.Search(len(items), func(i int) bool { return after.Less(key(&items[i])) })
	}
	var out provider.Page[T]
	for i := start; i < len(items); i++ {
		if !keep(&items[i]) {
			continue
		}
		if len(out.Items) == limit {
			out.HasMore = true
			break
		}
		out.Items = append(out.Items, items[i])
	}
	return out
}

func (s *chatStore) ListConversations(_ context.Context, q provider.ConversationQuery) (provider.Page[spec.Conversation], error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keep := func(c *spec.Conversation) bool {
		k := provider.ConversationKey(c)
		return (q.UpdatedSince.IsZero() || !k.Time.Before(q.UpdatedSince)) &&
			(q.StartedAfter.IsZero() || c.StartedAt.After(q.StartedAfter))
	}
	return page(s.conversations[q.Tenant], provider.ConversationKey, q.After, keep, q.Limit), nil
}

func (s *chatStore) GetConversation(_ context.Context, tenant, id string) (spec.Conversation, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, c := range s.conversations[tenant] {
		if c.ID == id {
			return c, nil
		}
	}
	return spec.Conversation{}, provider.ErrNotFound
}

func (s *chatStore) ListAssistants(_ context.Context, q provider.AssistantQuery) (provider.Page[spec.Assistant], error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keep := func(a *spec.Assistant) bool {
		return q.UpdatedSince.IsZero() || !provider.AssistantKey(a).Time.Before(q.UpdatedSince)
	}
	return page(s.assistants[q.Tenant], provider.AssistantKey, q.After, keep, q.Limit), nil
}

func (s *chatStore) GetAssistant(_ context.Context, tenant, id string) (spec.Assistant, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, a := range s.assistants[tenant] {
		if a.ID == id {
			return a, nil
		}
	}
	return spec.Assistant{}, provider.ErrNotFound
}

// The toy store holds no audit events and no usage metrics.

func (s *chatStore) ListEvents(context.Context, provider.EventQuery) (provider.Page[spec.Event], error) {
	return provider.Page[spec.Event]{}, provider.ErrUnsupported
}

func (s *chatStore) Usage(context.Context, provider.UsageQuery) (provider.Page[spec.UsageBucket], error) {
	return provider.Page[spec.UsageBucket]{}, provider.ErrUnsupported
}
