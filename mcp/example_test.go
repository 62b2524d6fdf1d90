package mcp_test

import (
	"fmt"
	"log"
	"net/http/httptest"
	"slices"

	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
)

// Serve a DataSource over REST and, at /mcp, over MCP with the same
// credentials.
func Example() {
	ds := memsource.New()
	m, err := mcp.NewServer(ds)
	if err != nil {
		log.Fatal(err)
	}
	h, err := provider.NewHandler(ds,
		provider.WithTokens(provider.Token{Secret: "s3cret", Tenant: "acme"}),
		provider.WithMount("/mcp", m.HTTPHandler()))
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h) // in an application: http.ListenAndServe(addr, h)
	defer srv.Close()

	var names []string
	for name := range m.MCPServer().ListTools() {
		names = append(names, name)
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output:
	// [get_assistant get_conversation get_usage list_assistants list_conversations list_events]
}
