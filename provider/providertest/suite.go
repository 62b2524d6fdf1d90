package providertest

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aiusage/kit/provider"
)

// Factory returns a fresh, empty data source and the writer that fills it.
// Run calls it once; the factory registers any cleanup with t.Cleanup.
type Factory func(t *testing.T) (provider.DataSource, provider.Writer)

// The suite's credentials.
const (
	tokenFull    = "providertest-t1-full"    // tenant t1, every scope
	tokenNoUsage = "providertest-t1-nousage" // tenant t1, every scope but read:usage
	tokenT2      = "providertest-t2"         // tenant t2, every scope
	tokenWrong   = "providertest-unknown"
)

var (
	full    = bearer(tokenFull)
	noUsage = bearer(tokenNoUsage)
	other   = bearer(tokenT2)
)

// env is what every check shares.
type env struct {
	c  *client
	fx *fixture
}

// Run runs the behaviour suite against the data source newSource returns.
// It writes its own data through the writer (tenants "t1" and "t2"), serves
// the source with [provider.NewHandler] on an httptest server, and checks
// the AI usage data interface over HTTP: walks with every page size, ties,
// cursors, filters, tombstones, single records, usage sums for every
// grouping, authentication and scopes, methods and content types. The
// subtests run in parallel; at the end Run checks that no request got a 5xx.
//
// Run does not call t.Parallel; the caller may.
func Run(t *testing.T, newSource Factory) {
	t.Helper()
	ds, w := newSource(t)
	if ds == nil || w == nil {
		t.Fatal("providertest: the factory returned a nil DataSource or Writer")
	}
	fx := load(t, w)
	h, err := provider.NewHandler(ds,
		provider.WithTokens(
			provider.Token{Secret: tokenFull, Tenant: tenant1, Name: "t1-full"},
			provider.Token{Secret: tokenNoUsage, Tenant: tenant1, Name: "t1-nousage",
				Scopes: []string{provider.ScopeConversations, provider.ScopeAssistants, provider.ScopeEvents}},
			provider.Token{Secret: tokenT2, Tenant: tenant2, Name: "t2"},
		),
		provider.WithNow(func() time.Time { return now }),
	)
	if err != nil {
		t.Fatalf("providertest: NewHandler: %v", err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	e := &env{c: newClient(srv.URL), fx: fx}

	t.Run("checks", func(t *testing.T) {
		checks := []struct {
			name string
			fn   func(*testing.T, *env)
		}{
			{"Walks", testWalks},
			{"Ties", testTies},
			{"Content", testContent},
			{"GetByID", testGetByID},
			{"Tombstones", testTombstones},
			{"UnknownIDs", testUnknownIDs},
			{"CursorReplay", testCursorReplay},
			{"CursorMisuse", testCursorMisuse},
			{"CursorTampered", testCursorTampered},
			{"TimeFilters", testTimeFilters},
			{"FarFuture", testFarFuture},
			{"BadParameters", testBadParameters},
			{"Category", testCategory},
			{"UsageSums", testUsageSums},
			{"UsageRanges", testUsageRanges},
			{"UsageBadParameters", testUsageBadParameters},
			{"Auth", testAuth},
			{"Scopes", testScopes},
			{"HeaderForms", testHeaderForms},
			{"Tenants", testTenants},
			{"Methods", testMethods},
			{"Gzip", testGzip},
		}
		for _, c := range checks {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.fn(t, e)
			})
		}
	})

	t.Run("No5xx", func(t *testing.T) {
		e.c.mu.Lock()
		defer e.c.mu.Unlock()
		for _, f := range e.c.failures {
			t.Errorf("5xx: %s", f)
		}
		t.Logf("%d requests, %d answered with a 5xx", e.c.requests, len(e.c.failures))
	})
}
