package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
)

const (
	tenant      = "acme"
	fullToken   = "full-secret"
	noUsageTok  = "no-usage-secret"
	otherTenant = "other-secret"
)

var cursorKey = bytes.Repeat([]byte{7}, 32)

// fixture is a memsource filled with demo data, served over REST with an
// MCP server mounted at /mcp on a real listener.
type fixture struct {
	srv  *mcp.Server
	rest http.Handler
	url  string // of the httptest server
}

var (
	srcOnce sync.Once
	src     *memsource.Source
	srcErr  error
)

func demoSource(t *testing.T) *memsource.Source {
	t.Helper()
	srcOnce.Do(func() {
		src = memsource.New()
		srcErr = demodata.Fill(context.Background(), demodata.Config{Seed: 1, Conversations: 80}, tenant, src)
	})
	require.NoError(t, srcErr)
	return src
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ds := demoSource(t)
	srv, err := mcp.NewServer(ds, mcp.WithPrincipal(provider.Principal{Tenant: tenant}), mcp.WithCursorKey(cursorKey))
	require.NoError(t, err)
	rest, err := provider.NewHandler(ds,
		provider.WithTokens(
			provider.Token{Secret: fullToken, Tenant: tenant},
			provider.Token{Secret: noUsageTok, Tenant: tenant, Scopes: []string{provider.ScopeConversations, provider.ScopeAssistants, provider.ScopeEvents}},
			provider.Token{Secret: otherTenant, Tenant: "globex"},
		),
		provider.WithCursorKey(cursorKey),
		provider.WithMount("/mcp", srv.HTTPHandler()))
	require.NoError(t, err)
	ts := httptest.NewServer(rest)
	t.Cleanup(ts.Close)
	return &fixture{srv: srv, rest: rest, url: ts.URL}
}

// restGet calls the REST handler directly with token.
func (f *fixture) restGet(t *testing.T, token, path string, query url.Values) (int, []byte) {
	t.Helper()
	target := path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	f.rest.ServeHTTP(w, r)
	return w.Code, w.Body.Bytes()
}

func (f *fixture) restJSON(t *testing.T, path string, query url.Values) map[string]any {
	t.Helper()
	status, body := f.restGet(t, fullToken, path, query)
	require.Equal(t, http.StatusOK, status, string(body))
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	return m
}

func startClient(t *testing.T, c *client.Client) *client.Client {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { _ = c.Close() })
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcpgo.Implementation{Name: "kit-test", Version: "1"}
	_, err := c.Initialize(ctx, init)
	require.NoError(t, err)
	return c
}

func (f *fixture) inProcess(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(f.srv.MCPServer())
	require.NoError(t, err)
	return startClient(t, c)
}

