package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// Ready lines of "service serve", in each log format.
var (
	serviceURLText = regexp.MustCompile(`msg="service serving" url=(http://\S+)`)
	serviceURLJSON = regexp.MustCompile(`"msg":"service serving","url":"(http://[^"]+)"`)
)

// startService runs "aiusage service serve --addr 127.0.0.1:0 args..."
// in-process until the test ends, and returns its base URL (from the line
// ready matches), its log and a function that stops it and returns its exit
// code.
func startService(t *testing.T, ready *regexp.Regexp, args ...string) (string, *syncBuffer, func() int) {
	t.Helper()
	return startServiceEnv(t, nil, ready, args...)
}

// startServiceEnv is startService with the environment variables environ.
func startServiceEnv(t *testing.T, environ map[string]string, ready *regexp.Regexp, args ...string) (string, *syncBuffer, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan int, 1)
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: logs, getenv: testGetenv(environ)}
	go func() { done <- run(ctx, e, append([]string{"service", "serve", "--addr", "127.0.0.1:0"}, args...)) }()
	var once sync.Once
	code := -1
	stop := func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Error("service serve did not stop")
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := ready.FindStringSubmatch(logs.String()); m != nil {
			return m[1], logs, stop
		}
		select {
		case c := <-done:
			t.Fatalf("service serve exited with %d: %s", c, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("service serve not ready: %s", logs.String())
	return "", nil, nil
}

// call sends one request to the organisation API with the key as X-API-Key
// (none when key is empty) and body (when not nil) as JSON, and returns the
// status, the body and the headers of the answer.
func call(t *testing.T, method, url, key string, body any) (int, []byte, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b, resp.Header
}

// requireSchema checks a body against one of the kit's JSON Schemas.
func requireSchema(t *testing.T, schema string, body []byte) {
	t.Helper()
	f, err := spec.Validate(schema, body)
	require.NoError(t, err)
	require.True(t, spec.Valid(f), "%s: %v: %s", schema, f, body)
}

// TestServiceEndToEnd creates an organisation, an agent and a key with the
// admin commands, serves the organisation API with "service serve", works on
// an instruction over HTTP with the key, revokes the key with "admin key
// revoke" and reads the changes back with "admin audit".
func TestServiceEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			f := newFixture(t, dbURL)
			var ingestion org.CreatedKey
			adminOK(t, dbURL, &ingestion, "key", "create", "--org", f.org.ID, "--name", "telemetry")

			base, logs, stop := startService(t, serviceURLText, "--database-url", dbURL)
			require.Contains(t, logs.String(), "database=")
			key := f.key.Secret

			// The first call of an integration: the key's organisation.
			status, body, _ := call(t, http.MethodGet, base+"organisations", key, nil)
			require.Equal(t, http.StatusOK, status, string(body))
			requireSchema(t, "organisation-list", body)
			require.JSONEq(t, `[{"id":"`+f.org.ID+`","name":"Acme"}]`, string(body))
			orgURL := base + "organisations/" + f.org.ID

			// Create a Regex instruction with redaction, assigned to the agent.
			category := "3f1c2a9e-8d7b-4c6a-9e5f-1a2b3c4d5e6f"
			create := map[string]any{
				"agentType": "DataProtection", "title": "Card numbers",
				"trigger":     map[string]any{"type": "Regex", "pattern": `\b\d{4}( ?\d{4}){3}\b`, "isCaseSensitive": false},
				"action":      "Block",
				"criticality": "Low", "categoryId": category, "usedBy": []string{f.agent.ID}, "allowRedaction": true,
			}
			status, body, hdr := call(t, http.MethodPost, orgURL+"/instructions", key, create)
			require.Equal(t, http.StatusCreated, status, string(body))
			requireSchema(t, "instruction", body)
			var in spec.Instruction
			require.NoError(t, json.Unmarshal(body, &in))
			require.Equal(t, "/organisations/"+f.org.ID+"/instructions/"+in.ID, hdr.Get("Location"))
			require.Equal(t, []string{f.agent.ID}, in.UsedBy)
			require.True(t, in.AllowRedaction)
			require.Equal(t, &category, in.CategoryID)

			// List, search, get.
			for query, n := range map[string]int{"": 1, "?search=CARD": 1, "?search=%5Cd%7B4%7D": 1, "?search=passport": 0,
				"?triggerType=Regex&agentId=" + strings.ToUpper(f.agent.ID): 1, "?action=Allow": 0} {
				status, body, _ = call(t, http.MethodGet, orgURL+"/instructions"+query, key, nil)
				require.Equal(t, http.StatusOK, status, "%s: %s", query, body)
				requireSchema(t, "instruction-list", body)
				var list spec.InstructionList
				require.NoError(t, json.Unmarshal(body, &list))
				require.Equal(t, n, list.TotalCount, query)
				require.Len(t, list.Items, n, query)
			}
			status, body, _ = call(t, http.MethodGet, orgURL+"/instructions/"+in.ID, key, nil)
			require.Equal(t, http.StatusOK, status, string(body))
			var got spec.Instruction
			require.NoError(t, json.Unmarshal(body, &got))
			require.Equal(t, in, got)

			// The agent now holds it.
			status, body, _ = call(t, http.MethodGet, orgURL+"/agents", key, nil)
			require.Equal(t, http.StatusOK, status, string(body))
			require.JSONEq(t, `[{"id":"`+f.agent.ID+`","name":"Guard","type":"DataProtection","instructionCount":1}]`, string(body))

			// Patch: clear the category, raise the criticality.
			status, body, _ = call(t, http.MethodPatch, orgURL+"/instructions/"+in.ID, key, map[string]any{"categoryId": nil, "criticality": "High"})
			require.Equal(t, http.StatusOK, status, string(body))
			var patched spec.Instruction
			require.NoError(t, json.Unmarshal(body, &patched))
			require.Nil(t, patched.CategoryID)
			require.Equal(t, "High", patched.Criticality)
			require.Equal(t, in.Title, patched.Title)

			// Errors of the seed: another organisation's id, a bad agentType,
			// redaction with a Semantic trigger, an Ingestion key.
			status, _, _ = call(t, http.MethodGet, base+"organisations/00000000-0000-4000-8000-000000000000/instructions", key, nil)
			require.Equal(t, http.StatusNotFound, status)
			bad := map[string]any{"agentType": "Other", "title": "x", "trigger": map[string]any{"type": "Semantic", "text": "x"}, "action": "Allow", "criticality": "Low"}
			status, body, _ = call(t, http.MethodPost, orgURL+"/instructions", key, bad)
			require.Equal(t, http.StatusBadRequest, status)
			require.Contains(t, string(body), "agentType")
			bad["agentType"], bad["allowRedaction"] = "DataProtection", true
			status, body, _ = call(t, http.MethodPost, orgURL+"/instructions", key, bad)
			require.Equal(t, http.StatusBadRequest, status)
			require.Contains(t, string(body), "allowRedaction")
			status, _, _ = call(t, http.MethodGet, base+"organisations", ingestion.Secret, nil)
			require.Equal(t, http.StatusForbidden, status)

			// Delete: 204, then 404.
			status, body, _ = call(t, http.MethodDelete, orgURL+"/instructions/"+in.ID, key, nil)
			require.Equal(t, http.StatusNoContent, status, string(body))
			status, _, _ = call(t, http.MethodGet, orgURL+"/instructions/"+in.ID, key, nil)
			require.Equal(t, http.StatusNotFound, status)

			// Revoke the key with the admin command, the server running: it
			// is refused within the service's key cache time.
			var revoked adminKey
			adminOK(t, dbURL, &revoked, "key", "revoke", "--org", f.org.ID, "--key", f.key.ID, "--actor", "alice")
			require.Equal(t, "revoked", revoked.Status)
			revokedAt := time.Now()
			for {
				status, body, hdr = call(t, http.MethodGet, base+"organisations", key, nil)
				if status != http.StatusOK || time.Since(revokedAt) > org.DefaultKeyCacheTTL+time.Second {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			require.Equal(t, http.StatusUnauthorized, status, "not refused %s after its revocation: %s", time.Since(revokedAt), body)
			require.Equal(t, spec.ProblemContentType, hdr.Get("Content-Type"))

			// The audit trail holds the changes, those over HTTP under the
			// key's name and id.
			var trail []string
			for _, rec := range readAudit(t, dbURL, "--org", f.org.ID) {
				trail = append(trail, rec.Action+" "+rec.Actor.Type+":"+rec.Actor.Name+":"+rec.Actor.ID)
			}
			k := f.key.ID
			require.Equal(t, []string{
				"organisation.created admin:admin:",
				"agent.created admin:admin:",
				"key.created admin:admin:",
				"key.created admin:admin:",
				"instruction.created apiKey:ci:" + k,
				"instruction.updated apiKey:ci:" + k,
				"instruction.deleted apiKey:ci:" + k,
				"key.revoked admin:alice:",
			}, trail)

			require.Equal(t, ExitOK, stop())
			require.Contains(t, logs.String(), "shutting down")
			require.Contains(t, logs.String(), "stopped")
		})
	}
}

