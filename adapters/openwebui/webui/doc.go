// Package webui serves an Open WebUI database through the provider package: a
// read-only [provider.DataSource] over the tables Open WebUI keeps in its
// SQLite file (webui.db) or in PostgreSQL, and a sample database built from
// hand-written DDL that follows the schema of Open WebUI v0.9.0.
//
//	src, err := webui.Open(ctx, "webui.db", webui.Config{Tenant: "acme"})
//	...
//	h, err := provider.NewHandler(src, provider.WithTokens(tokens...))
//
// Open WebUI is a single-tenant application: the whole database is the data
// of one customer, named by [Config.Tenant]; every other tenant sees nothing.
// The mapping of its tables and of the JSON message tree inside chat.chat
// onto conversations, assistants, events and usage buckets is described in
// adapters/openwebui/README.md.
package webui
