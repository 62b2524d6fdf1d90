package mcp_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
)

// TestConsumerOverMCP syncs a provider through its MCP binding and checks
// the copy equals what the REST interface serves.
func TestConsumerOverMCP(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		end := time.Now().UTC().Truncate(time.Hour)
		src := memsource.New()
		require.NoError(t, demodata.Fill(ctx, demodata.Config{Seed: 5, Conversations: 120, Tenant: "acme", End: end}, "acme", src))
		m, err := mcp.NewServer(src)
		require.NoError(t, err)
		h, err := provider.NewHandler(src, provider.WithMount("/mcp", m.HTTPHandler()), provider.WithTokens(
			provider.Token{Secret: "full", Tenant: "acme"},
			provider.Token{Secret: "nousage", Tenant: "acme", Scopes: []string{provider.ScopeConversations, provider.ScopeAssistants, provider.ScopeEvents}},
		))
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		defer srv.Close()

		source, err := mcp.NewSource(ctx, srv.URL+"/mcp", "full")
		require.NoError(t, err)
		defer source.Close()
		store, err := sqlstore.New(ctx, db.DB, sqlstore.Dialect(db.Dialect))
		require.NoError(t, err)
		poller, err := consumer.NewPoller(source, store, &consumer.Config{Source: "acme", PageSize: 25, UsageBackfill: 61 * 24 * time.Hour, UsageWindow: 31 * 24 * time.Hour})
		require.NoError(t, err)
		res, err := poller.SyncOnce(ctx)
		require.NoError(t, err)
		for _, r := range res.Resources {
			require.Empty(t, r.Skipped, r.Resource)
			require.Positive(t, r.Records, r.Resource)
			require.Zero(t, r.Quarantined, r.Resource)
			require.False(t, r.NeedsFull, r.Resource)
		}

		rest, err := consumer.NewClient(consumer.ClientConfig{URL: srv.URL, Token: "full"})
		require.NoError(t, err)
		for _, r := range []consumer.Resource{consumer.Conversations, consumer.Assistants, consumer.Events} {
			var want []string
			q := consumer.Query{Limit: 1000}
			for {
				p, err := rest.Fetch(ctx, r, q)
				require.NoError(t, err)
				for _, rec := range p.Records {
					want = append(want, string(rec))
				}
				if !p.HasMore {
					break
				}
				q.Cursor = p.NextCursor
			}
			var got []string
			require.NoError(t, store.Export(ctx, "acme", r, false, func(b json.RawMessage) error {
				got = append(got, string(b))
				return nil
			}))
			require.Equal(t, want, got, r)
		}

		// A second sync is incremental; a token without read:usage fails
		// usage as forbidden, not as unavailable.
		res, err = poller.SyncOnce(ctx)
		require.NoError(t, err)
		require.Zero(t, res.Resources[0].Full)
		limited, err := mcp.NewSource(ctx, srv.URL+"/mcp", "nousage")
		require.NoError(t, err)
		defer limited.Close()
		_, err = limited.Fetch(ctx, consumer.Usage, consumer.Query{Granularity: "day"})
		require.ErrorIs(t, err, provider.ErrForbidden)
		_, err = limited.Fetch(ctx, consumer.Conversations, consumer.Query{Cursor: "garbage"})
		require.ErrorIs(t, err, provider.ErrInvalid)
	})
}
