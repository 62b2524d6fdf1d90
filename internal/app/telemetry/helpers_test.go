package telemetry_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/app/telemetry/tools"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/testkit/servicetest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// testRing encrypts the stored secrets of every environment of the tests.
var testRing = keyring.Ephemeral()

var admin = org.Actor{Type: org.ActorAdmin, Name: "test"}

// env is the whole service on one database, served on a test server,
// with an organisation, one Ingestion key and one API key.
type env struct {
	db     *sqldb.DB
	orgs   *org.Store
	srv    *server.Server
	url    string
	org    org.Organisation
	ingest org.CreatedKey
	api    org.CreatedKey
}

// newEnv builds the service on db without working its jobs (the tests
// roll up with RollupAll), and creates the organisation and its keys; with
// o set, it uses that organisation and creates no keys.
func newEnv(t *testing.T, db *sqldb.DB, o *org.Organisation, opts ...func(*server.Config)) *env {
	t.Helper()
	ctx := t.Context()
	orgs, err := org.NewStore(ctx, db)
	require.NoError(t, err)
	e := &env{db: db, orgs: orgs}
	c := server.Config{DB: db, Orgs: orgs, Secrets: testRing}
	for _, f := range opts {
		f(&c)
	}
	e.srv = servicetest.New(t, c)
	ts := httptest.NewServer(e.srv.Handler())
	t.Cleanup(ts.Close)
	e.url = ts.URL
	if o != nil {
		e.org = *o
		return e
	}
	e.org, err = orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Acme"}, admin)
	require.NoError(t, err)
	e.ingest = e.key(t, "laptops", org.KeyTypeIngestion)
	e.api = e.key(t, "reader", org.KeyTypeAPI)
	return e
}

func (e *env) key(t *testing.T, name string, typ org.KeyType) org.CreatedKey {
	t.Helper()
	k, err := e.orgs.CreateKey(t.Context(), org.KeyCreate{OrganisationID: e.org.ID, Name: name, Type: typ}, admin)
	require.NoError(t, err)
	return k
}

// fixture reads testdata of package tools.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("tools", "testdata", name))
	require.NoError(t, err)
	return b
}

// signalOf returns the path and an empty request of a fixture, by its name.
func signalOf(name string) (string, proto.Message) {
	switch {
	case strings.Contains(name, "metrics"):
		return "/v1/metrics", &colmetricspb.ExportMetricsServiceRequest{}
	case strings.Contains(name, "traces"):
		return "/v1/traces", &coltracepb.ExportTraceServiceRequest{}
	}
	return "/v1/logs", &collogspb.ExportLogsServiceRequest{}
}

// batchOf maps a fixture as the endpoint does.
func batchOf(t *testing.T, name string) tools.Batch {
	t.Helper()
	_, m := signalOf(name)
	require.NoError(t, protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(fixture(t, name), m))
	switch m := m.(type) {
	case *colmetricspb.ExportMetricsServiceRequest:
		return tools.Metrics(m)
	case *coltracepb.ExportTraceServiceRequest:
		return tools.Traces(m)
	case *collogspb.ExportLogsServiceRequest:
		return tools.Logs(m)
	}
	return tools.Batch{}
}

// post sends fixture name to the endpoint as OTLP/JSON or, with asProto,
// as protobuf, with header set, and returns the status and body.
func post(t *testing.T, base, name string, asProto bool, header http.Header) (int, []byte) {
	t.Helper()
	path, m := signalOf(name)
	body, ct := fixture(t, name), "application/json"
	if asProto {
		require.NoError(t, protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, m))
		var err error
		body, err = proto.Marshal(m)
		require.NoError(t, err)
		ct = "application/x-protobuf"
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", ct)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func bearer(secret string) http.Header { return http.Header{"Authorization": {"Bearer " + secret}} }

// totals are the organisation-wide usage summed over every bucket.
type totals struct {
	Requests, Input, Output int64
	Cost                    float64
}

// orgUsage reads the organisation-wide usage of the fixtures' days with the
// API key and sums it.
func (e *env) orgUsage(t *testing.T) totals {
	t.Helper()
	q := url.Values{"granularity": {"day"}, "startAt": {"2026-11-20T00:00:00Z"}, "endAt": {"2026-12-01T00:00:00Z"}, "limit": {"1000"}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url+"/organisations/"+e.org.ID+"/usage?"+q.Encode(), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.api.Secret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var page struct {
		Data    []spec.UsageBucket `json:"data"`
		HasMore bool               `json:"hasMore"`
	}
	require.NoError(t, json.Unmarshal(b, &page))
	require.False(t, page.HasMore)
	var out totals
	for _, bk := range page.Data {
		out.Requests += bk.Metrics.Requests
		out.Input += bk.Metrics.InputTokens
		out.Output += bk.Metrics.OutputTokens
		out.Cost = provider.RoundCost(out.Cost + bk.Metrics.Cost)
	}
	return out
}

// orgList returns the organisation-wide list of resource (events,
// assistants), read with the API key.
func (e *env) orgList(t *testing.T, resource string) []json.RawMessage {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url+"/organisations/"+e.org.ID+"/"+resource+"?limit=1000", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.api.Secret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var page struct {
		Data    []json.RawMessage `json:"data"`
		HasMore bool              `json:"hasMore"`
	}
	require.NoError(t, json.Unmarshal(b, &page))
	require.False(t, page.HasMore)
	return page.Data
}

// orgIDs returns the ids of the organisation-wide list of resource, each
// listed once.
func (e *env) orgIDs(t *testing.T, resource string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, raw := range e.orgList(t, resource) {
		var d struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(raw, &d))
		require.False(t, out[d.ID], "%s %s listed twice", resource, d.ID)
		out[d.ID] = true
	}
	return out
}

// reference computes the totals of fixtures sent in order with package
// tools' in-memory semantics: one usage per key, the one-source rule, and
// cumulative runs turned into deltas in arrival order.
func reference(t *testing.T, names ...string) totals {
	t.Helper()
	seen := map[string]bool{}
	var us []tools.Usage
	for _, n := range names {
		for _, u := range batchOf(t, n).Usage {
			if !seen[u.Key] {
				seen[u.Key] = true
				us = append(us, u)
			}
		}
	}
	var out totals
	for _, u := range tools.NewAccumulator().Apply(tools.Dedup(us)) {
		if u.Origin.PerRequest() {
			out.Requests++
		}
		out.Input += u.Tokens.Input + u.Tokens.CacheRead + u.Tokens.CacheWrite
		out.Output += u.Tokens.Output
		if u.CostEstimate != nil {
			out.Cost = provider.RoundCost(out.Cost + *u.CostEstimate)
		}
	}
	return out
}

// eventually waits for cond, a few seconds at most.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 30*time.Second, 50*time.Millisecond)
}

// grpcConn starts e's OTLP/gRPC server on a loopback port and returns a
// client connection to it; both end with the test.
func grpcConn(t *testing.T, e *env) *grpc.ClientConn {
	t.Helper()
	gs, err := e.srv.Telemetry().NewGRPCServer()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
