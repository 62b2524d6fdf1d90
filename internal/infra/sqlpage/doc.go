// Package sqlpage is the list-serving layer shared by the kit's SQL data
// sources (provider/sqlsource, consumer/sqlstore): keyset pages of records
// stored as the JSON they are served as.
//
// A list is a keyset query: the rows after a position, in (time, id)
// order, LIMIT limit+1 (the row past the limit says that more follow), so
// that a page reads one index range whatever its depth. [sqldb.Args]
// numbers a query's placeholders; [sqldb.KeysetBound] writes the bound that
// starts a page; [CheckLimit] and [Position] take the list query's limit
// and position.
//
// A page with a byte budget (a list query's MaxBytes) never reads limit
// whole records. Its first query, [Guarded], reads every row's byte length
// and only the bodies of at most [GuardBytes]; a page of small records,
// the common case, costs that one query. When it left out a body the page
// needs, [Read] asks for the [Sized] query instead, which [SizedQuery]
// builds: it adds the rows' byte lengths up (a window function) and reads
// only the bodies that fit. A page of large records costs about its
// budget.
//
// [Reader] turns the rows of any of those queries into a page of
// [provider.RawRecord]: its records lie in one buffer as the list serves
// them, joined by commas, so that [provider.Handler] writes them without
// copying (see [provider.RawRecord]). [Decode] decodes such a page into
// records; [DBError] turns the driver's errors into the data source's.
package sqlpage
