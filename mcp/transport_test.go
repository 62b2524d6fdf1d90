package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/provider"
)

var update = flag.Bool("update", false, "rewrite testdata/tools.golden.json")

func TestToolDefinitionsGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var defs []map[string]any
	names := map[string]bool{}
	for _, def := range rawTools(t, f) {
		defs = append(defs, def)
		b, err := json.Marshal(def)
		require.NoError(t, err)
		var tool mcpgo.Tool
		require.NoError(t, json.Unmarshal(b, &tool))
		names[tool.Name] = true

		require.NotEmpty(t, tool.Description, tool.Name)
		for _, key := range []string{"inputSchema", "outputSchema"} {
			s, ok := def[key].(map[string]any)
			require.True(t, ok, "%s has no %s", tool.Name, key)
			require.Equal(t, "object", s["type"], "%s %s", tool.Name, key)
			props, _ := s["properties"].(map[string]any)
			require.NotEmpty(t, props, "%s has an empty %s", tool.Name, key)
			for p, v := range props {
				require.NotEmpty(t, v, "%s %s: property %s has an empty schema", tool.Name, key, p)
			}
			raw, _ := json.Marshal(s)
			for _, m := range bytes.SplitAfter(raw, []byte(`"$ref":"`))[1:] {
				require.True(t, bytes.HasPrefix(m, []byte("#/$defs/")), "%s %s: $ref outside the document", tool.Name, key)
			}
		}
		in := def["inputSchema"].(map[string]any)
		require.Equal(t, false, in["additionalProperties"], tool.Name)
		for p, v := range in["properties"].(map[string]any) {
			require.NotEmpty(t, v.(map[string]any)["description"], "%s: argument %s has no description", tool.Name, p)
		}
		a := tool.Annotations
		for hint, want := range map[string]struct {
			got  *bool
			want bool
		}{
			"readOnlyHint":    {a.ReadOnlyHint, true},
			"destructiveHint": {a.DestructiveHint, false},
			"idempotentHint":  {a.IdempotentHint, true},
			"openWorldHint":   {a.OpenWorldHint, false},
		} {
			require.NotNil(t, want.got, "%s: %s missing", tool.Name, hint)
			require.Equal(t, want.want, *want.got, "%s: %s", tool.Name, hint)
		}
	}
	require.Equal(t, map[string]bool{"list_conversations": true, "get_conversation": true, "list_assistants": true,
		"get_assistant": true, "list_events": true, "get_usage": true}, names)

	got, err := json.MarshalIndent(defs, "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')
	path := filepath.Join("testdata", "tools.golden.json")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./mcp -run Golden -update")
	require.Equal(t, string(want), string(got), "tool definitions changed: review, then go test ./mcp -run Golden -update")
}

func TestResources(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	convs := f.restJSON(t, "/conversations", url.Values{"limit": {"1"}})
	convID := convs["data"].([]any)[0].(map[string]any)["id"].(string)
	asst := f.restJSON(t, "/assistants", url.Values{"limit": {"1"}})
	asstID := asst["data"].([]any)[0].(map[string]any)["id"].(string)
	for name, c := range f.clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			templates, err := c.ListResourceTemplates(ctx, mcpgo.ListResourceTemplatesRequest{})
			require.NoError(t, err)
			var uris []string
			for _, tpl := range templates.ResourceTemplates {
				uris = append(uris, tpl.URITemplate.Raw())
				require.Equal(t, "application/json", tpl.MIMEType)
			}
			require.ElementsMatch(t, []string{mcp.ConversationURITemplate, mcp.AssistantURITemplate}, uris)

			for uri, path := range map[string]string{
				"aiusage://conversations/" + url.PathEscape(convID): "/conversations/" + url.PathEscape(convID),
				"aiusage://assistants/" + url.PathEscape(asstID):    "/assistants/" + url.PathEscape(asstID),
			} {
				req := mcpgo.ReadResourceRequest{}
				req.Params.URI = uri
				res, err := c.ReadResource(ctx, req)
				require.NoError(t, err, uri)
				require.Len(t, res.Contents, 1)
				tc, ok := res.Contents[0].(mcpgo.TextResourceContents)
				require.True(t, ok)
				require.Equal(t, "application/json", tc.MIMEType)
				require.Equal(t, uri, tc.URI)
				var got map[string]any
				require.NoError(t, json.Unmarshal([]byte(tc.Text), &got))
				require.Equal(t, f.restJSON(t, path, nil), got)
			}

			req := mcpgo.ReadResourceRequest{}
			req.Params.URI = "aiusage://conversations/no-such-id"
			_, err = c.ReadResource(ctx, req)
			require.Error(t, err)
			require.Contains(t, err.Error(), "no-such-id")
			require.Contains(t, err.Error(), "404")
		})
	}
}

