package telemetry_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rpccode "google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/app/telemetry"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// TestAuth: missing, unknown, revoked and expired keys get one 401; an API
// key 403; an Ingestion key 200; a key revoked between two requests 401 on
// the second. Refusals are google.rpc.Status in the request's encoding.
func TestAuth(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db, nil)
		revoked := e.key(t, "old", org.KeyTypeIngestion)
		_, err := e.orgs.RevokeKey(ctx, e.org.ID, revoked.ID, admin)
		require.NoError(t, err)
		// Expired: its expiry moved into the past in the database, which
		// the store reads on the key's first request.
		expired := e.key(t, "short", org.KeyTypeIngestion)
		_, err = db.ExecContext(ctx, `UPDATE orgapi_api_keys SET expires_at = $1 WHERE id = $2`, time.Now().Add(-time.Hour).UnixMilli(), expired.ID)
		require.NoError(t, err)

		const name = "claude_logs.json"
		for _, asProto := range []bool{false, true} {
			var first []byte
			for label, h := range map[string]http.Header{
				"none":      nil,
				"unknown":   bearer(org.SecretPrefix + "unknownunknownunknownunknownunknownunknownunkn"),
				"revoked":   bearer(revoked.Secret),
				"expired":   bearer(expired.Secret),
				"x-api-key": {"X-Api-Key": {"nope"}},
				"scheme":    {"Authorization": {"Basic " + e.ingest.Secret}},
			} {
				code, body := post(t, e.url, name, asProto, h)
				require.Equal(t, http.StatusUnauthorized, code, label)
				if first == nil {
					first = body
				}
				require.Equal(t, first, body, "%s: every 401 is the same", label)
			}
			var st status.Status
			if asProto {
				require.NoError(t, proto.Unmarshal(first, &st))
			} else {
				require.NoError(t, protojson.Unmarshal(first, &st))
			}
			require.Equal(t, int32(rpccode.Code_UNAUTHENTICATED), st.Code)
			code, body := post(t, e.url, name, asProto, bearer(e.api.Secret))
			require.Equal(t, http.StatusForbidden, code)
			require.Contains(t, string(body), "API keys cannot send telemetry")
		}
		code, body := post(t, e.url, name, false, bearer(e.ingest.Secret))
		require.Equal(t, http.StatusOK, code, string(body))
		code, body = post(t, e.url, name, true, http.Header{"X-Api-Key": {e.ingest.Secret}})
		require.Equal(t, http.StatusOK, code, string(body))
		_, err = e.orgs.RevokeKey(ctx, e.org.ID, e.ingest.ID, admin)
		require.NoError(t, err)
		code, _ = post(t, e.url, name, false, bearer(e.ingest.Secret))
		require.Equal(t, http.StatusUnauthorized, code)

		// The organisation API still refuses the Ingestion key, and the
		// endpoint is not behind its authentication.
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/organisations/"+e.org.ID+"/usage", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+e.key(t, "other", org.KeyTypeIngestion).Secret)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
}

// sequence is what the end-to-end tests send: Claude Code's logs and
// metrics in both encodings, each twice; Gemini CLI's cumulative metrics
// re-sent and out of order; Codex CLI's and Gemini CLI's logs.
var sequence = []struct {
	name    string
	asProto bool
}{
	{"claude_logs.json", false}, {"claude_metrics.json", true}, {"claude_logs.json", true}, {"claude_metrics.json", false},
	{"gemini_metrics_1.json", false}, {"gemini_metrics_3.json", true}, {"gemini_metrics_2.json", false},
	{"gemini_metrics_1.json", true}, {"gemini_metrics_3.json", false},
	{"codex_logs.json", true}, {"gemini_logs.json", false}, {"codex_logs.json", false},
}

func sequenceNames() []string {
	var out []string
	for _, s := range sequence {
		out = append(out, s.name)
	}
	return out
}

// TestEndToEnd: the fixtures posted as OTLP/JSON and protobuf, re-sent and
// reordered, become exact totals in the organisation-wide usage; the key's
// source is listed, with the tools and events in its view.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db, nil)
		for _, s := range sequence {
			code, body := post(t, e.url, s.name, s.asProto, bearer(e.ingest.Secret))
			require.Equal(t, http.StatusOK, code, "%s: %s", s.name, body)
		}
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		got := e.orgUsage(t)
		want := reference(t, sequenceNames()...)
		require.InDelta(t, want.Cost, got.Cost, 1e-9)
		got.Cost, want.Cost = 0, 0
		require.Equal(t, want, got)

		// Claude Code alone, by the numbers of package tools' test: input
		// is uncached + cache read + cache write.
		claude := reference(t, "claude_logs.json", "claude_metrics.json")
		require.Equal(t, int64(1300+10+5+8+822), claude.Input)
		require.Equal(t, int64(250+20+7+2+60), claude.Output)

		// Everything again, in another order: nothing changes.
		for i := len(sequence) - 1; i >= 0; i-- {
			code, _ := post(t, e.url, sequence[i].name, !sequence[i].asProto, bearer(e.ingest.Secret))
			require.Equal(t, http.StatusOK, code)
		}
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		again := e.orgUsage(t)
		again.Cost = 0
		require.Equal(t, got, again)

		// The events and the tools are in the organisation's view too, once
		// each.
		wantEvents := map[string]bool{}
		wantTools := map[string]bool{}
		for _, n := range sequenceNames() {
			b := batchOf(t, n)
			for _, ev := range b.Events {
				wantEvents[ev.ID] = true
			}
			for _, a := range b.Assistants {
				wantTools[a.ID] = true
			}
		}
		require.Equal(t, wantEvents, e.orgIDs(t, "events"))
		require.Equal(t, wantTools, e.orgIDs(t, "assistants"))
		// A tool's createdAt is when it was first seen, whatever came after.
		first := map[string]time.Time{}
		for _, n := range sequenceNames() {
			for _, a := range batchOf(t, n).Assistants {
				if f, ok := first[a.ID]; !ok || a.LastSeen.Before(f) {
					first[a.ID] = a.LastSeen
				}
			}
		}
		for _, raw := range e.orgList(t, "assistants") {
			var a spec.Assistant
			require.NoError(t, json.Unmarshal(raw, &a))
			require.True(t, first[a.ID].Equal(a.CreatedAt.Time), "%s created %s, first seen %s", a.ID, a.CreatedAt, first[a.ID])
		}

		list, err := e.srv.Sources().List(ctx, e.org.ID)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, telemetry.SourceID(e.ingest.ID), list[0].ID)
		require.Equal(t, sources.TransportTelemetry, list[0].Transport)
		require.Equal(t, "laptops", list[0].Name)
	})
}

