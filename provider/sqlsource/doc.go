// Package sqlsource is a [provider.DataSource] over the kit's own tables, on
// SQLite or PostgreSQL, with a writer API ([provider.Writer]) a vendor calls
// as things happen. It also implements [provider.RawSource]: each record is
// stored as the JSON it is served as (json.Marshal of its spec struct,
// timestamps in UTC with milliseconds), so a page is written without
// encoding.
//
// [Open] opens a database from a URL and owns it; [New] works on a
// *sql.DB of yours. Either applies the package's migrations. Serve a
// Source with [provider.NewHandler], with the cursor key
// [Source.CursorKey] keeps in the database, so that every process serving
// from that database continues the others' cursors (see the examples).
// [Source.WriteBatch] writes many records in one transaction, in multi-row
// statements; on PostgreSQL it COPYs the rows of a tenant new to a table.
//
// Contracts:
//
//   - Every method is safe for concurrent use, and several processes may
//     share one database.
//   - Every table is scoped by tenant: no method reads or changes another
//     tenant's rows.
//   - Lists are keyset pages in the interface's order; a page costs the
//     same at any depth. A list with a byte budget (the query's MaxBytes,
//     which [provider.Handler] sets to its page cap) costs about the
//     budget, never limit whole records.
//   - The raw lists may serve a page again from memory ([WithPageCache]),
//     only while no write, from any process, has changed the tenant's list
//     since it was read. The JSON of the records returned may be shared
//     and must not be modified.
//
// The tables, indexes and the page cache are described in the kit's
// docs/design.md, section Storage.
package sqlsource
