package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/servicetest"
)

// telemetryFixture is the whole service on one database, served on
// loopback, with an organisation and an Ingestion key.
type telemetryFixture struct {
	url, secret string
}

func newTelemetryFixture(b *testing.B, dialect sqldb.Dialect) *telemetryFixture {
	b.Helper()
	db := sqldbtest.Open(b, dialect) // skips PostgreSQL without a database
	ctx := context.Background()
	orgs, err := org.NewStore(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	// Built without working its jobs: the figures are those of ingestion,
	// not of the hourly rollups that follow it.
	srv := servicetest.New(b, server.Config{DB: db, Orgs: orgs, Secrets: keyring.Ephemeral()})
	ts := httptest.NewServer(srv.Handler())
	b.Cleanup(ts.Close)
	o, err := orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Bench"}, admin)
	if err != nil {
		b.Fatal(err)
	}
	k, err := orgs.CreateKey(ctx, org.KeyCreate{OrganisationID: o.ID, Name: "laptops", Type: org.KeyTypeIngestion}, admin)
	if err != nil {
		b.Fatal(err)
	}
	return &telemetryFixture{url: ts.URL, secret: k.Secret}
}

// post sends a protobuf logs request and fails unless it is fully accepted.
func (f *telemetryFixture) post(b *testing.B, body []byte) {
	req, err := http.NewRequest(http.MethodPost, f.url+"/v1/logs", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Authorization", "Bearer "+f.secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("POST /v1/logs: %d %s", resp.StatusCode, out)
	}
}

func strAttr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func intAttr(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

// claudeRequests returns a protobuf logs request of n Claude Code
// api_request records of session, one a second from start, spread over
// ten people.
func claudeRequests(b *testing.B, session string, n int, start time.Time) []byte {
	recs := make([]*logspb.LogRecord, n)
	for i := range recs {
		at := start.Add(time.Duration(i) * time.Second)
		recs[i] = &logspb.LogRecord{
			TimeUnixNano: uint64(at.UnixNano()),
			Body:         &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "claude_code.api_request"}},
			Attributes: []*commonpb.KeyValue{
				strAttr("event.name", "api_request"), strAttr("event.timestamp", at.Format(time.RFC3339Nano)),
				intAttr("event.sequence", int64(i+1)), strAttr("session.id", session),
				strAttr("prompt.id", fmt.Sprintf("%s-p%d", session, i/4)), strAttr("user.id", "d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1"),
				strAttr("user.email", fmt.Sprintf("person%d@example.com", i%10)), strAttr("terminal.type", "vscode"),
				strAttr("model", "claude-sonnet-4-5"), intAttr("input_tokens", int64(100+i%50)), intAttr("output_tokens", 250),
				intAttr("cache_read_tokens", 1000), intAttr("cache_creation_tokens", 200),
				{Key: "cost_usd", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 0.0123}}},
				strAttr("request_id", fmt.Sprintf("req_%s_%d", session, i)), intAttr("duration_ms", 1200),
			},
		}
	}
	req := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			strAttr("service.name", "claude-code"), strAttr("service.version", "2.1.332"), strAttr("os.type", "linux"),
		}},
		ScopeLogs: []*logspb.ScopeLogs{{
			Scope:      &commonpb.InstrumentationScope{Name: "com.anthropic.claude_code.events", Version: "2.1.332"},
			LogRecords: recs,
		}},
	}}}
	body, err := proto.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// BenchmarkTelemetryLogs sends protobuf requests of 1,000 Claude Code
// api_request records, each request a new session (so every record is
// new), from one client over HTTP on loopback into the whole service on
// each dialect (sub-benchmarks sqlite and postgres; the latter where
// AIUSAGE_TEST_DATABASE_URL is set). Target: at least 20,000 records a
// second into SQLite (metric "records/s"). Building the requests is not
// timed.
func BenchmarkTelemetryLogs(b *testing.B) {
	const perRequest = 1000
	for _, d := range sqldbtest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			f := newTelemetryFixture(b, d)
			start := time.Now().Add(-2 * time.Hour).Truncate(time.Hour)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				body := claudeRequests(b, fmt.Sprintf("bench-%d", i), perRequest, start)
				b.StartTimer()
				f.post(b, body)
			}
			b.ReportMetric(float64(perRequest)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkTelemetryLargeRequest sends one protobuf request of Claude Code
// api_request records just under the 20 MiB body limit into the whole
// service on each dialect, and reports the bytes the process allocates per
// request as a multiple of the body size ("alloc/body"; the client's
// request is built before), the peak heap in use above the heap before the
// request ("heap-MB", sampled every 20 ms), the body ("body-MB") and
// the records a second of that request ("records/s"). Target: memory per
// request bounded by the body limit, a small multiple of it.
func BenchmarkTelemetryLargeRequest(b *testing.B) {
	for _, d := range sqldbtest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			f := newTelemetryFixture(b, d)
			start := time.Now().Add(-30 * time.Hour).Truncate(time.Hour)
			// About 390 bytes a record: find the count that stays under
			// the limit.
			n := 50000
			for len(claudeRequests(b, "probe", n, start)) > 20<<20-64<<10 {
				n -= 1000
			}
			var allocs, peak, size float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				body := claudeRequests(b, fmt.Sprintf("large-%d", i), n, start)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				sampler := startHeapSampler(func() float64 { return 0 })
				b.StartTimer()
				f.post(b, body)
				b.StopTimer()
				pk, _ := sampler.stop()
				runtime.ReadMemStats(&after)
				allocs += float64(after.TotalAlloc - before.TotalAlloc)
				peak = max(peak, pk-float64(before.HeapInuse))
				size = float64(len(body))
				b.StartTimer()
			}
			b.ReportMetric(allocs/float64(b.N)/size, "alloc/body")
			b.ReportMetric(peak/(1<<20), "heap-MB")
			b.ReportMetric(size/(1<<20), "body-MB")
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