// TestServiceServeFullAgent fills an agent with 100 instructions over HTTP
// and checks the 101st is 409 naming the agent.
func TestServiceServeFullAgent(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	f := newFixture(t, dbURL)
	base, _, _ := startService(t, serviceURLText, "--database-url", dbURL)
	url := base + "organisations/" + f.org.ID + "/instructions"
	body := map[string]any{"agentType": "DataProtection", "title": "x", "trigger": map[string]any{"type": "StringMatch", "values": []string{"secret"}},
		"action": "Block", "criticality": "Low", "usedBy": []string{f.agent.ID}}
	for range spec.MaxInstructionsPerAgent {
		status, b, _ := call(t, http.MethodPost, url, f.key.Secret, body)
		require.Equal(t, http.StatusCreated, status, string(b))
	}
	status, b, _ := call(t, http.MethodPost, url, f.key.Secret, body)
	require.Equal(t, http.StatusConflict, status, string(b))
	require.Contains(t, string(b), f.agent.ID)
	require.Contains(t, string(b), "Guard")
}

func TestServiceServeLogs(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	base, logs, stop := startService(t, serviceURLJSON, "--database-url", dbURL, "--log-format", "json")
	status, _, _ := call(t, http.MethodGet, base+"organisations", "", nil)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, ExitOK, stop())
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	var ready map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &ready))
	require.Equal(t, "service serving", ready["msg"])
	require.Equal(t, base, ready["url"])
	require.Equal(t, dbURL, ready["database"])
	require.Equal(t, "builtin", ready["semantic_matcher"], "without --embeddings-url, the built-in matcher")
	require.Contains(t, logs.String(), `"msg":"request"`)
	require.Contains(t, logs.String(), `"status":401`)
}