func TestHTTPNeedsCredential(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, auth := range []string{"", "Bearer wrong"} {
		req, err := http.NewRequest(http.MethodPost, f.url+"/mcp", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, string(b))
		require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
		require.NotContains(t, string(b), "jsonrpc")
	}

	// Unmounted and with no default principal, the handler refuses too.
	srv, err := mcp.NewServer(demoSource(t))
	require.NoError(t, err)
	w := httptest.NewRecorder()
	srv.HTTPHandler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body)))
	require.Equal(t, http.StatusUnauthorized, w.Code)
	require.Contains(t, w.Header().Get("WWW-Authenticate"), "Bearer")
}

func TestHTTPHostCheck(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// A loopback listener reached with a foreign Host header: mcp-go's DNS
	// rebinding protection answers 403 unless WithAllowAnyHost(true).
	req, err := http.NewRequest(http.MethodPost, f.url+"/mcp", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Host = "evil.example"
	req.Header.Set("Authorization", "Bearer "+fullToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	srv, err := mcp.NewServer(demoSource(t), mcp.WithAllowAnyHost(true))
	require.NoError(t, err)
	rest, err := provider.NewHandler(demoSource(t), provider.WithTokens(provider.Token{Secret: fullToken, Tenant: tenant}),
		provider.WithMount("/mcp", srv.HTTPHandler()))
	require.NoError(t, err)
	ts := httptest.NewServer(rest)
	defer ts.Close()
	c, err := client.NewStreamableHttpClient(ts.URL+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + fullToken}),
		transport.WithStreamableHTTPHost("aiusage.example"))
	require.NoError(t, err)
	structured(t, call(t, startClient(t, c), "list_assistants", map[string]any{"limit": 1}))
}

func TestStdio(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- f.srv.ServeStdio(ctx, serverIn, serverOut) }()

	c := client.NewClient(transport.NewIO(clientIn, clientOut, io.NopCloser(strings.NewReader(""))))
	startClient(t, c)
	got := structured(t, call(t, c, "list_events", map[string]any{"limit": 3}))
	require.Equal(t, withoutCursor(f.restJSON(t, "/events", url.Values{"limit": {"3"}})), withoutCursor(got))
	usage := structured(t, call(t, c, "get_usage", map[string]any{"startAt": "2026-02-01T00:00:00Z", "endAt": "2026-02-03T00:00:00Z"}))
	require.NotEmpty(t, usage["data"])

	require.NoError(t, clientOut.Close())
	require.NoError(t, <-done)
}

func TestRemote(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, err := mcp.NewRemote(f.url, fullToken, nil)
	require.NoError(t, err)
	c, err := client.NewInProcessClient(srv.MCPServer())
	require.NoError(t, err)
	startClient(t, c)
	for _, tc := range toolCases(t, f) {
		t.Run(tc.name, func(t *testing.T) {
			got := structured(t, call(t, c, tc.tool, tc.args))
			require.Equal(t, withoutCursor(f.restJSON(t, tc.path, tc.query)), withoutCursor(got), tc.tool)
		})
	}
	res := call(t, c, "get_conversation", map[string]any{"id": "a b/c"})
	require.True(t, res.IsError)
	require.Contains(t, text(res), `No conversation with id "a b/c"`)

	limited, err := mcp.NewRemote(f.url+"/", noUsageTok, http.DefaultClient)
	require.NoError(t, err)
	lc, err := client.NewInProcessClient(limited.MCPServer())
	require.NoError(t, err)
	startClient(t, lc)
	res = call(t, lc, "get_usage", nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), "read:usage")

	down, err := mcp.NewRemote("http://127.0.0.1:1", fullToken, nil)
	require.NoError(t, err)
	dc, err := client.NewInProcessClient(down.MCPServer())
	require.NoError(t, err)
	startClient(t, dc)
	res = call(t, dc, "list_assistants", nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), "could not be reached")
}

