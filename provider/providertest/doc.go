// Package providertest is the behaviour suite that every
// [provider.DataSource] of the kit runs: memsource, sqlsource on SQLite and
// PostgreSQL, and the consumer's collected view. A data source that also
// implements [provider.Writer] passes it to [Run], which writes its own
// deterministic data through the writer, serves the source with
// [provider.NewHandler] and checks the AI usage data interface over HTTP, as
// the kit decides it (docs/conformance.md):
//
//   - walks of /conversations, /assistants and /events with every page size
//     from 1 up give exactly the records written, once each, in keyset order,
//     with hasMore and nextCursor agreeing, also when page boundaries fall
//     inside groups of records sharing one timestamp;
//   - cursors are retry-safe, and a cursor used with other filters, on another
//     endpoint, by another tenant or tampered with is a 400 problem naming
//     cursor;
//   - updatedSince (inclusive), startedAfter and occurredAfter (exclusive) at
//     exact boundaries and with offsets; category; bad parameters are 400
//     problems naming the parameter;
//   - tombstones, single records equal to their list items, unknown ids 404;
//   - /usage sums equal the per-request records for hour and day and every
//     grouping, buckets aligned and inside the range asked, the default range
//     from the handler's clock;
//   - authentication (Bearer and X-API-Key, X-API-Key winning), scopes,
//     tenant isolation, 405 for other methods, JSON content types, gzip, and
//     no 5xx over the whole run.
//
// It uses only the standard library's testing package, so any module can
// import it:
//
//	func TestProviderSuite(t *testing.T) {
//		providertest.Run(t, func(t *testing.T) (provider.DataSource, provider.Writer) {
//			src := memsource.New()
//			return src, src
//		})
//	}
package providertest
