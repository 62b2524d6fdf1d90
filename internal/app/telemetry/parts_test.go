package telemetry_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/aiusage/kit/internal/app/telemetry/otlpwire"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestRequestInParts sends a protobuf request of several parts' worth of
// Claude Code api_request records: with its last record broken (a string
// that is not UTF-8, found only when the last part is decoded) it is a 400
// and stores nothing; whole, every record is counted once, also when it
// is sent again.
func TestRequestInParts(t *testing.T) {
	t.Parallel()
	const n = 2*otlpwire.PartItems + 234
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, nil)
		body, want := claudeLogs(t, n)
		bad := bytes.Clone(body)
		i := bytes.LastIndex(bad, []byte("LAST"))
		require.Positive(t, i)
		copy(bad[i:], []byte{0xff, 0xfe, 0xfd, 0xfc})

		require.Equal(t, http.StatusBadRequest, postProto(t, e, bad))
		var rows int
		require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM telemetry_usage`).Scan(&rows))
		require.Zero(t, rows)

		for range 2 {
			require.Equal(t, http.StatusOK, postProto(t, e, body))
		}
		require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM telemetry_usage`).Scan(&rows))
		require.Equal(t, n, rows)
		require.NoError(t, e.srv.Telemetry().RollupAll(t.Context()))
		got := e.orgUsage(t)
		require.InDelta(t, want.Cost, got.Cost, 1e-6)
		got.Cost, want.Cost = 0, 0
		require.Equal(t, want, got)
	})
}

// claudeLogs returns a protobuf request of n Claude Code api_request
// records of one session, the last with the session attribute "LAST", and
// the totals they come to.
func claudeLogs(t *testing.T, n int) ([]byte, totals) {
	t.Helper()
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	num := func(k string, v int64) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
	}
	start := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	var want totals
	recs := make([]*logspb.LogRecord, n)
	for i := range recs {
		at := start.Add(time.Duration(i) * time.Second)
		session := "s1"
		if i == n-1 {
			session = "LAST"
		}
		in := int64(i%7 + 1)
		recs[i] = &logspb.LogRecord{TimeUnixNano: uint64(at.UnixNano()), //nolint:gosec // a time after 1970
			Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "claude_code.api_request"}},
			Attributes: []*commonpb.KeyValue{str("event.name", "api_request"), str("event.timestamp", at.Format(time.RFC3339Nano)),
				num("event.sequence", int64(i+1)), str("session.id", session), str("user.email", fmt.Sprintf("p%d@example.com", i%5)),
				str("model", "claude-sonnet-4-5"), num("input_tokens", in), num("output_tokens", 10),
				{Key: "cost_usd", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 0.001}}}},
		}
		want.Requests++
		want.Input += in
		want.Output += 10
		want.Cost += 0.001
	}
	req := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "claude-code"), str("service.version", "2.1.0")}},
		ScopeLogs: []*logspb.ScopeLogs{{Scope: &commonpb.InstrumentationScope{Name: "com.anthropic.claude_code.events"}, LogRecords: recs}},
	}}}
	body, err := proto.Marshal(req)
	require.NoError(t, err)
	return body, want
}

// postProto sends body to /v1/logs as protobuf with e's Ingestion key and
// returns the status.
func postProto(t *testing.T, e *env, body []byte) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/v1/logs", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Authorization", "Bearer "+e.ingest.Secret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}
