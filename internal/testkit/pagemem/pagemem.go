// Package pagemem measures what one list request over large records
// allocates, through the REST interface and the MCP binding of any
// provider.DataSource, so that the kit's stores can prove that a page costs
// about its byte budget (provider.WithMaxPageBytes), never limit whole
// records: one GET /conversations?limit=1000 over records of 300 KB once
// allocated 1.4-1.8 GB.
//
// The figure is the growth of runtime.MemStats.TotalAlloc over one
// request served in process: every byte the request allocated, garbage
// included, which is deterministic enough to bound (unlike the resident
// memory, which depends on when the collector runs). The test calling it
// must not run in parallel with others.
package pagemem

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"time"

	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Defaults of the measure: records of RecordBytes, as many as one page of
// Limit needs plus the one that says more follow.
const (
	RecordBytes = 300 << 10
	Limit       = provider.MaxLimit
	Records     = Limit + 1
)

// Conversation returns conversation i (ids sort as i), updated at
// t0 + i seconds, whose JSON is about size bytes: one message of size bytes
// of text that differs from record to record.
func Conversation(i, size int, t0 time.Time) spec.Conversation {
	at := spec.NewTime(t0.Add(time.Duration(i) * time.Second))
	word := fmt.Sprintf("record %06d says ", i)
	content := strings.Repeat(word, size/len(word)+1)[:size]
	return spec.Conversation{
		ID: fmt.Sprintf("c%06d", i), ConversationID: fmt.Sprintf("thread-%06d", i),
		StartedAt: at, UpdatedAt: at,
		Messages: []spec.Message{{ID: "m1", Role: "user", Content: content, CreatedAt: at}},
	}
}

// Allocated returns the bytes f allocates (the growth of TotalAlloc),
// after a collection so that sweeping earlier garbage is not counted.
func Allocated(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Page is what a list answer says.
type Page struct {
	Records int
	Bytes   int // of the records' JSON
	HasMore bool
}

func parsePage(body []byte) (Page, error) {
	var env struct {
		Data    []json.RawMessage `json:"data"`
		HasMore bool              `json:"hasMore"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return Page{}, fmt.Errorf("not a list envelope: %v", err)
	}
	p := Page{Records: len(env.Data), HasMore: env.HasMore}
	for _, r := range env.Data {
		p.Bytes += len(r)
	}
	return p, nil
}

const token = "pagemem-token"

// REST serves path (with its query) once with a provider.Handler over ds,
// with the default page cap, for tenant, after one warm-up request of the
// same path with limit=1 (which prepares statements and fills pools), and
// returns the bytes the request allocated and its page.
func REST(ds provider.DataSource, tenant, path string, opts ...provider.Option) (uint64, Page, error) {
	opts = append([]provider.Option{provider.WithTokens(provider.Token{Secret: token, Tenant: tenant})}, opts...)
	h, err := provider.NewHandler(ds, opts...)
	if err != nil {
		return 0, Page{}, err
	}
	get := func(target string) *httptest.ResponseRecorder {
		r := httptest.NewRequestWithContext(context.Background(), http.MethodGet, target, nil)
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := get(warmUp(path)); w.Code != http.StatusOK {
		return 0, Page{}, fmt.Errorf("warm-up GET: %d %s", w.Code, w.Body)
	}
	var w *httptest.ResponseRecorder
	n := Allocated(func() { w = get(path) })
	if w.Code != http.StatusOK {
		return n, Page{}, fmt.Errorf("GET %s: %d %.300s", path, w.Code, w.Body)
	}
	p, err := parsePage(w.Body.Bytes())
	return n, p, err
}

func warmUp(path string) string {
	if i := strings.Index(path, "limit="); i >= 0 {
		j := i + len("limit=")
		for j < len(path) && path[j] >= '0' && path[j] <= '9' {
			j++
		}
		return path[:i] + "limit=1" + path[j:]
	}
	return path
}

// MCP calls tool once with args through the MCP binding of ds (in process,
// as tenant), after a warm-up call with limit 1, and returns the bytes the
// call allocated, its JSON-RPC answer included, and the page of its
// structured content.
func MCP(ds provider.DataSource, tenant, tool string, args map[string]any) (uint64, Page, error) {
	srv, err := mcp.NewServer(ds, mcp.WithPrincipal(provider.Principal{Name: "pagemem", Tenant: tenant}))
	if err != nil {
		return 0, Page{}, err
	}
	call := func(args map[string]any) ([]byte, error) {
		req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"name": tool, "arguments": args}})
		if err != nil {
			return nil, err
		}
		// Encoded as a server's transport would write it.
		return json.Marshal(srv.MCPServer().HandleMessage(context.Background(), req))
	}
	warm := map[string]any{}
	for k, v := range args {
		warm[k] = v
	}
	warm["limit"] = 1
	if _, err := call(warm); err != nil {
		return 0, Page{}, err
	}
	var (
		answer  []byte
		callErr error
	)
	n := Allocated(func() { answer, callErr = call(args) })
	if callErr != nil {
		return n, Page{}, callErr
	}
	var rpc struct {
		Result struct {
			IsError           bool            `json:"isError"`
			StructuredContent json.RawMessage `json:"structuredContent"`
			Content           []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(answer, &rpc); err != nil {
		return n, Page{}, fmt.Errorf("MCP answer: %v", err)
	}
	switch {
	case rpc.Error != nil:
		return n, Page{}, fmt.Errorf("MCP error: %s", rpc.Error.Message)
	case rpc.Result.IsError:
		text := ""
		if len(rpc.Result.Content) > 0 {
			text = rpc.Result.Content[0].Text
		}
		return n, Page{}, fmt.Errorf("MCP tool error: %.300s", text)
	}
	p, err := parsePage(rpc.Result.StructuredContent)
	return n, p, err
}
