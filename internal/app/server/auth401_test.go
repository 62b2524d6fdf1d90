package server_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/servicetest"
)

// TestRevokedAndExpiredKeysAnswerAsUnknown: on every API of the service a
// revoked or an expired key gets the very 401 of a key that never existed:
// the same status, body and headers (no rate-limit headers for any), so the
// answer does not tell whether a key was ever valid, nor which organisation
// it belonged to. One subtest per API: the review-task API, the
// organisation API, the telemetry endpoint (OTLP over HTTP) and a source's
// MCP endpoint.
func TestRevokedAndExpiredKeysAnswerAsUnknown(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		var mu sync.Mutex
		now := time.Now()
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		orgs, err := org.NewStore(t.Context(), db, org.WithNow(clock))
		require.NoError(t, err)
		_, srv := servicetest.Serve(t, server.Config{DB: db, Orgs: orgs, Secrets: keyring.Ephemeral()})

		admin := org.Actor{Type: org.ActorAdmin, Name: "test"}
		o, err := orgs.CreateOrganisation(t.Context(), org.OrganisationCreate{Name: "Acme"}, admin)
		require.NoError(t, err)
		soon := clock().Add(time.Hour)
		key := func(typ org.KeyType, revoke bool) string {
			t.Helper()
			k, err := orgs.CreateKey(t.Context(), org.KeyCreate{OrganisationID: o.ID, Name: "k", Type: typ, ExpiresAt: &soon}, admin)
			require.NoError(t, err)
			if revoke {
				_, err := orgs.RevokeKey(t.Context(), o.ID, k.ID, admin)
				require.NoError(t, err)
			}
			return k.Secret
		}
		type keys struct{ valid, revoked, expired, unknown string }
		mint := func(typ org.KeyType) keys {
			ks := keys{valid: key(typ, false), revoked: key(typ, true), expired: key(typ, false)}
			// An unknown key: the shape of a real one, one character changed.
			last := ks.valid[len(ks.valid)-1]
			ks.unknown = ks.valid[:len(ks.valid)-1] + map[bool]string{true: "A", false: "B"}[last != 'A']
			return ks
		}
		api, ingestion := mint(org.KeyTypeAPI), mint(org.KeyTypeIngestion)

		type call struct {
			method, path, contentType, body string
		}
		do := func(c call, secret string) (*http.Response, []byte) {
			t.Helper()
			req, err := http.NewRequestWithContext(t.Context(), c.method, srv.URL+c.path, strings.NewReader(c.body))
			require.NoError(t, err)
			if c.contentType != "" {
				req.Header.Set("Content-Type", c.contentType)
			}
			req.Header.Set("Authorization", "Bearer "+secret)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			return res, b
		}
		// The headers that differ from one answer to the next whatever the
		// key: the date and the request's id.
		comparable := func(h http.Header) http.Header {
			h = h.Clone()
			h.Del("Date")
			h.Del("X-Request-Id")
			return h
		}
		mcpBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		for _, c := range []struct {
			name string
			keys keys
			call call
		}{
			{"review-task API", api, call{method: http.MethodGet, path: "/review-tasks"}},
			{"review-task API webhooks", api, call{method: http.MethodGet, path: "/webhooks"}},
			{"organisation API", api, call{method: http.MethodGet, path: "/organisations"}},
			{"telemetry OTLP", ingestion, call{method: http.MethodPost, path: "/v1/metrics", contentType: "application/json", body: `{"resourceMetrics":[]}`}},
			{"source MCP", api, call{method: http.MethodPost, path: "/organisations/" + o.ID + "/sources/0b7e8f0e-4c1a-4f57-9a51-2f4a3c7f0e11/mcp",
				contentType: "application/json", body: mcpBody}},
		} {
			t.Run(c.name, func(t *testing.T) {
				mu.Lock()
				now = soon.Add(-time.Minute)
				mu.Unlock()
				res, _ := do(c.call, c.keys.valid)
				require.NotEqual(t, http.StatusUnauthorized, res.StatusCode, "the valid key is accepted")

				// Past the expiry of every key made above.
				mu.Lock()
				now = soon.Add(time.Second)
				mu.Unlock()
				want, wantBody := do(c.call, c.keys.unknown)
				require.Equal(t, http.StatusUnauthorized, want.StatusCode, "%s", wantBody)
				for _, h := range []string{"RateLimit", "RateLimit-Policy", "Retry-After"} {
					require.Empty(t, want.Header.Get(h), "an unknown key's 401 has no %s", h)
				}
				for name, secret := range map[string]string{"revoked": c.keys.revoked, "expired": c.keys.expired} {
					got, gotBody := do(c.call, secret)
					require.Equal(t, want.StatusCode, got.StatusCode, "%s key: %s", name, gotBody)
					require.Equal(t, comparable(want.Header), comparable(got.Header), "%s key: headers", name)
					require.True(t, bytes.Equal(wantBody, gotBody), "%s key: body\nunknown: %s\n%s: %s", name, wantBody, name, gotBody)
				}
			})
		}
	})
}