// overHTTP connects over streamable HTTP through the REST authentication.
// The URL uses 127.0.0.1: see mcp.WithAllowAnyHost.
func (f *fixture) overHTTP(t *testing.T, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(f.url+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	require.NoError(t, err)
	return startClient(t, c)
}

// clients returns both transports, for table tests.
func (f *fixture) clients(t *testing.T) map[string]*client.Client {
	return map[string]*client.Client{"inprocess": f.inProcess(t), "http": f.overHTTP(t, fullToken)}
}

func call(t *testing.T, c *client.Client, name string, args map[string]any) *mcpgo.CallToolResult {
	t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	require.NoError(t, err)
	return res
}

func text(res *mcpgo.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcpgo.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func structured(t *testing.T, res *mcpgo.CallToolResult) map[string]any {
	t.Helper()
	require.False(t, res.IsError, text(res))
	require.NotNil(t, res.StructuredContent)
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// withoutCursor replaces a nextCursor string (sealed with a random nonce, so
// never the same twice) by a placeholder.
func withoutCursor(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	if _, ok := out["nextCursor"].(string); ok {
		out["nextCursor"] = "<cursor>"
	}
	return out
}

// toolCase is a tool call and the REST request it stands for.
type toolCase struct {
	name  string // of the subtest
	tool  string
	args  map[string]any
	path  string
	query url.Values
}

func toolCases(t *testing.T, f *fixture) []toolCase {
	convs := f.restJSON(t, "/conversations", url.Values{"limit": {"1"}})
	convID := convs["data"].([]any)[0].(map[string]any)["id"].(string)
	asst := f.restJSON(t, "/assistants", url.Values{"limit": {"1"}})
	asstID := asst["data"].([]any)[0].(map[string]any)["id"].(string)
	return []toolCase{
		{"list_conversations defaults", "list_conversations", nil, "/conversations", nil},
		{"list_conversations limit", "list_conversations", map[string]any{"limit": 5}, "/conversations", url.Values{"limit": {"5"}}},
		{"list_conversations filters", "list_conversations", map[string]any{"updatedSince": "2026-02-01T00:00:00+01:00", "startedAfter": "2026-01-15T00:00:00Z", "limit": 3},
			"/conversations", url.Values{"updatedSince": {"2026-02-01T00:00:00+01:00"}, "startedAfter": {"2026-01-15T00:00:00Z"}, "limit": {"3"}}},
		{"get_conversation", "get_conversation", map[string]any{"id": convID}, "/conversations/" + url.PathEscape(convID), nil},
		{"list_assistants", "list_assistants", map[string]any{"limit": 4, "updatedSince": "2026-01-01T00:00:00Z"}, "/assistants", url.Values{"limit": {"4"}, "updatedSince": {"2026-01-01T00:00:00Z"}}},
		{"get_assistant", "get_assistant", map[string]any{"id": asstID}, "/assistants/" + url.PathEscape(asstID), nil},
		{"list_events limit", "list_events", map[string]any{"limit": 5}, "/events", url.Values{"limit": {"5"}}},
		{"list_events filters", "list_events", map[string]any{"category": "Authentication", "occurredAfter": "2026-01-10T00:00:00Z"}, "/events",
			url.Values{"category": {"Authentication"}, "occurredAfter": {"2026-01-10T00:00:00Z"}}},
		{"get_usage groupBy", "get_usage", map[string]any{"startAt": "2026-02-01T00:00:00Z", "endAt": "2026-02-08T00:00:00Z", "groupBy": []any{"model", "department"}, "limit": 5},
			"/usage", url.Values{"startAt": {"2026-02-01T00:00:00Z"}, "endAt": {"2026-02-08T00:00:00Z"}, "groupBy": {"model,department"}, "limit": {"5"}}},
		{"get_usage hourly", "get_usage", map[string]any{"startAt": "2026-02-02T00:00:00Z", "endAt": "2026-02-03T00:00:00Z", "granularity": "hour"},
			"/usage", url.Values{"startAt": {"2026-02-02T00:00:00Z"}, "endAt": {"2026-02-03T00:00:00Z"}, "granularity": {"hour"}}},
	}
}

// rawTools returns the tool definitions as sent on the wire: mcp-go's
// client decodes outputSchema into a struct that keeps only some keywords.
func rawTools(t *testing.T, f *fixture) []map[string]any {
	t.Helper()
	resp := f.srv.MCPServer().HandleMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	b, err := json.Marshal(resp)
	require.NoError(t, err)
	var msg struct {
		Result struct {
			Tools []map[string]any `json:"tools"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(b, &msg), string(b))
	require.NotEmpty(t, msg.Result.Tools, string(b))
	return msg.Result.Tools
}

// outputValidators compiles each tool's output schema, as a client would.
func outputValidators(t *testing.T, f *fixture) map[string]*jsonschema.Schema {
	t.Helper()
	out := map[string]*jsonschema.Schema{}
	for _, tool := range rawTools(t, f) {
		name := tool["name"].(string)
		b, err := json.Marshal(tool["outputSchema"])
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		require.NoError(t, err)
		comp := jsonschema.NewCompiler()
		comp.AssertFormat()
		comp.UseLoader(refuseLoader{})
		loc := "mem://" + name + ".json"
		require.NoError(t, comp.AddResource(loc, doc))
		s, err := comp.Compile(loc)
		require.NoError(t, err, name)
		out[name] = s
	}
	return out
}

type refuseLoader struct{}

func (refuseLoader) Load(u string) (any, error) {
	return nil, &url.Error{Op: "load", URL: u, Err: io.ErrUnexpectedEOF}
}

func validate(t *testing.T, s *jsonschema.Schema, m map[string]any) {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	require.NoError(t, s.Validate(inst))
}

func TestToolsAnswerLikeREST(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for name, c := range f.clients(t) {
		t.Run(name, func(t *testing.T) {
			schemas := outputValidators(t, f)
			for _, tc := range toolCases(t, f) {
				t.Run(tc.name, func(t *testing.T) {
					got := structured(t, call(t, c, tc.tool, tc.args))
					want := f.restJSON(t, tc.path, tc.query)
					require.Equal(t, withoutCursor(want), withoutCursor(got), "%s %v", tc.tool, tc.args)
					validate(t, schemas[tc.tool], got)
					// The text block holds the same JSON after a summary line.
					res := call(t, c, tc.tool, tc.args)
					summary, js, ok := strings.Cut(text(res), "\n\n")
					require.True(t, ok)
					require.NotEmpty(t, summary)
					var fromText map[string]any
					require.NoError(t, json.Unmarshal([]byte(js), &fromText))
					require.Equal(t, withoutCursor(want), withoutCursor(fromText))
					// An MCP cursor is a REST cursor: the next page is the same.
					if cur, ok := got["nextCursor"].(string); ok {
						q := url.Values{}
						for k, v := range tc.query {
							q[k] = v
						}
						q.Set("cursor", cur)
						next := f.restJSON(t, tc.path, q)
						q.Set("cursor", want["nextCursor"].(string))
						require.Equal(t, withoutCursor(f.restJSON(t, tc.path, q)), withoutCursor(next))
					}
				})
			}
		})
	}
}

func TestPagination(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	all := f.restJSON(t, "/conversations", url.Values{"limit": {"1000"}})
	var want []string
	for _, r := range all["data"].([]any) {
		want = append(want, r.(map[string]any)["id"].(string))
	}
	require.Greater(t, len(want), 20)
	for name, c := range f.clients(t) {
		t.Run(name, func(t *testing.T) {
			var got []string
			args := map[string]any{"limit": 7, "fields": "summary"}
			for pages := 0; ; pages++ {
				require.Less(t, pages, 100)
				res := call(t, c, "list_conversations", args)
				page := structured(t, res)
				for _, r := range page["data"].([]any) {
					got = append(got, r.(map[string]any)["id"].(string))
				}
				if page["hasMore"] != true {
					require.Nil(t, page["nextCursor"])
					break
				}
				require.Contains(t, text(res), "cursor=")
				args["cursor"] = page["nextCursor"]
				args["limit"] = 9 // limit may change from page to page
			}
			require.Equal(t, want, got)
		})
	}
}

func TestSummaryFields(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.inProcess(t)
	schemas := outputValidators(t, f)
	res := call(t, c, "list_conversations", map[string]any{"limit": 20, "fields": "summary"})
	got := structured(t, res)
	validate(t, schemas["list_conversations"], got)
	require.Contains(t, text(res), "summary")
	want := f.restJSON(t, "/conversations", url.Values{"limit": {"20"}})
	dropped := 0
	for _, r := range want["data"].([]any) {
		rec := r.(map[string]any)
		for _, k := range []string{"messages", "systemPrompt", "tools", "attachments"} {
			if _, ok := rec[k]; ok {
				dropped++
				delete(rec, k)
			}
		}
	}
	require.Positive(t, dropped)
	require.Equal(t, withoutCursor(want), withoutCursor(got))

	full := structured(t, call(t, c, "list_conversations", map[string]any{"limit": 20, "fields": "full"}))
	require.Equal(t, withoutCursor(f.restJSON(t, "/conversations", url.Values{"limit": {"20"}})), withoutCursor(full))
}

func TestBadArguments(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for name, c := range f.clients(t) {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				tool string
				args map[string]any
				want []string
			}{
				{"list_conversations limit 0", "list_conversations", map[string]any{"limit": 0}, []string{"limit", "400"}},
				{"list_conversations limit 1001", "list_conversations", map[string]any{"limit": 1001}, []string{"limit"}},
				{"list_conversations limit 2.5", "list_conversations", map[string]any{"limit": 2.5}, []string{"limit", "integer"}},
				{"list_conversations limit ten", "list_conversations", map[string]any{"limit": "ten"}, []string{"limit", "integer"}},
				{"list_conversations updatedSince yesterday", "list_conversations", map[string]any{"updatedSince": "yesterday"}, []string{"updatedSince", "RFC 3339"}},
				{"list_conversations fields brief", "list_conversations", map[string]any{"fields": "brief"}, []string{"fields", "summary"}},
				{"list_conversations unknown argument", "list_conversations", map[string]any{"since": "2026-01-01T00:00:00Z"}, []string{"unknown argument since", "updatedSince"}},
				{"list_conversations bad cursor", "list_conversations", map[string]any{"cursor": "garbage"}, []string{"cursor"}},
				{"list_events unknown category", "list_events", map[string]any{"category": "Nope"}, []string{"category", "Authentication"}},
				{"list_events bad occurredAfter", "list_events", map[string]any{"occurredAfter": "2026-13-01T00:00:00Z"}, []string{"occurredAfter"}},
				{"get_usage groupBy team", "get_usage", map[string]any{"groupBy": []any{"team"}}, []string{"groupBy", "team"}},
				{"get_usage groupBy number", "get_usage", map[string]any{"groupBy": []any{1}}, []string{"groupBy", "array of strings"}},
				{"get_usage granularity week", "get_usage", map[string]any{"granularity": "week"}, []string{"granularity"}},
				{"get_usage hourly over 31 days", "get_usage", map[string]any{"startAt": "2026-01-01T00:00:00Z", "endAt": "2026-03-01T00:00:00Z", "granularity": "hour"}, []string{"endAt", "31 days"}},
				{"get_conversation without id", "get_conversation", map[string]any{}, []string{"id", "required"}},
				{"get_conversation unknown id", "get_conversation", map[string]any{"id": "no-such-id"}, []string{"404", `No conversation with id "no-such-id"`}},
				{"get_assistant id with slash", "get_assistant", map[string]any{"id": "a/b"}, []string{"404", `"a/b"`}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					res := call(t, c, tc.tool, tc.args)
					require.True(t, res.IsError, "%s %v: %s", tc.tool, tc.args, text(res))
					for _, w := range tc.want {
						require.Contains(t, text(res), w, "%s %v", tc.tool, tc.args)
					}
				})
			}
		})
	}
}

func TestScopesAndTenants(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.overHTTP(t, noUsageTok)
	res := call(t, c, "get_usage", nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), "403")
	require.Contains(t, text(res), "read:usage")
	structured(t, call(t, c, "list_conversations", map[string]any{"limit": 2}))

	// Another tenant's token reads that tenant's data: none here.
	other := f.overHTTP(t, otherTenant)
	page := structured(t, call(t, other, "list_conversations", nil))
	require.Empty(t, page["data"])
}