func TestConstructors(t *testing.T) {
	t.Parallel()
	_, err := mcp.NewServer(nil)
	require.Error(t, err)
	_, err = mcp.NewServer(demoSource(t), mcp.WithCursorKey([]byte("short")))
	require.ErrorContains(t, err, "32")
	_, err = mcp.NewServer(demoSource(t), mcp.WithPrincipal(provider.Principal{Scopes: []string{"write:all"}}))
	require.ErrorContains(t, err, "write:all")
	_, err = mcp.NewServer(demoSource(t), mcp.WithProviderOptions(provider.WithTokens(provider.Token{Secret: "x"})))
	require.Error(t, err)
	_, err = mcp.NewRemote("ftp://x", "t", nil)
	require.Error(t, err)
	_, err = mcp.NewRemote("http://x", "", nil)
	require.Error(t, err)
	_, err = mcp.NewRemote("http://x", "t", nil, mcp.WithPrincipal(provider.Principal{}))
	require.ErrorContains(t, err, "WithPrincipal")
	_, err = mcp.NewServer(demoSource(t), mcp.WithName(""))
	require.Error(t, err)
}

func TestOutputSchemaBundles(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"conversation-list", "conversation", "assistant-list", "assistant", "event-list", "usage-list", "problem"} {
		b, err := mcp.OutputSchema(name)
		require.NoError(t, err, name)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		require.Equal(t, "object", m["type"], name)
		require.NotContains(t, string(b), `"$id"`)
		require.NotContains(t, string(b), `"$schema"`)
		require.NotContains(t, string(b), `"x-`)
	}
	_, err := mcp.OutputSchema("nope")
	require.Error(t, err)
}

// bigRPCBody returns a JSON-RPC request of about n bytes, generated as it is
// read (the test holds none of it), sent without a Content-Length when
// chunked.
func bigRPCBody(n int64) io.Reader {
	return io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"`),
		io.LimitReader(repeatReader('a'), n), strings.NewReader(`"}}`))
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestHTTPBodyLimit: a 50 MB body, with or without a Content-Length, is
// answered 413 with a JSON-RPC error before the MCP layer reads it, and the
// limit is an option; a body within it is served.
func TestHTTPBodyLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	post := func(body io.Reader, length int64) (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodPost, f.url+"/mcp", body)
		require.NoError(t, err)
		req.ContentLength = length
		req.Header.Set("Authorization", "Bearer "+fullToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, b
	}
	const size = 50 << 20
	for name, length := range map[string]int64{"chunked": -1, "content-length": size + 71} {
		resp, b := post(bigRPCBody(size), length)
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s: %.300s", name, b)
		require.Contains(t, string(b), `"jsonrpc":"2.0"`, name)
		require.Contains(t, string(b), "larger than 1048576 bytes", name)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), name)
	}
	// Just under the limit, the request reaches MCP (which wants a session
	// first: anything but 413).
	resp, b := post(bigRPCBody(mcp.DefaultMaxBodyBytes-200), -1)
	require.NotEqual(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%.300s", b)

	srv, err := mcp.NewServer(demoSource(t), mcp.WithPrincipal(provider.Principal{Tenant: tenant}), mcp.WithMaxBodyBytes(100))
	require.NoError(t, err)
	w := httptest.NewRecorder()
	srv.HTTPHandler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp", bigRPCBody(200)))
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code, w.Body.String())
	require.Contains(t, w.Body.String(), "larger than 100 bytes")
	_, err = mcp.NewServer(demoSource(t), mcp.WithMaxBodyBytes(0))
	require.ErrorContains(t, err, "WithMaxBodyBytes")
}
