package bench

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/aiusage/kit/conformance"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/sqlsource"
)

// BenchmarkConformance10k runs the whole conformance suite, at its default
// request rate, against the provider over 10,000 generated conversations in
// SQLite (what "aiusage provider serve --demo 10000" serves). Target: under
// 30 s per run (metric "s/run").
func BenchmarkConformance10k(b *testing.B) {
	ctx := context.Background()
	db, err := sqldb.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "conf.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	src, err := sqlsource.New(ctx, db.DB, sqlsource.Dialect(db.Dialect))
	if err != nil {
		b.Fatal(err)
	}
	cfg := demodata.Config{Seed: 1, Conversations: 10_000, Tenant: tenant, End: dataEnd}
	if err := src.WriteBatch(ctx, func(w provider.Writer) error { return demodata.Fill(ctx, cfg, tenant, w) }); err != nil {
		b.Fatal(err)
	}
	h, err := provider.NewHandler(src, provider.WithTokens(
		provider.Token{Secret: token, Tenant: tenant},
		provider.Token{Secret: "usageless", Tenant: tenant, Scopes: []string{provider.ScopeConversations, provider.ScopeAssistants, provider.ScopeEvents}},
		provider.Token{Secret: "other", Tenant: "other"},
	))
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	var requests int
	b.ResetTimer()
	for b.Loop() {
		rep, err := conformance.Run(ctx, conformance.Config{BaseURL: srv.URL, Token: token, UsagelessToken: "usageless", OtherTenantToken: "other"})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Failed(false) {
			b.Fatalf("the reference provider fails the suite")
		}
		requests = rep.Requests
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
	b.ReportMetric(float64(requests), "requests/run")
}
