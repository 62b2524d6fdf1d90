package sqlstore_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/sqldb"
	"github.com/aiusage/kit/internal/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// TestServeCollectedView serves the collected view with provider.NewHandler:
// lists and single records carry the stored bytes, unknown members
// included, and a source is a tenant.
func TestServeCollectedView(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db)
		l := acquire(t, s, lease("acme", consumer.Conversations, "p1"))
		c1 := conv("c1", at(0), at(time.Minute), "kept")
		save(t, s, l, 1, c1, conv("c2", at(0), at(2*time.Minute), ""))
		lu := acquire(t, s, lease("acme", consumer.Usage, "p1"))
		save(t, s, lu, 1, bucket{gran: spec.GranularityHour, start: at(time.Hour), dims: map[string]string{"model": "m"}, requests: 3, cost: 0.5}.record())

		h, err := provider.NewHandler(s,
			provider.WithTokens(
				provider.Token{Secret: "acme-token", Tenant: "acme", Name: "acme"},
				provider.Token{Secret: "other-token", Tenant: "other", Name: "other"},
			),
			provider.WithNow(func() time.Time { return at(48 * time.Hour) }),
		)
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		get := func(token, path string) (int, []byte) {
			t.Helper()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp.StatusCode, b
		}

		code, body := get("acme-token", "/conversations?limit=1")
		require.Equal(t, http.StatusOK, code, string(body))
		var list struct {
			Data       []json.RawMessage
			HasMore    bool
			NextCursor *string
		}
		require.NoError(t, json.Unmarshal(body, &list))
		require.Len(t, list.Data, 1)
		require.JSONEq(t, string(c1.JSON), string(list.Data[0]))
		require.True(t, list.HasMore)

		code, body = get("acme-token", "/conversations/c1")
		require.Equal(t, http.StatusOK, code, string(body))
		require.JSONEq(t, string(c1.JSON), string(body))
		require.Contains(t, string(body), `"x-unknown":true`)

		code, body = get("other-token", "/conversations/c1")
		require.Equal(t, http.StatusNotFound, code, string(body))
		code, body = get("other-token", "/conversations")
		require.Equal(t, http.StatusOK, code, string(body))
		require.JSONEq(t, `{"data":[],"hasMore":false,"nextCursor":null}`, string(body))

		code, body = get("acme-token", "/usage?granularity=day&startAt=2026-03-01T00:00:00Z&endAt=2026-03-02T00:00:00Z&groupBy=model")
		require.Equal(t, http.StatusOK, code, string(body))
		var usage spec.List[spec.UsageBucket]
		require.NoError(t, json.Unmarshal(body, &usage))
		require.Len(t, usage.Data, 1)
		require.Equal(t, int64(3), usage.Data[0].Metrics.Requests)
		require.Equal(t, "m", *usage.Data[0].Dimensions.Model)
	})
}
