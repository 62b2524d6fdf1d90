// Package provider serves the AI usage data interface (conversations, usage,
// assistants, events) over REST from any store.
//
// A software vendor implements [DataSource] over its own database and mounts
// the [Handler]:
//
//	h, err := provider.NewHandler(mySource, provider.WithTokens(
//		provider.Token{Secret: token, Tenant: "acme"},
//	))
//	if err != nil {
//		return err
//	}
//	mux.Handle("/aiusage/", http.StripPrefix("/aiusage", h))
//
// The Handler owns everything the specification and the kit decide beyond
// the data: authentication ([Authenticator], [StaticTokens]) and scopes,
// query parameters, page sizes, sealed cursors bound to endpoint, filters and
// tenant, RFC 9457 problem details, gzip, request ids and access logs. The
// DataSource only answers keyset queries ([ConversationQuery], ...), whose
// order and filter semantics its doc spells out.
//
// Optional capabilities are separate interfaces, detected by type assertion:
// [RawSource] lets the Handler write pages from stored JSON without
// re-encoding; [Writer] is how the kit's own sources (provider/memsource,
// provider/sqlsource) take data in. provider/providertest checks any
// DataSource against the behaviour the kit's sources pass, and
// provider/export writes any DataSource as a scheduled export of NDJSON
// files, for consumers that read files rather than call the interface.
package provider
