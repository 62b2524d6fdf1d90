package sqlstore_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
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

// TestServeUsageSaturates serves usage over stored metrics that are huge,
// negative or out of range: every query answers 200 with non-negative
// numbers, sums saturating at 2^53 rather than failing or wrapping.
func TestServeUsageSaturates(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		s := newStore(t, db)
		lu := acquire(t, s, lease("acme", consumer.Usage, "p1"))
		metrics := []string{
			`{"requests":1e300,"conversations":9223372036854775807,"activeUsers":1e400,"inputTokens":9223372036854775807,"outputTokens":-5,"cost":1e308}`,
			`{"requests":9223372036854775807,"conversations":9223372036854775807,"activeUsers":-1e400,"inputTokens":9223372036854775807,"outputTokens":1.5e19,"cost":1.7976931348623157e308}`,
			`{"requests":-9223372036854775808,"conversations":0.4,"activeUsers":9007199254740993,"inputTokens":-1e300,"outputTokens":1e400,"cost":-1e308}`,
			`{"requests":3,"conversations":2,"activeUsers":1,"inputTokens":10,"outputTokens":20,"cost":0.5}`,
		}
		var recs []consumer.Record
		for i, m := range metrics {
			for j, dims := range []map[string]string{{"model": "m"}, {"model": "m", "userId": "u" + strconv.Itoa(i)}} {
				r := bucket{gran: spec.GranularityHour, start: at(time.Duration(i%2) * time.Hour), dims: dims}.record()
				r.ID += strconv.Itoa(i*2 + j)
				r.JSON = json.RawMessage(`{"metrics":` + m + `}`)
				recs = append(recs, r)
			}
			r := bucket{gran: spec.GranularityDay, start: at(24 * time.Hour), dims: map[string]string{"model": "d"}}.record()
			r.ID += strconv.Itoa(i)
			r.JSON = json.RawMessage(`{"metrics":` + m + `}`)
			recs = append(recs, r)
		}
		save(t, s, lu, 1, recs...)
		require.Zero(t, count(t, s, `SELECT count(*) FROM consumer_records WHERE requests < 0 OR input_tokens < 0 OR output_tokens < 0 OR cost < 0`),
			"stored metrics are clamped")

		h, err := provider.NewHandler(s, provider.WithTokens(provider.Token{Secret: "t", Tenant: "acme", Name: "acme"}),
			provider.WithNow(func() time.Time { return at(72 * time.Hour) }))
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		check := func(stage string) {
			t.Helper()
			n := 0
			for _, gran := range []string{"hour", "day"} {
				for _, groupBy := range []string{"", "&groupBy=model", "&groupBy=userId", "&groupBy=model,userId"} {
					path := "/usage?granularity=" + gran + "&startAt=2026-03-01T00:00:00Z&endAt=2026-03-03T00:00:00Z" + groupBy
					req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
					require.NoError(t, err)
					req.Header.Set("Authorization", "Bearer t")
					resp, err := http.DefaultClient.Do(req)
					require.NoError(t, err)
					body, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					require.NoError(t, err)
					require.Equal(t, http.StatusOK, resp.StatusCode, "%s %s: %s", stage, path, body)
					var list spec.List[spec.UsageBucket]
					require.NoError(t, json.Unmarshal(body, &list), "%s %s: %s", stage, path, body)
					for _, b := range list.Data {
						m := b.Metrics
						for _, v := range []int64{m.Requests, m.Conversations, m.ActiveUsers, m.InputTokens, m.OutputTokens} {
							require.GreaterOrEqual(t, v, int64(0), "%s %s: %s", stage, path, body)
							require.LessOrEqual(t, v, int64(1)<<53, "%s %s: %s", stage, path, body)
						}
						require.GreaterOrEqual(t, m.Cost, 0.0, "%s %s: %s", stage, path, body)
						require.LessOrEqual(t, m.Cost, float64(1<<53), "%s %s: %s", stage, path, body)
						n++
					}
				}
			}
			require.Positive(t, n)
		}
		check("as saved")
		p, err := s.Usage(ctx, provider.UsageQuery{Tenant: "acme", Start: at(0), End: at(time.Hour), Granularity: "hour", Limit: 10})
		require.NoError(t, err)
		require.Len(t, p.Items, 1)
		sat := spec.UsageMetrics{Requests: 1 << 53, Conversations: 1 << 53, ActiveUsers: 1 << 53, InputTokens: 1 << 53, OutputTokens: 1 << 53,
			Cost: provider.RoundCost(1 << 53)}
		require.Equal(t, sat, p.Items[0].Metrics)
		p, err = s.Usage(ctx, provider.UsageQuery{Tenant: "acme", Start: at(time.Hour), End: at(2 * time.Hour), Granularity: "hour", Limit: 10})
		require.NoError(t, err)
		require.Len(t, p.Items, 1)
		sat.ActiveUsers = 3 // users u1 and u3, and the activeUsers of a bucket not by user
		require.Equal(t, sat, p.Items[0].Metrics)

		// Whatever the columns hold: the extremes of their types.
		_, err = db.ExecContext(ctx, `UPDATE consumer_records SET requests = 9223372036854775807, conversations = -9223372036854775808,
			active_users = 9223372036854775807, input_tokens = 9223372036854775807, output_tokens = -1, cost = 1.7976931348623157e308`)
		require.NoError(t, err)
		check("extreme columns")
		_, err = db.ExecContext(ctx, `UPDATE consumer_records SET cost = -1.7976931348623157e308, requests = -9223372036854775808`)
		require.NoError(t, err)
		check("negative columns")
		if db.Dialect == sqldb.SQLite {
			// SQLite keeps what it cannot convert: reals and text in
			// INTEGER columns.
			_, err = db.ExecContext(ctx, `UPDATE consumer_records SET requests = 1e300, conversations = 'many', active_users = -1e300,
				input_tokens = 9e18, output_tokens = x'00', cost = 'x'`)
			require.NoError(t, err)
			check("SQLite values of any type")
		}
	})
}
