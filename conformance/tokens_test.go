package conformance_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/conformance"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
)

// TestUsageOnlyTokenForAUTH03 gives AUTH-03 the opposite of the token it
// wants: a usage-only token (read:usage alone, the second token of
// examples/embed and docs/provider.md) rather than one with every scope but
// read:usage. The provider enforces its scopes, so every AUTH-03 failure
// must say that the token is usage-only and which token the check needs,
// naming the flag, rather than leave the vendor to guess.
func TestUsageOnlyTokenForAUTH03(t *testing.T) {
	t.Parallel()
	src := memsource.New()
	require.NoError(t, demodata.Fill(t.Context(), demodata.Config{Conversations: 20}, "acme", src))
	h, err := provider.NewHandler(src, provider.WithTokens(
		provider.Token{Secret: "full-token", Tenant: "acme"},
		provider.Token{Secret: "usage-only-token", Tenant: "acme", Scopes: []string{provider.ScopeUsage}},
		provider.Token{Secret: "without-usage-token", Tenant: "acme",
			Scopes: []string{provider.ScopeConversations, provider.ScopeAssistants, provider.ScopeEvents}},
	))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	run := func(tok string) []conformance.Result {
		rep, err := conformance.Run(t.Context(), conformance.Config{BaseURL: srv.URL, Token: "full-token", UsagelessToken: tok,
			MaxRate: 2000, Only: []string{"AUTH-03"}})
		require.NoError(t, err)
		var out []conformance.Result
		for _, r := range rep.Results {
			if r.ID == "AUTH-03" {
				out = append(out, r)
			}
		}
		require.Len(t, out, len(conformance.AllResources))
		return out
	}
	for _, r := range run("without-usage-token") {
		require.Equal(t, conformance.StatusPass, r.Status, "%s: %s", r.Endpoint, r.Message)
	}
	for _, r := range run("usage-only-token") {
		require.Equal(t, conformance.StatusFail, r.Status, "%s: %s", r.Endpoint, r.Message)
		require.Contains(t, r.Message, "usage-only token", r.Endpoint)
		require.Contains(t, r.Message, "--token-without-usage wants a token with every scope but read:usage", r.Endpoint)
		require.True(t, strings.HasPrefix(r.Message, "a token without read:usage") || strings.HasPrefix(r.Message, "the token"), r.Message)
	}
}