// TestPartialSuccess: records that map to nothing are accepted and
// counted in the answer's message.
func TestPartialSuccess(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, nil)
		code, body := post(t, e.url, "claude_logs.json", false, bearer(e.ingest.Secret))
		require.Equal(t, http.StatusOK, code)
		require.JSONEq(t, `{"partialSuccess":{"errorMessage":"accepted; records that map to nothing: 1 unknown event"}}`, string(body))
		rec := httptest.NewRecorder()
		e.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		require.Contains(t, rec.Body.String(), `aiusage_telemetry_records_total{result="unknown event",signal="logs"} 1`)
	})
}

// TestJobs: with the job queue working, the rollup runs by itself.
func TestJobs(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, nil)
		require.NoError(t, e.srv.Start(context.WithoutCancel(t.Context())))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, e.srv.Stop(ctx))
		})
		code, _ := post(t, e.url, "claude_logs.json", false, bearer(e.ingest.Secret))
		require.Equal(t, http.StatusOK, code)
		want := reference(t, "claude_logs.json")
		want.Cost = 0
		eventually(t, func() bool {
			got := e.orgUsage(t)
			got.Cost = 0
			return got == want
		})
	})
}

// TestTwoProcesses: two service instances on one PostgreSQL database
// ingest the same payloads at once and roll up at once: nothing is counted
// twice.
func TestTwoProcesses(t *testing.T) {
	t.Parallel()
	u := sqldbtest.URL(t, sqldb.Postgres)
	open := func() *sqldb.DB {
		db, err := sqldb.Open(t.Context(), u)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	a := newEnv(t, open(), nil)
	b := newEnv(t, open(), &a.org)
	b.api = a.api
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	fail := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, s)
	}
	for _, e := range []*env{a, b} {
		for range 2 {
			wg.Go(func() {
				for _, s := range sequence {
					if code, body := post(t, e.url, s.name, s.asProto, bearer(a.ingest.Secret)); code != http.StatusOK {
						fail(s.name + ": " + string(body))
					}
				}
			})
		}
		wg.Go(func() {
			for range 5 {
				if err := e.srv.Telemetry().RollupAll(t.Context()); err != nil {
					fail(err.Error())
				}
			}
		})
	}
	wg.Wait()
	require.Empty(t, failures)
	require.NoError(t, a.srv.Telemetry().RollupAll(t.Context()))
	require.NoError(t, b.srv.Telemetry().RollupAll(t.Context()))
	got := a.orgUsage(t)
	want := reference(t, sequenceNames()...)
	require.InDelta(t, want.Cost, got.Cost, 1e-9)
	got.Cost, want.Cost = 0, 0
	require.Equal(t, want, got)
}

// TestConcurrencyBound: a key at its bound of requests in flight gets 429
// with Retry-After, before its body is read; a key of another organisation
// does not.
func TestConcurrencyBound(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		lim := httpx.NewLimiter(1, 1)
		e := newEnv(t, db, nil, func(c *server.Config) { c.Concurrency = lim })
		other, err := e.orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Other"}, admin)
		require.NoError(t, err)
		otherKey, err := e.orgs.CreateKey(ctx, org.KeyCreate{OrganisationID: other.ID, Name: "k", Type: org.KeyTypeIngestion}, admin)
		require.NoError(t, err)

		// A request of the key in flight holds its one slot.
		release, err := lim.Acquire(e.ingest.ID, e.org.ID)
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/v1/logs", strings.NewReader(`{}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+e.ingest.Secret)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
		var st status.Status
		require.NoError(t, protojson.Unmarshal(b, &st))
		require.Equal(t, int32(rpccode.Code_RESOURCE_EXHAUSTED), st.Code)

		code, body := post(t, e.url, "claude_logs.json", false, bearer(otherKey.Secret))
		require.Equal(t, http.StatusOK, code, string(body))

		release()
		code, body = post(t, e.url, "claude_logs.json", false, bearer(e.ingest.Secret))
		require.Equal(t, http.StatusOK, code, string(body))
	})
}
