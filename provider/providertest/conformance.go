package providertest

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aiusage/kit/conformance"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/provider"
)

// Conformance fills a fresh source from newSource with generated data (and a
// little for a second tenant), serves it with the provider handler and runs
// the black-box conformance suite against it, every check a subtest.
func Conformance(t *testing.T, newSource Factory) {
	t.Helper()
	ds, w := newSource(t)
	ctx := context.Background()
	end := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if err := demodata.Fill(ctx, demodata.Config{Seed: 3, Conversations: 400, Tenant: "acme", End: end}, "acme", w); err != nil {
		t.Fatal(err)
	}
	if err := demodata.Fill(ctx, demodata.Config{Seed: 4, Conversations: 20, Tenant: "other", End: end}, "other", w); err != nil {
		t.Fatal(err)
	}
	h, err := provider.NewHandler(ds, provider.WithTokens(
		provider.Token{Secret: "conf-full", Tenant: "acme"},
		provider.Token{Secret: "conf-usageless", Tenant: "acme", Scopes: []string{provider.ScopeConversations, provider.ScopeAssistants, provider.ScopeEvents}},
		provider.Token{Secret: "conf-other", Tenant: "other"},
	))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	conformance.Test(t, conformance.Config{
		BaseURL: srv.URL, Token: "conf-full", UsagelessToken: "conf-usageless", OtherTenantToken: "conf-other",
		MaxRate: 5000,
	})
}
