package telemetry_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestPercentEncodedKey: a key sent as OTEL_EXPORTER_OTLP_HEADERS writes it,
// still percent-encoded (Authorization: Bearer%20KEY), is accepted over
// HTTP and gRPC, as X-API-Key too; a wrong one gets the one 401 every
// wrong key gets, an API key the 403.
func TestPercentEncodedKey(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db, nil)
		const name = "claude_logs.json"
		// Every character escaped: what a strict encoder may send.
		escapeAll := func(s string) string {
			var b []byte
			for i := range len(s) {
				b = append(b, '%', "0123456789ABCDEF"[s[i]>>4], "0123456789ABCDEF"[s[i]&15])
			}
			return string(b)
		}
		for label, h := range map[string]http.Header{
			"Bearer%20":       {"Authorization": {"Bearer%20" + e.ingest.Secret}},
			"bearer%20":       {"Authorization": {"bearer%20" + e.ingest.Secret}},
			"all escaped":     {"Authorization": {escapeAll("Bearer " + e.ingest.Secret)}},
			"X-API-Key":       {"X-Api-Key": {escapeAll(e.ingest.Secret)}},
			"PathEscape form": {"Authorization": {url.PathEscape("Bearer " + e.ingest.Secret)}},
		} {
			code, body := post(t, e.url, name, false, h)
			require.Equal(t, http.StatusOK, code, "%s: %s", label, body)
		}
		_, none := post(t, e.url, name, false, nil)
		for label, h := range map[string]http.Header{
			"unknown":        {"Authorization": {"Bearer%20nope"}},
			"scheme":         {"Authorization": {"Basic%20" + e.ingest.Secret}},
			"no separator":   {"Authorization": {"Bearer%" + e.ingest.Secret}},
			"malformed":      {"Authorization": {"Bearer%2" + e.ingest.Secret}},
			"plus":           {"Authorization": {"Bearer+" + e.ingest.Secret}},
			"double-encoded": {"Authorization": {"Bearer%2520" + e.ingest.Secret}},
			"empty":          {"Authorization": {"Bearer%20"}},
		} {
			code, body := post(t, e.url, name, false, h)
			require.Equal(t, http.StatusUnauthorized, code, label)
			require.Equal(t, none, body, "%s: every 401 is the same", label)
		}
		code, body := post(t, e.url, name, false, http.Header{"Authorization": {"Bearer%20" + e.api.Secret}})
		require.Equal(t, http.StatusForbidden, code, string(body))

		conn := grpcConn(t, e)
		req := &collogspb.ExportLogsServiceRequest{}
		require.NoError(t, protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(fixture(t, name), req))
		send := func(md ...string) error {
			_, err := collogspb.NewLogsServiceClient(conn).Export(metadata.AppendToOutgoingContext(ctx, md...), req)
			return err
		}
		require.NoError(t, send("authorization", "Bearer%20"+e.ingest.Secret))
		require.NoError(t, send("x-api-key", escapeAll(e.ingest.Secret)))
		require.Equal(t, codes.Unauthenticated, status.Code(send("authorization", "Bearer%20nope")))
		require.Equal(t, codes.Unauthenticated, status.Code(send("authorization", "Bearer%2"+e.ingest.Secret)))
		require.Equal(t, codes.PermissionDenied, status.Code(send("authorization", "Bearer%20"+e.api.Secret)))

		// Accepted however encoded, counted once.
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		want, got := reference(t, name), e.orgUsage(t)
		require.Equal(t, want.Input, got.Input)
		require.Equal(t, want.Output, got.Output)
	})
}
