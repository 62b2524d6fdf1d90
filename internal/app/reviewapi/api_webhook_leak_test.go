package reviewapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// Registering a webhook must not tell the client what the service's
// resolver makes of a name: a host that does not resolve and hosts that
// resolve to loopback or a private network get byte-identical answers, so
// registrations cannot map the internal network. Mistakes the client can
// see in the URL itself keep their own messages.
func TestAPIWebhookRegistrationDoesNotRevealResolution(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		resolver := whFakeResolver(t, map[string][]string{
			"loop.example.com":     {"127.0.0.1"},
			"internal.example.com": {"10.1.2.3"},
		})
		h := startHarness(t, db, func(c *reviewapi.Config) {
			c.AllowPrivateWebhooks = false
			c.Resolver = resolver
		})
		tn := h.newTenant("Acme", "", 0)
		var first []byte
		for _, u := range []string{
			"https://nowhere.example.com/hook",
			"https://loop.example.com/hook",
			"https://internal.example.com/hook",
		} {
			r := tn.call(t, http.MethodPost, "/webhooks", map[string]any{"url": u})
			e := requireAPIError(t, r, http.StatusBadRequest, spec.CodeInvalidRequest, "url")
			for _, leak := range []string{"127.0.0.1", "10.1.2.3", "loopback", "private", "resolve", "address"} {
				require.NotContains(t, e.Message, leak, u)
			}
			if first == nil {
				first = r.Body
				continue
			}
			require.Equal(t, string(first), string(r.Body), "%s is answered differently", u)
		}
		require.Contains(t, string(first), reviewapi.UnreachableHostMessage(false))

		// What the client can see for itself is still named.
		for u, want := range map[string]string{
			"http://hooks.example.com/hook":       "https",
			"https://user:pw@hooks.example.com/x": "user info",
			"https://127.0.0.1/hook":              "loopback",
		} {
			e := requireAPIError(t, tn.call(t, http.MethodPost, "/webhooks", map[string]any{"url": u}), http.StatusBadRequest, spec.CodeInvalidRequest, "url")
			require.True(t, strings.Contains(e.Message, want), "%s: %s", u, e.Message)
		}
	})
}

// With the system resolver, localhost (which resolves to loopback) and a
// name that does not resolve get the same answer too.
func TestAPIWebhookRegistrationLocalhostLikeUnresolvable(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, func(c *reviewapi.Config) { c.AllowPrivateWebhooks = false })
		tn := h.newTenant("Acme", "", 0)
		a := tn.call(t, http.MethodPost, "/webhooks", map[string]any{"url": "https://localhost/hook"})
		b := tn.call(t, http.MethodPost, "/webhooks", map[string]any{"url": "https://hooks.northwind.test.invalid/hook"})
		requireAPIError(t, a, http.StatusBadRequest, spec.CodeInvalidRequest, "url")
		require.Equal(t, string(a.Body), string(b.Body))
	})
}
