// Package sqlsource is a [provider.DataSource] over the kit's own tables, on
// SQLite or PostgreSQL, with a writer API a vendor calls as things happen.
// It also implements [provider.RawSource]: each record's canonical JSON
// (json.Marshal of its spec struct, timestamps in UTC with milliseconds) is
// stored beside its indexed columns and served as stored, so a page is
// written without encoding. A list with a byte budget (the query's
// MaxBytes, which [provider.Handler] sets to its page cap) never reads
// limit whole records: its query reads every row's byte length and only
// the bodies of at most budget/(limit+1) bytes, which serves the common
// page of small records in one statement; when a body it left out fits
// the page, a second statement adds the rows' byte lengths up (a window
// function) and reads only the bodies that fit. A page of large records
// costs about the budget.
//
// # Usage
//
//	src, err := sqlsource.Open(ctx, "sqlite:/var/lib/aiusage/provider.db") // applies the migrations
//	if err != nil {
//		return err
//	}
//	defer src.Close() // and the database
//
// or over a *sql.DB of yours, which you close after the Source (see [New]
// for the drivers and SQLite settings it expects):
//
//	src, err := sqlsource.New(ctx, db, sqlsource.Postgres) // applies the migrations
//
// then:
//
//	key, err := src.CursorKey(ctx) // shared by every process on this database
//	if err != nil {
//		return err
//	}
//	h, err := provider.NewHandler(src, provider.WithCursorKey(key), provider.WithTokens(...))
//
//	// As things happen:
//	err = src.UpsertConversation(ctx, tenant, conv)
//	err = src.RecordUsage(ctx, tenant, provider.UsageRecord{ID: reqID, At: time.Now(), ...})
//
//	// Bulk loads: one transaction, prepared statements.
//	err = src.WriteBatch(ctx, func(w provider.Writer) error {
//		for _, c := range convs {
//			if err := w.UpsertConversation(ctx, tenant, c); err != nil {
//				return err
//			}
//		}
//		return nil
//	})
//
// # Storage
//
// Tables conversations, assistants and events hold one row per record, keyed
// by (tenant, id), with the record's JSON in body and its list position in
// updated_at or occurred_at: milliseconds since the Unix epoch, exact and the
// same on both dialects. Lists are keyset queries on the indexes (tenant,
// updated_at, id), (tenant, occurred_at, id) and (tenant, category,
// occurred_at, id): one index range per page, whatever its depth, and no
// OFFSET. Ids compare byte by byte (SQLite's BINARY collation; COLLATE "C"
// on PostgreSQL), the order the interface serves.
//
// usage_records holds one row per AI request. In the same transaction each
// request is added to two cells of usage_rollups, its hour's and its day's,
// keyed by the dimensions and the conversation (so distinct counts stay
// exact). [Source.Usage] aggregates those cells in SQL, a window of buckets
// at a time, so that a page reads about the buckets it returns rather than
// the whole range.
//
// Every write to a tenant's conversations, assistants or events also sets a
// new random revision of that list (provider_revisions). The raw lists keep
// recently served pages in memory (see [WithPageCache]) and serve one again
// only while its list's revision is unchanged, a check made in the database
// on every request: exact, also with several processes on one database.
// The JSON of the records returned is shared with the cache and must not be
// modified.
//
// provider_settings holds the cursor key (see [Source.CursorKey]).
//
// Every table is scoped by tenant: no method reads or changes another
// tenant's rows.
package sqlsource
