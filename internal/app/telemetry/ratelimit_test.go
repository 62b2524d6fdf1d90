package telemetry_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestRateLimit: a key flooding the endpoint, over HTTP and gRPC, gets 429
// with the Retry-After of its next token (Unavailable with RetryInfo over
// gRPC) before its body is read, while a key of another organisation is
// served at once; the refusals are counted in /metrics, and the key is
// served again when its bucket has refilled.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		clk := &clock{t: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
		e := newEnv(t, db, nil, func(c *server.Config) {
			c.Telemetry.RatePerKey, c.Telemetry.RateBurst, c.Telemetry.Now = 0.25, 6, clk.now // a token every 4 s
		})
		other, err := e.orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Other"}, admin)
		require.NoError(t, err)
		otherKey, err := e.orgs.CreateKey(ctx, org.KeyCreate{OrganisationID: other.ID, Name: "k", Type: org.KeyTypeIngestion}, admin)
		require.NoError(t, err)

		for i := range 6 { // the burst
			code, body := post(t, e.url, "claude_logs.json", i%2 == 0, bearer(e.ingest.Secret))
			require.Equal(t, http.StatusOK, code, string(body))
		}
		for range 5 { // the flood: refused, and refusals spend no token
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/v1/logs", strings.NewReader(`{}`))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+e.ingest.Secret)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			require.Equal(t, "4", resp.Header.Get("Retry-After"))
			// Another organisation's key is served at once (within its
			// own burst, the clock standing still).
			code, body := post(t, e.url, "claude_logs.json", false, bearer(otherKey.Secret))
			require.Equal(t, http.StatusOK, code, string(body))
		}

		// Over gRPC the same key is refused with the exact delay.
		conn := grpcConn(t, e)
		req := &collogspb.ExportLogsServiceRequest{}
		require.NoError(t, protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(fixture(t, "claude_logs.json"), req))
		clk.add(time.Second) // 3 s to the next token
		_, err = collogspb.NewLogsServiceClient(conn).Export(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+e.ingest.Secret), req)
		st := status.Convert(err)
		require.Equal(t, codes.Unavailable, st.Code(), err)
		var retry *errdetails.RetryInfo
		for _, d := range st.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				retry = ri
			}
		}
		require.NotNil(t, retry, "Unavailable without RetryInfo is not retried by OTLP clients")
		require.Equal(t, 3*time.Second, retry.GetRetryDelay().AsDuration())
		_, err = collogspb.NewLogsServiceClient(conn).Export(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+otherKey.Secret), req)
		require.NoError(t, err)

		rec := httptest.NewRecorder()
		e.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		require.Contains(t, rec.Body.String(), `aiusage_telemetry_throttled_total{reason="rate",transport="http"} 5`)
		require.Contains(t, rec.Body.String(), `aiusage_telemetry_throttled_total{reason="rate",transport="grpc"} 1`)

		clk.add(3 * time.Second) // one token back
		code, body := post(t, e.url, "claude_logs.json", false, bearer(e.ingest.Secret))
		require.Equal(t, http.StatusOK, code, string(body))
		code, _ = post(t, e.url, "claude_logs.json", false, bearer(e.ingest.Secret))
		require.Equal(t, http.StatusTooManyRequests, code)

		// What was accepted counts once: the refusals stored nothing.
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		want := reference(t, "claude_logs.json")
		got := e.orgUsage(t)
		require.Equal(t, want.Input, got.Input)
		require.Equal(t, want.Output, got.Output)
	})
}