func TestServiceServeErrors(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--log-format", "xml"}, ExitUsage, "--log-format must be text or json"},
		{[]string{"extra"}, ExitUsage, `service serve takes no arguments, got "extra"`},
		{[]string{"--shutdown-timeout", "0s"}, ExitUsage, "--shutdown-timeout must be positive"},
		{[]string{"--evaluation-budget", "0s"}, ExitUsage, "--evaluation-budget must be positive"},
		{[]string{"--evaluation-budget", "-1s"}, ExitUsage, "--evaluation-budget must be positive"},
		{[]string{"--addr", "127.0.0.1:99999"}, ExitUsage, "--addr"},
		{[]string{"--vendor-rate", "0"}, ExitUsage, "--vendor-rate must be a number of requests a second above 0"},
		{[]string{"--vendor-backfill", "-1h"}, ExitUsage, "--vendor-backfill must not be negative"},
		{[]string{"--vendor-lookback", "-1h"}, ExitUsage, "--vendor-lookback must not be negative"},
		{[]string{"--database-url", "mysql://x"}, ExitUsage, "service serve: --database-url: bad database URL"},
		{[]string{"--database-url", "postgres://u:secret@[::1"}, ExitUsage, "service serve: --database-url: bad database URL"},
		{[]string{"--database-url", "sqlite:" + t.TempDir() + "/no/such/dir/x.db"}, ExitFailure, "service serve: --database-url: sqldb: open"},
		{[]string{"--database-url", "postgres://u:secret@127.0.0.1:1/x?connect_timeout=5"}, ExitFailure, "service serve: --database-url: sqldb: open postgres://u:xxxxx@"},
	}
	for _, tc := range cases {
		args := append([]string{"service", "serve", "--addr", "127.0.0.1:0", "--database-url", dbURL}, tc.args...)
		r := runCLI(t, "", nil, args...)
		require.Equal(t, tc.code, r.code, "%v: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.want, tc.args)
		require.NotContains(t, r.stderr, "secret")
	}
	r := runCLI(t, "", nil, "service")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "service needs a command")
}
