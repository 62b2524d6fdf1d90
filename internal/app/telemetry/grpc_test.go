package telemetry_test

import (
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestGRPC: the service's OTLP/gRPC server takes the same keys as its
// HTTP endpoint, and what arrives over it reaches the organisation's usage
// with the same totals, once however often it is sent.
func TestGRPC(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db, nil)
		conn := grpcConn(t, e)
		client := collogspb.NewLogsServiceClient(conn)

		req := &collogspb.ExportLogsServiceRequest{}
		require.NoError(t, protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(fixture(t, "claude_logs.json"), req))
		send := func(md ...string) error {
			_, err := client.Export(metadata.AppendToOutgoingContext(ctx, md...), req)
			return err
		}
		revoked := e.key(t, "old", org.KeyTypeIngestion)
		_, err := e.orgs.RevokeKey(ctx, e.org.ID, revoked.ID, admin)
		require.NoError(t, err)
		for _, c := range []struct {
			name string
			md   []string
			want codes.Code
		}{
			{"no key", nil, codes.Unauthenticated},
			{"unknown key", []string{"authorization", "Bearer nope"}, codes.Unauthenticated},
			{"revoked key", []string{"authorization", "Bearer " + revoked.Secret}, codes.Unauthenticated},
			{"API key", []string{"x-api-key", e.api.Secret}, codes.PermissionDenied},
		} {
			require.Equal(t, c.want, status.Code(send(c.md...)), c.name)
		}
		for range 3 { // at least once: re-sending changes nothing
			require.NoError(t, send("authorization", "Bearer "+e.ingest.Secret))
		}
		require.NoError(t, send("x-api-key", e.ingest.Secret))
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		want := reference(t, "claude_logs.json")
		got := e.orgUsage(t)
		require.InDelta(t, want.Cost, got.Cost, 1e-9)
		got.Cost, want.Cost = 0, 0
		require.Equal(t, want, got)
		require.NotZero(t, got.Input)
	})
}
